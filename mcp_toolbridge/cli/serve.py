"""Serving: ``serve`` and ``replay`` over stdio or streamable HTTP, with recording and reload
on change, and the connect hint (the command line a client starts to serve the same thing).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskStatus

from mcp_toolbridge import __version__
from mcp_toolbridge.cli.allocator import pin_mmap_threshold, started
from mcp_toolbridge.cli.clients import args_for, server_command
from mcp_toolbridge.cli.console import EXIT_INTERRUPTED, EXIT_OK, counted, err
from mcp_toolbridge.cli.event_loop import LOOPS, backend_options
from mcp_toolbridge.cli.http import (
    AGAIN,
    MAX_EOF_GRACE_S,
    console_for,
    console_path_line,
    console_urls,
    describe,
    eof_grace,
    http_options,
    mount_of,
    opened_state,
    shared_console,
    state_url,
    told_url,
    url_file,
)
from mcp_toolbridge.cli.reload import not_served, reload_on_change, reload_once
from mcp_toolbridge.cli.startup import (
    first_error,
    follow_roots,
    inputs_before,
    loaded_lines,
    open_later,
    opening_line,
    problem_lines,
    recorder_for,
    runtime_later,
    warm_up,
    workspace_line,
)
from mcp_toolbridge.runtime import (
    INDEX_AFTER_LIST_BELOW,
    Loaded,
    Runtime,
    Settings,
    import_call_machinery,
    open_runtime,
    serving_index,
)

Opener = Callable[[], AbstractAsyncContextManager[Runtime]]
"""Opens a server's runtime (open_runtime with what the start made)."""

if TYPE_CHECKING:
    from mcp_toolbridge.bridge import Observer
    from mcp_toolbridge.cli.startup import Input
    from mcp_toolbridge.executors import Executor


def add_serve_options(parser: argparse.ArgumentParser) -> None:
    """Transport and serving options of ``serve`` and ``replay`` (their path options, with
    ``--record``, are parsing.py's: a leading ``~`` read by its ``user_path``)."""
    parser.add_argument(
        "--http",
        default=None,
        metavar="HOST:PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio "
        "(HOST defaults to 127.0.0.1; other addresses need a token)",
    )
    parser.add_argument(
        "--token",
        default=None,
        metavar="TOKEN",
        help="bearer token HTTP clients must send (default: $TOOLBRIDGE_TOKEN; prefer the "
        "variable, a command line is visible to other users)",
    )
    parser.add_argument(
        "--auth-issuer",
        default=None,
        metavar="URL",
        help="HTTP: accept OAuth access tokens of this authorization server, one identity per "
        "caller (instead of --token; the policy file's [auth] table configures the rest)",
    )
    parser.add_argument(
        "--auth-resource",
        default=None,
        metavar="URL",
        help="HTTP with --auth-issuer: this MCP endpoint's canonical URL as clients reach it "
        "(the tokens' audience; default: the --http URL)",
    )
    parser.add_argument(
        "--stateless",
        action="store_true",
        help="HTTP without sessions: every request stands alone (no progress, no 2025-era "
        "confirmation, no per-session tool loading)",
    )
    parser.add_argument(
        "--session-idle-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="HTTP: close a stateful session unused for this long, cancelling its calls "
        "(default 1800)",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="another Host name HTTP clients use to reach the server (repeatable)",
    )
    parser.add_argument(
        "--console",
        default=None,
        metavar="[HOST:]PORT",
        help="serve the web console at http://HOST:PORT/ (HOST defaults to 127.0.0.1; its "
        "URL with a random token is printed on stderr): the live audit, the catalog, search, "
        "sessions, and the confirmations of headless clients, which wait there for an answer "
        "instead of being refused",
    )
    parser.add_argument(
        "--eof-grace",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stdio: once the client closes stdin, let the requests it sent run this long to "
        f"send their answers, then end them (default 10; 0 to {MAX_EOF_GRACE_S:g})",
    )
    parser.add_argument(
        "--console-admin-role",
        default=None,
        metavar="NAME",
        help="HTTP with --auth-issuer: the group or role a caller's token must name to sign in "
        "to the console at /console (default: admin; also [auth] console_admin_role)",
    )
    parser.add_argument(
        "--console-client-id",
        default=None,
        metavar="ID",
        help="HTTP with --auth-issuer: the console's OAuth client at the issuer, so a person "
        "signs in to /console in the browser (code flow with PKCE; register the redirect URI "
        "<console>/callback; the secret, if any, from $TOOLBRIDGE_CONSOLE_CLIENT_SECRET or "
        "[auth] console_client_secret, never the command line; also [auth] console_client_id)",
    )
    parser.add_argument(
        "--drain-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="HTTP: on SIGTERM, let running calls finish for this long before ending them "
        "(default 30; /readyz says unready meanwhile)",
    )
    parser.add_argument(
        "--state",
        default=None,
        metavar="URL",
        help="where what outlives a call is kept: memory (default), or redis://HOST:PORT/DB, "
        "shared by the replicas of one service (docs/deploy.md; also [state] url)",
    )
    parser.add_argument(
        "--replica",
        default=None,
        metavar="NAME",
        help="HTTP with --state redis://: this replica's name in session ids and leases "
        "(default: the host name)",
    )
    parser.add_argument(
        "--loop",
        choices=LOOPS,
        default="auto",
        help="the event loop: uvloop where it is installed (auto, the default), or asyncio",
    )
    parser.add_argument(
        "--watch",
        action="store_true",
        help="reload manifests and the policy when they change; an invalid change keeps the "
        "current catalog (its problems are logged)",
    )


