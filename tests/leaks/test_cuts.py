"""What a cut shows, redacted with the text around the cut (leaks/cuts.py): a secret the cut
splits or whose recognisable parts lie outside what is shown becomes a marker, the rest of
what is shown stays as it was, and the scan reads only a margin around each edge."""

from __future__ import annotations

import random
import string

from mcp_toolbridge.host import CUT_MARGIN_CHARS
from mcp_toolbridge.leaks import SecretScan, SecretScanSettings, redact_cut
from mcp_toolbridge.leaks.cuts import regions

_rng = random.Random(7)
ALNUM = string.ascii_letters + string.digits
TOKEN = "ghp_" + "".join(_rng.choices(ALNUM, k=36))
BODY = ["".join(_rng.choices(ALNUM + "+/", k=64)) for _ in range(12)]
PEM = "\n".join(["-----BEGIN RSA PRIVATE KEY-----", *BODY, "-----END RSA PRIVATE KEY-----"])
SCAN = SecretScan(SecretScanSettings())


def _line_spans(text: str, first: int, last: int) -> list[tuple[int, int]]:
    starts = [0]
    for line in text.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    return [(starts[i], starts[i + 1] - 1) for i in range(first, last + 1)]


def test_lines_inside_a_private_key_become_markers_and_the_lines_around_stay() -> None:
    text = f"config:\n{PEM}\nafter"
    shown, counts = redact_cut(SCAN, text, _line_spans(text, 0, 4), "read")
    assert shown == ["config:", *["[REDACTED:private-key]"] * 4]
    assert counts == {"private-key": 1}


def test_a_token_split_by_the_cut_is_a_marker_and_the_text_before_it_stays() -> None:
    line = "log: " + "y" * 80 + " " + TOKEN + " rest"
    cut_at = line.index(TOKEN) + 20
    [shown], counts = redact_cut(SCAN, line, [(0, cut_at)], "bash")
    assert shown == "log: " + "y" * 80 + " [REDACTED:github-pat]"
    assert counts == {"github-pat": 1}
    [tail], _ = redact_cut(SCAN, line, [(cut_at, len(line))], "bash")
    assert tail == "[REDACTED:github-pat] rest"


def test_a_cut_that_splits_nothing_shows_what_it_cut() -> None:
    text = "alpha\n" * 50 + f"token {TOKEN}\n" + "beta\n" * 50
    spans = [(0, 30), (len(text) - 30, len(text))]
    assert redact_cut(SCAN, text, spans, "bash") == ([text[:30], text[-30:]], {})


def test_only_a_margin_around_each_edge_is_scanned() -> None:
    size = 10 * CUT_MARGIN_CHARS
    assert regions([(0, size)], size) == []  # all of it shown: no edge
    assert regions([(0, 100)], size) == [(0, 100 + CUT_MARGIN_CHARS)]
    middle = (4 * CUT_MARGIN_CHARS, 7 * CUT_MARGIN_CHARS)
    assert regions([middle], size) == [
        (3 * CUT_MARGIN_CHARS, 5 * CUT_MARGIN_CHARS),
        (6 * CUT_MARGIN_CHARS, 8 * CUT_MARGIN_CHARS),
    ]
    touching = [(0, 10), (10, 20), (20, 30)]  # lines shown one after another: one part
    assert regions(touching, size) == [(0, 30 + CUT_MARGIN_CHARS)]


def test_a_secret_far_from_every_edge_is_left_to_the_scan_of_the_result() -> None:
    filler = "z" * (2 * CUT_MARGIN_CHARS)
    text = f"{filler}\n{TOKEN}\n{filler}"
    [shown], counts = redact_cut(SCAN, text, [(0, len(text) - 10)], "bash")
    assert shown == text[:-10] and counts == {}  # the whole token is shown: screen() sees it
