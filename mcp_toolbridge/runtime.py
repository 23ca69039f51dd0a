"""Composition root: settings -> loaded catalog -> a Bridge with its executors and gate.

The CLI verbs and the server share this, so ``mcp-toolbridge call`` runs a tool exactly the
way MCP ``tools/call`` does.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path
from typing import Any

import platformdirs

from mcp_toolbridge.bridge import (
    AuditLog,
    AuditRecord,
    Bridge,
    CallOutcome,
    Observer,
    PolicyGate,
    span_observer,
)
from mcp_toolbridge.builtins import (
    LOCKED_IDS,
    TOOL_SEARCH_SPEC,
    BuiltinExecutor,
    CallTool,
    LockedPlan,
    PathLocks,
    Sessions,
    ToolSearch,
    plan_locked,
    subagent_offer,
)
from mcp_toolbridge.cachefile import CacheFolder
from mcp_toolbridge.catalog import (
    Catalog,
    DeferredIndex,
    SearchIndex,
    is_stored,
    load_index,
    store_index,
)
from mcp_toolbridge.errors import CallError, ConfigError, ErrorCode, Problem, Severity
from mcp_toolbridge.executors import (
    DEFAULT_MAX_OUTPUT_BYTES,
    DEFAULT_TIMEOUT_S,
    ExecToolExecutor,
    Executor,
    HttpExecutor,
)
from mcp_toolbridge.forking import write_behind
from mcp_toolbridge.host import CallContext
from mcp_toolbridge.loaders import LoadReport, Manifests, load_manifests
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.policy import Decision, Policy
from mcp_toolbridge.progress import Meter, stderr_line
from mcp_toolbridge.runtime_cache import Composed, compose
from mcp_toolbridge.secrets import SecretResolver

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
    """Roots every fs capability; default the working directory."""
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
    cache: bool = False
    """Keep loaded manifests, the composed catalog and the search index in the user's cache
    folder (the command line turns it on; ``--no-index-cache`` off)."""
    progress: bool = False
    """Show the progress of long loads and index builds on stderr."""

    def manifest_paths(self) -> list[Path]:
        return list(self.paths) if self.paths else [bundled_manifests()]

    def workspace_root(self) -> Path:
        return (self.workspace or Path.cwd()).resolve()


@dataclass(frozen=True)
class Loaded:
    """A catalog, the policy it was filtered by, and everything found while building it."""

    catalog: Catalog
    manifests: Manifests
    policy: Policy
    locked: LockedPlan | None = None
    """The locked tools served, when loaded with ``locked=True``."""
    finding: Callable[[], list[Problem]] = list
    """Gives every load, policy and catalog problem, notices included."""
    error_list: tuple[Problem, ...] = ()
    """The problems that are errors, in order (known without reading every notice)."""
    hiding: Callable[[], tuple[ToolSpec, ...]] = tuple
    """Gives the tools left out because the policy refuses them whatever their arguments."""
    key: bytes | None = None
    """Identifies the catalog's content, for the index cache (None: not cacheable)."""

    @cached_property
    def problems(self) -> list[Problem]:
        """Load, policy and catalog problems, notices included."""
        return self.finding()

    @cached_property
    def hidden(self) -> tuple[ToolSpec, ...]:
        """Tools left out because the policy refuses them whatever their arguments."""
        return self.hiding()

    @cached_property
    def report(self) -> LoadReport:
        """Every loaded tool and load problem. It reads every cached tool record (seconds at
        100,000 tools): a start that only needs counts or names asks ``manifests``."""
        return self.manifests.report()

    @property
    def errors(self) -> list[Problem]:
        return list(self.error_list)


def load_policy(settings: Settings) -> Policy:
    return Policy.load(
        settings.policy_file,
        workspace=settings.workspace_root(),
        user_data=user_data_dir(),
        ad_hoc=[p.resolve() for p in settings.ad_hoc],
    )


