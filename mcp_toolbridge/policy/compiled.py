"""The policy: capability grants, permission rules in three scopes, and ``decide``.

Load once with :meth:`Policy.load` (the operator's ``--policy`` file or the built-in default,
plus ``<workspace>/.toolbridge/policy.toml``); then per call, after argument validation:

1. ``policy.check_capabilities(spec, targets)`` -> Denial | None   (first layer)
2. ``policy.decide(spec, targets, session_rules)`` -> Decision      (the rules)
3. the watchdog, if ``policy.watchdog``; ``combine(decision, verdict)`` can only tighten.

Everything here is pure: patterns are compiled at load, no I/O happens per call except the
realpath calls made when the caller canonicalizes targets. The file format, the specificity
order and worked examples are in docs/permissions.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mcp_toolbridge.errors import ErrorCode, Problem, Severity
from mcp_toolbridge.model import HttpTransport, RequirementSet, ToolSpec
from mcp_toolbridge.policy.file import (
    DEFAULT_POLICY_TOML,
    PROJECT_POLICY,
    PolicyFile,
    PrefixPattern,
    ProjectFile,
    RuleModel,
    invalid,
    parse_policy,
    read_policy_text,
)
from mcp_toolbridge.policy.requirements import (
    KNOWN_CAPABILITIES,
    ArgumentRoles,
    CommandSplitter,
    Denial,
    Scope,
    Targets,
    Variables,
    argument_targets,
    check_scope,
    compile_requirements,
    host_of,
    split_command,
)
from mcp_toolbridge.policy.rules import (
    Action,
    Rule,
    RuleScope,
    Subject,
    compile_rule,
    resolve,
    subjects,
)
from mcp_toolbridge.policy.watchdog import Verdict, WatchdogConfig
from mcp_toolbridge.workspace import needs_workspace, no_workspace_hint


@dataclass(frozen=True, slots=True)
class Decision:
    action: Action
    rule: str
    """The rule, default or hook that made the decision, for the model and the audit log."""
    scope: str
    """manifest | project | session | default | capability | confirmation | watchdog | shell
    (and, recorded by the runtime's audit observer for a call refused at argument validation,
    validation)"""

    @classmethod
    def refused(cls, denial: Denial) -> Decision:
        """The decision for a call the capability check refused (no rule can change it)."""
        return cls("deny", f"{denial.rule}: {denial.message}", "capability")


class SessionRules:
    """Rules granted during one session by "always" answers. Not shared between sessions."""

    def __init__(self) -> None:
        self._rules: list[Rule] = []

    @property
    def rules(self) -> tuple[Rule, ...]:
        return tuple(self._rules)

    def add(self, permission: str, pattern: str | None, action: Action = "allow") -> Rule:
        """Add one rule; ``pattern`` is an exact text or absolute path (no variables)."""
        escaped = None if pattern is None else pattern.replace("{", "{{").replace("}", "}}")
        index = len(self._rules)
        rule = compile_rule(
            permission, escaped, action, scope="session", origin=f"session rule {index}"
        )
        self._rules.append(rule)
        return rule

    def add_always(self, spec: ToolSpec, targets: Targets, action: Action = "allow") -> None:
        """Remember an "always" answer: the same tool with the same arguments' targets."""
        found = subjects(targets)
        if not found:
            self.add(spec.name, None, action)
        for subject in found:
            self.add(spec.name, subject.pattern_text(), action)


def combine(decision: Decision, verdict: Verdict) -> Decision:
    """Fold the watchdog's verdict into the rules' decision: it can only tighten it.

    A verdict never loosens: allow after ask is still ask, allow after deny is still deny.
    """
    if _rank(verdict.action) <= _rank(decision.action):
        return decision
    why = f"watchdog: {verdict.reason}" if verdict.reason else "watchdog"
    return Decision(verdict.action, why, "watchdog")


