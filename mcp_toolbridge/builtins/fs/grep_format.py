"""grep's output, the same for both engines: files newest first, capped at 200 entries.

Files are ordered by modification time, newest first (like glob), ties by path; lines within a
file by line number. Content lines look like ripgrep's: ``path:12:text`` for a matching line,
``path-13-text`` for a context line, ``--`` between separate groups. An entry is a file
(files_with_matches, count) or a matching line (content). Past 200 entries, the head is
returned and the full output goes to a sidecar file, which the note names; ``head_limit`` is a
limit the caller chose, so what it leaves out is only counted. With the secret scan on, the
content lines shown are redacted with the lines around them first (:mod:`grep_cut`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_toolbridge.builtins.fs.grep_cut import LineRedactor, Opener
from mcp_toolbridge.builtins.fs.grep_engine import FileHits, GrepRun, Mode
from mcp_toolbridge.builtins.fs.paths import QUOTED_NOTE, is_quoted
from mcp_toolbridge.builtins.fs.walk import hidden_note
from mcp_toolbridge.host import RedactCut

MAX_ENTRIES = 200
MAX_LINE_CHARS = 2000


@dataclass(frozen=True, slots=True)
class Formatted:
    value: dict[str, Any]
    text: str
    """What the model reads: the paths, the lines or the counts as ripgrep prints them, one
    per line, with the notes after a blank line."""
    output_path: str | None = None
    """The sidecar file holding the whole output, when the head was cut at the cap."""
    truncated: bool = False


Keep = Callable[[bytes], Path | None]
"""keep(data) -> the sidecar file now holding ``data``; None when it could not be kept."""


def format_run(
    run: GrepRun,
    mode: Mode,
    display: Callable[[Path], str],
    *,
    line_numbers: bool,
    context: int,
    head_limit: int | None,
    keep: Keep,
    redact: RedactCut | None = None,
    reopen: Opener | None = None,
) -> Formatted:
    """The value and the text of ``run``. Past the cap (not ``head_limit``), the whole output
    goes to ``keep`` and the note names the file, so a model reading the text alone can go on.
    With ``redact`` (the secret scan on), the content lines shown are redacted with the lines
    around them, read again through ``reopen`` (:mod:`grep_cut`). Blocking (sorting up to
    20,000 lines, reading files again, writing the sidecar): run it in a worker thread."""
    redactor = None
    if redact is not None and reopen is not None:
        redactor = LineRedactor(redact, reopen, MAX_LINE_CHARS)
    files = sorted(run.files, key=lambda f: (-f.mtime, display(f.path)))
    limit = head_limit if head_limit is not None else MAX_ENTRIES
    num_matches = sum(f.match_lines for f in files)
    value: dict[str, Any] = {
        "mode": mode,
        "num_files": len(files),
        "engine": run.engine,
    }
    if mode != "files_with_matches":
        value["num_matches"] = num_matches
    full: list[str]
    if mode == "files_with_matches":
        full = [display(f.path) for f in files]
        value["files"] = full[:limit]
        total, unit = len(full), "files"
    elif mode == "count":
        counts = [{"file": display(f.path), "count": f.match_lines} for f in files]
        value["counts"] = counts[:limit]
        full = [f"{c['file']}:{c['count']}" for c in counts]
        total, unit = len(counts), "files"
    else:
        full, cut_at = _content_lines(files, display, line_numbers, context, limit, redactor)
        value["content"] = "\n".join(full[:cut_at])
        total, unit = num_matches, "matching lines"
    notes: list[str] = []
    if total == 0:
        notes.append(
            "No matches found (files ignored by .gitignore, binary files and files "
            "over 10 MB are not searched)"
        )
    if run.partial:
        notes.append(f"results may be incomplete: {run.partial}")
    if any(is_quoted(display(f.path)) for f in files):
        notes.append(QUOTED_NOTE)
    if run.hidden:
        value["hidden_from_tools"] = run.hidden
        notes.append(hidden_note(run.hidden, "searched"))
    if run.withheld:
        value["withheld_by_policy"] = run.withheld
        notes.append(
            f"{run.withheld} matching file(s) withheld: the permission policy denies reading "
            "them or asks first (name such a file in path to be asked)"
        )
    cut = total > limit
    kept: Path | None = None
    if cut and head_limit is not None:
        notes.append(f"showing the first {limit} of {total} {unit} (head_limit={head_limit})")
    elif cut:
        kept = keep(("\n".join(full) + "\n").encode("utf-8", "replace"))
        where = (
            f"the full output is in {kept} (read it, or grep it with path set to that file)"
            if kept is not None
            else "the rest could not be kept (the session's file space is used up)"
        )
        notes.append(
            f"showing the first {limit} of {total} {unit}; {where}, or narrow the search with "
            "path, glob or head_limit"
        )
    if notes:
        value["note"] = "; ".join(notes)
    truncated = cut and head_limit is None
    return Formatted(value, _text(value), str(kept) if kept else None, truncated)


def _text(value: dict[str, Any]) -> str:
    if value["mode"] == "files_with_matches":
        body = "\n".join(value["files"])
        head = f"Found {value['num_files']} file(s)"
    elif value["mode"] == "count":
        body = "\n".join(f"{c['file']}:{c['count']}" for c in value["counts"])
        head = f"Found {value['num_matches']} matching line(s) in {value['num_files']} file(s)"
    else:
        body = value["content"]
        head = ""
    if value["num_files"] == 0:
        return f"({value['note']})" if value.get("note") else "No matches found"
    parts = [part for part in (head, body) if part]
    if value.get("note"):
        parts.append(f"\n({value['note']})")
    return "\n".join(parts)


def _content_lines(
    files: list[FileHits],
    display: Callable[[Path], str],
    line_numbers: bool,
    context: int,
    limit: int,
    redactor: LineRedactor | None = None,
) -> tuple[list[str], int]:
    """Every output line, and how many of them form the head: up to the ``limit``-th matching
    line plus its after-context (its lines redacted by ``redactor``)."""
    out: list[str] = []
    kinds: list[str] = []
    matches = 0
    for hits in files:
        shown = display(hits.path)
        redacted = redactor.lines(hits) if redactor is not None and matches < limit else {}
        matches += hits.match_lines
        previous: int | None = None
        if out and context:
            out.append("--")
            kinds.append("sep")
        for number in sorted(hits.lines):
            text, is_match = hits.lines[number]
            if previous is not None and number > previous + 1:
                out.append("--")
                kinds.append("sep")
            previous = number
            cut = len(text) > MAX_LINE_CHARS
            text = redacted.get(number, text[:MAX_LINE_CHARS])
            if cut:
                text = f"{text}… [line cut at {MAX_LINE_CHARS} characters]"
            sep = ":" if is_match else "-"
            out.append(
                f"{shown}{sep}{number}{sep}{text}" if line_numbers else f"{shown}{sep}{text}"
            )
            kinds.append("match" if is_match else "context")
    match_positions = [i for i, kind in enumerate(kinds) if kind == "match"]
    if len(match_positions) <= limit:
        return out, len(out)
    cut_at = match_positions[limit - 1] + 1 if limit else 0
    after = 0
    while limit and cut_at < len(out) and kinds[cut_at] == "context" and after < context:
        cut_at += 1
        after += 1
    return out, cut_at
