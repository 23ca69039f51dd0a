"""One call never stalls the server: while any tool runs its worst case, the server keeps
answering other requests (tools/list; ping in the 2025 era, which has it) within 100 ms, and
its event loop is never kept from running for more than 50 ms.

The server runs in this process (the SDK's in-memory client), so the ticker that measures the
loop's lag measures the server's own loop. Both leave out the process's waits for a CPU
(tests/support/loop_lag.py: the time that passed less them, never less than the CPU time the
loop used), which on a loaded 2-core machine alone come to more than these limits. Each case
starts one call, probes the server until the call ends or a window has passed, then cancels
the call if it still runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from mcp_toolbridge.builtins import LOCKED_IDS
from mcp_toolbridge.runtime import Settings
from tests.support.loop_lag import held_s, loop_lag, mark
from tests.support.manifests import agentcli_manifest, echo_tool
from tests.support.served import locked_settings, served_client
from tests.support.web_fixture import Reply, serving

PROBE_LIMIT_S = 0.1
LAG_LIMIT_S = 0.05
WINDOW_S = 1.0
PROBE_EVERY_S = 0.01
"""How long a call that has not ended by itself is probed before it is cancelled."""

POLICY = """
default_action = "allow"
[requires]
fs.read = ["{workspace}"]
fs.write = ["{workspace}"]
net.hosts = ["127.0.0.1"]
[web_fetch]
allow_loopback = true
[web_search]
timeout_s = 3
[[web_search.providers]]
kind = "searxng"
url = "SEARCH_URL"
"""

FLOOD = """
import sys
chunk = b'{"x": "' + b"a" * (1 << 20)
for _ in range(64):
    sys.stdout.buffer.write(chunk)
