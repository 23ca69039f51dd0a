"""One exception tree with stable codes.

::

    ToolbridgeError                  .code: ErrorCode; str(exc) is one line
    ├── LoadError                    start-up only; carries every Problem found
    ├── ConfigError                  config.invalid | policy.invalid | secrets.invalid
    └── CallError                    at call time; .tool
        ├── UnknownToolError         tool.unknown      -> protocol error -32602
        ├── ArgumentsError           args.invalid      -> isError result
        ├── PermissionDeniedError    permission.denied -> isError result
        ├── BudgetExceededError      budget.exceeded   -> isError result
        ├── StateFullError           state.full        -> isError result
        └── ExecError                exec.*            -> isError result
            ├── ExecTimeoutError     exec.timeout
            ├── ExecSpawnError       exec.spawn
            ├── ExecOutputError      exec.output       (not the JSON the format promises)
            ├── ExecTransportError   exec.transport    (connection / read failure)
            └── SecretError          secret.unresolved

Load problems are collected as :class:`Problem` values (never raised one at a time); a
``LoadError`` wraps the whole list when a caller wants to stop.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class ErrorCode(StrEnum):
    MANIFEST_UNREADABLE = "manifest.unreadable"
    MANIFEST_FORMAT = "manifest.format"
    MANIFEST_INVALID = "manifest.invalid"
    MANIFEST_DUPLICATE = "manifest.duplicate"
    MANIFEST_DIGEST = "manifest.digest"
    MANIFEST_PROGRAM = "manifest.program"
    CONFIG_INVALID = "config.invalid"
    POLICY_INVALID = "policy.invalid"
    SECRETS_INVALID = "secrets.invalid"
    TOOL_UNKNOWN = "tool.unknown"
    ARGS_INVALID = "args.invalid"
    OUTPUT_INVALID = "output.invalid"
    PERMISSION_DENIED = "permission.denied"
    BUDGET_EXCEEDED = "budget.exceeded"
    RATE_LIMITED = "rate.limited"
    STATE_UNAVAILABLE = "state.unavailable"
    STATE_FULL = "state.full"
    EXEC_FAILED = "exec.failed"
    EXEC_TIMEOUT = "exec.timeout"
    EXEC_CANCELLED = "exec.cancelled"
    EXEC_SPAWN = "exec.spawn"
    EXEC_OUTPUT = "exec.output"
    EXEC_TRANSPORT = "exec.transport"
    EXEC_UNSUPPORTED = "exec.unsupported"
    SECRET_UNRESOLVED = "secret.unresolved"
    SERVER_INTERNAL = "server.internal"


class Severity(StrEnum):
    ERROR = "error"
    NOTICE = "notice"


@dataclass(frozen=True, slots=True)
class Problem:
    """One finding about a manifest, printed like compiler output.

    ``locator`` is ``tool[3] "git_log"`` (the index always, the name when known) or empty for
    a problem about the whole file.
    """

    path: str
    message: str
    locator: str = ""
    code: ErrorCode = ErrorCode.MANIFEST_INVALID
    severity: Severity = Severity.ERROR
    line: int | None = None
    """The line of the manifest the problem is about (``path:LINE:`` when printed), if known."""

    def render(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        head = f"{where}: {self.locator}" if self.locator else where
        return f"{head}: {self.message}"

    def __reduce__(
        self,
    ) -> tuple[type[Problem], tuple[str, str, str, ErrorCode, Severity, int | None]]:
        """Pickled as its constructor's arguments: 4x faster to read back than the generic
        state of a frozen dataclass (a cached catalog can hold tens of thousands)."""
        return Problem, (
            self.path,
            self.message,
            self.locator,
            self.code,
            self.severity,
            self.line,
        )


class ToolbridgeError(Exception):
    code: ErrorCode = ErrorCode.CONFIG_INVALID

    def __init__(self, message: str, *, code: ErrorCode | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return self.message


class LoadError(ToolbridgeError):
    code = ErrorCode.MANIFEST_INVALID

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        first = problems[0].render() if problems else "no problems"
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(first + more)


class ConfigError(ToolbridgeError):
    code = ErrorCode.CONFIG_INVALID

    def __init__(
        self, message: str, *, code: ErrorCode | None = None, origin: str | None = None
    ) -> None:
        super().__init__(message, code=code)
        self.origin = origin
        """The file at fault, when the message starts with it (``origin: ...``)."""

    def problem(self, fallback: str) -> Problem:
        """This error as a load problem, filed under its own file (``fallback`` if unknown)."""
        prefix = f"{self.origin}: "
        if self.origin is not None and self.message.startswith(prefix):
            return Problem(self.origin, self.message[len(prefix) :], code=self.code)
        return Problem(fallback, self.message, code=self.code)


class CallError(ToolbridgeError):
    code = ErrorCode.EXEC_FAILED

    def __init__(
        self,
        message: str,
        *,
        tool: str = "",
        code: ErrorCode | None = None,
        details: object = None,
    ) -> None:
        super().__init__(message, code=code)
        self.tool = tool
        self.details = details
        """The failure as data, for programs (a result's ``_meta["toolbridge/details"]``):
        for ``args.invalid``, every schema problem (path, keyword, expected, got)."""


class UnknownToolError(CallError):
    code = ErrorCode.TOOL_UNKNOWN


class ArgumentsError(CallError):
    code = ErrorCode.ARGS_INVALID


class PermissionDeniedError(CallError):
    code = ErrorCode.PERMISSION_DENIED


class BudgetExceededError(CallError):
    """The tool's budget (Runloop ``budget.tokens`` / ``budget.usd``) is spent in this
    session: the message says which, how much was used and how to raise it."""

    code = ErrorCode.BUDGET_EXCEEDED


class RateLimitedError(CallError):
    """The caller made as many calls as the policy's ``[limits]`` allow in its window: the
    message says which limit and when to retry."""

    code = ErrorCode.RATE_LIMITED


class StateUnavailableError(CallError):
    """The shared state (Redis) did not answer: budgets, limits and "always" answers cannot
    be checked, so the call is refused (fail closed)."""

    code = ErrorCode.STATE_UNAVAILABLE


class StateFullError(CallError):
    """Nothing more can be kept for a new person: the State keeps as many people as it may,
    and none of them can be dropped without resetting a budget (state/memory.py)."""

    code = ErrorCode.STATE_FULL


class ExecError(CallError):
    code = ErrorCode.EXEC_FAILED


class ExecTimeoutError(ExecError):
    code = ErrorCode.EXEC_TIMEOUT


class ExecSpawnError(ExecError):
    code = ErrorCode.EXEC_SPAWN


class ExecOutputError(ExecError):
    code = ErrorCode.EXEC_OUTPUT


class ExecTransportError(ExecError):
    code = ErrorCode.EXEC_TRANSPORT


class SecretError(ExecError):
    code = ErrorCode.SECRET_UNRESOLVED
