"""The command line: serve, replay, lint, list, call, export, search, policy, inspect, config,
doctor, console-url.

stdout carries the MCP stream while serving, so everything human-facing goes to stderr there.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from mcp_toolbridge.cli.allocator import started
from mcp_toolbridge.cli.console import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_LOAD,
    EXIT_OK,
    EXIT_PROBLEMS,
    counted,
    err,
    examples_notice,
    json_text,
)
from mcp_toolbridge.cli.parsing import parse_args, settings_of
from mcp_toolbridge.cli.programs import AS_A_CLIENT, unstartable, unstartable_problems
from mcp_toolbridge.cli.serve import inputs_before, run_server
from mcp_toolbridge.errors import Severity, ToolbridgeError
from mcp_toolbridge.runtime import Loaded, bundled_manifests, load_catalog


def _print_problems(loaded: Loaded) -> None:
    for problem in loaded.problems:
        prefix = "notice: " if problem.severity is Severity.NOTICE else ""
        err(prefix + problem.render())


def _load_or_exit(
    args: argparse.Namespace, *, allow_errors: bool = False, builtins: bool = False
) -> Loaded | int:
    loaded = load_catalog(settings_of(args), locked=builtins)
    if loaded.errors and not allow_errors:
        _print_problems(loaded)
        valid = len(loaded.catalog.manifest_names())
        skip = (  # with no valid tool (a mistyped path), --skip-invalid would serve none
            f" (or serve the {counted(valid, 'valid tool')} with --skip-invalid)"
            if "skip_invalid" in args and valid
            else ""
        )
        err(f"mcp-toolbridge: {counted(len(loaded.errors), 'problem')} found; nothing served{skip}")
        return EXIT_LOAD
    return loaded


def _cmd_lint(args: argparse.Namespace) -> int:
    loaded = load_catalog(settings_of(args))
    path = os.environ.get("PATH", "")
    if args.format == "json":
        problems = [*loaded.problems, *unstartable_problems(loaded.catalog.specs(), path)]
        rows = [
            {
                "path": p.path,
                "line": p.line,
                "locator": p.locator,
                "message": p.message,
                "code": p.code.value,
                "severity": p.severity.value,
            }
            for p in problems
        ]
        print(json.dumps({"tools": len(loaded.catalog), "problems": rows}, indent=2))
    else:
        for problem in loaded.problems:
            prefix = "notice: " if problem.severity is Severity.NOTICE else ""
            print(prefix + problem.render())
        for spec, what in unstartable(loaded.catalog.specs(), path):
            print(f'notice: tool "{spec.name}": {what}: its calls cannot start ({AS_A_CLIENT})')
        tools = counted(len(loaded.catalog), "tool")
        manifests = counted(len(loaded.manifests.manifests), "manifest")
        print(
            f"{tools} in {manifests}, {counted(len(loaded.errors), 'problem', none='no problems')}"
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
        err(
            f"mcp-toolbridge: --args is not valid JSON: {exc}; write a JSON object, its names "
            """and strings in double quotes, the whole in single quotes at a shell: """
            """--args '{"text": "a b"}'"""
        )
        return EXIT_LOAD
    if not isinstance(arguments, dict):
        err(
            "mcp-toolbridge: --args must be a JSON object, the arguments by name: "
            """--args '{"text": "a b"}'"""
        )
        return EXIT_LOAD
    loaded = _load_or_exit(args, builtins=True)
    if isinstance(loaded, int):
        return loaded
    from mcp_toolbridge.cli.call import call_one  # the verbs' own modules: on use

    return call_one(args, settings_of(args), loaded, arguments)


def _cmd_export(args: argparse.Namespace) -> int:
    loaded = _load_or_exit(args)
    if isinstance(loaded, int):
        return loaded
    from mcp_toolbridge.server import to_tool

    tools = [to_tool(s, modern=True) for s in loaded.catalog.specs()]
    out: list[dict[str, Any]]
    if args.format == "openai":  # the schemas as listed: a Runloop ref by $id written in place
        out = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                },
            }
            for t in tools
        ]
    else:
        out = [t.model_dump(by_alias=True, exclude_none=True) for t in tools]
    print(json_text(out))
    return EXIT_OK


def _cmd_search(args: argparse.Namespace) -> int:
    from mcp_toolbridge.runtime import search_index

    loaded = _load_or_exit(args)
    if isinstance(loaded, int):
        return loaded
    index = search_index(settings_of(args), loaded)
    found = index.find(args.query, max(1, args.k))
    hits = found.hits
    if not hits and not args.json:
        hint = f" (closest names, not matches: {', '.join(found.closest)})" if found.closest else ""
        print(f"no tool matches {args.query!r}{hint}", file=sys.stderr)
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
        print(json_text(rows))
        return EXIT_OK
    for hit in hits:
        entry = loaded.catalog.get(hit.name)
        summary = entry.spec.description.strip().splitlines()[0] if entry else ""
        print(f"{hit.score:7.3f}  {hit.name}  {summary[:80]}")
    return EXIT_OK


def _cmd_policy(args: argparse.Namespace) -> int:
    if args.policy_verb is None:
        print(args.policy_help, end="")
        return EXIT_OK
    from mcp_toolbridge.cli.inspect import show_policy

    loaded = load_catalog(settings_of(args), locked=True)
    if loaded.errors:
        _print_problems(loaded)
    print(show_policy(args, loaded))
    return EXIT_PROBLEMS if loaded.errors else EXIT_OK


def _load_for_serving(args: argparse.Namespace) -> Loaded | int:
    """The catalog to serve (with --skip-invalid, its problems are reported by serve)."""
    return _load_or_exit(args, allow_errors=args.skip_invalid, builtins=True)


def _cmd_serve(args: argparse.Namespace) -> int:
    if args.expose == "search" and "tool_search" not in args.locked:
        err("mcp-toolbridge: --expose search needs tool_search; add it to --locked")
        return EXIT_LOAD
    inputs = inputs_before(settings_of(args))  # what the opening kept answers from
    loaded = _load_for_serving(args)
    if isinstance(loaded, int):
        return loaded
    return run_server(args, settings_of(args), loaded, inputs=inputs)


def _cmd_replay(args: argparse.Namespace) -> int:
    from mcp_toolbridge.bridge import ReplayExecutor

    replay = ReplayExecutor.load(args.recording)
    loaded = _load_for_serving(args)
    if isinstance(loaded, int):
        return loaded
    replay.redact_as(loaded.policy.file.secret_scan)  # calls matched as they were recorded
    what = f"replaying {len(replay)} recorded calls of {args.recording} for"
    return run_server(args, settings_of(args), loaded, stand_in=replay, what=what)


def _cmd_inspect(args: argparse.Namespace) -> int:
    loaded = _load_or_exit(args, builtins=True)
    if isinstance(loaded, int):
        return loaded
    from mcp_toolbridge.cli.inspect import print_interface

    return print_interface(args, settings_of(args), loaded)


def _cmd_config(args: argparse.Namespace) -> int:
    from mcp_toolbridge.cli.config import print_config

    return print_config(args)


def _cmd_doctor(args: argparse.Namespace) -> int:
    from mcp_toolbridge.cli.config import run_doctor

    return run_doctor(args, parse_args, settings_of)


def _cmd_console_url(args: argparse.Namespace) -> int:
    from mcp_toolbridge.cli.serve import print_console_urls

    return print_console_urls(args)


COMMANDS = {
    "serve": _cmd_serve,
    "replay": _cmd_replay,
    "inspect": _cmd_inspect,
    "config": _cmd_config,
    "doctor": _cmd_doctor,
    "lint": _cmd_lint,
    "list": _cmd_list,
    "call": _cmd_call,
    "export": _cmd_export,
    "search": _cmd_search,
    "policy": _cmd_policy,
    "console-url": _cmd_console_url,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(name)s: %(message)s")
    if args.verb not in ("call", "inspect") and (notice := examples_notice(args)) is not None:
        err(notice)  # call and inspect say it of a tool they do not find (cli/unknown.py)
    try:
        code = COMMANDS[args.verb](args)
        sys.stdout.flush()  # inside the try: a reader gone away is handled below
        return code
    except ToolbridgeError as exc:
        err(f"mcp-toolbridge: {exc}")
        return EXIT_LOAD
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`... | head`): not an error worth a traceback. Point stdout at
        # /dev/null so the interpreter's final flush does not raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_BROKEN_PIPE
    finally:
        started()  # a verb that never served: its start is over too


__all__ = ["bundled_manifests", "main", "parse_args", "settings_of"]
