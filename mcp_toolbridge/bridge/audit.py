"""The NDJSON audit log: one line per call, denied and asked calls included.

Each line is a complete JSON object (:class:`AuditRecord`, camelCase keys) written with a
single ``os.write`` on a file descriptor opened with ``O_APPEND``, so concurrent calls never
interleave. The file is created with mode 0600 (its folder 0700). Secrets are redacted from
argv and URLs; environment variables are recorded by name only. Secrets nobody declared are
recorded as counts per rule id (``redacted``, ``argumentSecrets``), never a value or a digest.

The line is written from the event loop, not from a worker thread. Appending a few hundred
bytes to a local file takes about 10 µs; a round trip through a worker thread took about
150 µs more on every call (docs/performance.md, "Round trip and throughput"). Since nothing is
awaited during a write, lines from concurrent calls cannot interleave within this process and
no lock is needed. The line is written (to the page cache) before the call's result is
returned, as before. The cost: an audit file on a stalled network filesystem would stall the
server with it; keep it on a local disk.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from mcp_toolbridge.bridge.audit_file import open_audit_file
from mcp_toolbridge.bridge.outcome import UNFAILED, CallOutcome, Outcome, classify, outcome_of
from mcp_toolbridge.bridge.pipeline import Observer
from mcp_toolbridge.bridge.redaction import redact_argv, redact_url
from mcp_toolbridge.errors import CallError, ErrorCode
from mcp_toolbridge.executors import ExecResult
from mcp_toolbridge.host import LOCAL, CallContext, Caller
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.policy import Decision


class AuditRecord(BaseModel):
    """One call. Serialized with camelCase keys (``stdoutBytes``, ``envKeys``, ``isError``)."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True
    )

    ts: str
    session: str
    subject: str | None = None
    """Who called: the access token's subject (None: the local caller, stdio, the static
    token). Never the token itself."""
    client_id: str | None = None
    """The OAuth client the caller's token was issued to (an agent, an IDE)."""
    tool: str
    tool_id: str
    source: str
    via: str | None = None
    """The tool the call came through (the proxy, call_tool); None for a direct call."""
    decision: Literal["allow", "deny", "ask"]
    decided_by: str
    decision_scope: str
    answer: str | None = None
    answered_by: str | None = None
    """Who answered the confirmation: ``console:<user>`` (the console's person), ``client``
    or ``client:<subject>`` (the client's own person)."""
    argv: list[str] | None = None
    url: str | None = None
    cwd: str | None = None
    exit_code: int | None = None
    http_status: int | None = None
    ms: float = 0.0
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    truncated: bool = False
    env_keys: list[str] = []
    sandboxed: bool | None = None
    """Whether the call's process ran inside the OS sandbox; null: it started none."""
    tags: list[str] = []
    outcome: Outcome
    is_error: bool
    error_code: str | None = None
    usage: dict[str, float] | None = None
    """What the call used as its result reported it (``{"tokens": n, "usd": x}``), for tool
    budgets; None when it reported nothing."""
    redacted: dict[str, int] | None = None
    """Secrets nobody declared, replaced in the result the client got: count per rule id."""
    argument_secrets: dict[str, int] | None = None
    """Secrets found in the call's arguments: count per rule id."""

    def to_line(self) -> bytes:
        return (self.model_dump_json(by_alias=True) + "\n").encode("utf-8")

    @classmethod
    def build(
        cls,
        spec: ToolSpec,
        *,
        session: str,
        decision: Decision,
        ms: float,
        result: ExecResult | None = None,
        error: CallError | None = None,
        answer: str | None = None,
        secrets: Iterable[str] = (),
        outcome: Outcome | None = None,
        usage: dict[str, float] | None = None,
        via: str | None = None,
        redacted: Mapping[str, int] | None = None,
        argument_secrets: Mapping[str, int] | None = None,
        caller: Caller = LOCAL,
        answered_by: str | None = None,
    ) -> AuditRecord:
        """A record for a call that was decided (and maybe run). ``answer`` is the person's
        reply to an ask (once | always | reject | cancel | headless | unreachable); ``secrets`` are
        resolved values to hide wherever they appear; ``outcome`` is the call's outcome when
        the caller has it (:func:`~mcp_toolbridge.bridge.outcome.outcome_of`), else it is
        classified from the decision, result, error and answer; ``usage`` is what the call
        used, as its result reported it (tool budgets); ``via`` the tool the call came through
        (the proxy); ``redacted`` and ``argument_secrets`` count secrets nobody declared per
        rule id; ``caller`` who called (its subject and client id are recorded);
        ``answered_by`` who gave the ``answer``."""
        values = tuple(secrets)
        if outcome is None:
            outcome = classify(
                ok=error is None and result is not None and result.ok,
                code=error.code if error is not None else None,
                action=decision.action,
                answer=answer,
            )
        return cls(
            ts=datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            session=session,
            subject=caller.subject,
            client_id=caller.client_id,
            tool=spec.name,
            tool_id=spec.id,
            source=spec.source.path,
            via=via,
            decision=decision.action,
            decided_by=decision.rule,
            decision_scope=decision.scope,
            answer=answer,
            answered_by=answered_by,
            argv=redact_argv(result.argv, values) if result and result.argv else None,
            url=redact_url(result.url, values) if result and result.url else None,
            cwd=result.cwd if result else None,
            exit_code=result.exit_code if result else None,
            http_status=result.http_status if result else None,
            ms=round(ms, 3),
            stdout_bytes=result.stdout_bytes if result else 0,
            stderr_bytes=result.stderr_bytes if result else 0,
            truncated=result.truncated if result else False,
            env_keys=sorted(result.env_keys) if result else [],
            sandboxed=result.sandboxed if result else None,
            tags=list(spec.tags),
            outcome=outcome,
            is_error=outcome not in UNFAILED,
            error_code=str(error.code) if error is not None else None,
            usage=usage,
            redacted=dict(redacted) if redacted else None,
            argument_secrets=dict(argument_secrets) if argument_secrets else None,
        )


