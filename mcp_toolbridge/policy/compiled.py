"""The policy: capability grants, permission rules in three scopes, and ``decide``.

Load once with :meth:`Policy.load` (the operator's ``--policy`` file or the built-in default,
plus ``<workspace>/.toolbridge/policy.toml``); then per call, after argument validation:

1. ``policy.check_capabilities(spec, targets)`` -> Denial | None   (first layer)
2. ``policy.decide(spec, targets, session_rules)`` -> Decision      (the rules)
3. the watchdog, if ``policy.watchdog``; ``combine(decision, verdict)`` can only tighten.

Rules may be for some callers only (``rules.Who``): ``policy.for_caller(caller)`` is the
policy that caller gets (the rules for everyone and those for it), a view kept per distinct
set of identity rules that match; every method above works on it as on the whole.

Everything here is pure: patterns are compiled at load, no I/O happens per call except the
realpath calls made when the caller canonicalizes targets. The file format, the specificity
order and worked examples are in docs/permissions.md.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_toolbridge.cache import fingerprint
from mcp_toolbridge.errors import ErrorCode, Problem
from mcp_toolbridge.host import LOCAL, Caller
from mcp_toolbridge.model import HttpTransport, RequirementSet, ToolSpec
from mcp_toolbridge.policy.checks import name_problems, unmatchable_rules
from mcp_toolbridge.policy.file import PROJECT_POLICY
from mcp_toolbridge.policy.grants import SessionRules
from mcp_toolbridge.policy.layers import (
    DEFAULT_ORIGIN,
    Layers,
    compile_grant,
    compile_sources,
    load_layers,
    load_project,
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
from mcp_toolbridge.policy.rules import Action, Rule, Subject, resolve, subjects
from mcp_toolbridge.workspace import needs_workspace, no_workspace_hint

if TYPE_CHECKING:  # the watchdog's module: imported when a policy names a watchdog
    from mcp_toolbridge.policy.watchdog import Verdict, WatchdogConfig


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
        layers: Layers,
        *,
        variables: Variables,
        rules: tuple[Rule, ...],
        ignored: tuple[Rule, ...],
        scope: Scope,
        sources: tuple[str, ...],
        project_file: str | None = None,
    ) -> None:
        file = layers.file
        self.layers = layers
        self.file = file
        self.variables = variables
        self.rules = rules
        self.ignored = ignored
        self.scope = scope
        self.sources = sources
        self.project_file = project_file
        self.confirm_external_actions = file.security.confirm_external_actions
        self.watchdog: WatchdogConfig | None = None
        if file.watchdog is not None:
            from mcp_toolbridge.policy.watchdog import WatchdogConfig

            self.watchdog = WatchdogConfig.of(file.watchdog, layers.user_file)
        self._tool_scopes: dict[RequirementSet, Scope] = {}
        self._first_compiled: dict[RequirementSet, Scope] = {}
        self._identity = tuple(i for i, r in enumerate(rules) if r.who is not None)
        self._views: dict[tuple[int, ...], Policy] = {}
        self._callable: dict[tuple[tuple[int, ...], str], bool] = {}
        self._touched: dict[str, bool] = {}

    @property
    def workspace(self) -> Path | None:
        return self.variables.workspace[0] if self.variables.workspace else None

    @property
    def user_file(self) -> str | None:
        """The ``--policy`` file, when one was given."""
        return self.layers.user_file

    @classmethod
    def load(
        cls,
        policy_file: Path | None,
        *,
        workspace: Path | None,
        user_data: Path | None,
        ad_hoc: Sequence[Path] = (),
        allow: Sequence[str] = (),
    ) -> Policy:
        """The built-in default, the operator's ``--policy`` file over it and ``--allow`` over
        both (see :mod:`.layers`), then the project's rules; all compiled.

        Raises ConfigError (code policy.invalid) naming the file, the line and the key.
        """
        variables = Variables.of(workspace=workspace, user_data=user_data, ad_hoc=ad_hoc)
        layers = load_layers(policy_file, allow)
        scope = compile_grant(layers, variables)
        rules = compile_sources(layers.rules, "manifest", variables)
        sources = [DEFAULT_ORIGIN] if layers.file.extends == "default" else []
        sources += [layers.user_file] if layers.user_file else []
        sources += ["--allow"] if allow else []
        ignored: list[Rule] = []
        project_path = workspace / PROJECT_POLICY if workspace is not None else None
        project_file = None
        if project_path is not None and project_path.is_file():
            project_file = str(project_path)
            written, _ = load_project(project_path)
            for rule in compile_sources(written, "project", variables):
                untrusted = rule.action == "allow" and not layers.file.trust_project_allow
                (ignored if untrusted else rules).append(rule)
            sources.append(project_file)
        return cls(
            layers,
            variables=variables,
            rules=tuple(rules),
            ignored=tuple(ignored),
            scope=scope,
            sources=tuple(sources),
            project_file=project_file,
        )

    # -- callers ----------------------------------------------------------------------------

    def _matched(self, caller: Caller) -> tuple[int, ...]:
        who = [(i, self.rules[i].who) for i in self._identity]
        return tuple(i for i, w in who if w is not None and w.matches(caller))

    def for_caller(self, caller: Caller) -> Policy:
        """The policy ``caller`` gets: the rules for everyone and the rules for it. The same
        object for callers the same identity rules match (the whole policy, without any)."""
        if not self._identity:
            return self
        matched = self._matched(caller)
        view = self._views.get(matched)
        if view is None:
            if len(self._views) >= MAX_VIEWS:
                self._views.clear()
            view = copy.copy(self)
            view.rules = tuple(r for i, r in enumerate(self.rules) if r.who is None or i in matched)
            view._identity, view._views, view._callable = (), {}, {}
            self._views[matched] = view
        return view

    def callable_by(self, spec: ToolSpec, caller: Caller) -> bool:
        """Whether ``caller`` may see and call ``spec`` at all (it is exposed to it): a tool
        no identity rule names is what the catalog says; others are decided per caller."""
        if not self._identity or not self._named(spec):
            return True
        key = (self._matched(caller), spec.name)
        found = self._callable.get(key)
        if found is None:
            if len(self._callable) >= MAX_VIEWS * 64:
                self._callable.clear()
            found = self._callable[key] = self.for_caller(caller).exposed(spec)
        return found

    def _named(self, spec: ToolSpec) -> bool:
        """Whether a rule for some callers applies to ``spec`` (its name, id, a capability
        it declares, or ``*``)."""
        found = self._touched.get(spec.name)
        if found is None:
            found = any(self.rules[i].applies_to(spec) for i in self._identity)
            self._touched[spec.name] = found
        return found

    def caller_view(self, caller: Caller) -> tuple[int, ...] | None:
        """What decides ``caller``'s tool list beside the catalog: the identity rules that
        match it (None when the policy has none)."""
        return self._matched(caller) if self._identity else None

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

    def fingerprint(self) -> bytes:
        """A digest of everything the compiled policy decides by: equal ones decide alike."""
        state = (self.layers, self.variables, self.rules, self.ignored, self.scope, self.sources)
        return fingerprint((state, self.project_file))

    def requirements_fingerprint(self, requires: RequirementSet) -> bytes:
        """A digest of ``requires`` compiled under this policy's variables (or of why it does
        not compile): path patterns are canonicalized against the file system, so the same
        declaration can compile differently from one run to the next."""
        try:
            return fingerprint(self._compiled(requires))
        except ValueError as exc:
            return fingerprint(f"invalid: {exc}")

    def _compiled(self, requires: RequirementSet) -> Scope:
        """``requires`` compiled now; the first compilation of each is kept for
        :meth:`resolved_paths`."""
        compiled = compile_requirements(requires, self.variables)
        self._first_compiled.setdefault(requires, compiled)
        return compiled

    def resolved_paths(self) -> list[tuple[str, str]]:
        """Each path pattern of the grant and of every requirement set compiled so far (at a
        start: every tool's) as (its part before any wildcard, the real path that part resolved
        to through its links then): what is exposed and granted is a function of them."""
        scopes = (self.scope, *self._first_compiled.values())
        patterns = [p for scope in scopes for p in (*scope.fs_read, *scope.fs_write)]
        return [(p.literal, str(p.root)) for p in patterns]

    def requirement_problems(self, spec: ToolSpec) -> list[Problem]:
        """Load problems in a tool's requirements (an undefined variable is one)."""
        try:
            self._compiled(spec.requires)
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

    def judge(
        self, spec: ToolSpec, targets: Targets, session_rules: SessionRules | None = None
    ) -> list[tuple[Subject, Decision]]:
        """Each subject's own decision (a shell operand no rule matches is left out)."""
        rules = self.rules + (session_rules.rules if session_rules else ())
        path_rules: tuple[Rule, ...] | None = None
        found: list[tuple[Subject, Decision]] = []
        for subject in subjects(targets):
            operand = (subject.capability, subject.path) in targets.operand_paths
            applicable = rules
            if operand:
                # Part of the text the command's own rule matched: only rules about paths
                # decide it (a path pattern, or an fs capability), not the tool's blanket
                # rule, which the command subject already met.
                if path_rules is None:
                    path_rules = _about_paths(rules, spec)
                applicable = path_rules
            winner = resolve(applicable, spec, subject)
            if winner is None and operand:
                continue  # a shell operand: the command's own subject decides it
            if winner is None:
                found.append((subject, self._fallback(spec)))
            else:
                found.append((subject, Decision(winner.action, winner.describe(), winner.scope)))
        return found

    def decide(
        self, spec: ToolSpec, targets: Targets, session_rules: SessionRules | None = None
    ) -> Decision:
        """The rules' decision for a call whose targets passed the capability check."""
        judged = self.judge(spec, targets, session_rules)
        worst: Decision | None = None
        for _, decision in judged:
            if worst is None or _rank(decision.action) > _rank(worst.action):
                worst = decision
        if worst is None:  # every subject was a shell operand no rule matched
            worst = self._fallback(spec)
        all_session = bool(judged) and all(d.scope == "session" for _, d in judged)
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
        head = 'no rule matched; default_action = "by-safety"'
        if spec.safety.destructive and "destructive" in spec.safety.inferred:
            why = (
                f'{head}: "{spec.name}" does not declare whether it changes or deletes anything '
                "(no annotations in its manifest), so it is treated as destructive"
            )
            return Decision("ask", why, "default")
        if spec.safety.destructive:
            return Decision("ask", f'{head}: "{spec.name}" is declared destructive', "default")
        return Decision("allow", f'{head}: "{spec.name}" is declared non-destructive', "default")

    def exposed(self, spec: ToolSpec) -> bool:
        """False when the tool must be left out of tools/list: denied whatever its arguments,
        requirements that do not compile or are refused, or (http) a host outside the scope.
        On the whole policy, with rules for some callers: False only when no caller can have
        it (the rules for everyone hide it, and no rule for some callers may allow it)."""
        if self._identity:
            everyone = self.for_caller(LOCAL)
            some = (self.rules[i] for i in self._identity)
            return everyone.exposed(spec) or any(
                r.action != "deny" and r.applies_to(spec) for r in some
            )
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
        """Notices for rules with a pattern a tool can never give (see :mod:`.checks`)."""
        return unmatchable_rules(self.rules, tools)

    def name_problems(self, tools: Sequence[ToolSpec], locked: Iterable[str]) -> list[Problem]:
        """Errors for rule and capability names that name nothing (see :mod:`.checks`)."""
        return name_problems((*self.rules, *self.ignored), self.layers, tools, locked)

    # -- display (policy show: see show.render_policy) ----------------------------------------

    def effective_scope(self, tools: Sequence[ToolSpec] = ()) -> Scope:
        """The agent-wide capability set: the policy's grant united with the requirements of
        every exposed tool (what an outer sandbox would need to allow)."""
        scope = self.scope
        for spec in tools:
            if self.exposed(spec):
                scope = scope.union(self.tool_scope(spec))
        return scope


MAX_VIEWS = 1024
"""Caller views (and tool-list answers per view) kept before the cache starts over."""


def _about_paths(rules: tuple[Rule, ...], spec: ToolSpec) -> tuple[Rule, ...]:
    """The rules that say something about paths: all but a tool's (or ``*``'s) "any" rules."""
    return tuple(
        r for r in rules if not (r.kind == "any" and (r.permission == "*" or r.names_tool(spec)))
    )


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
