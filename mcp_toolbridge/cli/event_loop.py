"""Which event loop ``serve`` runs on: uvloop (libuv) where it is installed, else asyncio's own.

Every MCP request passes through a dozen event-loop turns between the pipe and the handler
(the SDK's dispatcher, a task per request, memory streams), so the loop's own cost shows in
every call: uvloop answered a trivial exec tool's call about 0.1 ms sooner at the p50 than the
asyncio loop, measured side by side (docs/performance.md, "Round trip and throughput"). Both
run under anyio's asyncio backend, so nothing else changes. ``--loop asyncio`` opts out.
"""

from __future__ import annotations

import importlib.util
from typing import Literal, get_args

from mcp_toolbridge.errors import ConfigError

Loop = Literal["auto", "uvloop", "asyncio"]
LOOPS: tuple[Loop, ...] = get_args(Loop)


def uvloop_installed() -> bool:
    return importlib.util.find_spec("uvloop") is not None


def backend_options(choice: Loop) -> dict[str, bool]:
    """anyio's asyncio-backend options for ``choice``; ConfigError for ``uvloop`` where it is
    not installed."""
    if choice == "asyncio":
        return {}
    if uvloop_installed():
        return {"use_uvloop": True}
    if choice == "uvloop":
        raise ConfigError(
            "--loop uvloop: uvloop is not installed here (it is not available on Windows); "
            "use --loop asyncio"
        )
    return {}
