"""read: numbered lines of a text file in the workspace (or of a session sidecar file).

Lines come ``cat -n`` style (the number right-aligned in six columns, a tab, the line). The file
is streamed: lines before ``offset`` are skipped by counting newlines in 1 MB chunks, a line is
never read whole past what is shown, so a 1 GB file or a 1 GB single line costs bounded memory.

A window costs what the window costs: the lines after it are counted (``total_lines``) only
when at most ``COUNT_LIMIT_BYTES`` follow it; past that ``total_lines`` is null and the note
says the count was not taken, so lines 1-2 of a 2 GiB file read a few KB, not 2 GiB. Skipping
to a far ``offset`` reads up to it, checking the call's deadline between chunks.

When the secret scan is on (the call's ``redact_cut``), what the window shows is redacted
with the text around it before it is cut: up to 128 lines (16 KB) before and after the window
and 16 KB past the cut of a long line are read with it, so a private key whose BEGIN line is
above the window, or a token cut at 2,000 characters, is still recognised (leaks/cuts.py).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import anyio.to_thread

from mcp_toolbridge.builtins.fs.links import LinkIndex, refusal
from mcp_toolbridge.builtins.fs.paths import FileProblem, FsRoot
from mcp_toolbridge.builtins.fs.read_spec import DEFAULT_LIMIT, MAX_LINE_CHARS
from mcp_toolbridge.builtins.fs.read_spec import SPEC as SPEC  # the tool's own, as before
from mcp_toolbridge.builtins.session import Sessions
from mcp_toolbridge.errors import ErrorCode
from mcp_toolbridge.executors import ExecRequest, ExecResult
from mcp_toolbridge.host import CUT_MARGIN_CHARS, CUT_MARGIN_LINES, RedactCut
from mcp_toolbridge.policy import Action, is_within

MAX_OUTPUT_BYTES = 200 * 1024
MAX_SIDECAR_BYTES = 16 * 1024 * 1024
BINARY_PROBE_BYTES = 4096
_HEAD_BYTES = 4 * MAX_LINE_CHARS + 8
COUNT_LIMIT_BYTES = 8 * 1024 * 1024
"""The most that is read past the window just to count the file's remaining lines."""
_CHUNK = 1024 * 1024
_BOM = b"\xef\xbb\xbf"


@dataclass
class _Deadline:
    """When the worker thread must stop: the call's deadline, or the call ending first (a
    cancelled call abandons its thread, which then stops at its next check)."""

    at: float
    ended: bool = False

    def passed(self) -> bool:
        return self.ended or time.monotonic() > self.at


@dataclass
class _Window:
    head: list[str] = field(default_factory=list)
    """Formatted lines within the 200 KB cap."""
    rest: list[str] = field(default_factory=list)
    """Formatted lines past the cap (kept for the sidecar, up to its own cap)."""
    head_bytes: int = 0
    rest_bytes: int = 0
    first: int = 1
    last: int = 0
    total: int = 0
    counted: bool = True
    """False when the lines after the window were not counted (over COUNT_LIMIT_BYTES):
    ``total`` is then only the last line shown, and ``more`` says whether any follow."""
    more: bool = False
    crlf: bool = False
    bom: bool = False
    invalid_utf8: bool = False
    cut_lines: int = 0
    sources: dict[int, tuple[str, str]] | None = None
    """With a secret scan: each cut line of ``head`` by its index there, as (its text up to
    the margin past the cut, the cut notice), to be redacted with the lines around it."""


