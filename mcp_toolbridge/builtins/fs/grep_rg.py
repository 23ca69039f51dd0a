"""grep's ripgrep engine: the same :class:`GrepRun` as the Python engine, from ``rg``.

rg runs through :func:`mcp_toolbridge.executors.subprocess.run_process` (its own process group,
bounded output, killed at the deadline, inside the grep call's OS sandbox) with a fixed argv:
``--no-config`` (no ``RIPGREP_CONFIG_PATH``), ``-e PATTERN`` and ``--glob=VALUE`` as single
items, ``--`` before the path, never ``--pre`` or ``--follow``. Its ignore handling is made
to match the Python engine: hidden files searched, ``.git`` skipped, .gitignore applied
without requiring a git repository, no global or ``.ignore`` files, files over 10 MB skipped.

The pattern follows Python's ``re`` syntax whichever engine runs: it is compiled with ``re``
first (an invalid one is the same error on both engines), and one that ``re`` accepts but rg
cannot parse (look-around, backreferences, a line break without multiline, ...) raises
:class:`PatternUnsupported` so the caller runs the Python engine instead. Files that hold a NUL
byte anywhere are dropped from rg's results, as the Python engine never searches them (rg
alone keeps the matches found before the NUL).

rg's JSON output cannot be bounded per line (``--max-columns`` does not apply to it), and one
long line with many matches (a 5 MB line of ``x`` searched for ``xxx``: about 100 MB of
submatches) overflows ``MAX_RG_OUTPUT_BYTES``. In content and count modes that raises
:class:`OutputOverflow` and the caller runs the Python engine instead, which holds the file
whole (up to 10 MB) and gives the complete answer: never a false "no matches".

Exit status: 0 matches, 1 none, 2 an error. Exit 2 with no output is an error (rg's message is
shown); exit 2 with output means some paths could not be read, and the results say so.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import anyio.to_thread

from mcp_toolbridge.builtins.fs.grep_engine import (
    MAX_COLLECTED_LINES,
    FileHits,
    GrepQuery,
    GrepRun,
    SearchTimeout,
    compile_pattern,
    is_binary,
)
from mcp_toolbridge.builtins.fs.walk import IgnoreOracle, PathGlob
from mcp_toolbridge.errors import ExecError
from mcp_toolbridge.executors import run_process
from mcp_toolbridge.policy import is_within
from mcp_toolbridge.sandbox import Confinement

MAX_RG_OUTPUT_BYTES = 32 * 1024 * 1024
_FIXED = (
    "--no-config",
    "--hidden",
    "--no-require-git",
    "--no-ignore-global",
    "--no-ignore-dot",
    "--glob=!.git",
    "--max-filesize=10M",
)


_PARSE_ERRORS = ("regex parse error", "error parsing", "is not allowed in a regex")


class PatternUnsupported(Exception):
    """rg cannot parse a pattern that Python's ``re`` accepts; run the Python engine."""


class OutputOverflow(Exception):
    """rg's JSON output passed MAX_RG_OUTPUT_BYTES; run the Python engine."""


def find_rg() -> str | None:
    """The absolute path of ``rg`` on PATH, or None."""
    found = shutil.which("rg")
    return os.path.realpath(found) if found else None


def rg_argv(rg: str, query: GrepQuery) -> list[str]:
    argv = [rg, *_FIXED]
    if query.mode == "files_with_matches":
        argv += ["--files-with-matches", "--null"]
    else:
        argv.append("--json")
        if query.context:
            argv.append(f"--context={query.context}")
    if query.case_insensitive:
        argv.append("--ignore-case")
    if query.multiline:
        argv += ["--multiline", "--multiline-dotall"]
    if query.ignore_base is None:
        argv.append("--no-ignore")
    argv += [f"--glob={glob}" for glob in query.globs]
    argv += ["-e", query.pattern, "--", str(query.root)]
    return argv


