"""Load-time checks of the policy's rules against the tools being served: a misspelt name
(an error naming the file, the line and the closest valid name) and a pattern a tool can
never give (a notice)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from mcp_toolbridge.errors import ErrorCode, Problem, Severity
from mcp_toolbridge.model import HttpTransport, ToolSpec
from mcp_toolbridge.policy.diagnose import closest
from mcp_toolbridge.policy.layers import Layers
from mcp_toolbridge.policy.requirements import KNOWN_CAPABILITIES
from mcp_toolbridge.policy.rules import Rule, tool_capabilities
from mcp_toolbridge.policy.toml_lines import line_of


def _declared_capabilities(tools: Iterable[ToolSpec]) -> set[str]:
    names: set[str] = set()
    for spec in tools:
        names |= tool_capabilities(spec)
    return names


def name_problems(
    rules: Iterable[Rule], layers: Layers, tools: Sequence[ToolSpec], locked: Iterable[str]
) -> list[Problem]:
    """Errors for a rule whose permission names nothing (not ``*``, a locked tool, a served
    tool's name or id, or a capability one of them declares), and for a ``[requires]``
    capability no tool declares. ``raed`` would otherwise silently never match."""
    capabilities = KNOWN_CAPABILITIES | _declared_capabilities(tools)
    permissions = {"*", *locked, *capabilities}
    for spec in tools:
        permissions |= {spec.name, spec.id}
    problems: list[Problem] = []
    for rule in rules:
        if rule.scope == "session" or (rule.layer == 0 and rule.scope == "manifest"):
            continue  # session answers name served tools; the default's names are known
        if rule.permission in permissions:
            continue
        group = rule.group
        if group is not None and (
            any(group.contains(spec) for spec in tools)
            or (group.glob is not None and any(group.glob.match(name) for name in locked))
        ):
            continue
        key = rule.origin.rpartition(" ")[2]
        field = ".permission" if key.startswith("rules[") else ""
        where = f"line {rule.line}: " if rule.line is not None else ""
        problems.append(
            Problem(
                rule.file or rule.origin.rpartition(" ")[0],
                _names_nothing(rule, permissions),
                f"{where}{key}{field}",
                ErrorCode.POLICY_INVALID,
            )
        )
    own, user_file = layers.own, layers.user_file
    if own is not None and user_file is not None:
        for index, name in enumerate(own.requires.capabilities):
            if name in capabilities or name == "*" or name.startswith("net:"):
                continue
            guess = closest(name, capabilities)
            hint = f'did you mean "{guess}"?' if guess else "no served tool declares it"
            line = line_of(layers.lines, ("requires", "capabilities", index))
            problems.append(
                Problem(
                    user_file,
                    f'unknown capability "{name}"; {hint}',
                    f"line {line}: requires.capabilities[{index}]"
                    if line is not None
                    else f"requires.capabilities[{index}]",
                    ErrorCode.POLICY_INVALID,
                )
            )
    return problems


def _names_nothing(rule: Rule, permissions: set[str]) -> str:
    """Why a rule's permission names nothing served, and what it could be instead."""
    group = rule.group
    if group is not None and group.manifests is not None:
        return (
            f'no tool served here comes from "{rule.permission}" ({group.manifests}): name a '
            "manifest file or a folder holding the manifests of tools being served (a relative "
            "path is read from the folder of the file it is written in, or from the working "
            "directory for --allow); `mcp-toolbridge list --json` shows each tool's source"
        )
    if group is not None:
        return (
            f'"{rule.permission}" fits no tool served here: no MCP name or manifest id of a '
            "served or locked tool matches the glob; `mcp-toolbridge list` shows the tools"
        )
    guess = closest(rule.permission, permissions)
    hint = f'did you mean "{guess}"?' if guess else "`mcp-toolbridge list` shows the tools"
    return (
        f'unknown permission "{rule.permission}": not a tool served here, a locked tool '
        f"or a capability; {hint}"
    )


def unmatchable_rules(rules: Iterable[Rule], tools: Iterable[ToolSpec]) -> list[Problem]:
    """Notices for rules that name a tool and carry a pattern the tool can never give.

    A tool without argument roles (every manifest tool; see docs/permissions.md) that is
    not an http tool names no path, host or command, so its calls have only the
    "no argument" subject, which only rules without a pattern match.
    """
    patterned: dict[str, list[Rule]] = {}
    groups: list[Rule] = []
    for rule in rules:
        if rule.kind != "any" and rule.scope != "session":
            patterned.setdefault(rule.permission, []).append(rule)
            if rule.group is not None:
                groups.append(rule)
    if not patterned:
        return []
    notices: list[Problem] = []
    for spec in tools:
        if spec.argument_roles or isinstance(spec.transport, HttpTransport):
            continue
        for name in dict.fromkeys((spec.name, spec.id)):
            for rule in patterned.get(name, ()):
                notices.append(_unmatchable(rule, spec))
        for rule in [r for r in groups if r.names_tool(spec)]:
            if rule.permission not in (spec.name, spec.id):
                groups.remove(rule)  # one notice per rule, naming the first such tool
                notices.append(_unmatchable(rule, spec))
    return notices


def _unmatchable(rule: Rule, spec: ToolSpec) -> Problem:
    path, _, where = rule.origin.rpartition(" ")
    shown = json.dumps(rule.pattern)
    if rule.kind == "prefix":
        shown = f"{{ prefix = {shown} }}"
    tool = f"{spec.source.path}: {spec.source.locator(spec.id)}"
    return Problem(
        path or rule.origin,
        f'the pattern {shown} of this rule for "{rule.permission}" can never match: tool '
        f'"{spec.name}" ({tool}) has no argument roles, so its calls name no path, host or '
        "command for a pattern to match, and the rule never applies. Drop the pattern to have "
        f"the rule {rule.action} every call of the tool, or decide by the arguments in a "
        "watchdog (it sees them)",
        where if path else "",
        ErrorCode.POLICY_INVALID,
        Severity.NOTICE,
    )
