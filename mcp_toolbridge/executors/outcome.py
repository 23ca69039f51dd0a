"""What a run of a child process gives back (:class:`ProcessOutcome`), and the error of one
that ran past its deadline (:class:`ProcessTimeout`, which carries what it had given by then)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from mcp_toolbridge.errors import ExecTimeoutError
from mcp_toolbridge.executors.streams import Sink

_MAX_SIGNAL = 64


@dataclass(frozen=True, slots=True)
class ProcessOutcome:
    exit_code: int | None
    """The exit status, or None when the child was killed by a signal."""
    signal: int | None
    stdout: bytes
    """At most ``max_output_bytes`` of stdout, from the start."""
    stderr_tail: bytes
    """The last bytes of stderr, lines consumed by ``on_stderr_line`` left out."""
    stdout_bytes: int
    stderr_bytes: int
    stdout_truncated: bool
    stderr_truncated: bool
    duration_ms: float
    sandboxed: bool = False
    """Whether the child ran inside the OS sandbox."""
    limit_hint: str | None = None
    """For a sandboxed child that failed and seems to have hit one of the sandbox's resource
    limits (``sandbox/limits.py``): which, and what to do; the tools add it to their error."""
    hidden_hint: str | None = None
    """For a sandboxed child that failed on a path its sandbox does not show (``hidden.py``):
    which, and that it is hidden, not missing; the tools add it as they add ``limit_hint``."""


class ProcessTimeout(ExecTimeoutError):
    """The deadline passed; the group was killed. ``outcome`` is what was collected until
    then, with the child's status as reaped (usually ``signal`` SIGTERM or SIGKILL; both None
    when it could not be reaped)."""

    def __init__(self, message: str, *, outcome: ProcessOutcome) -> None:
        super().__init__(message)
        self.outcome = outcome


def outcome_of(
    code: int | None, stdout: Sink, stderr: Sink, started: float, sandboxed: bool
) -> ProcessOutcome:
    """``code``: the child's return code (negative: killed by that signal; sandboxed, 128 + N
    is read as signal N); None when it was not reaped (only after a timeout)."""
    if sandboxed and code is not None and 128 < code <= 128 + _MAX_SIGNAL:
        code = 128 - code
    return ProcessOutcome(
        exit_code=code if code is not None and code >= 0 else None,
        signal=-code if code is not None and code < 0 else None,
        stdout=bytes(stdout.data),
        stderr_tail=bytes(stderr.data),
        stdout_bytes=stdout.total,
        stderr_bytes=stderr.total,
        stdout_truncated=stdout.dropped,
        stderr_truncated=stderr.dropped,
        duration_ms=(time.perf_counter() - started) * 1000.0,
        sandboxed=sandboxed,
    )
