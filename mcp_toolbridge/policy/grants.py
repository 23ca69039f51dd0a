"""The rules "always" answers grant: each answer is kept as a
:class:`~mcp_toolbridge.state.Grant` (in the State port, by owner: a person, or an anonymous
caller's session), and compiled into session-scope rules when a call is decided."""

from __future__ import annotations

import functools
from collections.abc import Iterable

from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.policy.requirements import Targets
from mcp_toolbridge.policy.rules import Action, Rule, compile_rule, subjects
from mcp_toolbridge.state import Grant


class SessionRules:
    """The rules a caller's "always" answers granted (its person's, or its session's when
    anonymous), compiled. Not shared between owners; the answers themselves are kept as
    :class:`~mcp_toolbridge.state.Grant` records in the State port."""

    def __init__(self) -> None:
        self._rules: list[Rule] = []

    @classmethod
    def of(cls, grants: Iterable[Grant]) -> SessionRules:
        """The compiled rules of ``grants`` (compiled once per grant and position)."""
        rules = cls()
        rules._rules = [_compiled_grant(g, i) for i, g in enumerate(grants)]
        return rules

    @property
    def rules(self) -> tuple[Rule, ...]:
        return tuple(self._rules)

    def add(self, permission: str, pattern: str | None, action: Action = "allow") -> Rule:
        """Add one rule; ``pattern`` is an exact text or absolute path (no variables)."""
        rule = _compiled_grant(Grant(permission, pattern, action), len(self._rules))
        self._rules.append(rule)
        return rule

    def add_always(self, spec: ToolSpec, targets: Targets, action: Action = "allow") -> None:
        """Remember an "always" answer: the same tool with the same arguments' targets."""
        for grant in always_grants(spec, targets, action):
            self.add(grant.permission, grant.pattern, grant.action)


def always_grants(spec: ToolSpec, targets: Targets, action: Action = "allow") -> list[Grant]:
    """What an "always" answer grants: the same tool with the same arguments' targets (one
    grant per path, host or command; any argument when the call targets nothing)."""
    return [Grant(spec.name, s.pattern_text(), action) for s in subjects(targets)]


@functools.lru_cache(maxsize=4096)
def _compiled_grant(grant: Grant, index: int) -> Rule:
    pattern = grant.pattern
    escaped = None if pattern is None else pattern.replace("{", "{{").replace("}", "}}")
    return compile_rule(
        grant.permission, escaped, grant.action, scope="session", origin=f"session rule {index}"
    )
