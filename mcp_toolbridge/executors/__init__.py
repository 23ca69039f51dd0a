"""Executors: how a validated, permitted call is carried out (process, HTTP, built-in).
``subprocess`` is the only module that starts processes, each inside the OS sandbox its caller
passes (``sandbox`` builds it; ``spawn`` spawns them, ``outcome`` is what a run gives back);
the ``http*`` modules are the only httpx2 users, and ``http_errors`` the one place its
exceptions are translated (for the Runloop http tools and the web built-ins alike); ``cuts``
shows part of an output redacted with the text around the cut.

May import: the vocabulary, ``policy`` and ``sandbox``."""

from typing import TYPE_CHECKING

from mcp_toolbridge.lazy import on_first_use

if TYPE_CHECKING:
    from mcp_toolbridge.executors.base import ExecRequest, ExecResult, Executor
    from mcp_toolbridge.executors.cuts import shown_bytes, shown_head, shown_part, shown_tail
    from mcp_toolbridge.executors.exec_tool import ExecToolExecutor
    from mcp_toolbridge.executors.http import HttpExecutor
    from mcp_toolbridge.executors.http_fetch import (
        FetchedBody,
        FetchTarget,
        fetch_pinned,
        fetch_plain,
        parse_target,
    )
    from mcp_toolbridge.executors.limits import DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT_S
    from mcp_toolbridge.executors.outcome import ProcessOutcome, ProcessTimeout
    from mcp_toolbridge.executors.progress import Heartbeat, run_beside
    from mcp_toolbridge.executors.progress_channel import PROGRESS_FD_ENV
    from mcp_toolbridge.executors.subprocess import (
        probe_sandbox,
        probe_sandbox_at_start,
        run_process,
    )
    from mcp_toolbridge.executors.tool_log import ToolLog

__getattr__ = on_first_use(
    __name__,
    {
        "mcp_toolbridge.executors.limits": ("DEFAULT_MAX_OUTPUT_BYTES", "DEFAULT_TIMEOUT_S"),
        "mcp_toolbridge.executors.base": (
            "ExecRequest",
            "ExecResult",
            "Executor",
        ),
        "mcp_toolbridge.executors.cuts": (
            "shown_bytes",
            "shown_head",
            "shown_part",
            "shown_tail",
        ),
        "mcp_toolbridge.executors.exec_tool": ("ExecToolExecutor",),
        "mcp_toolbridge.executors.http": ("HttpExecutor",),
        "mcp_toolbridge.executors.http_fetch": (
            "FetchedBody",
            "FetchTarget",
            "fetch_pinned",
            "fetch_plain",
            "parse_target",
        ),
        "mcp_toolbridge.executors.progress": (
            "Heartbeat",
            "run_beside",
        ),
        "mcp_toolbridge.executors.progress_channel": ("PROGRESS_FD_ENV",),
        "mcp_toolbridge.executors.outcome": ("ProcessOutcome", "ProcessTimeout"),
        "mcp_toolbridge.executors.subprocess": (
            "probe_sandbox",
            "probe_sandbox_at_start",
            "run_process",
        ),
        "mcp_toolbridge.executors.tool_log": ("ToolLog",),
    },
)

__all__ = [
    "DEFAULT_MAX_OUTPUT_BYTES",
    "DEFAULT_TIMEOUT_S",
    "PROGRESS_FD_ENV",
    "ExecRequest",
    "ExecResult",
    "ExecToolExecutor",
    "Executor",
    "FetchTarget",
    "FetchedBody",
    "Heartbeat",
    "HttpExecutor",
    "ProcessOutcome",
    "ProcessTimeout",
    "ToolLog",
    "fetch_pinned",
    "fetch_plain",
    "parse_target",
    "probe_sandbox",
    "probe_sandbox_at_start",
    "run_beside",
    "run_process",
    "shown_bytes",
    "shown_head",
    "shown_part",
    "shown_tail",
]
