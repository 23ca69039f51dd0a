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
_CHUNK_BYTES = 256 * 1024

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
        if not numbers:
            return {}
        around = self._around(hits.path, numbers[-1] + CUT_MARGIN_LINES)
        if around is None:  # its own lines only
            texts = {n: hits.lines[n][0] for n in numbers}
            return self._redacted(texts, numbers)
        redacted: dict[int, str] = {}
        for first, last in _segments(numbers):
            texts = dict(enumerate(around[first - 1 : last], start=first))
            for number in numbers:
                if not first <= number <= last:
                    continue
                hit = hits.lines[number][0]
                known = texts.get(number)
                if known is None or not known.startswith(hit[: self._shown_chars]):
                    texts[number] = hit  # the file changed since it was searched
            redacted |= self._redacted(texts, [n for n in numbers if first <= n <= last])
        return redacted

    def _redacted(self, texts: dict[int, str], shown: list[int]) -> dict[int, str]:
        """The ``shown`` lines of ``texts`` (consecutive line numbers, or the lines found
        alone), redacted with the others."""
        wanted = set(shown)
        spans: list[tuple[int, int]] = []
        at = 0
        for number in sorted(texts):
            text = texts[number]
            if number in wanted:
                spans.append((at, at + min(len(text), self._shown_chars)))
            at += len(text) + 1
        joined = "\n".join(texts[number] for number in sorted(texts))
        return dict(zip(sorted(wanted), self._redact(joined, spans), strict=True))

    def _around(self, path: Path, last: int) -> list[str] | None:
        """The file's first ``last`` lines, each up to the margin past the cut; None when it
        cannot be read again (or the call's budget is spent)."""
        if self._budget <= 0:
            return None
        try:
            fd = self._open(path)
        except (FileProblem, OSError):
            return None
        chunks: list[bytes] = []
        newlines = 0
        with os.fdopen(fd, "rb") as handle:
            while newlines < last and self._budget > 0:
                chunk = handle.read(_CHUNK_BYTES)
                if not chunk:
                    break
                self._budget -= len(chunk)
                chunks.append(chunk)
                newlines += chunk.count(b"\n")
        if self._budget <= 0:
            return None
        keep = self._shown_chars + CUT_MARGIN_CHARS
        return [
            line.removesuffix(b"\r")[: 4 * keep].decode("utf-8", "replace")[:keep]
            for line in b"".join(chunks).split(b"\n", last)[:last]
        ]


def _segments(numbers: list[int]) -> list[tuple[int, int]]:
    """The line ranges read around the shown lines ``numbers`` (sorted): up to the margin of
    lines on each side of each, merged where they meet."""
    found: list[tuple[int, int]] = []
    for number in numbers:
        first, last = max(1, number - CUT_MARGIN_LINES), number + CUT_MARGIN_LINES
        if found and first <= found[-1][1] + 1:
            found[-1] = (found[-1][0], last)
        else:
            found.append((first, last))
    return found
