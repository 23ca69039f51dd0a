"""The command line: serve, replay, lint, list, call, export, search, policy, inspect, config.

stdout carries the MCP stream while serving, so everything human-facing goes to stderr there.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

from mcp_toolbridge import __version__
from mcp_toolbridge.builtins import LOCKED_IDS, parse_locked
from mcp_toolbridge.cli import commands as cli_ops
from mcp_toolbridge.cli.clients import CLIENTS
from mcp_toolbridge.errors import ConfigError, Severity, ToolbridgeError, UnknownToolError
from mcp_toolbridge.executors import DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT_S
from mcp_toolbridge.runtime import Loaded, Settings, bundled_manifests, load_catalog, open_bridge

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_LOAD = 2


def _add_load_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="*",
        type=Path,
        metavar="PATH",
        help="manifest files or folders to search (default: the bundled examples)",
    )
    parser.add_argument(
        "--keep-names",
        action="store_true",
        help="serve manifest ids as written (SEP-986: [A-Za-z0-9._-]{1,128}, dots allowed) "
        "instead of sanitizing them to [A-Za-z0-9_-]{1,64}; for clients that accept dots",
    )


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help="default per-call deadline when a manifest sets none (default 60)",
    )
    parser.add_argument(
        "--max-concurrency",
        type=int,
        default=None,
        metavar="N",
        help="calls executing at once (default 2 x cores)",
    )
    parser.add_argument(
        "--max-output",
        type=int,
        default=DEFAULT_MAX_OUTPUT_BYTES,
        metavar="BYTES",
        help="cap on a tool's stdout and on an HTTP response (default 10 MiB)",
    )
    parser.add_argument(
        "--secrets", type=Path, default=None, metavar="FILE", help="TOML file of secret values"
    )
    parser.add_argument(
        "--audit",
        type=Path,
        default=None,
        metavar="FILE",
        help="append one NDJSON line per call here (default: the user data directory)",
    )
    parser.add_argument("--no-audit", action="store_true", help="write no audit log")


def _add_policy_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--policy",
        type=Path,
        default=None,
        metavar="FILE",
        help="the operator's policy (TOML); default: the built-in default policy",
    )
    parser.add_argument(
        "--workspace",
        type=Path,
        default=None,
        metavar="DIR",
        help="the root of every file capability (default: the working directory)",
    )
    parser.add_argument(
        "--ad-hoc",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="a folder the {ad-hoc} policy variable expands to (repeatable; default none)",
    )
    parser.add_argument(
        "--sandbox",
        choices=["auto", "required", "off"],
        default=None,
        help="run every process a call starts in an OS sandbox built from the tool's "
        "capabilities: auto (default: where the platform can), required (refuse without it), "
        "off; default: the policy's [sandbox] mode",
    )
    parser.add_argument(
        "--locked",
        type=_locked_names,
        default=LOCKED_IDS,
        metavar="LIST",
        help="which locked tools to serve: all (default), none, or a comma-separated list "
        "such as read,glob,grep,tool_search",
    )
    parser.add_argument(
        "--skills",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="a folder of skills (SKILL.md folders) for the skill tool; repeatable "
        "(default: <workspace>/.toolbridge/skills and the user data directory's skills)",
    )


def _locked_names(text: str) -> tuple[str, ...]:
    try:
        return parse_locked(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcp-toolbridge",
        description="Serve agentcli, AgentPM and Runloop tool manifests as MCP tools.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    serve = verbs.add_parser("serve", help="serve the tools over MCP (stdio, or HTTP)")
    _add_serve_options(serve)

    replay = verbs.add_parser(
        "replay", help="serve recorded results (serve --record DIR) instead of running tools"
    )
    replay.add_argument("recording", type=Path, metavar="DIR", help="the --record folder")
    _add_serve_options(replay)

    lint = verbs.add_parser("lint", help="check manifests; exit 1 when there are problems")
    _add_load_options(lint)
    _add_policy_options(lint)
    lint.add_argument("--format", choices=["text", "json"], default="text")

    listing = verbs.add_parser("list", help="list the tools the manifests declare")
    _add_load_options(listing)
    _add_policy_options(listing)
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")

    call = verbs.add_parser("call", help="call one tool through the same pipeline as MCP")
    call.add_argument("tool", metavar="TOOL")
    call.add_argument("--args", default="{}", metavar="JSON", help="the arguments object")
    _add_load_options(call)
    _add_run_options(call)
    _add_policy_options(call)

    search = verbs.add_parser("search", help="search the tools as tool_search does")
    search.add_argument("query", metavar="QUERY")
    _add_load_options(search)
    _add_policy_options(search)
    search.add_argument("-k", type=int, default=5, metavar="N", help="how many results (5)")
    search.add_argument("--json", action="store_true", help="print JSON")

    policy = verbs.add_parser("policy", help="show the effective policy")
    policy.add_argument("--show", action="store_true", required=True)
    _add_load_options(policy)
    _add_policy_options(policy)

    export = verbs.add_parser("export", help="print the tools as OpenAI functions or MCP tools")
    export.add_argument("--format", choices=["openai", "mcp"], required=True)
    _add_load_options(export)
    _add_policy_options(export)

    inspect = verbs.add_parser("inspect", help="print a tool's full Tool Interface record (JSON)")
    inspect.add_argument("tool", metavar="TOOL", help="the MCP name or the manifest id")
    _add_load_options(inspect)
    _add_run_options(inspect)
    _add_policy_options(inspect)

    config = verbs.add_parser("config", help="print a client's config for this installation")
    config.add_argument("--client", choices=sorted(CLIENTS), required=True)
    _add_load_options(config)
    _add_policy_options(config)
    return parser


def _add_serve_options(parser: argparse.ArgumentParser) -> None:
    _add_load_options(parser)
    _add_run_options(parser)
    _add_policy_options(parser)
    parser.add_argument(
        "--expose",
        choices=["auto", "search", "all"],
        default="auto",
        help="list every tool, or only tool_search and what it loaded (auto: search past 64)",
    )
    parser.add_argument(
        "--skip-invalid",
        action="store_true",
        help="serve the valid tools when some manifests have problems (they are logged)",
    )
    cli_ops.add_serve_options(parser)


def _settings(args: argparse.Namespace) -> Settings:
    return Settings(
        paths=args.paths,
        timeout_s=getattr(args, "timeout", DEFAULT_TIMEOUT_S),
        max_output_bytes=getattr(args, "max_output", DEFAULT_MAX_OUTPUT_BYTES),
        max_concurrency=getattr(args, "max_concurrency", None),
        secrets_file=getattr(args, "secrets", None),
        policy_file=getattr(args, "policy", None),
        workspace=getattr(args, "workspace", None),
        audit_path=getattr(args, "audit", None),
        audit=not getattr(args, "no_audit", False),
        locked=getattr(args, "locked", LOCKED_IDS),
        skills_dirs=tuple(getattr(args, "skills", ())),
        ad_hoc=tuple(getattr(args, "ad_hoc", ())),
        keep_names=getattr(args, "keep_names", False),
        sandbox=getattr(args, "sandbox", None),
    )


def _err(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _print_problems(loaded: Loaded) -> None:
    for problem in loaded.problems:
        prefix = "notice: " if problem.severity is Severity.NOTICE else ""
        _err(prefix + problem.render())


def _load_or_exit(
    args: argparse.Namespace, *, allow_errors: bool = False, builtins: bool = False
) -> Loaded | int:
    loaded = load_catalog(_settings(args), locked=builtins)
    if loaded.errors and not allow_errors:
        _print_problems(loaded)
        _err(f"mcp-toolbridge: {len(loaded.errors)} problem(s) found; nothing served")
        return EXIT_LOAD
    return loaded


def _cmd_lint(args: argparse.Namespace) -> int:
    loaded = load_catalog(_settings(args))
    if args.format == "json":
        rows = [
            {
                "path": p.path,
                "locator": p.locator,
                "message": p.message,
                "code": p.code.value,
                "severity": p.severity.value,
            }
            for p in loaded.problems
        ]
        print(json.dumps({"tools": len(loaded.catalog), "problems": rows}, indent=2))
    else:
        for problem in loaded.problems:
            prefix = "notice: " if problem.severity is Severity.NOTICE else ""
            print(prefix + problem.render())
        manifests = len(loaded.report.manifests)
        print(
            f"{len(loaded.catalog)} tools in {manifests} manifests, {len(loaded.errors)} problem(s)"
        )
    return EXIT_PROBLEMS if loaded.errors else EXIT_OK


def _cmd_list(args: argparse.Namespace) -> int:
    loaded = _load_or_exit(args)
    if isinstance(loaded, int):
        return loaded
    specs = loaded.catalog.specs()
    if args.json:
        rows = [
            {
                "name": s.name,
                "id": s.id,
                "format": s.source.format.value,
                "source": s.source.path,
                "description": s.description,
            }
            for s in specs
        ]
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    width = max((len(s.name) for s in specs), default=4)
    for spec in specs:
        summary = spec.description.strip().splitlines()[0] if spec.description.strip() else ""
        print(f"{spec.name:<{width}}  {spec.source.format.value:<8}  {summary[:80]}")
    return EXIT_OK


def _cmd_call(args: argparse.Namespace) -> int:
    try:
        arguments = json.loads(args.args)
    except json.JSONDecodeError as exc:
        _err(f"mcp-toolbridge: --args is not valid JSON: {exc}")
        return EXIT_LOAD
    if not isinstance(arguments, dict):
        _err("mcp-toolbridge: --args must be a JSON object")
        return EXIT_LOAD
    loaded = _load_or_exit(args, builtins=True)
    if isinstance(loaded, int):
        return loaded

    async def run() -> int:
        async with open_bridge(_settings(args), loaded) as bridge:
            try:
                outcome = await bridge.call(args.tool, arguments)
            except UnknownToolError as exc:
                _err(f"mcp-toolbridge: {exc}")
                return EXIT_LOAD
        if outcome.ok:
            print(json.dumps(outcome.value, indent=2, ensure_ascii=False))
            return EXIT_OK
        print(json.dumps({"error": outcome.error}, ensure_ascii=False))
        return EXIT_PROBLEMS

    return anyio.run(run)


def _cmd_export(args: argparse.Namespace) -> int:
    loaded = _load_or_exit(args)
    if isinstance(loaded, int):
        return loaded
    specs = loaded.catalog.specs()
    out: list[dict[str, Any]]
    if args.format == "openai":
        out = [
            {
                "type": "function",
                "function": {
                    "name": s.name,
                    "description": s.description,
                    "parameters": s.input_schema,
                },
            }
            for s in specs
        ]
    else:
        from mcp_toolbridge.server import to_tool

        out = [to_tool(s, modern=True).model_dump(by_alias=True, exclude_none=True) for s in specs]
    print(json.dumps(out, indent=2, ensure_ascii=False))
    return EXIT_OK


def _cmd_search(args: argparse.Namespace) -> int:
    from mcp_toolbridge.catalog import SearchIndex

    loaded = _load_or_exit(args)
    if isinstance(loaded, int):
        return loaded
    index = SearchIndex.build(loaded.catalog.specs())
    hits = index.search(args.query, max(1, args.k))
    if args.json:
        rows = []
        for hit in hits:
            entry = loaded.catalog.get(hit.name)
            assert entry is not None
            rows.append(
                {
                    "name": hit.name,
                    "score": round(hit.score, 4),
                    "description": entry.spec.description,
                    "input_schema": entry.spec.input_schema,
                }
            )
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return EXIT_OK
    for hit in hits:
        entry = loaded.catalog.get(hit.name)
        summary = entry.spec.description.strip().splitlines()[0] if entry else ""
        print(f"{hit.score:7.3f}  {hit.name}  {summary[:80]}")
    return EXIT_OK


def _cmd_policy(args: argparse.Namespace) -> int:
    loaded = load_catalog(_settings(args), locked=True)
    print(loaded.policy.render([*loaded.catalog.specs(), *loaded.hidden]))
    return EXIT_OK


def _load_for_serving(args: argparse.Namespace) -> Loaded | int:
    loaded = _load_or_exit(args, allow_errors=args.skip_invalid, builtins=True)
    if isinstance(loaded, Loaded) and loaded.errors:
        _print_problems(loaded)
        _err(f"mcp-toolbridge: skipping {len(loaded.errors)} invalid declaration(s)")
    return loaded


def _cmd_serve(args: argparse.Namespace) -> int:
    if args.expose == "search" and "tool_search" not in args.locked:
        _err("mcp-toolbridge: --expose search needs tool_search; add it to --locked")
        return EXIT_LOAD
    loaded = _load_for_serving(args)
    if isinstance(loaded, int):
        return loaded
    return cli_ops.serve(args, _settings(args), loaded)


def _cmd_replay(args: argparse.Namespace) -> int:
    from mcp_toolbridge.bridge import ReplayExecutor

    replay = ReplayExecutor.load(args.recording)
    loaded = _load_for_serving(args)
    if isinstance(loaded, int):
        return loaded
    what = f"replaying {len(replay)} recorded calls of {args.recording} for"
    return cli_ops.serve(args, _settings(args), loaded, stand_in=replay, what=what)


def _cmd_inspect(args: argparse.Namespace) -> int:
    loaded = _load_or_exit(args, builtins=True)
    if isinstance(loaded, int):
        return loaded
    return cli_ops.inspect(args, _settings(args), loaded)


def _cmd_config(args: argparse.Namespace) -> int:
    return cli_ops.config(args)


COMMANDS = {
    "serve": _cmd_serve,
    "replay": _cmd_replay,
    "inspect": _cmd_inspect,
    "config": _cmd_config,
    "lint": _cmd_lint,
    "list": _cmd_list,
    "call": _cmd_call,
    "export": _cmd_export,
    "search": _cmd_search,
    "policy": _cmd_policy,
}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line parsed (argparse exits with status 2 on a usage error)."""
    return _parser().parse_args(argv)


def settings_of(args: argparse.Namespace) -> Settings:
    """The Settings a parsed command line loads and serves with."""
    return _settings(args)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(name)s: %(message)s")
    try:
        code = COMMANDS[args.verb](args)
        sys.stdout.flush()  # inside the try: a reader gone away is handled below
        return code
    except ToolbridgeError as exc:
        _err(f"mcp-toolbridge: {exc}")
        return EXIT_LOAD
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`... | head`): not an error worth a traceback. Point stdout at
        # /dev/null so the interpreter's final flush does not raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 141


__all__ = ["bundled_manifests", "main"]
