"""Showing part of a text or of captured bytes, redacted with what lies around the cut.

With the secret scan on, a call's context carries ``redact_cut``
(:data:`~mcp_toolbridge.host.RedactCut`): each function here gives it up to
``CUT_MARGIN_CHARS`` on each side of the part shown, so a secret the cut splits is replaced by
its marker rather than shown in part. Without it (the scan off), the part is cut as it always
was. With it they are blocking (they run the scan): call them in a worker thread, or on the
event loop only for a single cut (a scan of about 16 KB, as scan.py's ``INLINE_CHARS``).

A log line or a progress message is cut to :data:`MAX_LINE_CHARS` as it is sent
(:func:`pending`, :func:`sent`): with ``redact_cut``, in a worker thread then.
"""

from __future__ import annotations

import functools

import anyio.to_thread

from mcp_toolbridge.host import CUT_MARGIN_CHARS, RedactCut
from mcp_toolbridge.secrets import whole_markers

MAX_LINE_CHARS = 2000
"""The most of a log line or progress message sent to the client."""


def shown_part(text: str, start: int, end: int, redact: RedactCut | None) -> str:
    """``text[start:end]``, redacted with up to the margin of ``text`` on either side."""
    if redact is None:
        return text[start:end]
    low = max(0, start - CUT_MARGIN_CHARS)
    [part] = redact(text[low : end + CUT_MARGIN_CHARS], [(start - low, end - low)])
    return part


def shown_head(text: str, size: int, redact: RedactCut | None) -> str:
    """The first ``size`` characters of ``text``."""
    return shown_part(text, 0, min(size, len(text)), redact)


def shown_tail(text: str, size: int, redact: RedactCut | None) -> str:
    """The last ``size`` characters of ``text``."""
    return shown_part(text, max(0, len(text) - size), len(text), redact)


def redacted_head(text: str, size: int, redact: RedactCut | None) -> str:
    """The first ``size`` characters of ``text``, a text whose secret values were already
    replaced by their markers (:func:`~mcp_toolbridge.secrets.redact`): a marker the cut
    would split is shown whole."""
    _, end = whole_markers(text, 0, min(size, len(text)))
    return shown_part(text, 0, end, redact)


def redacted_tail(text: str, size: int, redact: RedactCut | None) -> str:
    """The last ``size`` characters of ``text`` (secret values already replaced), a marker
    the cut would split shown whole."""
    start, _ = whole_markers(text, max(0, len(text) - size), len(text))
    return shown_part(text, start, len(text), redact)


def shown_bytes(data: bytes, start: int, end: int, redact: RedactCut | None) -> str:
    """``data[start:end]`` decoded (undecodable bytes as U+FFFD), redacted with up to the
    margin of ``data`` on either side."""
    shown = data[start:end].decode("utf-8", "replace")
    if redact is None:
        return shown
    before = data[max(0, start - CUT_MARGIN_CHARS) : start].decode("utf-8", "replace")
    after = data[end : end + CUT_MARGIN_CHARS].decode("utf-8", "replace")
    [part] = redact(before + shown + after, [(len(before), len(before) + len(shown))])
    return part


def cut(
    text: str, limit: int = MAX_LINE_CHARS, redact: RedactCut | None = None, *, more: int = 0
) -> str:
    """``text`` cut to ``limit`` characters, saying how many more there were (``more``: those
    already cut off it); what is shown redacted by ``redact`` with what follows the cut (up
    to the margin; blocking then: call it in a worker thread)."""
    if len(text) <= limit:
        return text
    return f"{shown_head(text, limit, redact)}… [{len(text) + more - limit} more characters]"


Pending = tuple[str, int | None]
"""A line waiting to be sent: the line as sent and None; or, to be cut with the call's
``redact_cut`` as it is sent (:func:`sent`), its head up to the margin past the cut and how
many characters were dropped past that."""


def pending(text: str, redact: RedactCut | None) -> Pending:
    """``text`` as it waits to be sent: cut now when nothing redacts the cut (or nothing is
    cut), else kept up to the margin past the cut, to be cut when sent."""
    if redact is None or len(text) <= MAX_LINE_CHARS:
        return cut(text), None
    kept = MAX_LINE_CHARS + CUT_MARGIN_CHARS
    return text[:kept], max(0, len(text) - kept)


async def sent(line: Pending, redact: RedactCut | None) -> str:
    """The text of a :func:`pending` line, cut (and redacted with what follows the cut, in a
    worker thread) if it waited to be."""
    text, more = line
    if more is None:
        return text
    return await anyio.to_thread.run_sync(functools.partial(cut, text, redact=redact, more=more))
