"""grep's content lines redacted with the lines around them, before they are shown.

A matching line is a window of its file: a pattern that matches the body lines of a private
key but not its BEGIN and END lines would show the key to a scan that sees only the lines
shown, and a line cut at 2,000 characters can split a token. With the secret scan on (the
call's ``redact_cut``), each file whose lines are shown is read again (it was just searched:
from the page cache) up to ``CUT_MARGIN_LINES`` past its last shown line, and the shown lines
are redacted with up to that many lines around them, and 16 KB past a line's cut
(leaks/cuts.py). At most :data:`MAX_REREAD_BYTES` are read again per call; past that, or when
a file cannot be opened again, its lines are redacted with each other only.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from mcp_toolbridge.builtins.fs.grep_engine import FileHits
from mcp_toolbridge.builtins.fs.paths import FileProblem
from mcp_toolbridge.host import CUT_MARGIN_CHARS, CUT_MARGIN_LINES, RedactCut

MAX_REREAD_BYTES = 64 * 1024 * 1024
_LINE_BYTES = 4 * 2000 + 8 + CUT_MARGIN_CHARS
"""The most of one line read again (a 2,000-character cut, then the margin)."""

Opener = Callable[[Path], int]
"""open(path) -> a read-only descriptor of the file searched (the workspace's checks)."""


class LineRedactor:
    """Redacts the shown lines of each file of one grep call (see the module doc)."""

    def __init__(self, redact: RedactCut, open_file: Opener, shown_chars: int) -> None:
        self._redact = redact
        self._open = open_file
        self._shown_chars = shown_chars
        self._budget = MAX_REREAD_BYTES

    def lines(self, hits: FileHits) -> dict[int, str]:
        """Line number -> the part of the line shown (up to ``shown_chars``), redacted."""
        numbers = sorted(hits.lines)
        around = self._around(hits.path, numbers[-1] + CUT_MARGIN_LINES) if numbers else None
        first = max(1, numbers[0] - CUT_MARGIN_LINES) if numbers else 1
        texts: list[str] = []
        spans: list[tuple[int, int]] = []
        shown: list[int] = []
        at = 0
        if around is None:  # its own lines only
            for number in numbers:
                text = hits.lines[number][0]
                spans.append((at, at + min(len(text), self._shown_chars)))
                texts.append(text)
                at += len(text) + 1
            return dict(zip(numbers, self._redact("\n".join(texts), spans), strict=True))
        wanted = set(numbers)
        for number, text in enumerate(around[first - 1 :], start=first):
            hit = hits.lines.get(number)
            if hit is not None and not text.startswith(hit[0][: self._shown_chars]):
                text = hit[0]  # the file changed since it was searched
            if number in wanted:
                spans.append((at, at + min(len(text), self._shown_chars)))
                shown.append(number)
            texts.append(text)
            at += len(text) + 1
        redacted = dict(zip(shown, self._redact("\n".join(texts), spans), strict=True))
        for number in wanted - set(shown):  # not in the file any more
            text = hits.lines[number][0][: self._shown_chars]
            redacted[number] = self._redact(text, [(0, len(text))])[0]
        return redacted

    def _around(self, path: Path, last: int) -> list[str] | None:
        """The file's first ``last`` lines, each up to the margin past the cut; None when it
        cannot be read again (or the call's budget is spent)."""
        if self._budget <= 0:
            return None
        try:
            fd = self._open(path)
        except (FileProblem, OSError):
            return None
        lines: list[str] = []
        with os.fdopen(fd, "rb") as handle:
            while len(lines) < last and self._budget > 0:
                line = handle.readline(_LINE_BYTES)
                if not line:
                    break
                self._budget -= len(line)
                while not line.endswith(b"\n"):
                    rest = handle.readline(1024 * 1024)
                    self._budget -= len(rest)
                    if not rest or rest.endswith(b"\n"):
                        break
                text = line.rstrip(b"\n").removesuffix(b"\r").decode("utf-8", "replace")
                lines.append(text[: self._shown_chars + CUT_MARGIN_CHARS])
        return lines if self._budget > 0 else None
