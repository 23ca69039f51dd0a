"""Composition root: settings -> loaded catalog -> a Bridge with its executors and gate.

The CLI verbs and the server share this, so ``mcp-toolbridge call`` runs a tool exactly the
way MCP ``tools/call`` does.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import platformdirs

from mcp_toolbridge.builtins import LOCKED_IDS, TOOL_SEARCH_SPEC, plan_locked
from mcp_toolbridge.catalog import Catalog, Pin
from mcp_toolbridge.errors import ConfigError, ErrorCode, Problem, Severity
from mcp_toolbridge.executors import DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT_S
from mcp_toolbridge.host import CallContext, Caller
from mcp_toolbridge.loaders import LoadReport, Manifests, load_manifests
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.policy import Policy, SandboxMode
from mcp_toolbridge.runtime.cache import (
    LeftOut,
    Meter,
    Skipped,
    cache_folder,
    compose,
    index_for,
    meter,
    serving_index_for,
    summary,
    write,
)
from mcp_toolbridge.secrets import SecretResolver
from mcp_toolbridge.workspace import UNSET_ROOT, default_workspace

if TYPE_CHECKING:  # the call machinery: imported when a runtime is opened (open_runtime)
    from mcp_toolbridge.bridge import Bridge, CallOutcome, Observer, PolicyGate
    from mcp_toolbridge.builtins import BuiltinExecutor, CallTool, LockedPlan, PathLocks, Sessions
    from mcp_toolbridge.catalog import DeferredIndex, SearchIndex
    from mcp_toolbridge.executors import Executor

BUILTIN_SPECS: tuple[ToolSpec, ...] = (TOOL_SEARCH_SPEC,)
"""The smallest built-in set (tool_search alone), for catalogs loaded without the locked
tools; ``load_catalog(..., locked=True)`` serves the locked set the settings choose."""

TRANSPORT_KINDS = ("exec", "http", "builtin")
"""Every transport kind an executor is registered for (a stand-in takes them all)."""


def bundled_manifests() -> Path:
    """The example catalog: inside the installed package, or beside it in a checkout."""
    package = Path(__file__).parent.parent
    packaged = package / "examples"
    return packaged if packaged.is_dir() else package.parent / "manifests"


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
    cache: bool = False
    """Keep manifests, the catalog and the index in the user's cache folder (CLI: on)."""
    progress: bool = False
    """Show the progress of long loads and index builds on stderr."""

    def manifest_paths(self) -> list[Path]:
        return list(self.paths) if self.paths else [bundled_manifests()]

    def workspace_root(self) -> Path | None:
        """The workspace in force: the one given, else the working directory when it is fit
        to be one; None means there is none (the file tools refuse)."""
        if self.workspace is not None:
            return self.workspace.resolve()
        return default_workspace()


@dataclass(frozen=True)
class Loaded:
    """A catalog, its policy and what was found building it: what a start needs, without
    reading a cached catalog's records (``problems``, ``report``, ``skipped`` read them)."""

    catalog: Catalog
    manifests: Manifests
    policy: Policy
    locked: LockedPlan | None = None
    """The locked tools served, when loaded with ``locked=True``."""
    finding: Callable[[], list[Problem]] = list  # gives ``problems``
    error_list: tuple[Problem, ...] = ()  # the errors among them, known without reading them
    skipping: Callable[[], tuple[Skipped, ...]] = tuple  # gives ``skipped``
    left_out: tuple[LeftOut, ...] = ()
    """What was left out, per reason: (reason, how many, the first few)."""
    unmatched_pins: tuple[Problem, ...] = ()
    """Pins that name no served tool (notices, also among ``problems``)."""
    served_sources: Mapping[str, int] = field(default_factory=dict)
    """How many manifest tools each source file (as tools name it) has in the catalog."""
    key: bytes | None = None
    """Identifies the catalog's content, for the index cache (None: not cacheable)."""
    programs: tuple[str, ...] = ()
    """The absolute paths the manifest tools' commands name (sandbox/guard.py)."""

    @cached_property
    def problems(self) -> list[Problem]:
        """Load, policy and catalog problems, notices included."""
        return self.finding()

    @cached_property
    def skipped(self) -> tuple[Skipped, ...]:
        """Tools left out because the policy refuses them whatever their arguments."""
        return self.skipping()

    @property
    def hidden(self) -> tuple[ToolSpec, ...]:
        return tuple(s.spec for s in self.skipped)

    @property
    def errors(self) -> list[Problem]:
        return list(self.error_list)

    @cached_property
    def report(self) -> LoadReport:
        """Every loaded tool and load problem: reads every cached tool record (seconds at
        100k tools; a start that needs only counts or names asks ``manifests``)."""
        return self.manifests.report()