class AuditLog:
    """An append-only NDJSON file. Open with :meth:`open`; safe to share between tasks."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def open(cls, path: Path | None = None) -> AuditLog:
        """Open (creating with mode 0600) ``path``, or the default location. Raises OSError."""
        return cls(*open_audit_file(path))

    async def write(self, record: AuditRecord) -> None:
        self._write_line(record.to_line())

    def _write_line(self, line: bytes) -> None:
        if self._fd is None:
            raise OSError(f"the audit log {self.path} is closed")
        written = os.write(self._fd, line)
        while written < len(line):  # a short write on a regular file: finish it, still unbroken
            written += os.write(self._fd, line[written:])

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


NOT_CHECKED = Decision(
    "deny", "invalid arguments: refused before the permission check", "validation"
)
"""The audit decision of a call refused at argument validation (the gate never ran)."""
NOT_DECIDED = Decision("deny", "stopped before the permission check finished", "cancelled")
"""The audit decision of a call cancelled before the gate decided (it never ran)."""


def record_of(
    spec: ToolSpec, ctx: CallContext, outcome: CallOutcome, secrets: Iterable[str] = ()
) -> AuditRecord:
    """The audit record of one finished call (what the log writes, what the console shows)."""
    came_to = outcome_of(outcome)
    error = None
    if came_to not in UNFAILED:
        error = CallError(outcome.error or "", tool=spec.name, code=outcome.code)
    undecided = NOT_DECIDED if outcome.code is ErrorCode.EXEC_CANCELLED else NOT_CHECKED
    return AuditRecord.build(
        spec,
        session=ctx.session_id,
        decision=outcome.decision or undecided,
        ms=outcome.duration_ms,
        result=outcome.result,
        error=error,
        answer=outcome.answer,
        secrets=secrets,
        outcome=came_to,
        usage=outcome.usage.as_json() if outcome.usage is not None else None,
        via=ctx.via,
        redacted=outcome.redacted,
        argument_secrets=outcome.argument_secrets,
        caller=ctx.caller,
        answered_by=outcome.answered_by,
    )


def audit_observer(log: AuditLog) -> Observer:
    """The observer that writes each finished call's line to ``log``."""

    async def observe(
        spec: ToolSpec, arguments: Mapping[str, Any], ctx: CallContext, outcome: CallOutcome
    ) -> None:
        await log.write(record_of(spec, ctx, outcome))

    return observe
