"""Bridge.call: the one way any tool runs.

resolve -> validate arguments -> gate (capabilities, rules, watchdog, confirmation)
-> resolve secrets -> execute under the concurrency limit -> check output -> redact secrets
nobody declared (``bridge/screen.py``) -> outcome + audit.
A tool whose budget is spent for the caller (the person, else the session) is refused before
the gate (:mod:`budget`); the usage a result reports is summed after it runs.

A call refused by the watchdog or stopped at its deadline is also told to the client that
listens to log messages (a ``warning`` from the ``mcp-toolbridge`` logger, through
``CallContext.log``), since a person watching the client should see it, not only the model.

Every path into execution (MCP tools/call, ``mcp-toolbridge call``, the ``task`` tool, the
proxy ``call_tool``) goes through :meth:`Bridge.call`. No MCP types here: the server adapter
maps outcomes to results.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Hashable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

import anyio

from mcp_toolbridge.bridge.budget import (
    BudgetLedger,
    RateLimit,
    State,
    StateUnavailable,
    Ticket,
    Usage,
    reported_usage,
)
from mcp_toolbridge.bridge.gate import PENDING, Clearance, allow_all, refused
from mcp_toolbridge.bridge.outcome import WHY_ENDED, CallOutcome, Ended, lost_call, tell
from mcp_toolbridge.bridge.screen import (
    kept_arguments,
    read_back,
    screened,
    screened_context,
    with_cuts,
)
from mcp_toolbridge.catalog import Catalog, CatalogEntry
from mcp_toolbridge.errors import (
    ArgumentsError,
    BudgetExceededError,
    CallError,
    ErrorCode,
    ExecError,
    PermissionDeniedError,
    RateLimitedError,
    StateUnavailableError,
    UnknownToolError,
)
from mcp_toolbridge.executors import (
    DEFAULT_MAX_OUTPUT_BYTES,
    DEFAULT_TIMEOUT_S,
    ExecRequest,
    ExecResult,
    Executor,
)
from mcp_toolbridge.host import CallContext, Caller, InputPending
from mcp_toolbridge.leaks import OFF, SecretScan
from mcp_toolbridge.model import BuiltinTransport, ToolSpec
from mcp_toolbridge.names import PROXY_TOOL
from mcp_toolbridge.sandbox import Confinement

MAX_ERRORS_SHOWN = 3
log = logging.getLogger("mcp_toolbridge")

FAIL_CLOSED = "The call was refused rather than let through unchecked; try again once it is back"
OBSERVE_LIMIT_S = 5.0
"""How long the observers (audit, telemetry, recording) may take for one finished call; they
run shielded, so a cancelled call is still audited, within this bound."""


class SecretSource(Protocol):
    def resolve(self, ids: list[str]) -> dict[str, str]: ...


@dataclass(slots=True)
class _Life:
    """What every bridge rebuilt from one server shares: whether the server is stopping."""

    stopping: bool = False


Gate = Callable[[ToolSpec, Mapping[str, Any], CallContext], Awaitable[Clearance]]
"""Permission stages (capabilities, rules, watchdog, confirmation): see gate.PolicyGate."""

Observer = Callable[[ToolSpec, Mapping[str, Any], CallContext, CallOutcome], Awaitable[None]]
"""Called once per finished call (audit, trace), whatever the outcome."""


class ToolAccess(Protocol):
    """Which callers may see and call which tools at all (rules for some callers): a tool
    a caller may not call is not in its list, and tool_search and the proxy never reveal or
    reach it (see gate.PolicyGate)."""

    def callable_by(self, spec: ToolSpec, caller: Caller) -> bool: ...

    def caller_view(self, caller: Caller) -> Hashable:
        """Equal for callers whose tool lists are equal (None: the same for everyone)."""
        ...


def _default_concurrency() -> int:
    return 2 * (os.cpu_count() or 1)


class Bridge:
    def __init__(
        self,
        catalog: Catalog,
        executors: Mapping[str, Executor],
        *,
        default_timeout_s: float = DEFAULT_TIMEOUT_S,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        max_concurrency: int | None = None,
        secrets: SecretSource | None = None,
        gate: Gate = allow_all,
        observers: tuple[Observer, ...] = (),
        limiter: anyio.CapacityLimiter | None = None,
        secret_scan: SecretScan = OFF,
        state: State | None = None,
        access: ToolAccess | None = None,
        rate_limit: RateLimit | None = None,
    ) -> None:
        """``limiter``: a concurrency limit shared with another bridge (see :meth:`rebuilt`);
        without it, a limit of ``max_concurrency`` calls (default: twice the cores).
        ``secret_scan``: what finds the secrets nobody declared (the policy's); ``state``:
        where budget usage is summed (the server's State; default: its own); ``access``:
        which callers may call which tools at all (default: everyone all); ``rate_limit``: the
        policy's ``[limits]``, per caller (default: the gate's, a PolicyGate's)."""
        self.catalog = catalog
        self._executors = dict(executors)
        self._default_timeout_s = default_timeout_s
        self._max_output_bytes = max_output_bytes
        if limiter is None:
            limiter = anyio.CapacityLimiter(max_concurrency or _default_concurrency())
        self._limiter = limiter
        self._secrets = secrets
        self._gate = gate
        self._observers = observers
        self._life = _Life()
        self._budgets = BudgetLedger(state)
        self._rate_limit = rate_limit or getattr(gate, "rate_limit", None)
        self._access = access
        self.secret_scan = secret_scan

    def rebuilt(
        self,
        catalog: Catalog,
        *,
        gate: Gate,
        executors: Mapping[str, Executor],
        secret_scan: SecretScan | None = None,
        access: ToolAccess | None = None,
    ) -> Bridge:
        """A bridge over a new catalog (hot reload) that shares this one's concurrency limit,
        deadlines, secrets, observers, budgets and whether the server is stopping;
        ``executors`` replace those of the same kind; ``secret_scan`` (the new policy's) and
        ``access`` this one's. Calls in flight keep the bridge they started on."""
        twin = Bridge(
            catalog,
            {**self._executors, **executors},
            default_timeout_s=self._default_timeout_s,
            max_output_bytes=self._max_output_bytes,
            secrets=self._secrets,
            gate=gate,
            observers=self._observers,
            limiter=self._limiter,
            secret_scan=self.secret_scan if secret_scan is None else secret_scan,
            access=access,
        )
        twin._life = self._life
        twin._budgets = self._budgets
        return twin

    def executor(self, kind: str) -> Executor | None:
        """The executor of ``kind`` tools (exec | http | builtin), for the edges that show
        what it serves (the console's search); None when none is registered."""
        return self._executors.get(kind)

    def callable_by(self, spec: ToolSpec, caller: Caller) -> bool:
        """Whether ``caller`` may see and call ``spec`` at all."""
        return self._access is None or self._access.callable_by(spec, caller)

    def caller_view(self, caller: Caller) -> Hashable:
        """Equal for callers whose tool lists are equal (None: one list for everyone)."""
        return None if self._access is None else self._access.caller_view(caller)

    def entry(self, name: str) -> CatalogEntry:
        entry = self.catalog.get(name)
        if entry is None:
            raise UnknownToolError(f"unknown tool: {name}", tool=name)
        return entry

    async def call(
        self, name: str, arguments: Mapping[str, Any] | None, ctx: CallContext | None = None
    ) -> CallOutcome:
        """Run one call. Raises UnknownToolError only; every other failure is an outcome.

        Every call that gets this far leaves exactly one outcome with the observers (the
        audit line), however it ends: a call cancelled by the client or ended by the server's
        shutdown is observed as ``exec.cancelled`` before the cancellation goes on, and an
        unexpected exception as ``server.internal`` before it propagates.

        A call of the proxy (call_tool) is a call of the tool it names, made here as a direct
        call of that tool would be: its validation, budget, gate, deadline and executor, one
        audit line under its name that records the proxy (``CallContext.via``)."""
        entry = self.entry(name)
        ctx = ctx or CallContext()
        args: Mapping[str, Any] = {} if arguments is None else arguments
        if is_proxy(entry.spec):
            started = time.perf_counter()
            try:
                entry, args = self._proxied(entry, args, ctx)
            except CallError as exc:
                outcome = self._failed(name, exc.message, exc.code, started, None, exc.details)
                await self._observe(entry.spec, args, ctx, outcome)
                return outcome
            ctx = replace(ctx, via=name)
        return await self._run(entry, args, ctx)

    def _proxied(
        self, proxy: CatalogEntry, args: Mapping[str, Any], ctx: CallContext
    ) -> tuple[CatalogEntry, Mapping[str, Any]]:
        """The tool a proxy call names and its arguments. CallError when the proxy's own
        arguments are invalid or the tool is not one it reaches: a manifest tool of the
        catalog, not denied to the caller."""
        self._validate(proxy, args)
        target = str(args["name"])
        inner = args.get("arguments", {})
        entry = self.catalog.get(target)
        if entry is None or not self.callable_by(entry.spec, ctx.caller):  # never revealed
            raise CallError(
                f"no tool named {target!r} in the catalog; find it with tool_search and pass "
                "the exact name it gives",
                tool=proxy.spec.name,
                code=ErrorCode.TOOL_UNKNOWN,
            )
        if entry.spec.is_locked or target in ctx.denied_tools:
            what = "itself" if is_proxy(entry.spec) else target
            raise CallError(
                f"{proxy.spec.name} cannot call {what}: it runs the tools tool_search finds; "
                "call the tools in your tool list directly",
                tool=proxy.spec.name,
                code=ErrorCode.ARGS_INVALID,
            )
        return entry, inner

    async def _run(
        self, entry: CatalogEntry, args: Mapping[str, Any], ctx: CallContext
    ) -> CallOutcome:
        name = entry.spec.name
        started = time.perf_counter()
        clearance: Clearance | None = None
        ticket: Ticket | None = None
        found: Counter[str] | None = None  # the secrets the arguments carry, once scanned
        running = ctx  # the context the tool runs with: its log, progress and cuts screened
        cancelled = anyio.get_cancelled_exc_class()
        try:
            try:
                self._validate(entry, args)
                ticket = await self._budgets.admit_call(entry.spec, ctx, self._rate_limit)
                clearance = await self._gate(entry.spec, args, ctx)
                if not clearance.allowed:
                    raise PermissionDeniedError(clearance.refusal(), tool=name)
                if ctx.lease is not None:  # from here on, a replica's death is a lost call
                    decided = clearance.decision
                    await ctx.lease.note(decision=[decided.action, decided.rule, decided.scope])
                running = screened_context(self.secret_scan, ctx, name)
                result = await self._execute(entry, args, running, clearance.sandbox)
                usage = reported_usage(result.value)
                await self._budgets.release(ticket, usage)
                ticket = None
                outcome = self._finish(entry, result, started, clearance, usage)
            except (BudgetExceededError, RateLimitedError) as exc:
                scope = "budget" if exc.code is ErrorCode.BUDGET_EXCEEDED else "limits"
                clearance = refused(exc.message, scope)
                outcome = self._failed(name, exc.message, exc.code, started, clearance, exc.details)
            except CallError as exc:
                outcome = self._failed(name, exc.message, exc.code, started, clearance, exc.details)
            except StateUnavailable as exc:  # fail closed: nothing unchecked runs
                closed = StateUnavailableError(f"{exc.reason}. {FAIL_CLOSED}", tool=name)
                outcome = self._failed(name, closed.message, closed.code, started, clearance)
            # The arguments are scanned here, with the result (the gate has scanned them
            # before the call when the tool can reach the network).
            outcome, found = await screened(self.secret_scan, entry.output, outcome, args)
            outcome = with_cuts(outcome, running)
        except InputPending:
            pending = CallOutcome(
                tool=name,
                ok=False,
                error="waiting for the person's answer",
                duration_ms=_ms_since(started),
                decision=PENDING,
                answer="pending",
            )
            await self._observe(entry.spec, args, ctx, pending, found)
            raise
        except cancelled:
            ended: Ended = "shutdown" if self._life.stopping else "cancelled"
            why = WHY_ENDED[ended]
            failed = self._failed(name, why, ErrorCode.EXEC_CANCELLED, started, clearance)
            await self._observe(entry.spec, args, ctx, replace(failed, ended=ended), found)
            raise
        except Exception as exc:  # a bug below: audited, then the server's handler reports it
            error = f"internal error: {type(exc).__name__}"
            failed = self._failed(name, error, ErrorCode.SERVER_INTERNAL, started, clearance)
            await self._observe(entry.spec, args, ctx, failed, found)
            raise
        finally:
            if ticket is not None:  # ended before it could report: release what it held
                await self._budgets.release(ticket, None)
        await tell(ctx, outcome)
        await self._observe(entry.spec, args, ctx, outcome, found)
        return outcome

    async def read_back(self, text: str, tool: str) -> str:
        """The whole output of a call of ``tool``, read back later (a resource), with its
        secrets redacted as the call's result was."""
        return await read_back(self.secret_scan, text, tool)

    async def lost(self, record: Mapping[str, Any]) -> None:
        """Report a call that another replica was running when it died (its lease, see
        server/replicas.py): its outcome ``lost`` for the observers (the audit line), and
        the budget it held released."""
        found = lost_call(record, self.catalog)
        if found is not None:
            spec, ctx, outcome, held = found
            await self._budgets.release(held, None)
            await self._observe(spec, {}, ctx, outcome)

    def stopping(self) -> None:
        """The server is shutting down: calls cancelled from now on were ended by the
        shutdown, not by their client (their audit lines say ``shutdown``). Shared with every
        bridge :meth:`rebuilt` from this one."""
        self._life.stopping = True

    def _failed(
        self,
        name: str,
        error: str,
        code: ErrorCode,
        started: float,
        clearance: Clearance | None,
        details: Any = None,
    ) -> CallOutcome:
        return CallOutcome(
            tool=name,
            ok=False,
            value=details,
            error=error,
            code=code,
            duration_ms=_ms_since(started),
            decision=clearance.decision if clearance else None,
            answer=clearance.answer if clearance else None,
            answered_by=clearance.by if clearance else None,
        )

    async def _observe(
        self,
        spec: ToolSpec,
        args: Mapping[str, Any],
        ctx: CallContext,
        outcome: CallOutcome,
        found: Counter[str] | None = None,
    ) -> None:
        """Tell every observer, shielded from the call's cancellation and bounded in time,
        with the arguments' secrets nobody declared redacted (``found``: those the scan found
        in them; None: not scanned yet)."""
        with anyio.move_on_after(OBSERVE_LIMIT_S, shield=True):
            args = await kept_arguments(self.secret_scan, args, spec.name, found)
            for observe in self._observers:
                await observe(spec, args, ctx, outcome)

    def _validate(self, entry: CatalogEntry, args: Mapping[str, Any]) -> None:
        if not isinstance(args, Mapping):
            raise ArgumentsError("invalid arguments: expected a JSON object", tool=entry.spec.name)
        problems = entry.arguments.problems(dict(args))
        if problems:
            shown = "; ".join(p.line for p in problems[:MAX_ERRORS_SHOWN])
            more = f" (and {len(problems) - MAX_ERRORS_SHOWN} more)" if len(problems) > 3 else ""
            raise ArgumentsError(
                f"invalid arguments: {shown}{more}",
                tool=entry.spec.name,
                details={"errors": [p.as_json() for p in problems]},
            )

    async def _execute(
        self,
        entry: CatalogEntry,
        args: Mapping[str, Any],
        ctx: CallContext,
        sandbox: Confinement | None,
    ) -> ExecResult:
        spec = entry.spec
        executor = self._executors.get(spec.transport.kind)
        if executor is None:
            raise ExecError(
                f"{spec.transport.kind} tools are not supported by this server yet",
                tool=spec.name,
                code=ErrorCode.EXEC_UNSUPPORTED,
            )
        secrets: dict[str, str] = {}
        if spec.secrets:
            if self._secrets is None:
                raise ExecError(
                    "this tool needs secrets but no secret resolver is configured",
                    tool=spec.name,
                    code=ErrorCode.SECRET_UNRESOLVED,
                )
            secrets = self._secrets.resolve(list(spec.secrets))
        request = ExecRequest(
            spec=spec,
            arguments=args,
            timeout_s=spec.effective_timeout_s(self._default_timeout_s),
            secrets=secrets,
            progress=ctx.progress,
            max_output_bytes=self._max_output_bytes,
            context=ctx,
            sandbox=sandbox,
        )
        if isinstance(spec.transport, BuiltinTransport) and not spec.transport.holds_place:
            return await executor.run(request)  # it waits on a person or the client's model
        async with self._limiter:
            return await executor.run(request)

    def _finish(
        self,
        entry: CatalogEntry,
        result: ExecResult,
        started: float,
        clearance: Clearance,
        usage: Usage | None,
    ) -> CallOutcome:
        spec = entry.spec
        common: dict[str, Any] = {
            "usage": usage,
            "tool": spec.name,
            "duration_ms": _ms_since(started),
            "truncated": result.truncated,
            "output_path": result.output_path,
            "result": result,
            "decision": clearance.decision,
            "answer": clearance.answer,
            "answered_by": clearance.by,
        }
        if not result.ok:
            return CallOutcome(
                ok=False,
                error=result.error or "tool failed",
                code=result.code or ErrorCode.EXEC_FAILED,
                value=result.value,
                **common,
            )
        if entry.output is not None:
            problems = entry.output.validate(result.value)
            if problems:
                return CallOutcome(
                    ok=False,
                    error="the tool's result does not match its output schema: " + problems[0],
                    code=ErrorCode.OUTPUT_INVALID,
                    **common,
                )
        return CallOutcome(ok=True, value=result.value, text=result.text, **common)


def is_proxy(spec: ToolSpec) -> bool:
    """Whether ``spec`` is the built-in proxy (call_tool), whose calls are calls of the tool
    they name."""
    return spec.is_locked and spec.name == PROXY_TOOL


def _ms_since(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)