def load_catalog(
    settings: Settings, builtins: Sequence[ToolSpec] = (), *, locked: bool = False
) -> Loaded:
    """Load the manifests, then keep the tools the policy exposes.

    ``locked``: serve the locked tools ``settings.locked`` names (configured by the policy
    file), instead of the ``builtins`` given. A tool whose requirements cannot be compiled (an
    undefined variable) is a load error; a tool the policy refuses whatever its arguments is
    left out, with a notice. With ``settings.cache``, unchanged manifests and an unchanged
    composition come from the cache folder (runtime_cache.py), which is brought up to date
    afterwards, by a forked writer for a big catalog.
    """
    began = time.monotonic()
    policy = load_policy(settings)
    plan = _plan(settings, policy) if locked else None
    if plan is not None:
        builtins = plan.specs
    cache = CacheFolder() if settings.cache else None
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
        cache=cache,
        meter=partial(_meter, settings) if settings.progress else None,
    )
    if store is not None and not (
        manifests.tool_count >= WRITE_BEHIND_FROM and write_behind(store)
    ):
        store()
    if settings.progress:
        _summary(manifests, composed, time.monotonic() - began)
    first = list(plan.problems) if plan else []
    return Loaded(
        composed.catalog,
        manifests,
        policy,
        plan,
        finding=lambda: [*first, *composed.problems()],
        error_list=(*(p for p in first if p.severity is Severity.ERROR), *composed.errors),
        hiding=composed.hidden,
        key=composed.key,
    )


WRITE_BEHIND_FROM = 4_000
"""Catalogs from this many tools write their cache in a forked child (pickling costs
≈ 20 µs a tool); smaller ones write it in process."""


def _meter(settings: Settings, what: str, total: int, unit: str = "tools") -> Meter | None:
    return Meter(what, total, unit) if settings.progress else None


def _summary(manifests: Manifests, composed: Composed, elapsed: float) -> None:
    """One line about the load, when it was big or slow enough to be worth one."""
    tools, files = manifests.tool_count, len(manifests.files())
    if tools < 1_000 and elapsed < 1.0:
        return
    if composed.restored:
        how = "all from the cache"
    elif manifests.reused:
        how = f"{files - manifests.reused:,} manifests loaded, {manifests.reused:,} from the cache"
    else:
        how = "none from the cache"
    stderr_line(
        f"{tools:,} tools from {files:,} manifests ({how}); serving {len(composed.catalog):,} "
        f"in {elapsed:.1f} s"
    )


def _plan(settings: Settings, policy: Policy) -> LockedPlan:
    return plan_locked(
        settings.locked,
        workspace=settings.workspace_root(),
        environ=settings.environ,
        config=policy.file,
        origin=str(settings.policy_file or "default policy"),
        secrets=SecretResolver.from_sources(settings.environ, settings.secrets_file),
        skill_dirs=settings.skills_dirs,
    )


NOT_CHECKED = Decision(
    "deny", "invalid arguments: refused before the permission check", "validation"
)
"""The audit decision of a call refused at argument validation (the gate never ran)."""


def audit_observer(log: AuditLog) -> Observer:
    async def observe(
        spec: ToolSpec, arguments: Mapping[str, Any], ctx: CallContext, outcome: CallOutcome
    ) -> None:
        error = None
        if not outcome.ok:
            error = CallError(outcome.error or "", tool=spec.name, code=outcome.code)
        record = AuditRecord.build(
            spec,
            session=ctx.session_id,
            decision=outcome.decision or NOT_CHECKED,
            ms=outcome.duration_ms,
            result=outcome.result,
            error=error,
            answer=outcome.answer,
        )
        await log.write(record)

    return observe


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
    index = serving_index(settings, loaded)
    if loaded.locked is None:
        builtins = BuiltinExecutor([ToolSearch(index, catalog)])
    else:
        builtins = BuiltinExecutor(
            loaded.locked.tools(
                sessions=shared.sessions,
                locks=shared.locks,
                index=index,
                catalog=catalog,
                call_tool=shared.call_tool,
                list_tools=shared.offer,
                policy=loaded.policy,
            )
        )
    gate = PolicyGate(loaded.policy, environ=settings.environ, sidecars=shared.sessions.sidecar_dir)
    return gate, builtins