class ReadTool:
    """The read built-in over one workspace; session sidecar files are readable too."""

    spec = SPEC

    def __init__(
        self, workspace: Path, sessions: Sessions, readable: Callable[[Path], Action] | None = None
    ) -> None:
        self._fs = FsRoot(workspace)
        self._sessions = sessions
        self._readable = readable
        """The policy's verdict on reading a path, for a file's other names (hard links)."""
        self._links = LinkIndex(self._fs.root, readable) if readable is not None else None

    async def run(self, request: ExecRequest) -> ExecResult:
        args = request.arguments
        state = self._sessions.get(request.context.session_id)
        extra = [state.sidecar_dir] if state.sidecar_dir is not None else []
        path = self._fs.resolve(str(args["file_path"]), what="file_path", extra=extra)
        offset = int(args.get("offset") or 1)
        limit = int(args.get("limit") or DEFAULT_LIMIT)
        deadline = _Deadline(time.monotonic() + request.timeout_s)
        try:
            window = await anyio.to_thread.run_sync(
                self._read,
                path,
                offset,
                limit,
                extra,
                deadline,
                request.context.redact_cut,
                abandon_on_cancel=True,
            )
        except FileProblem as exc:
            return ExecResult(ok=False, error=str(exc))
        except TimeoutError:
            return ExecResult(
                ok=False,
                error=f"read timed out after {request.timeout_s:g}s skipping to line {offset} "
                f"of {self._fs.display(path)}; use a smaller offset, or grep for the lines "
                "you need",
                code=ErrorCode.EXEC_TIMEOUT,
            )
        finally:
            deadline.ended = True  # an abandoned thread (the call was cancelled) stops too
        if window.rest:  # the sidecar: up to 16 MB joined and written, off the event loop
            return await anyio.to_thread.run_sync(self._result, request, path, window, offset)
        return self._result(request, path, window, offset)

    def _read(
        self,
        path: Path,
        offset: int,
        limit: int,
        extra: Sequence[Path],
        deadline: _Deadline,
        redact: RedactCut | None,
    ) -> _Window:
        fd = self._fs.open_file(path, tool="read", extra=extra)
        with os.fdopen(fd, "rb") as handle:
            if self._links is not None and is_within(path, self._fs.root):
                stricter = self._links.stricter(path, os.fstat(handle.fileno()))
                if stricter is not None:
                    raise FileProblem(refusal(self._fs.display(path), stricter, self._fs.display))
            probe = handle.read(BINARY_PROBE_BYTES)
            if b"\0" in probe:
                raise FileProblem(
                    f"{self._fs.display(path)} is a binary file (a NUL byte in its first 4 KB); "
                    "read shows text files only"
                )
            window = _Window(first=offset, bom=probe.startswith(_BOM))
            if not probe:
                return window
            handle.seek(0)
            total_if_short = _skip_lines(handle, offset - 1, deadline)
            if total_if_short is not None:
                window.total = total_if_short
                return window
            window.last = offset - 1
            before: list[str] = []
            if redact is not None:
                window.sources = {}
                before = _lines_before(handle)
            _take_lines(handle, window, offset, limit, deadline)
            if redact is not None:
                _redact_head(window, redact, before, _lines_after(handle, window))
            left = os.fstat(handle.fileno()).st_size - handle.tell()
            if not window.counted:
                window.total = window.last
            elif left <= COUNT_LIMIT_BYTES:
                window.total = window.last + _count_rest(handle)
            else:
                window.counted = False
                window.total = window.last
                window.more = bool(handle.read(1))
        return window

    def _result(self, request: ExecRequest, path: Path, w: _Window, offset: int) -> ExecResult:
        shown = self._fs.display(path)
        if w.total == 0:
            return _done(
                {"file_path": shown, "content": "", "total_lines": 0, "note": "the file is empty"}
            )
        if offset > w.total:
            return ExecResult(
                ok=False,
                error=f"offset {offset} is past the end of {shown}: the file has {w.total} "
                f"lines; use an offset from 1 to {w.total}",
            )
        end = w.first + len(w.head) - 1
        more = end < w.total or w.more
        value: dict[str, Any] = {
            "file_path": shown,
            "content": "\n".join(w.head),
            "start_line": w.first,
            "end_line": end,
            "total_lines": w.total if w.counted else None,
        }
        notes: list[str] = []
        if more:
            value["next_offset"] = end + 1
        if w.crlf:
            value["line_endings"] = "crlf"
        if w.bom:
            value["bom"] = True
        if w.invalid_utf8:
            notes.append("the file is not valid UTF-8; undecodable bytes are shown as U+FFFD")
        if w.cut_lines:
            notes.append(f"{w.cut_lines} line(s) longer than {MAX_LINE_CHARS} characters were cut")
        if not w.counted:
            notes.append(
                f"total_lines is unknown: over {COUNT_LIMIT_BYTES // (1024 * 1024)} MB follow "
                "the lines shown, and they were not read just to count them"
            )
        if not w.rest:
            if more:
                of = f" of {w.total}" if w.counted else ""
                notes.append(f"showing lines {w.first}-{end}{of}; continue with offset={end + 1}")
            if notes:
                value["note"] = "; ".join(notes)
            return _done(value)
        sidecar = "\n".join(w.head + w.rest).encode("utf-8", "replace")
        kept = self._sessions.get(request.context.session_id).write_sidecar("read", sidecar)
        notes.append(
            f"output capped at 200 KB: lines {w.first}-{end} shown of the requested "
            f"{w.first}-{w.last}; continue with offset={end + 1} (and a smaller limit)"
            + (f", or read the whole requested range from {kept}" if kept else "")
        )
        value["note"] = "; ".join(notes)
        return _done(value, truncated=True, output_path=str(kept) if kept is not None else None)


