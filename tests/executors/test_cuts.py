"""Showing part of an output (executors/cuts.py): through the secret scan's redact_cut, the part
is redacted with the margin around it; without it, it is cut as it always was; a log line
waits to be cut as it is sent."""

from __future__ import annotations

import random
import string

from mcp_toolbridge.bridge.screen import CutRedactor
from mcp_toolbridge.executors.cuts import (
    MAX_LINE_CHARS,
    pending,
    sent,
    shown_bytes,
    shown_head,
    shown_tail,
)
from mcp_toolbridge.host import CUT_MARGIN_CHARS
from mcp_toolbridge.leaks import SecretScan, SecretScanSettings

TOKEN = "ghp_" + "".join(random.Random(9).choices(string.ascii_letters + string.digits, k=36))
SCAN = SecretScan(SecretScanSettings())
MARKER = "[REDACTED:github-pat]"


def test_a_head_and_a_tail_that_split_a_token_show_its_marker() -> None:
    redact = CutRedactor(SCAN, "t")
    text = "a" * 100 + TOKEN + "b" * 100
    assert shown_head(text, 120, redact) == "a" * 100 + MARKER
    assert shown_tail(text, 120, redact) == MARKER + "b" * 100
    assert shown_head(text, 120, None) == text[:120]  # the scan off: cut as it was
    assert redact.counts == {"github-pat": 2}  # what the call's audit line adds


def test_bytes_are_decoded_and_redacted_around_a_cut_inside_a_character() -> None:
    data = ("é" * 10 + " " + TOKEN + " ü").encode()
    start = data.index(TOKEN.encode()) + 10
    assert shown_bytes(data, start, len(data), CutRedactor(SCAN, "t")) == MARKER + " ü"
    cut_char = data.index("ü".encode()) + 1  # the middle of a two-byte character
    assert shown_bytes(data, 0, cut_char, None).endswith("\ufffd")


async def test_a_long_line_waits_with_its_margin_and_is_cut_when_sent() -> None:
    line = "x" * (MAX_LINE_CHARS - 10) + TOKEN + "y" * (2 * CUT_MARGIN_CHARS)
    kept, more = pending(line, CutRedactor(SCAN, "t"))
    assert len(kept) == MAX_LINE_CHARS + CUT_MARGIN_CHARS and more == CUT_MARGIN_CHARS + 30
    shown = await sent((kept, more), CutRedactor(SCAN, "t"))
    assert (
        shown
        == "x" * (MAX_LINE_CHARS - 10) + f"{MARKER}… [{len(line) - MAX_LINE_CHARS} more characters]"
    )
    assert pending("short", CutRedactor(SCAN, "t")) == ("short", None)
    assert pending(line, None)[1] is None  # the scan off: cut at once, as before
