"""What ``serve`` says on stderr as it starts, besides its banner: the tools each manifest
gave, every tool left out and why (one line per reason, a few examples each, so a catalog of
thousands stays readable), the pinned tools and the pins that name none, and where the
workspace is; the workspace following the client's MCP roots while serving; and the work a
server defers until it has answered its first tools/list (:func:`warm_up`); and what a
stdio server's opening, kept in the start-up cache (cache/opening.py), is a function of
besides the command line, the folder and the environment its file name stands for
(:func:`inputs_before`, :func:`recorder_for`).
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import platformdirs

import mcp_toolbridge.policy
from mcp_toolbridge.builtins import default_skill_dirs
from mcp_toolbridge.cache import (
    CacheFolder,
    Recorder,
    file_input,
    folder_input,
    folder_inputs,
    handed_over,
    real_input,
)
from mcp_toolbridge.cache import Input as Input  # serve names it
from mcp_toolbridge.cli.reload import Publisher, left_out_lines
from mcp_toolbridge.errors import ConfigError, ErrorCode, Problem, ToolbridgeError
from mcp_toolbridge.runtime import Loaded, Runtime, Settings
from mcp_toolbridge.server import Opening
from mcp_toolbridge.workspace import UNSET_ROOT, unfit_reason, workspace_from_roots

MANIFESTS_SHOWN = 8
"""Manifests named one by one on the "loaded" line; the rest are counted."""
EXAMPLES = 3
"""Tools named per reason on a "not served" line; the rest are counted."""
PROBLEMS_SHOWN = 10
"""Problems of --skip-invalid printed in full; the rest are counted (lint lists them all)."""


def loaded_lines(loaded: Loaded) -> list[str]:
    """The tools served per manifest, then what was left out, grouped by reason, then the
    pinned tools and the pins that name no tool. Counts and names only: a catalog restored
    from the start-up cache reads no tool record for this."""
    served = loaded.served_sources
    declared = loaded.manifests.declared_sources()
    parts = []
    for path, whole in declared.items():
        count = served.get(path, 0)
        parts.append(f"{path} ({count if count == whole else f'{count} of {whole}'})")
    lines = []
    if parts:
        more = len(parts) - MANIFESTS_SHOWN
        shown = ", ".join(parts[:MANIFESTS_SHOWN])
        tail = f" and {more} more manifests" if more > 0 else ""
        lines.append(f"tools served per manifest: {shown}{tail}")
    lines += left_out_lines(loaded.left_out)
    pinned = loaded.catalog.pinned_names()
    if pinned:
        more = len(pinned) - EXAMPLES
        tail = f" and {more} more" if more > 0 else ""
        lines.append(f"pinned (always listed): {', '.join(pinned[:EXAMPLES])}{tail}")
    lines += [problem.render() for problem in loaded.unmatched_pins]
    return lines


def problem_lines(errors: Sequence[Problem]) -> list[str]:
    """The problems --skip-invalid stepped over, like compiler output (the first few), and a
    count of them."""
    if not errors:
        return []
    lines = [p.render() for p in errors[:PROBLEMS_SHOWN]]
    unshown = len(errors) - PROBLEMS_SHOWN
    more = f"; {unshown} more not shown (mcp-toolbridge lint lists them all)" if unshown > 0 else ""
    lines.append(
        f"mcp-toolbridge: not served: {len(errors)} invalid declaration(s) (--skip-invalid){more}"
    )
    return lines


def workspace_line(settings: Settings, *, follows_roots: bool) -> str:
    """Where the file tools work, and where that came from."""
    workspace = settings.workspace_root()
    roots = "; the client's MCP roots move it" if follows_roots else ""
    if settings.workspace is not None:
        if workspace is not None and not workspace.is_dir():  # a mistyped path in a config
            if (variable := re.search(r"\$\{[^}]*\}", str(settings.workspace))) is not None:
                return (  # copied from a VS Code or Cursor entry into another client's
                    f"workspace {variable[0]} (--workspace) is a variable no one filled in: "
                    "this client does not replace it (VS Code and Cursor do); read, write, "
                    "edit, glob, grep and bash fail until the client's config names the "
                    "project folder by its path"
                )
            return (
                f"workspace {workspace} (--workspace) is not a folder: read, write, edit, glob, "
                "grep and bash fail until it is one; check the path in the client's config"
            )
        return f"workspace {workspace} (--workspace)"
    if workspace is not None:
        return f"workspace {workspace} (the working directory{roots})"
    why = unfit_reason(Path.cwd()) or "a folder that cannot be a workspace"
    until = "until the client sends MCP roots " if follows_roots else ""
    return (
        f"no workspace: started in {why} without --workspace, which is never a workspace by "
        f"default; read, write, edit, glob, grep and bash refuse every call {until}"
        "(start the server with --workspace DIR to choose one)"
    )


def follow_roots(
    runtime: Runtime, server: Publisher, say: Callable[[str], None]
) -> Callable[[Sequence[Path]], Awaitable[None]]:
    """The server's roots callback: move the workspace to the first fit root (the default
    one when there is none), serve the rebuilt catalog, and say so with ``say`` when the
    workspace moved (roots that leave it where it was, such as the empty list a client
    without folders sends, would repeat the start-up's workspace line)."""

    async def moved(roots: Sequence[Path]) -> None:
        before = runtime.settings.workspace_root()
        chosen, passed_over = workspace_from_roots(roots)
        for note in passed_over:
            say(f"MCP roots: {note}")
        problems = await runtime.move_workspace(chosen)
        if problems:
            for problem in problems:
                say(f"MCP roots: {problem.render()}")
            say(f"MCP roots: the workspace stays {runtime.settings.workspace_root()}")
            return
        await server.swap(runtime.bridge)
        now = runtime.settings.workspace_root()
        if now == before:
            return
        if chosen is not None:
            say(f"workspace {now} (the client's MCP roots)")
        else:
            say(workspace_line(runtime.settings, follows_roots=True))

    return moved


async def warm_up(runtime: Runtime, listed: anyio.Event) -> None:
    """Once the first tools/list is answered (what a client waits for at start), load in
    worker threads what calls will need: the bash sub-policy (our own modules, ~10 ms, which
    every call's gate uses), the secret scanner's engine (~0.1 s of compiling its rules,
    ~40 MB) and, when bash is served, its command parser (bashlex builds its tables on
    import: 0.1-0.3 s). A call that needs the engine or the parser before waits for it, off
    the event loop; one that comes before the sub-policy is loaded imports it (once)."""
    await listed.wait()
    async with anyio.create_task_group() as group:
        if runtime.gate.secret_scan.enabled:
            group.start_soon(runtime.gate.secret_scan.loaded)
        group.start_soon(_load_shell_policy, "bash" in runtime.bridge.catalog)


async def _load_shell_policy(with_parser: bool) -> None:
    def load() -> None:
        policy = mcp_toolbridge.policy  # its shell names import their modules on first use
        policy.shell_floor  # noqa: B018 (the gate of every call uses it)
        if with_parser and not policy.parser_loaded():
            policy.load_parser()

    await anyio.to_thread.run_sync(load, abandon_on_cancel=True)  # a stop does not wait


def runtime_later(
    args: argparse.Namespace, settings: Settings, loaded: Loaded, *, http: Any, console: Any
) -> Opening | None:
    """What a server lists with when it can open its runtime (the call machinery) after its
    first tools/list: a stdio server without ``--console`` or ``--watch`` whose sandbox is not
    ``required`` (that probe must fail the start). None: open it before serving. The audit
    log is opened (and closed) here, so that one that cannot be opened still fails the start."""
    mode = settings.sandbox or loaded.policy.file.sandbox.mode
    if http is not None or console is not None or args.watch or mode == "required":
        return None
    if settings.audit:
        from mcp_toolbridge.bridge import open_audit_file  # not the bridge: its file alone

        try:
            os.close(open_audit_file(settings.audit_path)[1])
        except OSError as exc:
            raise ConfigError(
                f"cannot open the audit log: {exc}", code=ErrorCode.CONFIG_INVALID
            ) from exc
    return Opening(loaded.catalog, loaded.policy)


async def open_later(
    opening: Opening,
    done: anyio.Event,
    prepare: Callable[[], Callable[[], AbstractAsyncContextManager[Runtime]]],
    serve: Callable[[Runtime], None],
    listed: anyio.Event,
) -> None:
    """Open the runtime of a server that listed first, once it is wanted (the first list is
    answered, or a request needs it): ``prepare`` run in a worker thread (the event loop goes
    on answering: it imports the call machinery and makes what the start left, and returns
    the runtime's opener), then opened and given to ``serve``, with :func:`warm_up`; closed
    when ``done`` (serving has ended), in this task, not cancelled. Nothing is opened after
    ``done``: a client that lists and leaves does not wait for it."""
    await opening.wanted.wait()
    if done.is_set():
        return
    open_runtime = await anyio.to_thread.run_sync(prepare)
    if done.is_set():
        return
    async with open_runtime() as runtime:
        if done.is_set():
            return
        serve(runtime)
        async with anyio.create_task_group() as group:
            group.start_soon(warm_up, runtime, listed)
            await done.wait()
            group.cancel_scope.cancel()


def first_error(group: BaseExceptionGroup[BaseException]) -> ToolbridgeError | None:
    """The first of our errors in ``group`` (a task group's), nested groups included: what a
    runtime opened after the first list failed with (an audit log that cannot be opened
    since the start checked it), reported like a start that fails before serving."""
    found: BaseException | None = group.subgroup(ToolbridgeError)
    while isinstance(found, BaseExceptionGroup):
        found = found.exceptions[0]
    return found if isinstance(found, ToolbridgeError) else None


PROJECT_POLICY = Path(".toolbridge") / "policy.toml"
"""policy/file.py's: the rules a project adds (read from the workspace at start)."""
SKILL_FILE = "SKILL.md"
DATA_NAME = "mcp-toolbridge"
"""runtime/loading.py's: the user data folder ``{user-data}`` stands for."""


def inputs_before(settings: Settings) -> list[Input] | None:
    """The inputs of this start's opening, taken now, before the load (a change made
    meanwhile is then a miss next time, never a stale answer): the manifest folders' listings,
    the policy, secrets and project policy files, the skills the skill tool lists, and the
    real folders the policy's variables stand for (``--workspace``, ``--ad-hoc`` and the
    user data folder may be links, moved to another folder between two starts). None when
    the start keeps none (not started through the entry point's front, no cache)."""
    if handed_over() is None or not settings.cache:
        return None
    found = folder_inputs(settings.manifest_paths())
    linked = [settings.workspace, *settings.ad_hoc, platformdirs.user_data_dir(DATA_NAME)]
    found += [real_input(path) for path in linked if path is not None]
    for path in (settings.policy_file, settings.secrets_file):
        if path is not None:
            found.append(file_input(path))
    workspace = settings.workspace_root()
    if workspace is not None:
        found.append(file_input(workspace / PROJECT_POLICY))
    skills = list(settings.skills_dirs) or default_skill_dirs(workspace or UNSET_ROOT)
    for root in skills:
        found.append(folder_input(root))
        if root.is_dir():
            for sub in sorted(root.iterdir()):  # by content, and where a link leads (kept in)
                found += [file_input(sub / SKILL_FILE), real_input(sub / SKILL_FILE)]
    return found


def opening_line() -> str | None:
    """What a warm start's front answered from the start-up cache before serving, if any."""
    handoff = handed_over()
    answered = sum(1 for _, i, _ in handoff.replayed if i) if handoff is not None else 0
    if not answered:
        return None
    return f"answered the client's first {answered} request(s) from the start-up cache"


def recorder_for(loaded: Loaded, before: list[Input] | None) -> Recorder | None:
    """What keeps this start's opening, with the files its manifests read and where the path
    patterns of the policy's grant and the tools' requirements led through their links when
    they were compiled (a link moved can list or hide a tool); None when it cannot be kept (a
    manifest that lists the environment, or not cacheable)."""
    handoff = handed_over()
    if before is None or handoff is None:
        return None
    files = loaded.manifests.files()
    if not all(load.cacheable for load in files):
        return None
    reads: list[Input] = [read for load in files for read in load.reads]
    resolved = dict.fromkeys(loaded.policy.resolved_paths())
    inputs = [*before, *reads, *(real_input(path, real) for path, real in resolved)]
    return Recorder(CacheFolder(handoff.folder), handoff.name, inputs, handoff.snapshot)