def _done(
    value: dict[str, Any], *, truncated: bool = False, output_path: str | None = None
) -> ExecResult:
    """The result: the numbered lines as the model's text (the anchors' form: no JSON
    escaping of tabs, quotes and newlines), notes after a blank line; the value as is."""
    text = value["content"]
    if value.get("note"):
        text = f"{text}\n\n({value['note']})" if text else f"({value['note']})"
    return ExecResult(
        ok=True,
        value=value,
        text=text,
        truncated=truncated,
        output_path=output_path,
    )


def _skip_lines(handle: IO[bytes], count: int, deadline: _Deadline) -> int | None:
    """Move past ``count`` lines. None when done; the file's line count when it is shorter.
    Raises TimeoutError past ``deadline`` (checked between chunks). One buffer is read into
    again and again: a fresh megabyte per chunk would be mapped and unmapped each time."""
    seen = 0
    last = b"\n"
    buffer = bytearray(_CHUNK)
    view = memoryview(buffer)
    while seen < count:
        if deadline.passed():
            raise TimeoutError
        start = handle.tell()
        size = handle.readinto(view)  # type: ignore[attr-defined]
        if not size:
            return seen + (0 if last == b"\n" else 1)
        last = bytes(buffer[size - 1 : size])
        found = buffer.count(b"\n", 0, size)
        if seen + found < count:
            seen += found
            continue
        index = -1
        for _ in range(count - seen):
            index = buffer.index(b"\n", index + 1, size)
        handle.seek(start + index + 1)
        return None
    return None


def _take_lines(
    handle: IO[bytes], window: _Window, offset: int, limit: int, deadline: _Deadline
) -> None:
    number = offset
    while number < offset + limit:
        head = handle.readline(_HEAD_BYTES)
        if not head:
            return
        whole = ""
        ended = head.endswith(b"\n")
        if not ended and window.sources is not None:
            head += handle.readline(CUT_MARGIN_CHARS)  # the margin past the cut, to scan
            ended = head.endswith(b"\n")
        total_bytes = len(head)
        if not ended:
            # A line is skipped only as far as the count would be taken: past that its size is
            # a lower bound, the window ends with it, and what follows it is not known.
            skipped, ended = _skip_rest_of_line(handle, deadline, COUNT_LIMIT_BYTES)
            total_bytes += skipped
            if not ended:
                window.counted, window.more, whole = False, True, "over "
        if number == 1 and head.startswith(_BOM):
            head = head[len(_BOM) :]
        body = head.rstrip(b"\n")
        if body.endswith(b"\r"):
            window.crlf = True
            body = body[:-1]
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            text = body.decode("utf-8", "replace")
            window.invalid_utf8 = window.invalid_utf8 or total_bytes <= _HEAD_BYTES
        notice = ""
        if len(text) > MAX_LINE_CHARS or total_bytes > _HEAD_BYTES:
            window.cut_lines += 1
            notice = (
                f"… [line cut at {MAX_LINE_CHARS} characters; "
                f"the whole line is {whole}{total_bytes} bytes]"
            )
        in_head = _add(window, f"{number:>6}\t{text[:MAX_LINE_CHARS]}{notice}")
        if in_head and notice and window.sources is not None:
            kept = text[: MAX_LINE_CHARS + CUT_MARGIN_CHARS]
            window.sources[len(window.head) - 1] = (kept, notice)
        window.last = number
        number += 1
        if not window.counted:
            return


