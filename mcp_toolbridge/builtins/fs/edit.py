"""edit: replace an exact string in an existing file of the workspace.

Literal matching only (see :mod:`edit_text`); the UTF-8 BOM and the file's line endings are
kept; the file is replaced atomically (see :mod:`atomic`) under a per-path lock, so
concurrent edits of one file apply one after the other and none is lost.

When old_string matches nothing, the diagnostics (closest lines, hints) are worked out after
the lock is released, in a worker thread abandoned on cancellation, and within
``DIAGNOSE_SHARE`` of the call's timeout (at most ``MAX_DIAGNOSE_S``): past it the error says
what was found so far.

old_string holding a redaction marker (``[REDACTED:<rule-id>]``, leaks/) that the file does not
hold as text cannot match: the marker stands for a secret the file holds, redacted before the
model saw it. The error says so (instead of the closest lines) and how to leave it out.
new_string may hold markers: they are written as the text they are.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import anyio.to_thread

from mcp_toolbridge.builtins.fs import edit_text
from mcp_toolbridge.builtins.fs.atomic import WritingTool, atomic_write
from mcp_toolbridge.builtins.fs.edit_spec import SPEC as SPEC  # the tool's own, as before
from mcp_toolbridge.builtins.fs.paths import FileProblem
from mcp_toolbridge.executors import ExecRequest, ExecResult
from mcp_toolbridge.leaks import markers_in

MAX_EDIT_BYTES = 16 * 1024 * 1024
DIAGNOSE_SHARE = 0.5
MAX_DIAGNOSE_S = 5.0
BINARY_PROBE_BYTES = 4096


class EditTool(WritingTool):
    """The edit built-in over one workspace."""

    spec = SPEC

    async def run(self, request: ExecRequest) -> ExecResult:
        args = request.arguments
        path = self._fs.resolve(str(args["file_path"]), what="file_path")
        old = str(args["old_string"])
        new = str(args["new_string"])
        if old == "":
            return ExecResult(
                ok=False,
                error="old_string is empty; edit replaces existing text. To create a file or "
                "replace all of its content, use write",
            )
        if old == new:
            return ExecResult(
                ok=False,
                error="old_string and new_string are identical, so there is nothing to change",
            )
        replace_all = bool(args.get("replace_all", False))
        budget = min(request.timeout_s * DIAGNOSE_SHARE, MAX_DIAGNOSE_S)
        async with self._locks.hold(path):
            try:
                value = await anyio.to_thread.run_sync(self._edit, path, old, new, replace_all)
            except edit_text.NotFound as missing:
                not_found = missing
            except FileProblem as exc:
                return ExecResult(ok=False, error=str(exc))
            else:
                return ExecResult(ok=True, value=value, text=_text(value))
        return ExecResult(ok=False, error=await _diagnose(not_found, budget))

    def _edit(self, path: Path, old: str, new: str, replace_all: bool) -> dict[str, Any]:
        """Runs in a worker thread under the path's lock, never abandoned: it may write."""
        shown = self._fs.display(path)
        if not os.path.lexists(path):
            raise FileProblem(
                self._fs.missing_message(
                    shown, path, hint="edit changes existing files; use write to create one."
                )
            )
        info = self._fs.check_regular(path, tool="edit")
        if info.st_size > MAX_EDIT_BYTES:
            raise FileProblem(
                f"{shown} is {info.st_size} bytes, more than edit handles "
                f"({MAX_EDIT_BYTES // (1024 * 1024)} MB); change it another way"
            )
        fd = self._fs.open_file(path, tool="edit")
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(MAX_EDIT_BYTES + 1)
        if b"\0" in data[:BINARY_PROBE_BYTES]:
            raise FileProblem(
                f"{shown} is a binary file (a NUL byte in its first 4 KB); edit "
                "changes text files only"
            )
        decoded = edit_text.decode(data)
        replaced = edit_text.replace(decoded, old, new, replace_all=replace_all, shown=shown)
        atomic_write(self._fs, path, edit_text.encode(decoded, replaced.text))
        value: dict[str, Any] = {
            "file_path": shown,
            "replacements": replaced.count,
            "lines": list(replaced.lines),
            "diff": edit_text.short_diff(decoded.text, replaced.text, shown),
        }
        if decoded.style in ("crlf", "mixed"):
            value["line_endings"] = decoded.style
        if decoded.bom:
            value["bom"] = True
        if replaced.converted:
            value["note"] = "line breaks in old_string/new_string were matched and written as "
            value["note"] += "CRLF, like the file" if decoded.style != "lf" else "LF, like the file"
        return value


def _text(value: dict[str, Any]) -> str:
    """What the model reads: which lines changed, then the diff as a diff (not a JSON string)."""
    lines = ", ".join(map(str, value["lines"][:20])) + (", …" if len(value["lines"]) > 20 else "")
    count = value["replacements"]
    head = f"Edited {value['file_path']}: {count} replacement{'s' if count != 1 else ''}"
    text = f"{head} (line {lines})." if count == 1 else f"{head} (lines {lines})."
    if value.get("note"):
        text += f" Note: {value['note']}."
    return f"{text}\n{value['diff']}" if value.get("diff") else text


async def _diagnose(missing: edit_text.NotFound, budget_s: float) -> str:
    """The no-match error with its diagnostics, given ``budget_s`` seconds of a worker thread.

    The thread looks at the deadline itself, so an abandoned one (cancellation, or a single
    slow step) stops soon after."""
    deadline = time.monotonic() + budget_s
    with anyio.move_on_after(budget_s + 1.0):
        return await anyio.to_thread.run_sync(
            lambda: (
                _marker_message(missing)
                or edit_text.not_found_message(
                    missing.decoded, missing.old, missing.shown, deadline=deadline
                )
            ),
            abandon_on_cancel=True,
        )
    return (
        f"{missing}. It must match the file exactly, whitespace and indentation included; "
        "finding the closest lines took too long: read the file around the place you meant "
        "to edit."
    )


def _marker_message(missing: edit_text.NotFound) -> str | None:
    """The no-match error of an old_string holding a redaction marker more often than the
    file holds it as text; None for any other old_string."""
    if "[REDACTED:" not in missing.old:
        return None
    wanted = markers_in(missing.old)
    held = markers_in(missing.decoded.text) if wanted else wanted
    absent = sorted(item for item, n in wanted.items() if n > held[item])
    if not absent:
        return None
    them = " and ".join(absent)
    return (
        f"old_string was not found in {missing.shown}: it holds {them}, which is not text "
        "of the file. A marker like it stands for a secret the file holds, redacted before "
        "you were shown the file, so an old_string holding it never matches. Leave the "
        "marker out of old_string: match the text before or after it on its line (old_string "
        "may end just before the marker or begin just after it), or the lines around it, so "
        "the secret stays as it is."
    )
