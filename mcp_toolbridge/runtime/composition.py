"""Composition root: a loaded catalog (loading.py) -> a Runtime: a Bridge with its executors,
gate and observers, rebuilt on a reload or when the workspace moves.

The CLI verbs and the server share this, so ``mcp-toolbridge call`` runs a tool exactly the
way MCP ``tools/call`` does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from mcp_toolbridge.errors import ConfigError, ErrorCode, Problem
from mcp_toolbridge.host import CallContext, Caller
from mcp_toolbridge.loaders import Manifests
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.runtime.cache import LeftOut
from mcp_toolbridge.runtime.loading import BUILTIN_SPECS, Loaded, load_catalog, serving_index
from mcp_toolbridge.runtime.settings import Settings
from mcp_toolbridge.secrets import SecretResolver

if TYPE_CHECKING:  # the call machinery: imported when a runtime is opened (open_runtime)
    from mcp_toolbridge.bridge import Bridge, CallOutcome, Observer, PolicyGate
    from mcp_toolbridge.builtins import BuiltinExecutor, CallTool, PathLocks, Sessions
    from mcp_toolbridge.catalog import DeferredIndex, SearchIndex
    from mcp_toolbridge.executors import Executor

TRANSPORT_KINDS = ("exec", "http", "builtin")
"""Every transport kind an executor is registered for (a stand-in takes them all)."""


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
    from mcp_toolbridge.bridge import PolicyGate
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
    gate = PolicyGate.configured(
        loaded.policy,
        settings.sandbox,
        environ=settings.environ,
        sidecars=shared.sessions.sidecar_dir,
        state=shared.sessions.state,
        default_timeout_s=settings.timeout_s,
        guard=settings.guard_inputs(loaded.programs),
    )
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
    manifests: Manifests
    """The manifests as last read (kept when only the workspace moves)."""
    stand_in: Executor | None = None
    """The executor standing in for every transport (replay), kept across reloads."""
    left_out: tuple[LeftOut, ...] = ()
    """Tools of the current catalog's manifests that the policy leaves out, per reason."""
    _reloading: anyio.Lock = field(default_factory=anyio.Lock, init=False, repr=False)

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

    async def reload(
        self, builtins: Sequence[ToolSpec] = BUILTIN_SPECS, *, manifests: bool = True
    ) -> list[Problem]:
        """Read everything again (without ``manifests``: everything but the manifests). A
        valid result replaces the bridge (calls in flight finish on the one they started
        with); with any error the current bridge stays and every problem is returned. One
        reload at a time (a change seen, another replica's reload, the workspace moved)."""
        async with self._reloading:
            return await self._reload(self.settings, builtins, manifests=manifests)

    async def move_workspace(self, workspace: Path | None) -> list[Problem]:
        """Serve with another workspace (the client's roots; None: the default one): the
        policy, the project's rules and the locked tools are rebuilt around it, the manifests
        already read are kept. With any problem nothing changes and the problems are
        returned."""
        async with self._reloading:
            moved = replace(self.settings, workspace=workspace)
            return await self._reload(moved, BUILTIN_SPECS, manifests=False)

    async def _reload(
        self, settings: Settings, builtins: Sequence[ToolSpec], *, manifests: bool
    ) -> list[Problem]:
        """Serve what ``settings`` load, or return the problems. The files are read and
        parsed in a worker thread (nothing else changes what it reads: the manifests kept
        are never changed, the cache folder's files are replaced whole). The running calls
        that may write what the new catalog holds are ended, and their sandboxes gone (at
        most 1 s), before it is served (sandbox/guard.py, ``Running``)."""
        kept = None if manifests else self.manifests
        load = partial(load_catalog, settings, builtins, locked=self.locked, manifests=kept)
        try:
            loaded = await anyio.to_thread.run_sync(load, abandon_on_cancel=True)
        except ConfigError as exc:
            return [exc.problem(str(settings.policy_file or "policy"))]
        if loaded.errors:
            return loaded.errors
        gate, executor = _catalog_parts(settings, loaded, self.shared, None)
        old = self.gate.sandbox
        if old is not None and gate.sandbox is not None:  # before the new tools are served
            await old.supersede(gate.sandbox)  # ends the calls that may write what it holds
        elif old is not None:  # its warm sandboxes end (those in use after use)
            old.close()
        self.settings = settings
        self.manifests = loaded.manifests
        self.gate = gate
        runs: dict[str, Executor] = {} if self.stand_in else {"builtin": executor}
        self.bridge = self.bridge.rebuilt(
            loaded.catalog, gate=gate, executors=runs, secret_scan=gate.secret_scan, access=gate
        )
        self.left_out = loaded.left_out
        return []


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