def _add(window: _Window, line: str) -> bool:
    """Add a formatted line to the head, else to the rest; True when it went to the head."""
    size = len(line.encode("utf-8", "replace")) + 1
    if not window.rest and window.head_bytes + size <= MAX_OUTPUT_BYTES:
        window.head.append(line)
        window.head_bytes += size
        return True
    if window.rest_bytes + size <= MAX_SIDECAR_BYTES:
        window.rest.append(line)
        window.rest_bytes += size
    return False


def _decoded(line: bytes) -> str:
    return line.rstrip(b"\r").decode("utf-8", "replace")


def _lines_before(handle: IO[bytes]) -> list[str]:
    """Up to the margin of lines before the handle's position (the start of a line), which
    stays where it was."""
    at = handle.tell()
    if at == 0:
        return []
    start = max(0, at - CUT_MARGIN_CHARS)
    handle.seek(start)
    data = handle.read(at - start)
    handle.seek(at)
    if start == 0 and data.startswith(_BOM):
        data = data[len(_BOM) :]
    lines = data.split(b"\n")[:-1]  # it ends with the newline before the window
    if start > 0:
        lines = lines[1:]  # the first is a part of a line
    return [_decoded(line) for line in lines[-CUT_MARGIN_LINES:]]


def _lines_after(handle: IO[bytes], window: _Window) -> list[str]:
    """Up to the margin of lines after the window: those past the 200 KB cap (kept for the
    sidecar), then those after the handle's position, which stays where it was."""
    kept = [line.partition("\t")[2] for line in window.rest[:CUT_MARGIN_LINES]]
    if len(kept) >= CUT_MARGIN_LINES or not window.counted:
        return kept
    at = handle.tell()
    if at >= os.fstat(handle.fileno()).st_size:  # the end of the file: nothing follows
        return kept
    data = handle.read(CUT_MARGIN_CHARS)
    handle.seek(at)
    return kept + [_decoded(line) for line in data.split(b"\n")[: CUT_MARGIN_LINES - len(kept)]]


def _redact_head(window: _Window, redact: RedactCut, before: list[str], after: list[str]) -> None:
    """Redact the lines the window shows with the lines around it (see the module doc). A
    window that shows the whole file, no line cut, is left as it is."""
    if not window.head or (not before and not window.sources and not any(after)):
        return
    cut = window.sources or {}
    lines = []  # (number, its text, as far as it was read, and its cut notice)
    for index, line in enumerate(window.head):
        number, _, text = line.partition("\t")
        lines.append((number, *cut.get(index, (text, ""))))
    spans: list[tuple[int, int]] = []
    at = sum(len(line) + 1 for line in before)
    for _, text, _ in lines:
        spans.append((at, at + min(len(text), MAX_LINE_CHARS)))
        at += len(text) + 1
    context = "\n".join([*before, *(text for _, text, _ in lines), *after])
    shown = redact(context, spans)
    window.head = [
        f"{number}\t{text}{notice}" for (number, _, notice), text in zip(lines, shown, strict=True)
    ]


def _skip_rest_of_line(
    handle: IO[bytes], deadline: _Deadline, at_most: int | None
) -> tuple[int, bool]:
    """Read past the rest of a line: (bytes skipped, whether its end was reached) — not
    reached when ``at_most`` bytes were skipped first. TimeoutError past ``deadline``."""
    skipped = 0
    while at_most is None or skipped < at_most:
        if deadline.passed():
            raise TimeoutError
        part = handle.readline(_CHUNK)
        skipped += len(part)
        if not part or part.endswith(b"\n"):
            return skipped, True
    return skipped, False


def _count_rest(handle: IO[bytes]) -> int:
    """Lines after the current position (a last line without a newline counts)."""
    lines = 0
    last = b"\n"
    buffer = bytearray(_CHUNK)
    view = memoryview(buffer)
    while size := handle.readinto(view):  # type: ignore[attr-defined]
        lines += buffer.count(b"\n", 0, size)
        last = bytes(buffer[size - 1 : size])
    return lines + (0 if last == b"\n" else 1)
