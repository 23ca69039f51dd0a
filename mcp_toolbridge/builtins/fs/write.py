"""write: create or overwrite a file in the workspace, atomically.

The content is written exactly as given (UTF-8; no line-ending or BOM conversion). Missing
parent folders are created; the file is replaced by rename (see :mod:`atomic`), keeping an
existing file's permission bits. write and edit share per-path locks.

A secret in what a tool returns reaches the model as ``[REDACTED:<rule-id>]`` (leaks/): read of
a file that holds one shows the marker. Content in which a marker occurs more often than the
existing file holds it as text is refused (:func:`check_markers`): written back whole, the
file would lose the secret to the marker. A new file, or a file that holds the marker text
itself (a document about redaction), is written as usual.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import anyio.to_thread

from mcp_toolbridge.builtins.fs.atomic import WritingTool, atomic_write, make_parents
from mcp_toolbridge.builtins.fs.paths import FileProblem, FsRoot
from mcp_toolbridge.builtins.fs.write_spec import SPEC as SPEC  # the tool's own, as before
from mcp_toolbridge.executors import ExecRequest, ExecResult
from mcp_toolbridge.leaks import count_markers, markers_in

READ_CHUNK_BYTES = 1 << 20
MARKER_START = "[REDACTED:"


class WriteTool(WritingTool):
    """The write built-in over one workspace."""

    spec = SPEC

    async def run(self, request: ExecRequest) -> ExecResult:
        path = self._fs.resolve(str(request.arguments["file_path"]), what="file_path")
        content = str(request.arguments["content"])
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError as exc:
            return ExecResult(
                ok=False,
                error=f"content has an unpaired surrogate (U+{ord(exc.object[exc.start]):04X}) "
                f"at offset {exc.start}; it cannot be written as UTF-8",
            )
        async with self._locks.hold(path):
            try:
                created = await anyio.to_thread.run_sync(self._write, path, data, content)
            except FileProblem as exc:
                return ExecResult(ok=False, error=str(exc))
        lines = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
        shown = self._fs.display(path)
        verb = "Created" if created else "Overwrote"
        return ExecResult(
            ok=True,
            value={
                "file_path": shown,
                "bytes_written": len(data),
                "lines": lines,
                "created": created,
            },
            text=f"{verb} {shown}: {lines} line(s), {len(data)} bytes.",
        )

    def _write(self, path: Path, data: bytes, content: str) -> bool:
        if MARKER_START in content:
            check_markers(self._fs, path, content)
        make_parents(self._fs, path)
        return atomic_write(self._fs, path, data)


def check_markers(fs: FsRoot, path: Path, content: str) -> None:
    """FileProblem when ``content`` holds a redaction marker more often than the regular file
    at ``path`` holds it as text (see the module doc); nothing for a new file."""
    wanted = markers_in(content)
    if not wanted:
        return
    try:
        info = os.lstat(path)
    except OSError:  # a new file (or atomic_write says what is wrong with the path)
        return
    if not stat.S_ISREG(info.st_mode):
        return
    fd = fs.open_file(path, tool="write")
    with os.fdopen(fd, "rb") as handle:
        held = count_markers(iter(lambda: handle.read(READ_CHUNK_BYTES), b""), wanted)
    extra = {item: n for item, n in sorted(wanted.items()) if n > held[item]}
    if not extra:
        return
    shown = fs.display(path)
    counts = ", ".join(
        f"{item} {n} time{'s' if n != 1 else ''} (the file: {held[item]})"
        for item, n in extra.items()
    )
    raise FileProblem(
        f"nothing was written: content holds {counts}. A marker like "
        f"{next(iter(extra))} is not text of {shown}: it stands for a secret the file holds, "
        "redacted before you were shown the file. Writing the content would replace that "
        f"secret with the marker and lose it. Change {shown} with edit instead, one change at "
        "a time: old_string and new_string hold only the text you change and never a marker "
        "(old_string may end just before one or begin just after it), so the secrets stay as "
        "they are. (To add the marker text itself to a file, use edit: its new_string may "
        "hold one.)"
    )
