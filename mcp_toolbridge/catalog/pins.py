"""Pinned tools: listed whatever ``--expose`` says (``serve --pin``, the policy's
``[discovery] pin``), and marked for the clients that defer tools by themselves.

A pin names tools by MCP name or by the id written in the manifest, with shell-style globs
(``mail_*``, ``git_?``, ``[ab]_tool``), matched case-sensitively. A pin that names no served
tool is a notice, not an error: the tool may be left out by the policy, or not loaded yet.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from fnmatch import translate

from mcp_toolbridge.errors import ErrorCode, Problem, Severity
from mcp_toolbridge.model import ToolSpec

Pin = tuple[str, str]
"""(where it was given: ``--pin`` or the policy file, the pattern)."""


def pin_tools(
    specs: Sequence[ToolSpec], pins: Sequence[Pin]
) -> tuple[list[ToolSpec], list[Problem]]:
    """``specs`` with every tool a pin names marked ``pinned``, and a notice for each pin
    that names none of them."""
    if not pins:
        return list(specs), []
    compiled = [(origin, pattern, re.compile(translate(pattern))) for origin, pattern in pins]
    used: set[int] = set()
    out: list[ToolSpec] = []
    for spec in specs:
        hits = [
            i
            for i, (_, _, regex) in enumerate(compiled)
            if regex.match(spec.name) or regex.match(spec.id)
        ]
        if hits:
            used.update(hits)
            if not spec.pinned:
                spec = spec.model_copy(update={"pinned": True})
        out.append(spec)
    problems = [
        Problem(
            origin,
            f'pin "{pattern}" names no served tool (an MCP name or a manifest id; globs '
            "allowed); `mcp-toolbridge list` shows the names, `lint` the tools left out",
            "",
            ErrorCode.CONFIG_INVALID,
            Severity.NOTICE,
        )
        for i, (origin, pattern, _) in enumerate(compiled)
        if i not in used
    ]
    return out, problems
