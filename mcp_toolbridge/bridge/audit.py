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
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import platformdirs
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from mcp_toolbridge.bridge.outcome import CallOutcome, Outcome, classify, outcome_of
from mcp_toolbridge.bridge.pipeline import Observer
from mcp_toolbridge.errors import CallError, ErrorCode
from mcp_toolbridge.executors import ExecResult
from mcp_toolbridge.host import LOCAL, CallContext, Caller
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.policy import Decision

REDACTED = "***"
MAX_ARG_CHARS = 2000
MIN_SECRET_CHARS = 4
"""Secret values shorter than this are not searched for (they would redact ordinary text)."""
_SECRET_NAME = re.compile(
    r"(token|secret|passw(or)?d|pwd|api[-_]?key|apikey|access[-_]?key|auth|credential|"
    r"signature|sig|session[-_]?id|private[-_]?key)",
    re.IGNORECASE,
)


def default_audit_path() -> Path:
    """Where the audit log goes without ``--audit``: the per-user data directory."""
    return Path(platformdirs.user_data_dir("mcp-toolbridge")) / "audit.ndjson"


def redact_text(text: str, secrets: Iterable[str]) -> str:
    for value in sorted({s for s in secrets if len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True):
        text = text.replace(value, REDACTED)
    return text


def redact_argv(argv: Sequence[str], secrets: Iterable[str] = ()) -> list[str]:
    """argv with secret values, ``--token=X`` values and the value after ``--token`` hidden."""
    values = tuple(secrets)
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        name, eq, _ = arg.partition("=")
        if arg.startswith("-") and _SECRET_NAME.search(name):
            if eq:
                out.append(f"{name}={REDACTED}")
                continue
            hide_next = True
        out.append(_cap(redact_text(arg, values)))
    return out


def redact_url(url: str, secrets: Iterable[str] = ()) -> str:
    """The URL without a password, with secret-looking query values and secret values hidden."""
    values = tuple(secrets)
    try:
        parts = urlsplit(url)
    except ValueError:
        return _cap(redact_text(url, values))
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user = userinfo.partition(":")[0]
        netloc = f"{user}:{REDACTED}@{hostport}" if ":" in userinfo else f"{REDACTED}@{hostport}"
    query = urlencode(
        [
            (k, REDACTED if _SECRET_NAME.search(k) else v)
            for k, v in parse_qsl(parts.query, keep_blank_values=True)
        ],
        safe="*",
    )
    rebuilt = urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    return _cap(redact_text(rebuilt, values))


def _cap(text: str) -> str:
    if len(text) <= MAX_ARG_CHARS:
        return text
    return f"{text[:MAX_ARG_CHARS]}...(+{len(text) - MAX_ARG_CHARS} chars)"


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
    ) -> AuditRecord:
        """A record for a call that was decided (and maybe run). ``answer`` is the person's
        reply to an ask (once | always | reject | cancel | headless | unreachable); ``secrets`` are
        resolved values to hide wherever they appear; ``outcome`` is the call's outcome when
        the caller has it (:func:`~mcp_toolbridge.bridge.outcome.outcome_of`), else it is
        classified from the decision, result, error and answer; ``usage`` is what the call
        used, as its result reported it (tool budgets); ``via`` the tool the call came through
        (the proxy); ``redacted`` and ``argument_secrets`` count secrets nobody declared per
        rule id; ``caller`` who called (its subject and client id are recorded)."""
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
            is_error=outcome is not Outcome.OK,
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
        target = path if path is not None else default_audit_path()
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
        return cls(target, os.open(target, flags, 0o600))

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


def audit_observer(log: AuditLog) -> Observer:
    """The observer that writes each finished call's line to ``log``."""

    async def observe(
        spec: ToolSpec, arguments: Mapping[str, Any], ctx: CallContext, outcome: CallOutcome
    ) -> None:
        error = None
        if not outcome.ok:
            error = CallError(outcome.error or "", tool=spec.name, code=outcome.code)
        undecided = NOT_DECIDED if outcome.code is ErrorCode.EXEC_CANCELLED else NOT_CHECKED
        record = AuditRecord.build(
            spec,
            session=ctx.session_id,
            decision=outcome.decision or undecided,
            ms=outcome.duration_ms,
            result=outcome.result,
            error=error,
            answer=outcome.answer,
            outcome=outcome_of(outcome),
            usage=outcome.usage.as_json() if outcome.usage is not None else None,
            via=ctx.via,
            redacted=outcome.redacted,
            argument_secrets=outcome.argument_secrets,
            caller=ctx.caller,
        )
        await log.write(record)

    return observe