def run_server(
    args: argparse.Namespace,
    settings: Settings,
    loaded: Loaded,
    *,
    stand_in: Executor | None = None,
    what: str = "serving",
    inputs: list[Input] | None = None,
) -> int:
    """Serve ``loaded`` over stdio or HTTP until the client (or a signal) ends it; a stdio
    server that lists before opening its runtime keeps its opening (``inputs``: taken by
    :func:`inputs_before` before ``loaded`` was loaded)."""
    from mcp_toolbridge.server import ToolbridgeServer

    http = http_options(args, settings, loaded)
    grace = eof_grace(args)
    console = console_for(args, settings, loaded)
    loop_options = backend_options(args.loop)
    recorder = None
    if args.record is not None:
        from mcp_toolbridge.bridge import Recorder

        recorder = Recorder.open(args.record)
        settings = replace(settings, record_dir=recorder.path.parent)  # hidden and held
        if (grant := recorder.granted(loaded.policy)) is not None:
            err(
                f"mcp-toolbridge: *** WARNING: --record {args.record} is inside {grant}: it is "
                "hidden and read-only in every sandbox, glob and grep leave it out, and write, "
                "edit and bash ask before writing there, but a process a tool starts without "
                "the sandbox (--sandbox off) sees it; record outside every grant"
            )
    stopped_by: list[signal.Signals] = []  # over stdio, the signal that ended serving

    async def run() -> None:
        async with AsyncExitStack() as stack:
            observers: tuple[Observer, ...] = ()
            if recorder is not None:
                stack.callback(recorder.close)
                observers = (recorder,)
            sessions, replica = await stack.enter_async_context(
                opened_state(args, settings, loaded, http=http is not None)
            )
            if console is not None:
                if replica is not None:  # every replica's questions, calls and connections
                    console.replicate(shared_console(replica), replica.name, replica.keys)
                observers = (*observers, console.feed.observe)
            opening = runtime_later(args, settings, loaded, http=http, console=console)
            if opening is None:  # else once the first list is answered (prepared)
                pin_mmap_threshold()
            opened = partial(open_runtime, settings, loaded, observers=observers)
            opened = partial(opened, stand_in=stand_in, sessions=sessions)
            index_first = len(loaded.catalog) >= INDEX_AFTER_LIST_BELOW
            if opening is not None and index_first:  # made (and cached) before serving
                opened = partial(opened, index=serving_index(settings, loaded))
            if opening is None:  # open now: its checks fail the start (--sandbox required)
                runtime = await stack.enter_async_context(opened())
                ready: list[Runtime] = [runtime]
            else:  # opened once the first list is answered (open_later below)
                ready = []
            follows = settings.workspace is None and http is None  # one client: its roots
            left_out = not_served(loaded.errors, loaded.left_out)
            listed = anyio.Event()
            runtime_open = anyio.Event()

            def end_session(session_id: str, *, keep_files: bool = False) -> None:
                if ready:  # else no call has run: nothing to forget
                    ready[0].end_session(session_id, keep_files=keep_files)

            def first_list() -> None:  # answered: what calls need can be opened now
                listed.set()
                if opening is not None:
                    opening.wanted.set()

            async def moved(roots: Sequence[Path]) -> None:
                if opening is not None:  # the roots move the runtime's workspace: open it
                    opening.wanted.set()
                    await runtime_open.wait()
                await follow_roots(ready[0], server, say)(roots)

            server = ToolbridgeServer(
                ready[0].bridge if opening is None else opening,
                expose=args.expose,
                on_session_end=end_session,
                roots=moved if follows else None,
                sidecar_dir=sessions.sidecar_dir,
                notices=[left_out] if left_out else [],
                on_first_list=first_list,
                console=console.host if console is not None else None,
                replica=replica,
            )
            if replica is not None:  # another replica reloaded: read the files again now
                replica.on_remote_change = lambda: reload_once(runtime, server)
            where = ", ".join(str(p) for p in settings.manifest_paths())
            own = sum(loaded.served_sources.values())
            head = (
                f"mcp-toolbridge {__version__}: {what} {counted(own, 'tool')} from "
                f"{counted(len(loaded.manifests.manifests), 'manifest')} ({where}) and "
                f"{counted(loaded.catalog.locked_count(), 'locked tool')}, expose={server.expose}"
            )
            if recorder is not None:
                head += f", recording to {recorder.path}"
            if args.watch:
                head += ", watching for changes"
            if opening is not None:  # opened in a task that ends after serving (the stack)
                later = await stack.enter_async_context(anyio.create_task_group())
                done = anyio.Event()
                stack.callback(opening.wanted.set)
                stack.callback(done.set)

                def serve_calls(runtime: Runtime) -> None:
                    ready.append(runtime)
                    server.opened(runtime.bridge)
                    runtime_open.set()

                prepare = partial(prepared, opened, None if index_first else (settings, loaded))
                later.start_soon(open_later, opening, done, prepare, serve_calls, listed)
            started()
            async with anyio.create_task_group() as group:
                if opening is None:
                    group.start_soon(warm_up, runtime, listed)
                    runtime_open.set()
                if console is not None:
                    url = console.attach(
                        runtime, connections=server.connected, local_session=server.session_id
                    )
                    await console.history(audit_file(settings))
                    await group.start(console.serve)
                    urls = url_file()  # kept and followed before anyone can open it
                    stack.callback(urls.remove)
                    await urls.keep("console", url)
                    console.on_url(partial(told_url, urls, say))
                    say(f"console at {url} (open it in a browser: it opens once; {AGAIN})")
                if args.watch:
                    await group.start(reload_on_change, runtime, server)
                if http is None:
                    command = server_command()
                    hint = [*command[1:], *args_for(args, settings)]
                    entry = {"command": command[0], "args": hint}
                    err(f"{head}, over stdio; connect a client with {json.dumps(entry)}")
                    report(loaded, settings, follows)
                    if sys.stdin.isatty():  # typed at a terminal: it seems to hang
                        say(AT_A_TERMINAL)
                    keeps = opening is not None and stand_in is None and recorder is None
                    keeper = recorder_for(loaded, inputs) if keeps else None
                    with anyio.CancelScope() as serving:  # a signal ends serving, then below
                        await group.start(_stop_on_signal, serving, stopped_by)
                        await server.run_stdio(keeper, grace_s=grace)
                else:
                    from mcp_toolbridge.server import HttpService, reach_line  # only for HTTP

                    service = HttpService(server, http, console=mount_of(console, http))
                    url = service.listen()
                    mode = "stateless" if http.stateless else "stateful"
                    auth = "bearer token required" if http.token else "no token (loopback only)"
                    if (guard := service.guard) is not None:  # the tokens' audience: resource
                        issuer = guard.options.issuer
                        auth = f"OAuth access tokens of {issuer} for {guard.resource}"
                    where = describe(state_url(args, loaded))
                    if replica is not None:
                        where += f", replica {replica.name}"
                    err(f"{head}, over streamable HTTP at {url} ({mode}, {auth}, {where})")
                    if (reach := reach_line(http)) is not None:
                        say(reach)
                    if console is not None:
                        await urls.keep("mounted", await console.open_mounted())
                        console.on_url(partial(told_url, urls, say))  # the mounted one's too
                        say(console_path_line(url, http, console))
                    report(loaded, settings, follows)
                    await service.serve()
                if console is not None:
                    await console.close()
                group.cancel_scope.cancel()  # the client is gone: stop watching too

    try:
        anyio.run(run, backend_options=loop_options)
    except BaseExceptionGroup as group:  # a task's error: the runtime opened after the list
        error = first_error(group)
        if error is None:
            raise
        raise error from None  # said in one line, as a start that fails before serving
    return EXIT_INTERRUPTED if signal.SIGINT in stopped_by else EXIT_OK


