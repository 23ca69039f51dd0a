"""grep's search engines share these records; this module also runs the in-process search.

Both ripgrep (:mod:`grep_rg`) and the search here return a :class:`GrepRun`: per file its
matching lines and, with ``context``, the lines around them. The tool formats it, so the
output is the same whichever engine ran.

Without ripgrep, the files are found here (in a worker thread: the walk checks a deadline,
skips binary files (a NUL byte) and files over 10 MB, never follows symlinks, applies
.gitignore like the walk for glob, and stops after ``MAX_WALK_ENTRIES`` entries) and searched
by RE2 (:mod:`grep_re2`: linear time, the GIL released while it matches). A pattern RE2 cannot
express, or a ``\\b`` pattern on a file that is not ASCII, is searched by Python's ``re`` in a
child process killed at the deadline (:mod:`grep_child`, :func:`backtrack_search`). Nothing
that can backtrack runs in the server, so no pattern can hold the event loop.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from mcp_toolbridge.builtins.fs import grep_child, grep_re2
from mcp_toolbridge.builtins.fs.grep_child import MAX_FILE_BYTES, read_regular
from mcp_toolbridge.builtins.fs.walk import PathGlob, WalkReport, walk_files
from mcp_toolbridge.executors import run_process
from mcp_toolbridge.sandbox import Confinement

Mode = Literal["files_with_matches", "content", "count"]
MAX_WALK_ENTRIES = 200_000
MAX_COLLECTED_LINES = 20_000
"""Matching lines kept in all (head + sidecar); past it the search stops and says so."""
MAX_CHILD_OUTPUT_BYTES = 64 * 1024 * 1024
_CHILD = Path(grep_child.__file__)


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
    stop: threading.Event | None = field(default=None, compare=False)
    """Set when the call ends: an abandoned worker thread stops as at its deadline."""
    hidden: Mapping[str, frozenset[str]] | None = field(default=None, compare=False)
    """What no sandbox shows, left out of the walk (:attr:`walk.HiddenPaths.by_folder`)."""

    def over(self) -> bool:
        return time.monotonic() > self.deadline or (self.stop is not None and self.stop.is_set())


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
    hidden: int = 0
    """Paths no sandbox shows inside the searched folder (or holding it): not searched."""


def compile_pattern(query: GrepQuery) -> re.Pattern[str]:
    try:
        return re.compile(query.pattern, regex_flags(query))
    except re.error as exc:
        raise InvalidPattern(f"invalid regular expression {query.pattern!r}: {exc}") from None


def regex_flags(query: GrepQuery) -> int:
    flags = re.IGNORECASE if query.case_insensitive else 0
    return flags | (re.MULTILINE | re.DOTALL if query.multiline else 0)


def local_search(query: GrepQuery) -> tuple[GrepRun, list[tuple[Path, float]]]:
    """Walk and search with RE2 (call it in a worker thread). Returns the run and the files
    RE2 cannot search with the pattern's meaning, for :func:`backtrack_search`."""
    compile_pattern(query)  # Python's syntax decides what is valid
    try:
        pattern: grep_re2.Re2Pattern | None = grep_re2.translate(
            query.pattern, ignore_case=query.case_insensitive, multiline=query.multiline
        )
    except grep_re2.Unexpressible:
        pattern = None
    run = GrepRun(engine="re2")
    deferred: list[tuple[Path, float]] = []
    collected = searched = 0
    for path, mtime, data in _candidates(query, run):
        if query.over():
            raise SearchTimeout
        if pattern is None or (pattern.ascii_only and not data.isascii()):
            deferred.append((path, mtime))
            continue
        searched += 1
        hits = _re2_hits(query, pattern, path, mtime, data)
        if hits is None:
            continue
        run.files.append(hits)
        collected += hits.match_lines
        if collected >= MAX_COLLECTED_LINES:
            run.partial = f"the search stopped after {collected} matching lines"
            deferred.clear()
            break
    if deferred:  # which engines the results come from
        run.engine = "re2+python" if searched else "python"
    return run, deferred