DEFER_FROM = 1_000
"""A cached index of this many tools is read back in a background thread when serving."""


def search_index(settings: Settings, loaded: Loaded) -> SearchIndex:
    """The search index of the catalog's manifest tools: from the cache when it holds the
    index of this very catalog under the current ranking, else built (and cached)."""
    folder = CacheFolder() if settings.cache and loaded.key is not None else None
    if folder is not None and loaded.key is not None:
        index = load_index(folder, loaded.key)
        if index is not None:
            return index
    return _build_index(settings, loaded, folder)


def serving_index(settings: Settings, loaded: Loaded) -> SearchIndex | DeferredIndex:
    """:func:`search_index` for a server: a big index the cache holds is read back in the
    background (the server answers meanwhile; a tool_search waits for it). One that must be
    built is built now, on two cores, which a thread would prevent (see forking.py)."""
    if (
        settings.cache
        and loaded.key is not None
        and len(loaded.catalog) >= DEFER_FROM
        and is_stored(CacheFolder(), loaded.key)
    ):
        return DeferredIndex(partial(search_index, settings, loaded))
    return search_index(settings, loaded)


def _build_index(settings: Settings, loaded: Loaded, folder: CacheFolder | None) -> SearchIndex:
    names = loaded.catalog.manifest_names()
    meter = _meter(settings, "indexing", len(names))
    index = SearchIndex.build(
        (entry.spec for name in names if (entry := loaded.catalog.get(name)) is not None),
        meter=meter,
    )
    if meter is not None:
        meter.finish(f"indexed {len(names):,} tools")
    if folder is not None and loaded.key is not None:
        key = loaded.key
        work = partial(store_index, folder, key, index)
        if not (len(names) >= WRITE_BEHIND_FROM and write_behind(work)):
            work()
    return index


@dataclass
class Runtime:
    """A Bridge and what lives as long as it: settings, sessions, the gate."""

    settings: Settings
    bridge: Bridge
    shared: _Shared
    gate: PolicyGate
    locked: bool
    """Whether the catalog serves the locked tools (kept across reloads)."""
    stand_in: Executor | None = None
    """The executor standing in for every transport (replay), kept across reloads."""

    @property
    def sessions(self) -> Sessions:
        return self.shared.sessions

    def end_session(self, session_id: str, *, keep_files: bool = False) -> None:
        """Forget what a closed client session leaves behind: its "always" grants and, unless
        ``keep_files`` (a sessionless HTTP call: files go when the server stops), its
        session state and sidecar files."""
        self.gate.forget(session_id)
        if not keep_files:
            self.sessions.close(session_id)

    def watched_paths(self) -> list[Path]:
        """The files whose change means a reload: manifests, the policy, the project rules."""
        paths = self.settings.manifest_paths()
        if self.settings.policy_file is not None:
            paths.append(self.settings.policy_file)
        paths.append(self.settings.workspace_root() / ".toolbridge" / "policy.toml")
        return paths

    def reload(self, builtins: Sequence[ToolSpec] = BUILTIN_SPECS) -> list[Problem]:
        """Read everything again. A valid result replaces the bridge (calls in flight finish
        on the one they started with); with any error the current bridge stays and every
        problem is returned."""
        try:
            loaded = load_catalog(self.settings, builtins, locked=self.locked)
        except ConfigError as exc:
            return [exc.problem(str(self.settings.policy_file or "policy"))]
        if loaded.errors:
            return loaded.errors
        gate, executor = _catalog_parts(self.settings, loaded, self.shared)
        self.gate = gate
        executors: dict[str, Executor] = {} if self.stand_in else {"builtin": executor}
        self.bridge = self.bridge.rebuilt(loaded.catalog, gate=gate, executors=executors)
        return []


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
        )
        runtime = Runtime(settings, bridge, shared, gate, loaded.locked is not None, stand_in)
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
