"""glob and grep: find files by name pattern and by content, inside the workspace.

Both respect .gitignore (see :mod:`gitignore`), always skip ``.git``, never follow symlinks and
order files by modification time, newest first (ties by path). glob lists up to 1000 paths,
grep up to 200 entries; past that the head is returned and the rest goes to a sidecar file
(``truncated`` and ``output_path``). Paths are shown relative to the workspace root.

Given the policy's read verdict (:mod:`visibility`), both withhold the paths it refuses and
say how many (``withheld_by_policy``), never which. Neither lists or searches what no sandbox
shows (the call's sandbox's masks: ``serve --record``'s folder, the server's cache folder, the
secret paths, the policy's masks), whichever engine runs, and both say how many such paths
lie in the folder searched (``hidden_from_tools``).
"""

from __future__ import annotations

import functools
import os
import threading
import time
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.to_thread

from mcp_toolbridge.builtins.fs import grep_rg
from mcp_toolbridge.builtins.fs.glob_grep_specs import GLOB_SPEC, GREP_SPEC
from mcp_toolbridge.builtins.fs.grep_child import MAX_FILE_BYTES
from mcp_toolbridge.builtins.fs.grep_engine import (
    MAX_COLLECTED_LINES,
    GrepQuery,
    GrepRun,
    InvalidPattern,
    Mode,
    SearchTimeout,
    backtrack_search,
    local_search,
)
from mcp_toolbridge.builtins.fs.grep_format import format_run
from mcp_toolbridge.builtins.fs.paths import QUOTED_NOTE, FileProblem, FsRoot, is_quoted
from mcp_toolbridge.builtins.fs.visibility import GrepVisibility, ReadVerdict, ResultFilter
from mcp_toolbridge.builtins.fs.walk import (
    NOTHING_HIDDEN,
    HiddenPaths,
    IgnoreOracle,
    PathGlob,
    WalkReport,
    hidden_note,
    hidden_paths,
    walk_files,
)
from mcp_toolbridge.builtins.session import Sessions
from mcp_toolbridge.errors import ArgumentsError, ErrorCode, ExecTimeoutError
from mcp_toolbridge.executors import ExecRequest, ExecResult
from mcp_toolbridge.policy import check_text, glob_literal, is_within, split_glob

MAX_GLOB_ENTRIES = 1000
MAX_GLOB_COLLECTED = 100_000
MAX_GLOB_WALK = 500_000
MAX_IGNORED_DIRS_SHOWN = 10
DEADLINE_SHARE = 0.9
"""The part of the call's timeout a search may use; the rest is left to report."""

Engine = Literal["auto", "ripgrep", "python"]


def _folder(fs: FsRoot, raw: str, *, extra: list[Path] | None = None) -> Path:
    root = fs.resolve(raw, what="path", extra=extra or [])
    if not root.exists():
        raise FileProblem(fs.missing_message(raw, root).replace("file not found", "path not found"))
    return root


def _hidden(request: ExecRequest) -> HiddenPaths:
    """What the call's sandbox hides (which the gate gives every call of a server, whatever
    ``--sandbox`` says; None only for a bare bridge): its masks, but one the tool is granted
    by name."""
    if request.sandbox is None:
        return NOTHING_HIDDEN
    profile = request.sandbox.profile
    return hidden_paths(request.sandbox.sandbox.masks, (*profile.read, *profile.write))