async def rg_search(
    rg: str, query: GrepQuery, timeout_s: float, sandbox: Confinement | None
) -> GrepRun:
    compile_pattern(query)  # Python's syntax decides what is valid, for both engines
    cwd = query.root if query.root.is_dir() else query.root.parent
    outcome = await run_process(
        rg_argv(rg, query),
        stdin=None,
        cwd=str(cwd),
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        timeout_s=timeout_s,
        sandbox=sandbox,
        max_output_bytes=MAX_RG_OUTPUT_BYTES,
    )
    stderr = outcome.stderr_tail.decode("utf-8", "replace").strip()
    stdout = outcome.stdout
    if outcome.exit_code not in (0, 1, 2):
        raise ExecError(
            f"ripgrep failed (exit {outcome.exit_code}, signal {outcome.signal}): {stderr}"
        )
    if outcome.exit_code == 2 and not stdout.strip():
        if any(marker in stderr for marker in _PARSE_ERRORS):
            raise PatternUnsupported(stderr)
        raise ExecError(f"ripgrep could not search {query.root}: {stderr or 'no message'}")
    run = GrepRun(engine="ripgrep", sandboxed=outcome.sandboxed)
    if outcome.stdout_truncated and query.mode != "files_with_matches":
        raise OutputOverflow(f"ripgrep printed over {MAX_RG_OUTPUT_BYTES} bytes")
    if outcome.stdout_truncated:
        stdout = stdout[: stdout.rfind(b"\n") + 1]
        run.partial = "ripgrep printed too much; the results are incomplete: narrow path or glob"
    if query.mode == "files_with_matches":
        run.files = [_hits(Path(os.fsdecode(p))) for p in stdout.split(b"\0") if p.strip()]
    else:
        run.files = _parse_json(stdout, run)
    if query.globs and query.root.is_dir():
        run.files = _refilter(run.files, query)
    run.files = await anyio.to_thread.run_sync(
        _text_files, run.files, query.deadline, abandon_on_cancel=True
    )
    if outcome.exit_code == 2 and run.partial is None:
        first = stderr.splitlines()[0] if stderr else ""
        run.partial = f"some paths were unreadable and were skipped ({first})"
    return run


def _refilter(files: list[FileHits], query: GrepQuery) -> list[FileHits]:
    """ripgrep lets --glob override .gitignore; keep the Python engine's meaning instead: the
    glob filters, and ignored files stay ignored."""
    matcher = PathGlob(list(query.globs))
    oracle = IgnoreOracle(query.ignore_base, query.root) if query.ignore_base else None
    kept: list[FileHits] = []
    for hits in files:
        if not is_within(hits.path, query.root):
            continue
        if not matcher.matches(hits.path.relative_to(query.root).as_posix()):
            continue
        if oracle is not None and oracle.ignored(hits.path):
            continue
        kept.append(hits)
    return kept


def _text_files(files: list[FileHits], deadline: float) -> list[FileHits]:
    """The files without a NUL byte (call it in a worker thread)."""
    kept: list[FileHits] = []
    for hits in files:
        if time.monotonic() > deadline:
            raise SearchTimeout
        if not is_binary(hits.path):
            kept.append(hits)
    return kept


def _hits(path: Path) -> FileHits:
    try:
        mtime = os.lstat(path).st_mtime
    except OSError:
        mtime = 0.0
    return FileHits(path, mtime)


def _text(field: dict[str, Any]) -> str:
    if "text" in field:
        return str(field["text"])
    return base64.b64decode(field.get("bytes", "")).decode("utf-8", "replace")


def _parse_json(stdout: bytes, run: GrepRun) -> list[FileHits]:
    files: dict[str, FileHits] = {}
    collected = 0
    for raw in stdout.splitlines():
        event = json.loads(raw)
        kind = event.get("type")
        if kind not in ("match", "context"):
            continue
        data = event["data"]
        name = _text(data["path"])
        hits = files.get(name)
        if hits is None:
            hits = files[name] = _hits(Path(name))
        text = _text(data["lines"])
        lines = text.split("\n")
        if text.endswith("\n"):
            lines.pop()
        number = int(data["line_number"])
        for offset, line in enumerate(lines):
            hits.add(number + offset, line.removesuffix("\r"), kind == "match")
        if kind == "match":
            collected += len(lines)
            if collected >= MAX_COLLECTED_LINES:
                run.partial = f"the search stopped after {collected} matching lines"
                break
    return list(files.values())
