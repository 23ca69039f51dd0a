"""The locked tools a server serves: which ones, their configuration, their implementations.

Two stages, because the catalog needs the tools' declarations before a runtime exists:

- :func:`plan_locked` (at load): which ids are served, the skills found, the web_search
  providers and the subagent limits, from the settings and the operator's policy file. Its
  ``specs`` join the catalog like manifest tools (reserved names, policy exposure).
- :meth:`LockedPlan.tools` (per runtime, and again per reload): the implementations, bound to
  the runtime's sessions and file locks, the current catalog's search index, and the bridge
  (task runs its subagent's calls through ``Bridge.call``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mcp_toolbridge.builtins import bash as bash_tool
from mcp_toolbridge.builtins import question, todo, tool_search
from mcp_toolbridge.builtins.base import BuiltinTool
from mcp_toolbridge.builtins.fs import edit as fs_edit
from mcp_toolbridge.builtins.fs import glob_grep_specs as search_specs
from mcp_toolbridge.builtins.fs import read as fs_read
from mcp_toolbridge.builtins.fs import write as fs_write
from mcp_toolbridge.builtins.fs.atomic import PathLocks
from mcp_toolbridge.builtins.fs.glob_grep import GlobTool, GrepTool
from mcp_toolbridge.builtins.fs.visibility import ReadVerdict
from mcp_toolbridge.builtins.session import Sessions
from mcp_toolbridge.builtins.skill import tool as skill
from mcp_toolbridge.builtins.skill.discovery import default_skill_dirs
from mcp_toolbridge.builtins.task import tool as task
from mcp_toolbridge.builtins.task.subagent import CallTool, Limits
from mcp_toolbridge.builtins.web import fetch as web_fetch
from mcp_toolbridge.builtins.web import search as web_search
from mcp_toolbridge.builtins.web.providers import (
    SearchProvider,
    WebSearchConfig,
    load_web_search_config,
    providers_from_config,
)
from mcp_toolbridge.catalog import Catalog, DeferredIndex, SearchIndex
from mcp_toolbridge.errors import ConfigError, ErrorCode, Problem
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.names import LOCKED_IDS as LOCKED_IDS
from mcp_toolbridge.policy import (
    ACTION_RANK,
    Action,
    Policy,
    PolicyFile,
    Subject,
    Targets,
    is_within,
    resolve,
)
from mcp_toolbridge.secrets import SecretResolver

MAX_SCOPE_FOLDERS = 10_000
"""Folders glob and grep remember as inside the fs.read scope (see _scope_check)."""

SUBAGENT_MAX_MANIFEST_TOOLS = 64
"""A subagent is offered the catalog's manifest tools when there are at most this many (the
server lists them all too); past it, only the locked tools, tool_search included."""


def parse_locked(text: str) -> tuple[str, ...]:
    """``--locked``: ``all``, ``none`` or a comma-separated list of locked ids."""
    words = [w.strip() for w in text.split(",") if w.strip()]
    if words == ["all"]:
        return LOCKED_IDS
    if words in ([], ["none"]):
        return ()
    unknown = [w for w in words if w not in LOCKED_IDS]
    if unknown:
        raise ConfigError(
            f"--locked: unknown tool {', '.join(map(repr, unknown))}; use all, none or a "
            f"comma-separated list of: {', '.join(LOCKED_IDS)}",
            code=ErrorCode.CONFIG_INVALID,
        )
    return tuple(name for name in LOCKED_IDS if name in words)


@dataclass(frozen=True)
class LockedPlan:
    """What the locked tools are, decided at load; see the module doc."""

    names: tuple[str, ...]
    workspace: Path
    environ: Mapping[str, str]
    config: PolicyFile
    skills: skill.SkillTool
    providers: tuple[SearchProvider, ...]
    web_search: WebSearchConfig
    specs: tuple[ToolSpec, ...]
    problems: tuple[Problem, ...]

    def tools(
        self,
        *,
        sessions: Sessions,
        locks: PathLocks,
        index: SearchIndex | DeferredIndex,
        catalog: Catalog,
        call_tool: CallTool,
        list_tools: Callable[[], Sequence[ToolSpec]],
        policy: Policy,
    ) -> list[BuiltinTool]:
        """The implementations of the planned tools, bound to one runtime."""
        ws = self.workspace
        subagents = self.config.subagents
        make: dict[str, Callable[[], BuiltinTool]] = {
            "read": lambda: fs_read.ReadTool(ws, sessions),
            "write": lambda: fs_write.WriteTool(ws, locks),
            "edit": lambda: fs_edit.EditTool(ws, locks),
            "glob": lambda: GlobTool(
                ws, sessions, readable=read_verdict(policy, search_specs.GLOB_SPEC)
            ),
            "grep": lambda: GrepTool(
                ws, sessions, readable=read_verdict(policy, search_specs.GREP_SPEC)
            ),
            "bash": lambda: bash_tool.BashTool(
                ws, sessions, self.environ, self.config.bash.env_passthrough
            ),
            "todo": lambda: todo.TodoTool(sessions),
            "question": question.QuestionTool,
            "task": lambda: task.TaskTool(
                call_tool,
                list_tools,
                max_turns=subagents.max_turns,
                max_seconds=subagents.max_seconds,
                max_depth=subagents.max_depth,
                subagent_tools=subagents.tools,
            ),
            "web_search": lambda: web_search.WebSearchTool(
                self.providers,
                sessions,
                max_calls_per_session=self.web_search.max_calls_per_session,
                timeout_s=self.web_search.timeout_s,
            ),
            "web_fetch": lambda: web_fetch.WebFetchTool(
                sessions,
                allow_loopback=self.config.web_fetch.allow_loopback,
                timeout_s=self.config.web_fetch.timeout_s,
                host_check=redirect_check(policy),
            ),
            "skill": lambda: self.skills,
            "tool_search": lambda: tool_search.ToolSearch(index, catalog),
        }
        return [make[name]() for name in self.names]


def redirect_check(policy: Policy) -> web_fetch.HostCheck:
    """web_fetch's check of a redirect to another host: the capability scope and the rules, as
    for a call naming that host. Only an allow follows it: a redirect cannot ask a person."""
    spec = web_fetch.SPEC

    def check(host: str) -> str | None:
        targets = Targets(hosts=(host,))
        denial = policy.check_capabilities(spec, targets)
        if denial is not None:
            return denial.message
        decision = policy.decide(spec, targets)
        if decision.action != "allow":
            return f"{decision.rule} says {decision.action} for {host}; call web_fetch with it"
        return None

    return check


def read_verdict(policy: Policy, spec: ToolSpec) -> ReadVerdict:
    """glob's or grep's view of reading one result path (see builtins/fs_visibility.py).

    Outside the tool's fs.read scope is deny. Otherwise the stricter of: the rules' decision
    for a call of ``spec`` naming that path (what the gate would say; fs.read rules apply), and
    a rule for the read tool with a pattern that matches it (a read deny rule hides files from
    glob and grep too). The read tool's unpatterned rules and default are left out, so a policy
    that serves grep but not read still lets grep show what its own rules allow.

    A path no patterned rule matches gets the same decision as any other such path, so that
    one is computed once; the rest costs a scope check and one match per patterned rule."""
    read_spec = fs_read.SPEC
    probe = Subject("fs.read", path=Path("/"))
    own = [r for r in policy.rules if r.kind != "any" and r.applies_to(spec, probe)]
    read = [r for r in policy.rules if r.kind != "any" and r.applies_to(read_spec, probe)]
    patterned = tuple({id(r): r for r in own + read}.values())
    unmatched: list[Action] = []
    in_scope = _scope_check(policy, spec)

    def verdict(path: Path) -> Action:
        if not in_scope(path):
            return "deny"
        targets = Targets(paths_read=(path,))
        subject = Subject("fs.read", path=path)
        if not any(rule.match(subject) is not None for rule in patterned):
            if not unmatched:
                unmatched.append(policy.decide(spec, targets).action)
            return unmatched[0]
        action = policy.decide(spec, targets).action
        winner = resolve(read, read_spec, subject)
        if winner is not None and ACTION_RANK[winner.action] > ACTION_RANK[action]:
            action = winner.action
        return action

    return verdict


def _scope_check(policy: Policy, spec: ToolSpec) -> Callable[[Path], bool]:
    """Whether a path is inside ``spec``'s fs.read scope. When the scope is plain folders (no
    glob), a file whose folder is inside is inside: folders found inside are remembered."""

    def full(path: Path) -> bool:
        return policy.check_capabilities(spec, Targets(paths_read=(path,))) is None

    try:
        roots = policy.tool_scope(spec).fs_read
    except ValueError:
        return full
    if any(pattern.regex is not None for pattern in roots):
        return full
    inside: set[Path] = set()

    def check(path: Path) -> bool:
        folder = path.parent
        if folder in inside:
            return True
        if any(is_within(folder, pattern.root) for pattern in roots):
            if len(inside) >= MAX_SCOPE_FOLDERS:
                inside.clear()
            inside.add(folder)
            return True
        return full(path)

    return check


def _limits(config: PolicyFile) -> Limits:
    return Limits(max_turns=config.subagents.max_turns, max_seconds=config.subagents.max_seconds)


def plan_locked(
    names: Collection[str],
    *,
    workspace: Path,
    environ: Mapping[str, str],
    config: PolicyFile,
    origin: str,
    secrets: SecretResolver,
    skill_dirs: Sequence[Path] = (),
) -> LockedPlan:
    """Decide the locked tools. Raises ConfigError naming ``origin`` (the policy file) for a
    bad ``[web_search]`` table or a provider whose key is not set."""
    chosen = tuple(name for name in LOCKED_IDS if name in names)
    try:
        search_config = load_web_search_config(config.web_search)
        providers = (
            tuple(providers_from_config(search_config, secrets)) if "web_search" in chosen else ()
        )
    except ConfigError as exc:
        raise ConfigError(
            f"{origin}: {exc.message}", code=ErrorCode.CONFIG_INVALID, origin=origin
        ) from exc
    skills = skill.SkillTool(list(skill_dirs) or default_skill_dirs(workspace))
    static: dict[str, ToolSpec] = {
        "read": fs_read.SPEC,
        "write": fs_write.SPEC,
        "edit": fs_edit.SPEC,
        "glob": search_specs.GLOB_SPEC,
        "grep": search_specs.GREP_SPEC,
        "bash": bash_tool.SPEC,
        "todo": todo.SPEC,
        "task": task.build_spec(_limits(config)),
        "question": question.SPEC,
        "web_search": web_search.build_spec([p.host for p in providers]),
        "web_fetch": web_fetch.SPEC,
        "skill": skills.spec,
        "tool_search": tool_search.SPEC,
    }
    problems = tuple(skills.problems) if "skill" in chosen else ()
    return LockedPlan(
        names=chosen,
        workspace=workspace,
        environ=dict(environ),
        config=config,
        skills=skills,
        providers=providers,
        web_search=search_config,
        specs=tuple(static[name] for name in chosen),
        problems=problems,
    )


def subagent_offer(catalog: Catalog) -> list[ToolSpec]:
    """The tools a subagent may be offered from ``catalog`` (see SUBAGENT_MAX_MANIFEST_TOOLS).
    Names are counted first: a big catalog restored from the start-up cache is not read
    record by record to offer none of it."""
    builtins = [_spec_of(catalog, name) for name in catalog.builtin_names()]
    manifest = catalog.manifest_names()
    if len(manifest) > SUBAGENT_MAX_MANIFEST_TOOLS:
        return builtins
    return builtins + [_spec_of(catalog, name) for name in manifest]


def _spec_of(catalog: Catalog, name: str) -> ToolSpec:
    entry = catalog.get(name)
    assert entry is not None, name
    return entry.spec
