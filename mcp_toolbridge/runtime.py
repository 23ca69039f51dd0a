"""Composition root: settings -> loaded catalog -> a Bridge with its executors and gate.

The CLI verbs and the server share this, so ``mcp-toolbridge call`` runs a tool exactly the
way MCP ``tools/call`` does.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import platformdirs

from mcp_toolbridge.bridge import (
    AuditLog,
    Bridge,
    CallOutcome,
    Observer,
    PolicyGate,
    audit_observer,
    span_observer,
)
from mcp_toolbridge.builtins import (
    LOCKED_IDS,
    PROXY_TOOL,
    TOOL_SEARCH_SPEC,
    BuiltinExecutor,
    CallTool,
    LockedPlan,
    PathLocks,
    Sessions,
    ToolSearch,
    plan_locked,
    proxy_spec,
    subagent_offer,
)
from mcp_toolbridge.catalog import Catalog, Pin, SearchIndex, named_as_written, pin_tools
from mcp_toolbridge.errors import ConfigError, ErrorCode, Problem, Severity
from mcp_toolbridge.executors import (
    DEFAULT_MAX_OUTPUT_BYTES,
    DEFAULT_TIMEOUT_S,
    ExecToolExecutor,
    Executor,
    HttpExecutor,
    probe_sandbox,
)
from mcp_toolbridge.host import CallContext
from mcp_toolbridge.loaders import LoadReport, load_paths
from mcp_toolbridge.model import HttpTransport, ToolSpec
from mcp_toolbridge.policy import Policy, SandboxMode, Targets, host_of, load_parser
from mcp_toolbridge.sandbox import Sandbox
from mcp_toolbridge.secrets import SecretResolver
from mcp_toolbridge.workspace import UNSET_ROOT, default_workspace

BUILTIN_SPECS: tuple[ToolSpec, ...] = (TOOL_SEARCH_SPEC,)
"""The smallest built-in set (tool_search alone), for catalogs loaded without the locked
tools; ``load_catalog(..., locked=True)`` serves the locked set the settings choose."""

TRANSPORT_KINDS = ("exec", "http", "builtin")
"""Every transport kind an executor is registered for (a stand-in takes them all)."""


def bundled_manifests() -> Path:
    """The example catalog: inside the installed package, or beside it in a checkout."""
    packaged = Path(__file__).parent / "examples"
    return packaged if packaged.is_dir() else Path(__file__).parent.parent / "manifests"


def user_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("mcp-toolbridge"))


@dataclass(frozen=True)
class Settings:
    paths: Sequence[Path] = ()
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    max_concurrency: int | None = None
    secrets_file: Path | None = None
    policy_file: Path | None = None
    workspace: Path | None = None
    """Roots every fs capability (``--workspace``); None: the client's MCP roots, else the
    working directory unless that is / or the home folder (see workspace.py)."""
    audit_path: Path | None = None
    """Where audit lines go; None: the per-user data directory."""
    audit: bool = True
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    locked: tuple[str, ...] = LOCKED_IDS
    """Which locked tools to serve when the catalog is loaded with ``locked=True``."""
    ad_hoc: tuple[Path, ...] = ()
    """The folders ``{ad-hoc}`` expands to (``--ad-hoc``); none by default."""
    skills_dirs: tuple[Path, ...] = ()
    """Where the skill tool looks; empty: <workspace>/.toolbridge/skills and the user's."""
    keep_names: bool = False
    """Serve manifest ids as written (SEP-986 names) instead of sanitizing them."""
    sandbox: SandboxMode | None = None
    """``--sandbox``: the OS sandbox mode; None: the policy's ``[sandbox] mode`` (auto)."""
    pins: tuple[str, ...] = ()
    """``--pin``: tools always listed (names, ids or globs), beside the policy's own."""
    allow: tuple[str, ...] = ()
    """``--allow NAME[=PATTERN]``: allow rules over the policy (see policy.layers)."""

    def manifest_paths(self) -> list[Path]:
        return list(self.paths) if self.paths else [bundled_manifests()]

    def workspace_root(self) -> Path | None:
        """The workspace in force: the one given, else the working directory when it is fit
        to be one; None means there is none (the file tools refuse)."""
        if self.workspace is not None:
            return self.workspace.resolve()
        return default_workspace()