class GlobTool:
    """The glob built-in: files under a workspace folder whose path matches a pattern."""

    spec = GLOB_SPEC

    def __init__(
        self, workspace: Path, sessions: Sessions, *, readable: ReadVerdict | None = None
    ) -> None:
        self._fs = FsRoot(workspace)
        self._sessions = sessions
        self._readable = readable

    async def run(self, request: ExecRequest) -> ExecResult:
        args = request.arguments
        pattern = str(args["pattern"])
        check_text(pattern, what="pattern")
        raw_path = str(args.get("path") or ".")
        workspace = self._fs.root.as_posix().rstrip("/") + "/"
        if pattern.startswith(workspace):  # the workspace's own name is never a wildcard
            raw_path, pattern = self._fs.root.as_posix(), pattern[len(workspace) :]
        if pattern.startswith("/"):
            literal, rest = split_glob(pattern)
            raw_path, pattern = (
                (literal, "/" + rest)
                if rest
                else (os.path.dirname(literal), "/" + os.path.basename(literal))
            )
        if ".." in pattern.split("/"):
            raise ArgumentsError("the pattern must not contain '..'; set path to another folder")
        include_ignored = bool(args.get("include_ignored", False))
        deadline = time.monotonic() + request.timeout_s * DEADLINE_SHARE
        stop = threading.Event()
        try:
            root = _folder(self._fs, raw_path)
            if not root.is_dir():
                raise FileProblem(
                    f"glob path must be a directory: {self._fs.display(root)} is a file "
                    "(use read to see it)"
                )
            matcher = PathGlob([pattern])
            shown = ResultFilter.for_glob(self._readable) if self._readable else None
            found = await anyio.to_thread.run_sync(
                self._walk,
                root,
                pattern,
                matcher,
                include_ignored,
                deadline,
                shown,
                stop,
                _hidden(request),
                abandon_on_cancel=True,  # the walk stops at its deadline, or once stop is set
            )
        except (FileProblem, ValueError) as exc:
            return ExecResult(ok=False, error=str(exc))
        except TimeoutError as exc:
            return ExecResult(ok=False, error=str(exc), code=ErrorCode.EXEC_TIMEOUT)
        finally:
            stop.set()
        withheld = shown.withheld if shown is not None else 0
        # Sorting up to 100,000 paths and writing the sidecar: off the event loop.
        return await anyio.to_thread.run_sync(
            functools.partial(
                self._result, request, *found, include_ignored=include_ignored, withheld=withheld
            )
        )

    def _walk(
        self,
        root: Path,
        pattern: str,
        matcher: PathGlob,
        include_ignored: bool,
        deadline: float,
        shown: ResultFilter | None,
        stop: threading.Event,
        unseen: HiddenPaths,
    ) -> tuple[list[tuple[float, str]], int, WalkReport, Path]:
        walk_root, prefix = _literal_start(root, pattern)
        if walk_root not in (None, root) and not include_ignored:
            oracle = IgnoreOracle(self._fs.root, root)
            if oracle.ignored(walk_root, is_dir=True):
                walk_root, prefix = root, ""  # the walk reports the ignored folder
        report = WalkReport()
        found: list[tuple[float, str]] = []
        hidden = 0
        if walk_root is None:
            return found, hidden, report, root
        held = unseen.holding(walk_root)
        report.hidden = 1 if held is not None else len(unseen.below(walk_root))
        if held is not None:
            return found, hidden, report, walk_root
        for entry in walk_files(
            walk_root,
            ignore_base=None if include_ignored else self._fs.root,
            report=report,
            deadline=deadline,
            max_entries=MAX_GLOB_WALK,
            stop=stop,
            hidden=unseen.by_folder,
        ):
            rel = f"{prefix}/{entry.rel}" if prefix else entry.rel
            if not matcher.matches(rel):
                continue
            if entry.ignored:
                hidden += 1
            elif shown is not None and not shown.keep(entry.path):
                continue
            elif len(found) < MAX_GLOB_COLLECTED:
                found.append((entry.mtime, self._fs.display(entry.path)))
        if report.stopped == "deadline":
            raise TimeoutError(
                f"glob timed out after {report.entries} entries; narrow the pattern or set path"
            )
        return found, hidden, report, walk_root

    def _result(
        self,
        request: ExecRequest,
        found: list[tuple[float, str]],
        hidden: int,
        report: WalkReport,
        walk_root: Path,
        *,
        include_ignored: bool,
        withheld: int,
    ) -> ExecResult:
        found.sort(key=lambda item: (-item[0], item[1]))
        paths = [shown for _, shown in found]
        value: dict[str, Any] = {"files": paths[:MAX_GLOB_ENTRIES], "num_files": len(paths)}
        notes: list[str] = []
        if not paths:
            notes.append("No files found")
        if not include_ignored:
            value["hidden_by_gitignore"] = hidden
            ignored = [self._fs.display(walk_root / d) for d in report.ignored_dirs]
            if ignored:
                value["ignored_dirs"] = ignored[:MAX_IGNORED_DIRS_SHOWN]
            if hidden or ignored:
                named = ", ".join(ignored[:MAX_IGNORED_DIRS_SHOWN])
                more = ", …" if len(ignored) > MAX_IGNORED_DIRS_SHOWN else ""
                notes.append(
                    f"{hidden} matching file(s) hidden by .gitignore"
                    + (
                        f" and {len(ignored)} ignored folder(s) not searched ({named}{more})"
                        if ignored
                        else ""
                    )
                    + "; pass include_ignored: true to include them"
                )
        if withheld:
            value["withheld_by_policy"] = withheld
            notes.append(
                f"{withheld} matching file(s) withheld: the permission policy denies reading them"
            )
        if report.hidden:
            value["hidden_from_tools"] = report.hidden
            notes.append(hidden_note(report.hidden, "listed"))
        if report.stopped == "limit":
            notes.append(f"the walk stopped after {MAX_GLOB_WALK} entries; narrow the search")
        if any(is_quoted(shown) for shown in paths):
            notes.append(QUOTED_NOTE)
        truncated = len(paths) > MAX_GLOB_ENTRIES
        output_path = None
        if truncated:
            data = ("\n".join(paths) + "\n").encode("utf-8", "replace")
            state = self._sessions.get(request.context.session_id)
            kept = state.write_sidecar("glob", data)
            output_path = str(kept) if kept is not None else None
            notes.append(
                f"showing the newest {MAX_GLOB_ENTRIES} of {len(paths)} files"
                + (f"; the full list is in {kept} (read it with offset)" if kept else "")
                + "; narrow the pattern or set path to see fewer"
            )
        if notes:
            value["note"] = "; ".join(notes)
        text = "\n".join(value["files"])
        if notes:
            text = f"{text}\n\n({value['note']})" if text else f"({value['note']})"
        return ExecResult(
            ok=True, value=value, text=text, truncated=truncated, output_path=output_path
        )


