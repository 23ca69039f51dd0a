"""What ``call`` and ``inspect`` say of a tool name no served tool has: the names it may have
meant, and, when no manifest was named, that the tools come from the bundled examples (a first
``mcp-toolbridge call my_tool`` forgets the manifest's path more often than it misspells); and
what the command line says of a verb other tools have (``init``, ``validate``, ``run``): the
verb that does it here."""

from __future__ import annotations

import argparse

from mcp_toolbridge.runtime import Loaded


def no_such_tool(args: argparse.Namespace, loaded: Loaded) -> str:
    """The line to print (without the ``mcp-toolbridge:`` prefix)."""
    import difflib  # a name to correct: not on every start

    name: str = args.tool
    known = {spec.id: spec.name for spec in loaded.catalog.specs()}  # a manifest id: its tool
    known.update((served, served) for served in loaded.catalog.names)
    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)
    meant = list(dict.fromkeys(known[c] for c in close))
    text = f"no served tool is named {name!r} (by MCP name or manifest id)"
    if meant:
        text += f"; did you mean {' or '.join(repr(m) for m in meant)}?"
    else:
        text += "."
    if not args.paths:
        return (
            f"{text} No manifest was named, so the tools are the bundled examples: put your "
            f"manifest files or folders after the tool (`mcp-toolbridge {args.verb} {name} "
            "./tools.json`; `mcp-toolbridge list ./tools.json` shows its names)"
        )
    return (
        f"{text} `mcp-toolbridge list PATH...` shows the names, `lint PATH...` the tools left out"
    )


_CHECK = "to check manifests: lint PATH; a client's setup: doctor --client NAME"
_RUN = "to run one tool: call TOOL PATH --args JSON; to serve them: serve PATH"
VERBS_ELSEWHERE = {
    "init": "there is none: copy a bundled example (list --json names their files), check "
    "yours with lint PATH, and config --client NAME PATH prints the client's entry",
    "new": "there is none: copy a bundled example (list --json names their files) and check "
    "yours with lint PATH",
    "install": "to add the server to a client: config --client NAME PATH",
    "add": "to add the server to a client: config --client NAME PATH",
    "setup": "to add the server to a client: config --client NAME PATH",
    "check": _CHECK,
    "validate": _CHECK,
    "verify": _CHECK,
    "run": _RUN,
    "exec": _RUN,
    "invoke": _RUN,
    "start": "to serve the tools: serve PATH",
    "ls": "to list the tools: list PATH",
    "show": "a tool's record: inspect TOOL PATH; the policy: policy show",
    "info": "a tool's record: inspect TOOL PATH",
    "describe": "a tool's record: inspect TOOL PATH",
    "find": "to search the tools: search QUERY PATH",
}
"""Verbs other command lines have (agentpm init, npm run, ...), and what does it here."""


__all__ = ["VERBS_ELSEWHERE", "no_such_tool"]
