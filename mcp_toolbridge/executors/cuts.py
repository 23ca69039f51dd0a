"""Showing part of a text or of captured bytes, redacted with what lies around the cut.

With the secret scan on, a call's context carries ``redact_cut``
(:data:`~mcp_toolbridge.host.RedactCut`): each function here gives it up to
``CUT_MARGIN_CHARS`` on each side of the part shown, so a secret the cut splits is replaced by
its marker rather than shown in part. Without it (the scan off), the part is cut as it always
was. With it they are blocking (they run the scan): call them in a worker thread, or on the
event loop only for a single cut (a scan of about 16 KB, as scan.py's ``INLINE_CHARS``).
"""

from __future__ import annotations

from mcp_toolbridge.host import CUT_MARGIN_CHARS, RedactCut


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