def _re2_hits(
    query: GrepQuery, pattern: grep_re2.Re2Pattern, path: Path, mtime: float, data: bytes
) -> FileHits | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:  # as re sees it: each bad byte is U+FFFD
        text = data.decode("utf-8", "replace")
        data = text.encode("utf-8")
    if not data:
        return None  # an empty file has no line to match
    first_only = query.mode == "files_with_matches"
    matched: dict[int, None] = {}
    if query.multiline:
        for span in grep_re2.span_matches(pattern, data, first_only=first_only):
            matched.update(dict.fromkeys(span))
            if len(matched) % 4096 == 0 and query.over():
                raise SearchTimeout
    else:
        for count, number in enumerate(grep_re2.line_matches(pattern, data, first_only=first_only)):
            matched[number] = None
            if count % 4096 == 4095 and query.over():
                raise SearchTimeout
    if not matched:
        return None
    hits = FileHits(path, mtime)
    if query.mode == "files_with_matches":
        return hits
    if query.mode == "count":
        for number in matched:
            hits.add(number + 1, "", True)
        return hits
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    for index in matched:
        for near in range(
            max(0, index - query.context), min(len(lines), index + query.context + 1)
        ):
            hits.add(near + 1, lines[near].removesuffix("\r"), near == index)
    return hits


async def backtrack_search(
    query: GrepQuery,
    files: list[tuple[Path, float]],
    *,
    max_lines: int,
    sandbox: Confinement | None,
) -> GrepRun:
    """Search ``files`` with Python ``re`` in a child process (:mod:`grep_child`), killed at
    the query's deadline: raises ProcessTimeout (an ExecTimeoutError) then. The child runs in
    the grep call's OS sandbox, which also shows it the searched folder and its own script."""
    if sandbox is not None:
        sandbox = sandbox.with_read(query.root, _CHILD)
    job = {
        "pattern": query.pattern,
        "flags": regex_flags(query),
        "multiline": query.multiline,
        "mode": query.mode,
        "context": query.context,
        "max_lines": max_lines,
        "files": [[os.fsdecode(path), mtime] for path, mtime in files],
    }
    outcome = await run_process(
        [sys.executable, "-I", "-S", str(_CHILD)],
        stdin=json.dumps(job).encode("utf-8"),
        cwd=None,
        env={},
        timeout_s=max(query.deadline - time.monotonic(), 0.0),
        sandbox=sandbox,
        max_output_bytes=MAX_CHILD_OUTPUT_BYTES,
    )
    run = GrepRun(engine="python", sandboxed=outcome.sandboxed)
    ended = False
    for raw in outcome.stdout.splitlines():
        record = json.loads(raw)
        if "partial" in record:
            run.partial, ended = record["partial"], True
            continue
        hits = FileHits(Path(record["path"]), float(record["mtime"]))
        for number, text, is_match in record["lines"]:
            hits.add(int(number), str(text), bool(is_match))
        run.files.append(hits)
    if not ended:
        stderr = outcome.stderr_tail.decode("utf-8", "replace").strip().splitlines()
        why = stderr[-1] if stderr else f"exit {outcome.exit_code}, signal {outcome.signal}"
        run.partial = f"the backtracking search ended early ({why})"
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
                stop=query.stop,
                max_entries=MAX_WALK_ENTRIES,
                hidden=query.hidden,
            )
            if not e.ignored
            and e.size <= MAX_FILE_BYTES
            and (matcher is None or matcher.matches(e.rel))
        )
    else:
        entries = [(query.root, query.root.stat().st_mtime)]
    within = os.fspath(query.root if query.root.is_dir() else query.root.parent)
    for path, mtime in entries:
        try:
            data = read_regular(os.fspath(path), within)
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
        return b"\0" in read_regular(os.fspath(path))
    except OSError:
        return False
