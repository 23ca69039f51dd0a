"""The bash sub-policy's two hooks into the gate: redirect paths and the exact-rule floor.

:func:`mcp_toolbridge.shell_parse.splitter` already turns a command argument into one rule
subject per simple command. Two things a splitter cannot express are added here:

- :func:`shell_targets`: files named by redirections (``> out.txt``, ``< in``) become fs.read
  / fs.write targets, so the capability check and path rules see them like any path argument.
- :func:`shell_floor`: a command with parts that cannot be checked (``uncheckable``) is never
  allowed by a prefix, glob or "any" rule. An allow stands only when an allow rule whose
  pattern is exactly the command's text (an "always" answer stores such session rules) covers
  each flagged command and,
  when the command is opaque, the whole text as ``bash -c <command>``. Otherwise the decision
  becomes ask, which is deny on a headless host.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.paths import canonicalize
from mcp_toolbridge.policy import Decision, Policy, SessionRules
from mcp_toolbridge.requirements import Targets
from mcp_toolbridge.rules import Rule, Subject, resolve
from mcp_toolbridge.shell_parse import ParsedCommand, parse_command, whole


def shell_commands(spec: ToolSpec, arguments: Mapping[str, Any]) -> Iterator[ParsedCommand]:
    """The parsed value of every ``shell.run`` argument of a call."""
    for name, roles in spec.argument_roles.items():
        value = arguments.get(name)
        if "shell.run" in roles and isinstance(value, str) and value.strip():
            yield parse_command(value)


def shell_targets(
    policy: Policy, spec: ToolSpec, arguments: Mapping[str, Any], targets: Targets
) -> Targets:
    """``targets`` plus the redirect targets of the call's commands, canonicalized against the
    workspace. Raises PathRejectedError (ArgumentsError) for an unusable path."""
    base = policy.workspace or Path("/")
    reads: list[Path] = []
    writes: list[Path] = []
    for parsed in shell_commands(spec, arguments):
        for path in parsed.redirect_targets:
            found = writes if path in parsed.redirect_writes else reads
            found.append(canonicalize(path, base=base))
    if not reads and not writes:
        return targets
    return dataclasses.replace(
        targets,
        paths_read=targets.paths_read + tuple(reads),
        paths_write=targets.paths_write + tuple(writes),
    )


def exact_approval_missing(
    parsed: ParsedCommand, policy: Policy, spec: ToolSpec, session_rules: SessionRules | None
) -> str | None:
    """Why ``parsed`` must be asked about, or None when it is checkable or exactly allowed."""
    if parsed.checkable:
        return None
    rules = policy.rules + (session_rules.rules if session_rules else ())
    pending = [*parsed.flagged, *((whole(parsed.source),) if parsed.opaque else ())]
    for argv in pending:
        subject = Subject.command(argv)
        winner = resolve(rules, spec, subject)
        if winner is None or winner.action != "allow" or not _names_exactly(winner, subject):
            return parsed.ask_reason()
    return None


def _names_exactly(rule: Rule, subject: Subject) -> bool:
    """An exact rule, or a rule whose pattern text is the subject's text itself (a command
    with ``*`` in it, such as ``find . -name '*.o' -delete``, compiles as a glob)."""
    return rule.kind == "exact" or any(alt.text == subject.text for alt in rule.alternatives)


def shell_floor(
    policy: Policy,
    spec: ToolSpec,
    arguments: Mapping[str, Any],
    decision: Decision,
    session_rules: SessionRules | None = None,
) -> Decision:
    """Turn an allow into ask when a command has parts no exact rule approves."""
    if decision.action != "allow":
        return decision
    for parsed in shell_commands(spec, arguments):
        why = exact_approval_missing(parsed, policy, spec, session_rules)
        if why is not None:
            return Decision("ask", why, "shell")
    return decision
