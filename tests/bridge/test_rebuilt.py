"""Bridge.rebuilt (hot reload): the new bridge serves the new catalog through the new gate, and
shares what lives as long as the server: the concurrency limit, the observers, the executors it
does not replace."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio

from mcp_toolbridge.bridge.gate import NO_POLICY, Clearance
from mcp_toolbridge.bridge.outcome import CallOutcome
from mcp_toolbridge.bridge.pipeline import Bridge
from mcp_toolbridge.catalog import Catalog
from mcp_toolbridge.executors import ExecRequest, ExecResult
from mcp_toolbridge.host import CallContext
from mcp_toolbridge.model import ToolSpec
from tests.support.policy_fixtures import builtin, exec_tool


class Gated:
    """Runs a call only when the test opens the gate; remembers which calls started."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.gate = anyio.Event()

    async def run(self, request: ExecRequest) -> ExecResult:
        self.started.append(request.spec.name)
        await self.gate.wait()
        return ExecResult(ok=True, value={"ran": request.spec.name})


class Answering:
    async def run(self, request: ExecRequest) -> ExecResult:
        return ExecResult(ok=True, value={"exec": request.spec.name})


def _catalog(*specs: ToolSpec) -> Catalog:
    catalog, problems = Catalog.build(specs)
    assert problems == []
    return catalog


async def test_a_rebuilt_bridge_shares_the_concurrency_limit_and_the_observers() -> None:
    seen: list[str] = []
    cleared: list[str] = []

    async def new_gate(spec: ToolSpec, arguments: Mapping[str, Any], ctx: CallContext) -> Clearance:
        cleared.append(spec.name)
        return Clearance(NO_POLICY)

    async def observe(
        spec: ToolSpec, arguments: Mapping[str, Any], ctx: CallContext, outcome: CallOutcome
    ) -> None:
        seen.append(outcome.tool)

    gated = Gated()
    old = Bridge(
        _catalog(builtin("first")), {"builtin": gated}, max_concurrency=1, observers=(observe,)
    )
    new = old.rebuilt(
        _catalog(builtin("second"), exec_tool("echo")),
        gate=new_gate,
        executors={"exec": Answering()},
    )
    outcomes: list[CallOutcome] = []

    async def call(bridge: Bridge, name: str) -> None:
        outcomes.append(await bridge.call(name, {}))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call, old, "first")
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(call, new, "second")
            await anyio.wait_all_tasks_blocked()
            assert gated.started == ["first"]  # the one slot is taken by the old bridge's call
            gated.gate.set()
        echoed = await new.call("echo", {})
    assert gated.started == ["first", "second"]
    assert [o.ok for o in outcomes] == [True, True]
    assert echoed.value == {"exec": "echo"}
    assert seen == ["first", "second", "echo"]
    assert cleared == ["second", "echo"]
    assert "second" not in old.catalog