def load_policy(settings: Settings) -> Policy:
    return Policy.load(
        settings.policy_file,
        workspace=settings.workspace_root(),
        user_data=Path(platformdirs.user_data_dir("mcp-toolbridge")),
        ad_hoc=[p.resolve() for p in settings.ad_hoc],
        allow=settings.allow,
    )


def load_catalog(
    settings: Settings,
    builtins: Sequence[ToolSpec] = (),
    *,
    locked: bool = False,
    manifests: Manifests | None = None,
) -> Loaded:
    """Load the manifests, then keep the tools the policy exposes.

    ``locked``: serve the locked tools ``settings.locked`` names (configured by the policy
    file), instead of the ``builtins`` given. A tool whose requirements cannot be compiled (an
    undefined variable) is a load error; a tool the policy refuses whatever its arguments is
    left out, with a notice. ``manifests``: the manifests as already read, instead of reading
    them again (the policy changed, the manifests did not). With ``settings.cache``, unchanged
    manifests and an unchanged composition come from the cache folder (runtime/cache.py),
    which is brought up to date afterwards, by a forked writer for a big catalog.
    """
    began = time.monotonic()
    policy = load_policy(settings)
    plan = _plan(settings, policy) if locked else None
    if plan is not None:
        builtins = plan.specs
    cache = cache_folder(settings.cache)
    if manifests is None:
        manifests = load_manifests(
            settings.manifest_paths(),
            environ=settings.environ,
            cache=cache,
            meter=partial(_meter, settings, "loading manifests", unit="files"),
        )
    composed, store = compose(
        manifests,
        builtins,
        policy,
        keep_names=settings.keep_names,
        pins=_pins(settings, policy),
        cache=cache,
        meter=partial(_meter, settings) if settings.progress else None,
    )
    write(store, manifests.tool_count)
    if settings.progress:
        summary(manifests, composed, time.monotonic() - began)
    first = list(plan.problems) if plan else []
    return Loaded(
        composed.catalog,
        manifests,
        policy,
        plan,
        finding=lambda: [*first, *composed.problems()],
        error_list=(*(p for p in first if p.severity is Severity.ERROR), *composed.errors),
        skipping=composed.skipped,
        left_out=composed.left_out,
        unmatched_pins=composed.unmatched_pins,
        served_sources=composed.served_sources,
        key=composed.key,
        programs=composed.programs,
    )


def _meter(settings: Settings, what: str, total: int, unit: str = "tools") -> Meter | None:
    return meter(settings.progress, what, total, unit)


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
    offer: Callable[[Caller], Sequence[ToolSpec]]


def _catalog_parts(
    settings: Settings, loaded: Loaded, shared: _Shared, index: SearchIndex | DeferredIndex | None
) -> tuple[PolicyGate, BuiltinExecutor]:
    """What depends on the catalog and the policy, rebuilt on every reload (``index``: the
    catalog's search index as already made, see :func:`open_runtime`)."""
    from mcp_toolbridge.bridge import PolicyGate, default_audit_path
    from mcp_toolbridge.builtins import BuiltinExecutor, ToolSearch, bind_locked

    catalog = loaded.catalog
    index = index if index is not None else serving_index(settings, loaded)
    search = ToolSearch(index, catalog, access=loaded.policy)
    if loaded.locked is None:
        builtins = BuiltinExecutor([search])
    else:
        builtins = BuiltinExecutor(
            bind_locked(
                loaded.locked,
                sessions=shared.sessions,
                locks=shared.locks,
                search=search,
                call_tool=shared.call_tool,
                list_tools=shared.offer,
                policy=loaded.policy,
            )
        )
    audit = (settings.audit_path or default_audit_path()) if settings.audit else None
    trust_files = (settings.policy_file, settings.secrets_file, audit)
    gate = PolicyGate.configured(
        loaded.policy,
        settings.sandbox,
        environ=settings.environ,
        sidecars=shared.sessions.sidecar_dir,
        state=shared.sessions.state,
        default_timeout_s=settings.timeout_s,
        guard=(settings.manifest_paths(), trust_files, loaded.programs),
    )
    return gate, builtins


def search_index(settings: Settings, loaded: Loaded) -> SearchIndex:
    """The search index of the catalog's manifest tools, from the cache or built (and cached):
    see runtime/cache.py, index_for."""
    meter = partial(_meter, settings, "indexing")
    return index_for(loaded.catalog, loaded.key, cache=settings.cache, meter=meter)


def serving_index(settings: Settings, loaded: Loaded) -> SearchIndex | DeferredIndex:
    """:func:`search_index` for a server: see runtime/cache.py, serving_index_for."""
    meter = partial(_meter, settings, "indexing")
    return serving_index_for(loaded.catalog, loaded.key, cache=settings.cache, meter=meter)