def prepared(
    opened: Callable[..., AbstractAsyncContextManager[Runtime]],
    index_of: tuple[Settings, Loaded] | None,
) -> Opener:
    """What :func:`open_later` runs in its worker thread before it opens the runtime: the call
    machinery imported and, when the start left it for after the first tools/list (``index_of``:
    a catalog of fewer than ``INDEX_AFTER_LIST_BELOW`` tools), the search index made, from the
    cache or built (and cached). glibc's mmap threshold is pinned here too, before any call."""
    pin_mmap_threshold()
    import_call_machinery()
    if index_of is None:
        return opened
    return partial(opened, index=serving_index(*index_of))


async def _stop_on_signal(
    scope: anyio.CancelScope,
    stopped_by: list[signal.Signals],
    *,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """SIGTERM (how clients stop a server that outlives the end of its stdin) or Ctrl-C at a
    terminal (SIGINT) cancels the calls still running, so their process groups are killed,
    and ends serving; the caller then closes the console. Without this, SIGINT cancelled
    the whole run, the console's uvicorn in the middle of its run, and while stdin stayed
    open (a terminal) the run waited for a line first."""
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        task_status.started()
        async for number in signals:
            stopped_by.append(signal.Signals(number))
            say(f"{signal.Signals(number).name}: stopping; calls still running are cancelled")
            scope.cancel()
            return


__all__ = ["inputs_before", "run_server"]


AT_A_TERMINAL = (
    "stdin is a terminal: this is an MCP server, which waits there for a client's JSON-RPC "
    "messages; a client starts it itself (`mcp-toolbridge config --client NAME` writes its "
    "entry), `mcp-toolbridge call TOOL --args JSON` runs one tool here; Ctrl-C stops it"
)


def audit_file(settings: Settings) -> Path | None:
    """Where this server's audit lines go (None: --no-audit)."""
    if not settings.audit:
        return None
    from mcp_toolbridge.bridge import default_audit_path

    return settings.audit_path or default_audit_path()


def say(line: str) -> None:
    err(f"mcp-toolbridge: {line}")


def report(loaded: Loaded, settings: Settings, follows_roots: bool) -> None:
    """What was loaded and left out, and where the workspace is, after the banner."""
    for line in loaded_lines(loaded):
        say(line)
    answered = opening_line()
    if answered is not None:
        say(answered)
    for line in problem_lines(loaded.errors):
        err(line)
    say(workspace_line(settings, follows_roots=follows_roots))


def print_console_urls(args: argparse.Namespace) -> int:
    """``console-url`` (cli/console_url.py)."""
    return console_urls(args)