HOST_NOT_GRANTED = (
    "its host is not in the granted net.hosts; grant it in the policy's [requires] net.hosts, "
    "or declare it in the tool's requirements"
)
REFUSED_WHATEVER = (
    "the policy refuses it whatever its arguments, or does not grant what it requires"
)


@dataclass(frozen=True)
class Skipped:
    """A tool left out of the catalog because of the policy, and why."""

    spec: ToolSpec
    reason: str
    """Why, in words shared by every tool left out for the same reason."""
    detail: str = ""
    """What is this tool's own (the host it calls)."""

    @classmethod
    def of(cls, policy: Policy, spec: ToolSpec) -> Skipped:
        if isinstance(spec.transport, HttpTransport):
            try:
                host = host_of(spec.transport.url)
            except ValueError:
                host = ""
            if host and "{" not in host and policy.check_capabilities(spec, Targets(hosts=(host,))):
                return cls(spec, HOST_NOT_GRANTED, host)
        return cls(spec, REFUSED_WHATEVER)

    def notice(self) -> Problem:
        detail = f" ({self.detail})" if self.detail else ""
        return Problem(
            self.spec.source.path,
            f'tool "{self.spec.name}" is not served{detail}: {self.reason}',
            self.spec.source.locator(self.spec.id),
            ErrorCode.PERMISSION_DENIED,
            Severity.NOTICE,
        )


@dataclass(frozen=True)
class Loaded:
    """A catalog, the policy it was filtered by, and everything found while building it."""

    catalog: Catalog
    report: LoadReport
    problems: list[Problem]
    """Load, policy and catalog problems, notices included."""
    policy: Policy
    locked: LockedPlan | None = None
    """The locked tools served, when loaded with ``locked=True``."""
    skipped: tuple[Skipped, ...] = ()
    """Tools left out because the policy refuses them whatever their arguments."""
    unmatched_pins: tuple[Problem, ...] = ()
    """Pins that name no served tool (notices, also among ``problems``)."""

    @property
    def hidden(self) -> tuple[ToolSpec, ...]:
        return tuple(s.spec for s in self.skipped)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity is Severity.ERROR]


def load_policy(settings: Settings) -> Policy:
    return Policy.load(
        settings.policy_file,
        workspace=settings.workspace_root(),
        user_data=user_data_dir(),
        ad_hoc=[p.resolve() for p in settings.ad_hoc],
        allow=settings.allow,
    )


def load_catalog(
    settings: Settings,
    builtins: Sequence[ToolSpec] = (),
    *,
    locked: bool = False,
    report: LoadReport | None = None,
) -> Loaded:
    """Load the manifests, then keep the tools the policy exposes.

    ``locked``: serve the locked tools ``settings.locked`` names (configured by the policy
    file), instead of the ``builtins`` given. A tool whose requirements cannot be compiled (an
    undefined variable) is a load error; a tool the policy refuses whatever its arguments is
    left out, with a notice. ``report``: the manifests as already read, instead of reading
    them again (the policy changed, the manifests did not).
    """
    policy = load_policy(settings)
    plan = _plan(settings, policy) if locked else None
    if plan is not None:
        builtins = plan.specs
    if report is None:
        report = load_paths(settings.manifest_paths(), environ=settings.environ)
    problems: list[Problem] = [*(plan.problems if plan else ()), *report.problems]
    exposed: list[ToolSpec] = []
    hidden: list[Skipped] = []
    tools = [named_as_written(s) for s in report.tools] if settings.keep_names else report.tools
    for spec in [*builtins, *tools]:
        found = policy.requirement_problems(spec)
        if found:
            problems.extend(found)
        elif policy.exposed(spec):
            exposed.append(spec)
        else:
            skipped = Skipped.of(policy, spec)
            hidden.append(skipped)
            problems.append(skipped.notice())
    problems.extend(policy.name_problems([*builtins, *tools], (*LOCKED_IDS, PROXY_TOOL)))
    problems.extend(policy.unmatchable_rules([*builtins, *tools]))
    exposed, pin_problems = pin_tools(_with_proxy(policy, exposed), _pins(settings, policy))
    problems.extend(pin_problems)
    catalog, catalog_problems = Catalog.build(exposed, keep_names=settings.keep_names)
    every = [*problems, *catalog_problems]
    return Loaded(catalog, report, every, policy, plan, tuple(hidden), tuple(pin_problems))