class Policy:
    """The compiled, effective policy. Build it with :meth:`load`."""

    def __init__(
        self,
        file: PolicyFile,
        *,
        variables: Variables,
        rules: tuple[Rule, ...],
        ignored: tuple[Rule, ...],
        scope: Scope,
        sources: tuple[str, ...],
    ) -> None:
        self.file = file
        self.variables = variables
        self.rules = rules
        self.ignored = ignored
        self.scope = scope
        self.sources = sources
        self.confirm_external_actions = file.security.confirm_external_actions
        self.watchdog: WatchdogConfig | None = (
            WatchdogConfig(tuple(file.watchdog.command), file.watchdog.timeout_s)
            if file.watchdog is not None
            else None
        )
        self._tool_scopes: dict[RequirementSet, Scope] = {}

    @property
    def workspace(self) -> Path | None:
        return self.variables.workspace[0] if self.variables.workspace else None

    @classmethod
    def load(
        cls,
        policy_file: Path | None,
        *,
        workspace: Path | None,
        user_data: Path | None,
        ad_hoc: Sequence[Path] = (),
    ) -> Policy:
        """Read the operator's policy (or the default) and the project's rules; compile both.

        Raises ConfigError (code policy.invalid) naming the file and the key.
        """
        variables = Variables.of(workspace=workspace, user_data=user_data, ad_hoc=ad_hoc)
        if policy_file is None:
            origin, text = "default policy", DEFAULT_POLICY_TOML
        else:
            origin, text = str(policy_file), read_policy_text(policy_file)
        file = parse_policy(PolicyFile, text, origin)
        try:
            scope = compile_requirements(file.requires.requirement_set(), variables)
        except ValueError as exc:
            raise invalid(origin, f"requires.{exc}") from exc
        rules = _compile_rules(file.rules, "manifest", origin, variables)
        sources = [origin]
        ignored: list[Rule] = []
        project_path = workspace / PROJECT_POLICY if workspace is not None else None
        if project_path is not None and project_path.is_file():
            project_origin = str(project_path)
            project = parse_policy(ProjectFile, read_policy_text(project_path), project_origin)
            compiled = _compile_rules(project.rules, "project", project_origin, variables)
            for rule in compiled:
                untrusted = rule.action == "allow" and not file.trust_project_allow
                (ignored if untrusted else rules).append(rule)
            sources.append(project_origin)
        return cls(
            file,
            variables=variables,
            rules=tuple(rules),
            ignored=tuple(ignored),
            scope=scope,
            sources=tuple(sources),
        )

    # -- capability layer -------------------------------------------------------------------

    def tool_scope(self, spec: ToolSpec) -> Scope:
        """The scope a call to ``spec`` runs in: the policy's grant united with the tool's own
        declared requirements (``grant = "declared"``), or the policy's grant alone."""
        if self.file.grant == "policy":
            return self.scope
        cached = self._tool_scopes.get(spec.requires)
        if cached is None:
            cached = self.scope.union(compile_requirements(spec.requires, self.variables))
            self._tool_scopes[spec.requires] = cached
        return cached

    def requirement_problems(self, spec: ToolSpec) -> list[Problem]:
        """Load problems in a tool's requirements (an undefined variable is one)."""
        try:
            compile_requirements(spec.requires, self.variables)
        except ValueError as exc:
            return [
                Problem(
                    spec.source.path,
                    f"requires.{exc}",
                    spec.source.locator(spec.name),
                    code=ErrorCode.MANIFEST_INVALID,
                )
            ]
        return []

    def targets(
        self,
        spec: ToolSpec,
        arguments: Mapping[str, Any],
        *,
        roles: ArgumentRoles | None = None,
        splitter: CommandSplitter = split_command,
    ) -> Targets:
        """argument_targets() with relative paths resolved against the workspace."""
        base = self.workspace or Path("/")
        return argument_targets(spec, arguments, base=base, roles=roles, splitter=splitter)

    def check_capabilities(self, spec: ToolSpec, targets: Targets) -> Denial | None:
        """The first layer: every path, host and command must be inside the granted scope.
        Without a workspace, a tool that works in it is refused whatever its arguments."""
        if self.workspace is None and needs_workspace(spec):
            return Denial("workspace", spec.name, no_workspace_hint())
        try:
            scope = self.tool_scope(spec)
        except ValueError as exc:
            return Denial("requires", spec.name, f"the tool's requirements are invalid: {exc}")
        denial = check_scope(scope, targets)
        if denial is not None and self.workspace is None and denial.capability.startswith("fs."):
            return replace(denial, message=f"{denial.message}; {no_workspace_hint()}")
        return denial

    # -- rules --------------------------------------------------------------------------------

    def decide(
        self, spec: ToolSpec, targets: Targets, session_rules: SessionRules | None = None
    ) -> Decision:
        """The rules' decision for a call whose targets passed the capability check."""
        rules = self.rules + (session_rules.rules if session_rules else ())
        worst: Decision | None = None
        all_session = True
        for subject in subjects(targets):
            winner = resolve(rules, spec, subject)
            if winner is None and (subject.capability, subject.path) in targets.operand_paths:
                continue  # a shell operand: the command's own subject decides it
            if winner is None:
                decision = self._fallback(spec)
                all_session = False
            else:
                decision = Decision(winner.action, winner.describe(), winner.scope)
                all_session = all_session and winner.scope == "session"
            if worst is None or _rank(decision.action) > _rank(worst.action):
                worst = decision
        if worst is None:  # every subject was a shell operand no rule matched
            worst = self._fallback(spec)
            all_session = False
        if (
            worst.action == "allow"
            and spec.safety.requires_confirmation
            and self.confirm_external_actions
            and not all_session
        ):
            return Decision(
                "ask",
                "the tool requires confirmation (security.confirm_external_actions = true)",
                "confirmation",
            )
        return worst

    def _fallback(self, spec: ToolSpec) -> Decision:
        default = self.file.default_action
        if default != "by-safety":
            return Decision(default, f"no rule matched; default_action = {default!r}", "default")
        if spec.safety.destructive:
            return Decision("ask", "default policy: the tool is destructive", "default")
        return Decision("allow", "default policy: the served tool is allowed", "default")

    def exposed(self, spec: ToolSpec) -> bool:
        """False when the tool must be left out of tools/list: denied whatever its arguments,
        requirements that do not compile or are refused, or (http) a host outside the scope."""
        try:
            scope = self.tool_scope(spec)
            tool_scope = compile_requirements(spec.requires, self.variables)
        except ValueError:
            return False
        if self.file.grant == "policy" and _uncovered(self.scope, tool_scope, spec.requires):
            return False
        if isinstance(spec.transport, HttpTransport) and "{" not in _authority(spec):
            try:
                host = host_of(spec.transport.url)
            except ValueError:
                return False
            if check_scope(scope, Targets(hosts=(host,))) is not None:
                return False
            if self.decide(spec, Targets(hosts=(host,))).action == "deny":
                return False
        for pattern in tool_scope.hosts:
            if "*" not in pattern.source and self._denies(spec, Subject.host(pattern.source)):
                return False
        return not self._denied_whatever(spec)

    def _denies(self, spec: ToolSpec, subject: Subject) -> bool:
        winner = resolve(self.rules, spec, subject)
        return winner is not None and winner.action == "deny"

    def _denied_whatever(self, spec: ToolSpec) -> bool:
        winner = resolve(self.rules, spec, Subject.none())
        if winner is None:
            if self.file.default_action != "deny":
                return False
        elif winner.action != "deny":
            return False
        sticky = winner is not None and winner.scope == "manifest"
        for rule in self.rules:
            if rule.kind == "any" or rule.action == "deny" or not rule.applies_to(spec):
                continue
            if sticky and rule.scope != "manifest":
                continue
            return False
        return True

    def unmatchable_rules(self, tools: Iterable[ToolSpec]) -> list[Problem]:
        """Notices for rules that name a tool and carry a pattern the tool can never give.

        A tool without argument roles (every manifest tool; see docs/permissions.md) that is
        not an http tool names no path, host or command, so its calls have only the
        "no argument" subject, which only rules without a pattern match.
        """
        patterned: dict[str, list[Rule]] = {}
        for rule in self.rules:
            if rule.kind != "any" and rule.scope != "session":
                patterned.setdefault(rule.permission, []).append(rule)
        if not patterned:
            return []
        notices: list[Problem] = []
        for spec in tools:
            if spec.argument_roles or isinstance(spec.transport, HttpTransport):
                continue
            for name in dict.fromkeys((spec.name, spec.id)):
                for rule in patterned.get(name, ()):
                    notices.append(_unmatchable(rule, spec))
        return notices

    # -- display ------------------------------------------------------------------------------

    def effective_scope(self, tools: Sequence[ToolSpec] = ()) -> Scope:
        """The agent-wide capability set: the policy's grant united with the requirements of
        every exposed tool (what an outer sandbox would need to allow)."""
        scope = self.scope
        for spec in tools:
            if self.exposed(spec):
                scope = scope.union(self.tool_scope(spec))
        return scope

    def render(self, tools: Sequence[ToolSpec] = ()) -> str:
        """The effective policy as JSON (``mcp-toolbridge policy --show``). With ``tools``,
        ``requires`` is the effective set over those of them that are exposed, and the tools
        left out of tools/list are named."""
        scope = self.effective_scope(tools)
        document: dict[str, Any] = {
            "sources": list(self.sources),
            "default_action": self.file.default_action,
            "grant": self.file.grant,
            "trust_project_allow": self.file.trust_project_allow,
            "security": {"confirm_external_actions": self.confirm_external_actions},
            "watchdog": None
            if self.watchdog is None
            else {"command": list(self.watchdog.argv), "timeout_s": self.watchdog.timeout_s},
            "variables": {
                "workspace": [str(p) for p in self.variables.workspace],
                "ad-hoc": [str(p) for p in self.variables.ad_hoc],
                "user-data": [str(p) for p in self.variables.user_data],
            },
            "requires": {
                "fs.read": [p.source for p in scope.fs_read],
                "fs.write": [p.source for p in scope.fs_write],
                "net.hosts": [p.source for p in scope.hosts],
                "shell": [s.model_dump(mode="json") for s in scope.shell],
                "capabilities": sorted(scope.capabilities),
                "expanded_to_nothing": list(scope.empty),
            },
            "sandbox": self.file.sandbox.model_dump(mode="json"),
            "hidden_tools": [t.name for t in tools if not self.exposed(t)],
            "rules": [r.as_json() for r in self.rules],
            "ignored_rules": [
                {**r.as_json(), "why": "project allow rules need trust_project_allow = true"}
                for r in self.ignored
            ],
            "precedence": (
                "most specific matching rule wins: exact > prefix > glob > any pattern; then the "
                "longer literal part; then tool > capability > '*'; then deny > ask > allow. "
                "A manifest deny cannot be overridden by project or session rules, nor a project "
                "deny by session rules. No match: default_action."
            ),
        }
        return json.dumps(document, indent=2)