def _literal_start(root: Path, pattern: str) -> tuple[Path | None, str]:
    """Start the walk at the pattern's literal leading folders (``src/`` of ``src/**/*.py``).

    None when that folder is missing or is reached through a symlink (never followed).
    """
    parts = pattern.lstrip("/").split("/")
    if len(parts) < 2 and not pattern.startswith("/"):
        return root, ""
    lead: list[str] = []
    for part in parts[:-1]:
        text = glob_literal(part)
        if text is None or "{" in part or not part or part == ".":
            break
        lead.append(text)
    if not lead:
        return root, ""
    start = root.joinpath(*lead)
    if not start.is_dir() or Path(os.path.realpath(start)) != start:
        return None, ""
    return start, "/".join(lead)


class GrepTool:
    """The grep built-in: ripgrep when available (or chosen), Python ``re`` otherwise."""

    spec = GREP_SPEC

    def __init__(
        self,
        workspace: Path,
        sessions: Sessions,
        engine: Engine = "auto",
        *,
        readable: ReadVerdict | None = None,
    ) -> None:
        self._fs = FsRoot(workspace)
        self._sessions = sessions
        self._engine = engine
        self._shown = GrepVisibility(readable, self._fs.root) if readable is not None else None
        if engine == "ripgrep" and grep_rg.find_rg() is None:
            raise ValueError("engine='ripgrep' needs rg on PATH")

    async def run(self, request: ExecRequest) -> ExecResult:
        args = request.arguments
        pattern = str(args["pattern"])
        if "\0" in pattern:
            raise ArgumentsError("the pattern contains a NUL character; write \\x00 to match one")
        globs = tuple(str(g) for g in ([args["glob"]] if args.get("glob") else []))
        for glob in globs:
            check_text(glob, what="glob")
        state = self._sessions.get(request.context.session_id)
        extra = [state.sidecar_dir] if state.sidecar_dir is not None else []
        mode: Mode = args.get("output_mode") or "files_with_matches"
        context = int(args.get("context") or 0) if mode == "content" else 0
        head_limit = args.get("head_limit")
        stop = threading.Event()  # set when the call ends: an abandoned thread stops too
        unseen = _hidden(request)
        try:
            root = _folder(self._fs, str(args.get("path") or "."), extra=extra)
            if not root.is_dir():
                self._fs.check_regular(root, tool="grep")
            query = GrepQuery(
                pattern=pattern,
                mode=mode,
                root=root,
                ignore_base=self._fs.root if is_within(root, self._fs.root) else None,
                globs=globs,
                case_insensitive=bool(args.get("case_insensitive", False)),
                multiline=bool(args.get("multiline", False)),
                context=context,
                deadline=time.monotonic() + request.timeout_s * DEADLINE_SHARE,
                stop=stop,
                hidden=unseen.by_folder,
            )
            run = await self._search(query, request, unseen)
            if self._shown is not None and query.ignore_base is not None:
                await anyio.to_thread.run_sync(_withhold, run, self._shown.filter(root))
        except FileProblem as exc:
            return ExecResult(ok=False, error=str(exc))
        except InvalidPattern as exc:
            return ExecResult(
                ok=False,
                error=f"{exc}. Fix the pattern; escape characters meant literally, such as "
                "( ) [ ] { } . * + ? |, with a backslash",
            )
        except (SearchTimeout, ExecTimeoutError, TimeoutError):
            return ExecResult(
                ok=False,
                error=f"grep timed out after {request.timeout_s * DEADLINE_SHARE:g}s without "
                "finishing; narrow the search with path or glob, or simplify the pattern",
                code=ErrorCode.EXEC_TIMEOUT,
            )
        finally:
            stop.set()
        shape = functools.partial(
            format_run,
            run,
            mode,
            self._fs.display,
            line_numbers=bool(args.get("line_numbers", True)),
            context=context,
            head_limit=int(head_limit) if head_limit is not None else None,
            keep=functools.partial(state.write_sidecar, "grep"),
            redact=request.context.redact_cut if mode == "content" else None,
            reopen=functools.partial(self._fs.open_file, tool="grep", extra=extra),
        )
        formatted = await anyio.to_thread.run_sync(shape)  # up to 20,000 lines: off the loop
        return ExecResult(
            ok=True,
            value=formatted.value,
            text=formatted.text,
            truncated=formatted.truncated,
            output_path=formatted.output_path,
            sandboxed=run.sandboxed,
        )

    async def _search(self, query: GrepQuery, request: ExecRequest, unseen: HiddenPaths) -> GrepRun:
        """The search, leaving out what no sandbox shows: a folder or file inside it is not
        searched; inside the folder searched, the walk leaves it out, and rg's results (rg
        sees it when it runs unsandboxed) are filtered."""
        if unseen.holding(query.root) is not None:
            return GrepRun(hidden=1)
        below = unseen.below(query.root)
        run = await self._engines(query, request)
        if below:
            run.files = [hits for hits in run.files if unseen.holding(hits.path) is None]
            run.hidden = len(below)
        return run

    async def _engines(self, query: GrepQuery, request: ExecRequest) -> GrepRun:
        """Search with rg, else RE2, else Python ``re`` in a child; the processes run in the
        call's OS sandbox, which also shows them the searched folder."""
        timeout_s = request.timeout_s * DEADLINE_SHARE
        sandbox = request.sandbox.with_read(query.root) if request.sandbox is not None else None
        if query.root.is_file():
            skipped = _skip_reason(query.root)
            if skipped:
                run = GrepRun(engine="python")
                run.partial = f"{self._fs.display(query.root)} {skipped}"
                return run
        rg = grep_rg.find_rg() if self._engine != "python" else None
        if rg is not None:
            try:
                return await grep_rg.rg_search(rg, query, timeout_s, sandbox)
            except (grep_rg.PatternUnsupported, grep_rg.OutputOverflow):
                pass  # a pattern rg cannot parse, or output it cannot bound: Python runs it
        with anyio.fail_after(max(query.deadline - time.monotonic(), 0.0) + 1.0):
            run, deferred = await anyio.to_thread.run_sync(
                local_search, query, abandon_on_cancel=True
            )
        if not deferred:
            return run
        room = MAX_COLLECTED_LINES - sum(f.match_lines for f in run.files)
        found = await backtrack_search(query, deferred, max_lines=room, sandbox=sandbox)
        run.files.extend(found.files)
        run.sandboxed = found.sandboxed
        run.partial = run.partial or found.partial
        return run


def _withhold(run: GrepRun, shown: ResultFilter) -> None:
    """Drop the files the policy refuses reading (in a worker thread: one decision per file).

    Applied to what either engine found, so both count the same files; a sidecar folder
    (outside the workspace, readable by its own session) is not filtered."""
    run.files = [hits for hits in run.files if shown.keep(hits.path)]
    run.withheld = shown.withheld


def _skip_reason(path: Path) -> str | None:
    """Why an explicitly named file is not searched (both engines skip it the same way)."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            return f"is over {MAX_FILE_BYTES // (1024 * 1024)} MB and was not searched"
        with path.open("rb") as handle:
            if b"\0" in handle.read(MAX_FILE_BYTES):
                return "is a binary file (it contains a NUL byte) and was not searched"
    except OSError as exc:
        return f"could not be read: {exc.strerror}"
    return None