def _with_proxy(policy: Policy, exposed: list[ToolSpec]) -> list[ToolSpec]:
    """``exposed`` with the proxy (call_tool) right after tool_search when tool_search is
    served, over the manifest tools served. Only a rule that denies call_tool itself leaves it
    out: its calls are decided under the real tool's name, so a default action does not."""
    at = next(
        (i for i, s in enumerate(exposed) if s.is_locked and s.name == TOOL_SEARCH_SPEC.name),
        None,
    )
    if at is None:
        return exposed
    proxy = proxy_spec(s for s in exposed if not s.is_locked)
    decision = policy.decide(proxy, Targets())
    if decision.action == "deny" and decision.scope != "default":
        return exposed
    return [*exposed[: at + 1], proxy, *exposed[at + 1 :]]


def _pins(settings: Settings, policy: Policy) -> list[Pin]:
    origin = str(settings.policy_file or "policy")
    return [
        *(("--pin", p) for p in settings.pins),
        *((origin, p) for p in policy.file.discovery.pin),
    ]


def _plan(settings: Settings, policy: Policy) -> LockedPlan:
    return plan_locked(
        settings.locked,
        workspace=settings.workspace_root() or UNSET_ROOT,
        environ=settings.environ,
        config=policy.file,
        origin=str(settings.policy_file or "default policy"),
        secrets=SecretResolver.from_sources(settings.environ, settings.secrets_file),
        skill_dirs=settings.skills_dirs,
    )


@dataclass(frozen=True)
class _Shared:
    """What the built-in tools share across reloads: session state, file locks, the bridge."""

    sessions: Sessions
    locks: PathLocks
    call_tool: CallTool
    offer: Callable[[], Sequence[ToolSpec]]


def _catalog_parts(
    settings: Settings, loaded: Loaded, shared: _Shared
) -> tuple[PolicyGate, BuiltinExecutor]:
    """What depends on the catalog and the policy, rebuilt on every reload."""
    catalog = loaded.catalog
    index = SearchIndex.build(catalog.manifest_specs())
    search = ToolSearch(index, catalog)
    if loaded.locked is None:
        builtins = BuiltinExecutor([search])
    else:
        builtins = BuiltinExecutor(
            loaded.locked.tools(
                sessions=shared.sessions,
                locks=shared.locks,
                search=search,
                call_tool=shared.call_tool,
                list_tools=shared.offer,
                policy=loaded.policy,
            )
        )
    sandbox = Sandbox.configured(loaded.policy.file, settings.sandbox, settings.environ)
    sidecars = shared.sessions.sidecar_dir
    gate = PolicyGate(loaded.policy, environ=settings.environ, sidecars=sidecars, sandbox=sandbox)
    return gate, builtins


@dataclass
class Runtime:
    """A Bridge and what lives as long as it: settings, sessions, the gate."""

    settings: Settings
    bridge: Bridge
    shared: _Shared
    gate: PolicyGate
    locked: bool
    """Whether the catalog serves the locked tools (kept across reloads)."""
    report: LoadReport
    """The manifests as last read (kept when only the workspace moves)."""
    stand_in: Executor | None = None
    """The executor standing in for every transport (replay), kept across reloads."""
    skipped: tuple[Skipped, ...] = ()
    """Tools of the current catalog's manifests that the policy leaves out, and why."""

    @property
    def sessions(self) -> Sessions:
        return self.shared.sessions

    def end_session(self, session_id: str, *, keep_files: bool = False) -> None:
        """Forget what a closed client session leaves behind: its "always" grants and, unless
        ``keep_files`` (a sessionless HTTP call: files go when the server stops), its
        session state and sidecar files."""
        self.gate.forget(session_id)
        self.bridge.forget_session(session_id)
        if not keep_files:
            self.sessions.close(session_id)

    def watched_paths(self) -> list[Path]:
        """The files whose change means a reload: manifests, the policy, the project rules."""
        paths = self.settings.manifest_paths()
        if self.settings.policy_file is not None:
            paths.append(self.settings.policy_file)
        workspace = self.settings.workspace_root()
        if workspace is not None:
            paths.append(workspace / ".toolbridge" / "policy.toml")
        return paths

    def reload(
        self, builtins: Sequence[ToolSpec] = BUILTIN_SPECS, *, manifests: bool = True
    ) -> list[Problem]:
        """Read everything again (without ``manifests``: everything but the manifests). A
        valid result replaces the bridge (calls in flight finish on the one they started
        with); with any error the current bridge stays and every problem is returned."""
        report = None if manifests else self.report
        try:
            loaded = load_catalog(self.settings, builtins, locked=self.locked, report=report)
        except ConfigError as exc:
            return [exc.problem(str(self.settings.policy_file or "policy"))]
        if loaded.errors:
            return loaded.errors
        self.report = loaded.report
        gate, executor = _catalog_parts(self.settings, loaded, self.shared)
        self.gate = gate
        executors: dict[str, Executor] = {} if self.stand_in else {"builtin": executor}
        self.bridge = self.bridge.rebuilt(loaded.catalog, gate=gate, executors=executors)
        self.skipped = loaded.skipped
        return []

    def move_workspace(self, workspace: Path | None) -> list[Problem]:
        """Serve with another workspace (the client's roots; None: the default one): the
        policy, the project's rules and the locked tools are rebuilt around it, the manifests
        already read are kept. With any problem nothing changes and the problems are
        returned."""
        previous = self.settings
        self.settings = replace(previous, workspace=workspace)
        problems = self.reload(manifests=False)
        if problems:
            self.settings = previous
        return problems


