"""grep's search engines share these records; this module also holds the pure-Python engine.

Both engines (ripgrep in :mod:`grep_rg`, Python ``re`` here) return a :class:`GrepRun`: per file
its matching lines and, with ``context``, the lines around them. The tool formats it, so the
output is the same whichever engine ran.

The Python engine runs in a worker thread. It checks a deadline between files and between
lines, skips binary files (a NUL byte) and files over 10 MB, never follows symlinks, applies
.gitignore like the walk for glob, and stops after ``MAX_WALK_ENTRIES`` entries. Only one
pathological regular expression on one file can outlive the deadline (``re`` cannot be
interrupted); the call itself still returns at the deadline.
"""

from __future__ import annotations

import bisect
import os
import re
import stat
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from mcp_toolbridge.builtins.fs.walk import PathGlob, WalkReport, walk_files

Mode = Literal["files_with_matches", "content", "count"]
MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_WALK_ENTRIES = 200_000
MAX_COLLECTED_LINES = 20_000
"""Matching lines kept in all (head + sidecar); past it the search stops and says so."""
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC
_CROSS_LINE = re.compile(r"\(\?|\\[AZz]")


class InvalidPattern(Exception):
    """The regular expression does not compile; the message says why."""


class SearchTimeout(Exception):
    """The deadline passed before the search finished."""


@dataclass(frozen=True, slots=True)
class GrepQuery:
    pattern: str
    mode: Mode
    root: Path
    """A canonical folder or file."""
    ignore_base: Path | None
    """The workspace when .gitignore applies; None for sidecar folders."""
    globs: tuple[str, ...] = ()
    case_insensitive: bool = False
    multiline: bool = False
    context: int = 0
    deadline: float = float("inf")


@dataclass
class FileHits:
    path: Path
    mtime: float
    lines: dict[int, tuple[str, bool]] = field(default_factory=dict)
    """Line number -> (text without its line break, is a matching line)."""

    def add(self, number: int, text: str, is_match: bool) -> None:
        known = self.lines.get(number)
        self.lines[number] = (text, is_match or (known is not None and known[1]))

    @property
    def match_lines(self) -> int:
        return sum(1 for _, is_match in self.lines.values() if is_match)


@dataclass
class GrepRun:
    files: list[FileHits] = field(default_factory=list)
    partial: str | None = None
    """Why the results may be incomplete (unreadable paths, limits); None when complete."""
    engine: str = "python"
    withheld: int = 0
    """Matching files left out because the permission policy refuses reading them."""
    sandboxed: bool | None = None
    """Whether rg ran inside the OS sandbox (None: no process ran)."""


def compile_pattern(query: GrepQuery) -> re.Pattern[str]:
    flags = re.IGNORECASE if query.case_insensitive else 0
    if query.multiline:
        flags |= re.MULTILINE | re.DOTALL
    try:
        return re.compile(query.pattern, flags)
    except re.error as exc:
        raise InvalidPattern(f"invalid regular expression {query.pattern!r}: {exc}") from None


def python_search(query: GrepQuery) -> GrepRun:
    """Search with Python ``re`` (call it in a worker thread)."""
    regex = compile_pattern(query)
    prefilter = None
    if not query.multiline and _CROSS_LINE.search(query.pattern) is None:
        prefilter = re.compile(regex.pattern, regex.flags | re.MULTILINE)
    run = GrepRun(engine="python")
    collected = 0
    for path, mtime, data in _candidates(query, run):
        if time.monotonic() > query.deadline:
            raise SearchTimeout
        text = data.decode("utf-8", "replace")
        if prefilter is not None and prefilter.search(text) is None:
            continue
        hits = _search_text(query, regex, path, mtime, text)
        if hits is None:
            continue
        run.files.append(hits)
        collected += hits.match_lines
        if collected >= MAX_COLLECTED_LINES:
            run.partial = f"the search stopped after {collected} matching lines"
            break
    return run


def _candidates(query: GrepQuery, run: GrepRun) -> Iterator[tuple[Path, float, bytes]]:
    """(path, mtime, content) of each text file under 10 MB to search."""
    report = WalkReport()
    if query.root.is_dir():
        matcher = PathGlob(list(query.globs)) if query.globs else None
        entries: Iterable[tuple[Path, float]] = (
            (e.path, e.mtime)
            for e in walk_files(
                query.root,
                ignore_base=query.ignore_base,
                report=report,
                deadline=query.deadline,
                max_entries=MAX_WALK_ENTRIES,
            )
            if not e.ignored
            and e.size <= MAX_FILE_BYTES
            and (matcher is None or matcher.matches(e.rel))
        )
    else:
        entries = [(query.root, query.root.stat().st_mtime)]
    for path, mtime in entries:
        try:
            data = _read_regular(path)
        except OSError:
            report.unreadable += 1
            continue
        if len(data) <= MAX_FILE_BYTES and b"\0" not in data:
            yield path, mtime, data
    if report.stopped == "deadline":
        raise SearchTimeout
    if report.stopped == "limit":
        run.partial = f"the walk stopped after {MAX_WALK_ENTRIES} entries; narrow path or glob"
    elif report.unreadable:
        run.partial = f"some paths were unreadable ({report.unreadable}) and were skipped"


def is_binary(path: Path) -> bool:
    """True when the file's first 10 MB hold a NUL byte: the rule both engines skip files by.

    ripgrep alone would stop at the NUL but keep the matches before it; the ripgrep engine
    checks each file it reports with this, so a NUL anywhere makes a file binary for both."""
    try:
        return b"\0" in _read_regular(path)
    except OSError:
        return False


def _read_regular(path: Path) -> bytes:
    """The first bytes of a regular file, never through a symlink, never blocking on a FIFO."""
    fd = os.open(path, _OPEN_FLAGS)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return b""
        return handle.read(MAX_FILE_BYTES + 1)


def _search_text(
    query: GrepQuery, regex: re.Pattern[str], path: Path, mtime: float, text: str
) -> FileHits | None:
    lines = text.split("\n") if text else []  # an empty file has no line, not one empty line
    if text.endswith("\n"):
        lines.pop()
    matched: list[int] = []
    if query.multiline:
        starts = [0]
        for line in lines[:-1]:
            starts.append(starts[-1] + len(line) + 1)
        for match in regex.finditer(text):
            first = bisect.bisect_right(starts, match.start()) - 1
            end = max(match.start(), match.end() - 1)
            last = bisect.bisect_right(starts, end) - 1
            matched.extend(range(first, min(last, len(lines) - 1) + 1))
            if query.mode == "files_with_matches":
                break
    else:
        for index, line in enumerate(lines):
            if regex.search(line) is not None:
                matched.append(index)
                if query.mode == "files_with_matches":
                    break
            if index % 4096 == 0 and time.monotonic() > query.deadline:
                raise SearchTimeout
    if not matched:
        return None
    hits = FileHits(path, mtime)
    for index in matched:
        for near in range(
            max(0, index - query.context), min(len(lines), index + query.context + 1)
        ):
            hits.add(near + 1, lines[near].removesuffix("\r"), near == index)
    return hits