def _rank(action: Action) -> int:
    return {"allow": 0, "ask": 1, "deny": 2}[action]


def _authority(spec: ToolSpec) -> str:
    assert isinstance(spec.transport, HttpTransport)
    rest = spec.transport.url.split("://", 1)[-1]
    return rest.split("/", 1)[0]


def _uncovered(policy: Scope, tool: Scope, requires: RequirementSet) -> bool:
    """grant = "policy": True when the tool declares something the policy does not grant."""
    for host in tool.hosts:
        probe = host.source.removeprefix("*.")
        if not any(p.source == host.source or p.matches(probe) for p in policy.hosts):
            return True
    for mine, theirs in ((tool.fs_read, policy.fs_read), (tool.fs_write, policy.fs_write)):
        for pattern in mine:
            if not any(p.regex is None and p.matches(pattern.root) for p in theirs):
                return True
    for entry in requires.shell:
        if not (policy.allows_shell() and (not policy.shell or entry in policy.shell)):
            granted = [s for s in policy.shell if s.cmd == entry.cmd and s.args is None]
            if not granted:
                return True
    for name in tool.capabilities - KNOWN_CAPABILITIES:
        if name not in policy.capabilities and "*" not in policy.capabilities:
            return True
    return False


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


def _compile_rules(
    models: list[RuleModel], scope: RuleScope, origin: str, variables: Variables
) -> list[Rule]:
    out: list[Rule] = []
    for index, model in enumerate(models):
        pattern = model.pattern
        text = pattern.prefix if isinstance(pattern, PrefixPattern) else pattern
        try:
            out.append(
                compile_rule(
                    model.permission,
                    text,
                    model.action,
                    scope=scope,
                    origin=f"{origin} rules[{index}]",
                    prefix=isinstance(pattern, PrefixPattern),
                    variables=variables,
                )
            )
        except ValueError as exc:
            raise invalid(origin, f"rules[{index}].pattern: {exc}") from exc
    return out