sys.stdout.buffer.write(b'"}')
"""


def _big_log(ws: Path) -> None:
    """96 MB with 1000 short lines at the start and none after: a far offset reads it all.
    Written, not sparse: reading never-written pages of a sparse file makes the kernel zero
    them, which on a loaded 2-core machine takes the CPU from every thread (tested on its own,
    with bytes read counted, in tests/builtins/fs/test_read.py)."""
    with (ws / "big.log").open("wb") as handle:
        handle.writelines(f"line {n}\n".encode() for n in range(1000))
        block = b"x" * (1 << 20)
        for _ in range(96):
            handle.write(block)


def _long_line(ws: Path) -> None:
    (ws / "aaa.txt").write_text("a" * 100_000 + "b\n", encoding="utf-8")


def _code(ws: Path) -> None:
    text = "".join(f"def f{n}(x): return x\n" for n in range(200_000))
    (ws / "edit.txt").write_text(text, encoding="utf-8")


def _tree(ws: Path) -> None:
    for folder in range(30):
        (ws / "tree" / f"d{folder}").mkdir(parents=True)
        for n in range(100):
            (ws / "tree" / f"d{folder}" / f"f{n}.txt").write_text("x", encoding="utf-8")


@dataclass(frozen=True)
class Case:
    tool: str
    arguments: dict[str, Any]
    setup: Callable[[Path], None] | None = None
    """Writes what the worst case needs into the workspace."""


CASES = {
    "read": Case("read", {"file_path": "big.log", "offset": 10_000_000}, _big_log),
    "grep": Case("grep", {"pattern": r"(a+)+(?=c)", "output_mode": "count"}, _long_line),
    "grep_re2": Case("grep", {"pattern": r"(a+)+$", "output_mode": "count"}, _long_line),
    "glob": Case("glob", {"pattern": "**/*"}, _tree),
    "edit": Case(
        "edit", {"file_path": "edit.txt", "old_string": "not in it", "new_string": "x"}, _code
    ),
    "write": Case("write", {"file_path": "w.txt", "content": "x" * 2_000_000}),
    "bash": Case("bash", {"command": "yes 0123456789abcdef | head -c 300000000"}),
    "todo": Case(
        "todo", {"todos": [{"content": f"item {n}", "status": "pending"} for n in range(100)]}
    ),
    "question": Case("question", {"questions": [{"question": "Which one?"}]}),
    "task": Case("task", {"description": "d", "prompt": "p"}),
    "skill": Case("skill", {"name": "nothing-here"}),
    "tool_search": Case("tool_search", {"query": "flood " * 200}),
    "web_fetch": Case("web_fetch", {"url": "SLOW_URL"}),
    "web_search": Case("web_search", {"query": "anything"}),
    "flood": Case("flood", {}),
}
BOTH_ERAS = ("grep", "read", "bash", "flood")
"""The cases also run on a 2026-07-28 connection (tools/list only: that era has no ping)."""
ATTEMPTS = 3
"""A case passes when one of this many runs stays within the limits: the waits for a CPU the
kernel counts are left out, not those it cannot see (a virtual machine's host taking its CPU
away), nor the collector running once; a stall of ours fails every run."""


def test_every_locked_tool_has_a_worst_case_here():
    assert set(LOCKED_IDS) <= set(CASES)


def _slow_body() -> Iterator[bytes]:
    """8 MB of HTML, 64 KB at a time, a little late each time (a slow, huge page)."""
    yield b"<html><body>"
    for n in range(128):
        time.sleep(0.005)  # the remote server's own pace, in its thread
        yield (f"<p>paragraph {n} ".encode() + b"word " * 13_000 + b"</p>")
    yield b"</body></html>"


async def _probe(client: Client, legacy: bool) -> float:
    """The slowest of one tools/list (bypassing the client's cache) and, in 2025, one ping."""
    started = mark()
    await client.list_tools(cache_mode="bypass")
    worst = held_s(started)
    if legacy:
        started = mark()
        await client.send_ping()
        worst = max(worst, held_s(started))
    return worst


@dataclass
class Seen:
    probes: list[float] = field(default_factory=list)
    lag_s: float = 0.0

    def within_limits(self) -> bool:
        return bool(self.probes) and max(self.probes) < PROBE_LIMIT_S and self.lag_s < LAG_LIMIT_S


async def _run(settings: Settings, mode: str, tool: str, arguments: dict[str, Any]) -> Seen:
    """Start the call, probe the server until it ends or WINDOW_S has passed, then cancel it."""
    seen = Seen()
    async with served_client(settings, mode, locked=True) as client:
        await client.list_tools()
        async with loop_lag() as lag, anyio.create_task_group() as group:
            done = anyio.Event()

            async def call() -> None:
                await client.call_tool(tool, arguments)
                done.set()

            group.start_soon(call)
            deadline = time.perf_counter() + WINDOW_S
            while not done.is_set() and time.perf_counter() < deadline:
                seen.probes.append(await _probe(client, legacy=mode == "legacy"))
                with anyio.move_on_after(PROBE_EVERY_S):
                    await done.wait()  # a client's pace, not a flood of probes
            group.cancel_scope.cancel()
        seen.lag_s = lag.worst_s
    return seen


CASE_MODES = [(name, "legacy") for name in sorted(CASES)] + [(name, "auto") for name in BOTH_ERAS]


@pytest.mark.filterwarnings("ignore:ping is removed:mcp.MCPDeprecationWarning")
@pytest.mark.parametrize(("name", "mode"), CASE_MODES)
async def test_the_server_answers_while_a_call_runs_its_worst_case(
    tmp_path: Path, name: str, mode: str
) -> None:
    case = CASES[name]
    routes = {"/slow": Reply(body=_slow_body()), "/search": Reply(hold=True)}
    with serving(routes) as web:
        settings = locked_settings(tmp_path, POLICY.replace("SEARCH_URL", web.url("")))
        flood = echo_tool("flood", bin="flood")
        flood["schema"] = {"type": "object"}
        agentcli_manifest(tmp_path / "m", [flood], {"flood": FLOOD})
        if case.setup is not None:
            root = settings.workspace_root()
            assert root is not None
            case.setup(root)
        arguments = {
            key: web.url("/slow") if value == "SLOW_URL" else value
            for key, value in case.arguments.items()
        }
        runs: list[Seen] = []
        with anyio.fail_after(30 * ATTEMPTS):
            while len(runs) < ATTEMPTS and not (runs and runs[-1].within_limits()):
                runs.append(await _run(settings, mode, case.tool, arguments))
    best = runs[-1]
    assert best.probes, "the call ended before the first probe"
    worst = [(round(max(r.probes) * 1000, 1), round(r.lag_s * 1000, 1)) for r in runs]
    assert max(best.probes) < PROBE_LIMIT_S, (name, "probe ms, lag ms per run", worst)
    assert best.lag_s < LAG_LIMIT_S, (name, "probe ms, lag ms per run", worst)
