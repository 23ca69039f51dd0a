"""Executors: how a validated, permitted call is carried out (process, HTTP, built-in).
``subprocess`` is the only module that starts processes, each inside the OS sandbox its caller
passes (``sandbox`` builds it); the ``http*`` modules are the only httpx2 users, and
``http_errors`` the one place its exceptions are translated (for the Runloop http tools and the
web built-ins alike).

May import: the vocabulary, ``policy`` and ``sandbox``."""

from mcp_toolbridge.executors.base import (
    DEFAULT_MAX_OUTPUT_BYTES,
    DEFAULT_TIMEOUT_S,
    ExecRequest,
    ExecResult,
    Executor,
)
from mcp_toolbridge.executors.exec_tool import ExecToolExecutor
from mcp_toolbridge.executors.http import HttpExecutor
from mcp_toolbridge.executors.http_fetch import (
    FetchedBody,
    FetchTarget,
    fetch_pinned,
    fetch_plain,
    parse_target,
)
from mcp_toolbridge.executors.progress import Heartbeat, run_beside
from mcp_toolbridge.executors.progress_channel import PROGRESS_FD_ENV
from mcp_toolbridge.executors.subprocess import (
    ProcessOutcome,
    ProcessTimeout,
    probe_sandbox,
    probe_sandbox_at_start,
    run_process,
)
from mcp_toolbridge.executors.tool_log import ToolLog

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
]
