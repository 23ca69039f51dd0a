"""What every executor takes and returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from mcp_toolbridge.errors import ErrorCode
from mcp_toolbridge.executors.limits import DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT_S
from mcp_toolbridge.host import CallContext, ProgressFn
from mcp_toolbridge.model import ToolSpec

if TYPE_CHECKING:  # the sandbox's modules: imported by what launches processes
    from mcp_toolbridge.sandbox import Confinement

__all__ = [
    "DEFAULT_MAX_OUTPUT_BYTES",
    "DEFAULT_TIMEOUT_S",
    "CallContext",
    "ExecRequest",
    "ExecResult",
    "Executor",
    "ProgressFn",
]


@dataclass(frozen=True, slots=True)
class ExecRequest:
    spec: ToolSpec
    arguments: Mapping[str, Any]
    timeout_s: float
    secrets: Mapping[str, str] = field(default_factory=dict)
    """Resolved secret values by id (only the ids the tool declares)."""
    progress: ProgressFn | None = None
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    context: CallContext = field(default_factory=CallContext)
    """The caller: session id and what its client can do (built-in tools use it)."""
    sandbox: Confinement | None = None
    """The OS sandbox every process of this call runs in (built from the tool's effective
    capabilities by the gate); None: no sandbox was configured (a bare Bridge in tests)."""


@dataclass(frozen=True, slots=True)
class ExecResult:
    """The outcome of running a tool that could be started.

    ``ok`` false means the tool ran and reported failure (non-zero exit, ``{"ok": false}``,
    HTTP status >= 400); ``error`` is then the text for the model, and ``code`` its error code
    (``exec.failed`` when None). A tool that keeps what it did before its deadline (bash)
    reports the timeout this way, with ``code`` ``exec.timeout``; otherwise failures to start,
    time-outs and transport errors are raised as :class:`~mcp_toolbridge.errors.ExecError`.
    """

    ok: bool
    value: Any = None
    text: str | None = None
    """The result written for the model (numbered lines, matches, command output); None:
    the value's JSON is the text. The value stays the structured result."""
    error: str | None = None
    code: ErrorCode | None = None
    """The code of a failure (``ok`` false) when it is not a plain ``exec.failed``: a tool
    that stops a command at its own deadline says ``exec.timeout``."""
    exit_code: int | None = None
    http_status: int | None = None
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    truncated: bool = False
    output_path: str | None = None
    argv: tuple[str, ...] = ()
    url: str | None = None
    cwd: str | None = None
    env_keys: tuple[str, ...] = ()
    sandboxed: bool | None = None
    """Whether the call's process ran inside the OS sandbox; None: it started none."""


class Executor(Protocol):
    async def run(self, request: ExecRequest) -> ExecResult: ...
