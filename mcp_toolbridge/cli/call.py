"""``mcp-toolbridge call TOOL``: one call through the same pipeline as MCP, the tool named by
its MCP name or the id its manifest writes (as ``inspect`` takes it), the person at the
terminal asked where the policy says ask (cli/ask.py)."""

from __future__ import annotations

import argparse
from typing import Any

import anyio

from mcp_toolbridge.cli.ask import TerminalHost
from mcp_toolbridge.cli.console import EXIT_LOAD, EXIT_OK, EXIT_PROBLEMS, err, json_text
from mcp_toolbridge.cli.unknown import no_such_tool
from mcp_toolbridge.host import CallContext
from mcp_toolbridge.runtime import Loaded, Settings, open_bridge


def call_one(
    args: argparse.Namespace, settings: Settings, loaded: Loaded, arguments: dict[str, Any]
) -> int:
    """Call ``args.tool`` with ``arguments``: its result (or ``{"error": ...}``) on stdout,
    as JSON whose characters that hide or rewrite text are JSON escapes (``json_text``)."""
    entry = loaded.catalog.resolve(args.tool)
    if entry is None:
        err(f"mcp-toolbridge: {no_such_tool(args, loaded)}")
        return EXIT_LOAD

    async def run() -> int:
        ctx = CallContext(host=TerminalHost.attached())  # no terminal: headless, ask = deny
        async with open_bridge(settings, loaded) as bridge:
            outcome = await bridge.call(entry.spec.name, arguments, ctx)
        if outcome.ok:
            print(json_text(outcome.value))
            return EXIT_OK
        print(json_text({"error": outcome.error}, indent=None))
        if outcome.answer == "reject":  # the refusal speaks to a model about its person
            err("mcp-toolbridge call: you answered no; nothing was run")
        if outcome.answer == "headless":  # the refusal speaks to a model about its server
            err(
                "mcp-toolbridge call: nobody was asked, as stdin or stderr is not a terminal: "
                f"run it on a terminal to be asked, or add --allow {entry.spec.name} to this "
                "command line"
            )
        return EXIT_PROBLEMS

    return anyio.run(run)


__all__ = ["call_one"]
