"""Bridge.call: the one way any tool runs.

resolve -> validate arguments -> gate (capabilities, rules, watchdog, confirmation)
-> resolve secrets -> execute under the concurrency limit -> check output -> outcome + audit.

Every path into execution (MCP tools/call, ``mcp-toolbridge call``, the ``task`` tool) goes
through :meth:`Bridge.call`. No MCP types here: the server adapter maps outcomes to results.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio

from mcp_toolbridge.bridge.gate import Clearance
from mcp_toolbridge.catalog import Catalog, CatalogEntry
from mcp_toolbridge.errors import (
    ArgumentsError,
    CallError,
    ErrorCode,
    ExecError,
    PermissionDeniedError,
    UnknownToolError,
)
from mcp_toolbridge.executors import (
    DEFAULT_MAX_OUTPUT_BYTES,
    DEFAULT_TIMEOUT_S,
    ExecRequest,
    ExecResult,
    Executor,
)
from mcp_toolbridge.host import CallContext, InputPending
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.policy import Decision
from mcp_toolbridge.sandbox import Confinement

MAX_ERRORS_SHOWN = 3


class SecretSource(Protocol):
    def resolve(self, ids: list[str]) -> dict[str, str]: ...


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """The envelope of one call: ``value`` when ok, ``error`` (for the model) otherwise."""

    tool: str
    ok: bool
    value: Any = None
    error: str | None = None
    code: ErrorCode | None = None
    duration_ms: int = 0
    truncated: bool = False
    output_path: str | None = None
    result: ExecResult | None = None
    decision: Decision | None = None
    """What the gate decided; None when the call failed before it (bad arguments)."""
    answer: str | None = None
    """The person's answer when asked: once | always | reject | headless | pending."""
    meta: dict[str, Any] = field(default_factory=dict)


Gate = Callable[[ToolSpec, Mapping[str, Any], CallContext], Awaitable[Clearance]]
"""Permission stages (capabilities, rules, watchdog, confirmation): see gate.PolicyGate."""

Observer = Callable[[ToolSpec, Mapping[str, Any], CallContext, CallOutcome], Awaitable[None]]
"""Called once per finished call (audit, trace), whatever the outcome."""


NO_POLICY = Decision("allow", "no policy configured", "default")


async def _allow_all(spec: ToolSpec, arguments: Mapping[str, Any], ctx: CallContext) -> Clearance:
    return Clearance(NO_POLICY)


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
        gate: Gate = _allow_all,
        observers: tuple[Observer, ...] = (),
    ) -> None:
        self.catalog = catalog
        self._executors = dict(executors)
        self._default_timeout_s = default_timeout_s
        self._max_output_bytes = max_output_bytes
        self._limiter = anyio.CapacityLimiter(max_concurrency or _default_concurrency())
        self._secrets = secrets
        self._gate = gate
        self._observers = observers

    def rebuilt(self, catalog: Catalog, *, gate: Gate, executors: Mapping[str, Executor]) -> Bridge:
        """A bridge over a new catalog (hot reload) that shares this one's concurrency limit,
        deadlines, secrets and observers. Calls in flight keep the bridge they started on."""
        twin = Bridge.__new__(Bridge)
        twin.__dict__.update(self.__dict__)
        twin.catalog = catalog
        twin._gate = gate
        twin._executors = {**self._executors, **executors}
        return twin

    def entry(self, name: str) -> CatalogEntry:
        entry = self.catalog.get(name)
        if entry is None:
            raise UnknownToolError(f"unknown tool: {name}", tool=name)
        return entry

    async def call(
        self, name: str, arguments: Mapping[str, Any] | None, ctx: CallContext | None = None
    ) -> CallOutcome:
        """Run one call. Raises UnknownToolError only; every other failure is an outcome."""
        entry = self.entry(name)
        ctx = ctx or CallContext()
        args: Mapping[str, Any] = {} if arguments is None else arguments
        started = time.perf_counter()
        clearance: Clearance | None = None
        try:
            self._validate(entry, args)
            clearance = await self._gate(entry.spec, args, ctx)
            if not clearance.allowed:
                raise PermissionDeniedError(clearance.refusal(), tool=name)
            result = await self._execute(entry, args, ctx, clearance.sandbox)
            outcome = self._finish(entry, result, started, clearance)
        except InputPending:
            pending = CallOutcome(
                tool=name,
                ok=False,
                error="waiting for the person's answer",
                duration_ms=_ms_since(started),
                decision=Decision("ask", "confirmation pending", "confirmation"),
                answer="pending",
            )
            await self._observe(entry.spec, args, ctx, pending)
            raise
        except CallError as exc:
            outcome = CallOutcome(
                tool=name,
                ok=False,
                error=exc.message,
                code=exc.code,
                duration_ms=_ms_since(started),
                decision=clearance.decision if clearance else None,
                answer=clearance.answer if clearance else None,
            )
        await self._observe(entry.spec, args, ctx, outcome)
        return outcome

    async def _observe(
        self, spec: ToolSpec, args: Mapping[str, Any], ctx: CallContext, outcome: CallOutcome
    ) -> None:
        with anyio.CancelScope(shield=True):
            for observe in self._observers:
                await observe(spec, args, ctx, outcome)

    def _validate(self, entry: CatalogEntry, args: Mapping[str, Any]) -> None:
        if not isinstance(args, Mapping):
            raise ArgumentsError("invalid arguments: expected a JSON object", tool=entry.spec.name)
        problems = entry.arguments.validate(dict(args))
        if problems:
            shown = "; ".join(problems[:MAX_ERRORS_SHOWN])
            more = f" (and {len(problems) - MAX_ERRORS_SHOWN} more)" if len(problems) > 3 else ""
            raise ArgumentsError(f"invalid arguments: {shown}{more}", tool=entry.spec.name)

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
            timeout_s=spec.timeout_s or self._default_timeout_s,
            secrets=secrets,
            progress=ctx.progress,
            max_output_bytes=self._max_output_bytes,
            context=ctx,
            sandbox=sandbox,
        )
        async with self._limiter:
            return await executor.run(request)

    def _finish(
        self, entry: CatalogEntry, result: ExecResult, started: float, clearance: Clearance
    ) -> CallOutcome:
        spec = entry.spec
        common: dict[str, Any] = {
            "tool": spec.name,
            "duration_ms": _ms_since(started),
            "truncated": result.truncated,
            "output_path": result.output_path,
            "result": result,
            "decision": clearance.decision,
            "answer": clearance.answer,
        }
        if not result.ok:
            return CallOutcome(
                ok=False,
                error=result.error or "tool failed",
                code=ErrorCode.EXEC_FAILED,
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
        return CallOutcome(ok=True, value=result.value, **common)


def _ms_since(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)
