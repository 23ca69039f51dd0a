"""The operating verbs behind cli.py: serving (stdio or HTTP, recording, replay), ``inspect``
and ``config``. cli.py parses and loads; these run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from mcp_toolbridge import __version__
from mcp_toolbridge.bridge import Observer, Recorder
from mcp_toolbridge.builtins import LOCKED_IDS
from mcp_toolbridge.cli.allocator import pin_mmap_threshold
from mcp_toolbridge.cli.clients import CLIENTS, client_config, serve_arguments, server_command
from mcp_toolbridge.cli.event_loop import LOOPS, backend_options
from mcp_toolbridge.cli.inspect import tool_interface
from mcp_toolbridge.cli.reload import reload_on_change
from mcp_toolbridge.errors import ConfigError, ErrorCode
from mcp_toolbridge.executors import DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT_S, Executor
from mcp_toolbridge.model import Format
from mcp_toolbridge.runtime import Loaded, Settings, open_runtime, sandbox_profile

if TYPE_CHECKING:
    from mcp_toolbridge.server import HttpOptions

EXIT_OK = 0
EXIT_LOAD = 2


def _err(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _out(text: str) -> None:
    sys.stdout.write(text + "\n")


def add_serve_options(parser: argparse.ArgumentParser) -> None:
    """Transport and recording options of ``serve`` and ``replay``."""
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
    parser.add_argument(
        "--record",
        type=Path,
        default=None,
        metavar="DIR",
        help="write CT_TOOL_CALL/CT_TOOL_RESULT frames of every call as JSONL into DIR",
    )


def _http_options(args: argparse.Namespace) -> HttpOptions | None:
    if args.http is None:
        given = (
            ("--token", args.token),
            ("--stateless", args.stateless),
            ("--session-idle-timeout", args.session_idle_timeout),
        )
        for flag, value in given:
            if value:
                raise ConfigError(f"{flag} applies to --http only", code=ErrorCode.CONFIG_INVALID)
        return None
    from mcp_toolbridge.server import (
        SESSION_IDLE_TIMEOUT_S,
        TOKEN_ENV,
        HttpOptions,
        check_binding,
        parse_address,
    )

    host, port = parse_address(args.http)
    token = args.token if args.token is not None else os.environ.get(TOKEN_ENV) or None
    options = HttpOptions(
        host=host,
        port=port,
        token=token,
        stateless=args.stateless,
        allowed_hosts=tuple(args.allow_host),
        session_idle_timeout_s=(
            SESSION_IDLE_TIMEOUT_S
            if args.session_idle_timeout is None
            else args.session_idle_timeout
        ),
    )
    check_binding(options)
    return options


def serve(
    args: argparse.Namespace,
    settings: Settings,
    loaded: Loaded,
    *,
    stand_in: Executor | None = None,
    what: str = "serving",
) -> int:
    """Serve ``loaded`` over stdio or HTTP until the client (or a signal) ends it."""
    from mcp_toolbridge.server import HttpService, ToolbridgeServer

    http = _http_options(args)
    loop_options = backend_options(args.loop)
    recorder = Recorder.open(args.record) if args.record is not None else None
    pin_mmap_threshold()

    async def run() -> None:
        async with AsyncExitStack() as stack:
            observers: tuple[Observer, ...] = ()
            if recorder is not None:
                stack.callback(recorder.close)
                observers = (recorder,)
            runtime = await stack.enter_async_context(
                open_runtime(settings, loaded, observers=observers, stand_in=stand_in)
            )
            server = ToolbridgeServer(
                runtime.bridge, expose=args.expose, on_session_end=runtime.end_session
            )
            where = ", ".join(str(p) for p in settings.manifest_paths())
            head = (
                f"mcp-toolbridge {__version__}: {what} {len(loaded.catalog)} tools from "
                f"{len(loaded.report.manifests)} manifests ({where}), expose={server.expose}"
            )
            if recorder is not None:
                head += f", recording to {recorder.path}"
            if args.watch:
                head += ", watching for changes"
            async with anyio.create_task_group() as group:
                if args.watch:
                    await group.start(reload_on_change, runtime, server)
                if http is None:
                    command = server_command()
                    hint = [*command[1:], *args_for(args, settings)]
                    entry = {"command": command[0], "args": hint}
                    _err(f"{head}, over stdio; connect a client with {json.dumps(entry)}")
                    await server.run_stdio()
                else:
                    service = HttpService(server, http)
                    url = service.listen()
                    mode = "stateless" if http.stateless else "stateful"
                    auth = "bearer token required" if http.token else "no token (loopback only)"
                    _err(f"{head}, over streamable HTTP at {url} ({mode}, {auth})")
                    await service.serve()
                group.cancel_scope.cancel()  # the client is gone: stop watching too

    anyio.run(run, backend_options=loop_options)
    return EXIT_OK


def args_for(args: argparse.Namespace, settings: Settings) -> list[str]:
    """The stdio connect hint's arguments: a client started with them serves what this
    server serves. The workspace is pinned (clients start servers in an undefined working
    directory); HTTP options are left out, the hint is for stdio."""
    verb = ["serve"]
    if getattr(args, "recording", None) is not None:
        verb = ["replay", _absolute(args.recording)]
    return serve_arguments(
        args.paths,
        policy=args.policy,
        workspace=settings.workspace_root(),
        options=serving_options(args),
        verb=verb,
    )


def _absolute(path: Path) -> str:
    return str(path.resolve())


def serving_options(args: argparse.Namespace) -> list[str]:
    """The options of ``args`` that change what is served or how it runs, other than the
    paths, ``--policy`` and ``--workspace``, with paths absolute; defaults are left out."""
    out: list[str] = []
    if getattr(args, "loop", "auto") != "auto":
        out += ["--loop", args.loop]
    if getattr(args, "keep_names", False):
        out.append("--keep-names")
    if getattr(args, "sandbox", None) is not None:
        out += ["--sandbox", args.sandbox]
    for folder in getattr(args, "ad_hoc", ()):
        out += ["--ad-hoc", _absolute(folder)]
    locked = tuple(getattr(args, "locked", LOCKED_IDS))
    if locked != LOCKED_IDS:
        out += ["--locked", ",".join(locked) or "none"]
    for folder in getattr(args, "skills", ()):
        out += ["--skills", _absolute(folder)]
    if getattr(args, "timeout", DEFAULT_TIMEOUT_S) != DEFAULT_TIMEOUT_S:
        out += ["--timeout", repr(args.timeout)]
    if getattr(args, "max_concurrency", None) is not None:
        out += ["--max-concurrency", str(args.max_concurrency)]
    if getattr(args, "max_output", DEFAULT_MAX_OUTPUT_BYTES) != DEFAULT_MAX_OUTPUT_BYTES:
        out += ["--max-output", str(args.max_output)]
    for flag, attr in (("--secrets", "secrets"), ("--audit", "audit"), ("--record", "record")):
        if getattr(args, attr, None) is not None:
            out += [flag, _absolute(getattr(args, attr))]
    if getattr(args, "no_audit", False):
        out.append("--no-audit")
    if getattr(args, "expose", "auto") != "auto":
        out += ["--expose", args.expose]
    for flag, attr in (("--skip-invalid", "skip_invalid"), ("--watch", "watch")):
        if getattr(args, attr, False):
            out.append(flag)
    return out


def inspect(args: argparse.Namespace, settings: Settings, loaded: Loaded) -> int:
    """Print the Tool Interface record of one served tool as JSON."""
    from mcp_toolbridge.server import SEARCH_THRESHOLD

    entry = loaded.catalog.resolve(args.tool)
    if entry is None:
        _err(
            f"mcp-toolbridge: no served tool is named {args.tool!r} (by MCP name or manifest "
            "id); `mcp-toolbridge list` shows the names, `lint` shows tools left out"
        )
        return EXIT_LOAD
    manifest_tools = sum(1 for s in loaded.catalog.specs() if s.source.format is not Format.BUILTIN)
    builtin = entry.spec.source.format is Format.BUILTIN
    record = tool_interface(
        entry.spec,
        loaded.policy,
        default_timeout_s=settings.timeout_s,
        max_output_bytes=settings.max_output_bytes,
        deferred=not builtin and manifest_tools > SEARCH_THRESHOLD,
        sandbox_profile=sandbox_profile(settings, loaded.policy, entry.spec),
    )
    _out(json.dumps(record, indent=2, ensure_ascii=False))
    return EXIT_OK


def config(args: argparse.Namespace) -> int:
    """Print the client's config file content for this installation."""
    kind = CLIENTS[args.client]
    snippet = client_config(
        args.client,
        args.paths,
        policy=args.policy,
        workspace=args.workspace,
        options=serving_options(args),
    )
    _out(json.dumps(snippet, indent=2))
    _err(f"{kind.title}: put this in {kind.files}; merge it with any servers already there")
    return EXIT_OK
