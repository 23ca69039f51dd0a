"""grep's backtracking engine: Python ``re`` in a child process that is killed at the deadline.

A pattern RE2 cannot express (backreferences, look-around, ...) needs a backtracking engine,
and ``re`` holds the GIL for as long as one match takes: ``(a+)+$`` over a long line of a's
runs for minutes and cannot be interrupted. So it never runs in the server. This module is
also a script: the server starts it with ``run_process`` (its own process group, bounded
output, killed at the call's deadline) as ``python -I -S grep_child.py``, writes the job as
JSON on its stdin and reads one JSON line per file with matches, then a last line with
``partial``. It imports the standard library only, so it starts in tens of milliseconds.

The job names the files to search (the server has already walked the tree, applied
.gitignore and the globs, and skipped binary and oversized files); each is opened again with
``O_NOFOLLOW | O_NONBLOCK`` and must still be a regular file.
"""

from __future__ import annotations

import bisect
import json
import os
import re
import stat
import sys
from typing import Any

MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_LINE_CHARS_KEPT = 2001
"""Lines are sent cut to this many characters: the formatter shows 2000 and marks the cut."""
MAX_OUTPUT_BYTES = 48 * 1024 * 1024
"""Past this much output the search stops and says so (the server reads at most 64 MB)."""
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC

Line = tuple[int, str, bool]
"""(1-based line number, text without its line break, is a matching line)."""


def read_regular(path: str, within: str = "") -> bytes:
    """The first bytes of a regular file, never through a symlink, never blocking on a FIFO;
    with ``within`` (a canonical folder), only when ``/proc/self/fd`` says the file opened is
    inside it: a folder on the way swapped for a symlink after the walk listed it would
    otherwise be read through (OSError then, as for a file that cannot be read)."""
    fd = os.open(path, _OPEN_FLAGS)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return b""
        if within:
            try:
                opened = os.readlink(f"/proc/self/fd/{handle.fileno()}")
            except OSError:
                opened = within  # no /proc: O_NOFOLLOW is the check
            if opened != within and not opened.startswith(within.rstrip("/") + "/"):
                raise OSError(f"{path} led outside {within} when opened")
        return handle.read(MAX_FILE_BYTES + 1)


def search_text(
    regex: re.Pattern[str], text: str, *, multiline: bool, first_only: bool, context: int
) -> list[Line]:
    """The matching lines of ``text`` (and ``context`` lines around each), by line number."""
    lines = text.split("\n") if text else []  # an empty file has no line, not one empty line
    if text.endswith("\n"):
        lines.pop()
    matched: list[int] = []
    if multiline:
        starts = [0]
        for line in lines[:-1]:
            starts.append(starts[-1] + len(line) + 1)
        for match in regex.finditer(text):
            first = bisect.bisect_right(starts, match.start()) - 1
            end = max(match.start(), match.end() - 1)
            last = bisect.bisect_right(starts, end) - 1
            matched.extend(range(first, min(last, len(lines) - 1) + 1))
            if first_only:
                break
    else:
        for index, line in enumerate(lines):
            if regex.search(line) is not None:
                matched.append(index)
                if first_only:
                    break
    found: dict[int, tuple[str, bool]] = {}
    for index in matched:
        for near in range(max(0, index - context), min(len(lines), index + context + 1)):
            known = found.get(near)
            text_of = lines[near].removesuffix("\r")[:MAX_LINE_CHARS_KEPT]
            found[near] = (text_of, near == index or (known is not None and known[1]))
    return [(number + 1, *found[number]) for number in sorted(found)]


def run(job: dict[str, Any], write: Any) -> None:
    """Search the job's files, writing one JSON line per file with matches, then the end."""
    regex = re.compile(job["pattern"], int(job["flags"]))
    multiline = bool(job["multiline"])
    first_only = job["mode"] == "files_with_matches"
    context = int(job["context"])
    max_lines = int(job["max_lines"])
    collected = written = unreadable = 0
    partial: str | None = None
    for path, mtime in job["files"]:
        try:
            data = read_regular(path)
        except OSError:
            unreadable += 1
            continue
        if len(data) > MAX_FILE_BYTES or b"\0" in data:
            continue
        lines = search_text(
            regex,
            data.decode("utf-8", "replace"),
            multiline=multiline,
            first_only=first_only,
            context=context,
        )
        if not lines:
            continue
        out = json.dumps({"path": path, "mtime": mtime, "lines": lines}) + "\n"
        write(out.encode("utf-8"))
        written += len(out)
        collected += sum(1 for _, _, is_match in lines if is_match)
        if collected >= max_lines:
            partial = f"the search stopped after {collected} matching lines"
            break
        if written >= MAX_OUTPUT_BYTES:
            partial = f"the search stopped after {written} bytes of results"
            break
    if partial is None and unreadable:
        partial = f"some paths were unreadable ({unreadable}) and were skipped"
    write((json.dumps({"partial": partial}) + "\n").encode("utf-8"))


def main() -> None:
    job = json.loads(sys.stdin.buffer.read())
    run(job, sys.stdout.buffer.write)
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