@dataclass
class Runtime:
    """A Bridge and what lives as long as it: settings, sessions, the gate."""

    settings: Settings
    bridge: Bridge
    shared: _Shared
    gate: PolicyGate
    locked: bool
    """Whether the catalog serves the locked tools (kept across reloads)."""
    manifests: Manifests
    """The manifests as last read (kept when only the workspace moves)."""
    stand_in: Executor | None = None
    """The executor standing in for every transport (replay), kept across reloads."""
    left_out: tuple[LeftOut, ...] = ()
    """Tools of the current catalog's manifests that the policy leaves out, per reason."""

    @property
    def sessions(self) -> Sessions:
        return self.shared.sessions

    def end_session(self, session_id: str, *, keep_files: bool = False) -> None:
        """Forget a closed session's entries in the State (in the background; a person's are
        kept for their next session) and, unless ``keep_files`` (a sessionless HTTP call:
        files go when the server stops), its sidecar files."""
        self.sessions.forget(session_id)
        if not keep_files:
            self.sessions.close(session_id)

    def close_sandbox(self) -> None:
        """End the warm sandboxes (the server stops)."""
        if self.gate.sandbox is not None:
            self.gate.sandbox.close()

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
        kept = None if manifests else self.manifests
        try:
            loaded = load_catalog(self.settings, builtins, locked=self.locked, manifests=kept)
        except ConfigError as exc:
            return [exc.problem(str(self.settings.policy_file or "policy"))]
        if loaded.errors:
            return loaded.errors
        self.manifests = loaded.manifests
        gate, executor = _catalog_parts(self.settings, loaded, self.shared, None)
        if self.gate.sandbox is not None:  # its warm sandboxes end (those in use after use)
            self.gate.sandbox.close()
        self.gate = gate
        runs: dict[str, Executor] = {} if self.stand_in else {"builtin": executor}
        self.bridge = self.bridge.rebuilt(
            loaded.catalog, gate=gate, executors=runs, secret_scan=gate.secret_scan, access=gate
        )
        self.left_out = loaded.left_out
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


def import_call_machinery() -> None:
    """Import what :func:`open_runtime` opens (the bridge, the executors, the locked tools),
    for a server that opens it later: in a worker thread, so the event loop does not wait."""
    from mcp_toolbridge.bridge import AuditLog, Bridge, PolicyGate  # noqa: F401
    from mcp_toolbridge.builtins import bind_locked  # noqa: F401
    from mcp_toolbridge.executors import ExecToolExecutor, HttpExecutor  # noqa: F401


@asynccontextmanager
async def open_runtime(
    settings: Settings,
    loaded: Loaded,
    *,
    observers: Sequence[Observer] = (),
    stand_in: Executor | None = None,
    sessions: Sessions | None = None,
    index: SearchIndex | DeferredIndex | None = None,
) -> AsyncIterator[Runtime]:
    """Everything a server or a CLI call needs; shared clients and files close on exit.

    ``observers`` see every finished call after the audit log and the telemetry span (the
    recorder is one); ``stand_in`` runs every call instead of the real transports (replay),
    after validation and the policy as usual; ``sessions`` holds the State that keeps what
    outlives a call (default: in this process's memory); ``index``: the catalog's search
    index, made before (by a server that opens its runtime after its first list)."""
    from mcp_toolbridge.bridge import AuditLog, Bridge, audit_observer, span_observer
    from mcp_toolbridge.builtins import PathLocks, Sessions, subagent_offer
    from mcp_toolbridge.executors import ExecToolExecutor, HttpExecutor, probe_sandbox_at_start

    secrets = SecretResolver.from_sources(settings.environ, settings.secrets_file)
    sessions = sessions if sessions is not None else Sessions()
    current: list[Runtime] = []

    async def call_tool(name: str, arguments: Mapping[str, Any], ctx: CallContext) -> CallOutcome:
        return await current[0].bridge.call(name, arguments, ctx)

    def offer(caller: Caller) -> list[ToolSpec]:  # what the caller may call
        bridge = current[0].bridge
        return [s for s in subagent_offer(bridge.catalog) if bridge.callable_by(s, caller)]

    shared = _Shared(sessions, PathLocks(), call_tool, offer)
    gate, builtins = _catalog_parts(settings, loaded, shared, index)
    if gate.sandbox is not None:  # once per process: say now, not at the first call, if it fails
        await probe_sandbox_at_start(gate.sandbox)
    async with AsyncExitStack() as stack:
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
            secret_scan=gate.secret_scan,
            state=sessions.state,
            access=gate,
        )
        runtime = Runtime(
            settings,
            bridge,
            shared,
            gate,
            loaded.locked is not None,
            loaded.manifests,
            stand_in,
            loaded.left_out,
        )
        current.append(runtime)
        stack.callback(runtime.close_sandbox)
        await stack.enter_async_context(sessions.forgetting())
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