@asynccontextmanager
async def open_runtime(
    settings: Settings,
    loaded: Loaded,
    *,
    observers: Sequence[Observer] = (),
    stand_in: Executor | None = None,
) -> AsyncIterator[Runtime]:
    """Everything a server or a CLI call needs; shared clients and files close on exit.

    ``observers`` see every finished call after the audit log and the telemetry span (the
    recorder is one); ``stand_in`` runs every call instead of the real transports (replay),
    after validation and the policy as usual."""
    secrets = SecretResolver.from_sources(settings.environ, settings.secrets_file)
    sessions = Sessions()
    current: list[Runtime] = []

    async def call_tool(name: str, arguments: Mapping[str, Any], ctx: CallContext) -> CallOutcome:
        return await current[0].bridge.call(name, arguments, ctx)

    def offer() -> list[ToolSpec]:
        return subagent_offer(current[0].bridge.catalog)

    shared = _Shared(sessions, PathLocks(), call_tool, offer)
    gate, builtins = _catalog_parts(settings, loaded, shared)
    if gate.sandbox is not None:  # once per process: say now, not at the first call, if it fails
        await probe_sandbox(gate.sandbox)
    async with AsyncExitStack() as stack:
        if "bash" in loaded.catalog:  # its parser, built off the event loop (see load_parser)
            warm = await stack.enter_async_context(anyio.create_task_group())
            warm.start_soon(anyio.to_thread.run_sync, load_parser)
        http = await stack.enter_async_context(HttpExecutor.open())
        watching: tuple[Observer, ...] = ()
        if settings.audit:
            try:
                log = AuditLog.open(settings.audit_path)
            except OSError as exc:
                raise ConfigError(
                    f"cannot open the audit log: {exc}", code=ErrorCode.CONFIG_INVALID
                ) from exc
            stack.callback(log.close)
            watching = (audit_observer(log),)
        watching = (*watching, span_observer(), *observers)
        stack.callback(sessions.close_all)
        executors: dict[str, Executor] = {
            "exec": ExecToolExecutor(environ=settings.environ),
            "http": http,
            "builtin": builtins,
        }
        if stand_in is not None:
            executors = dict.fromkeys(TRANSPORT_KINDS, stand_in)
        bridge = Bridge(
            loaded.catalog,
            executors,
            default_timeout_s=settings.timeout_s,
            max_output_bytes=settings.max_output_bytes,
            max_concurrency=settings.max_concurrency,
            secrets=secrets,
            gate=gate,
            observers=watching,
        )
        runtime = Runtime(
            settings,
            bridge,
            shared,
            gate,
            loaded.locked is not None,
            loaded.report,
            stand_in,
            loaded.skipped,
        )
        current.append(runtime)
        yield runtime


@asynccontextmanager
async def open_bridge(
    settings: Settings,
    loaded: Loaded,
    *,
    observers: Sequence[Observer] = (),
    stand_in: Executor | None = None,
) -> AsyncIterator[Bridge]:
    async with open_runtime(settings, loaded, observers=observers, stand_in=stand_in) as runtime:
        yield runtime.bridge
