"""``--max-concurrency``: the bridge never runs more tool processes at once than the limit.

Each call runs a real child that connects to a TCP listener on 127.0.0.1 owned by the test and
then blocks until the test releases it: a connection is the event "this call is running", and
the test opens the gates one at a time. Once every task is blocked, each call either runs its
child (spawning is synchronous) or waits for the limiter, so counting the live children then
shows what the limiter let through.

The tool reaches the test's listener, so the policy grants it the network (its sandbox then
shares the host's network); a sandboxed call also runs bwrap and bwrap's init beside the tool,
which are not counted.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from anyio.abc import SocketAttribute, SocketStream

from mcp_toolbridge.bridge.outcome import CallOutcome
from mcp_toolbridge.policy.file import DEFAULT_POLICY_TOML
from mcp_toolbridge.runtime import Settings, load_catalog, open_bridge
from tests.support.manifests import NOT_DESTRUCTIVE, agentcli_manifest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

GATED = """\
import json, socket, sys
args = json.load(sys.stdin)
with socket.create_connection(("127.0.0.1", args["port"])) as gate:
    gate.sendall(b"%d\\n" % args["call"])
    gate.recv(1)  # blocks until the test opens the gate
print(json.dumps({"call": args["call"]}))
"""

TOOL = {
    "name": "gated",
    "description": "Report in, wait for the gate, finish",
    "schema": {
        "type": "object",
        "properties": {"port": {"type": "integer"}, "call": {"type": "integer"}},
        "required": ["port", "call"],
    },
    "command": ["./tools/bin/gated"],
    "annotations": NOT_DESTRUCTIVE,
}

LIMIT = 2
CALLS = 5


POLICY = DEFAULT_POLICY_TOML.replace(
    'fs.write = ["{workspace}"]', 'fs.write = ["{workspace}"]\nnet.hosts = ["*"]'
)


def _live_children(marker: str) -> int:
    """Processes (zombies and the sandbox's bwrap excluded) whose command line names
    ``marker``."""
    count = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            continue  # gone meanwhile
        wrapper = cmdline.split(b"\0", 1)[0].endswith(b"bwrap")
        if marker.encode() in cmdline and state != "Z" and not wrapper:
            count += 1
    return count


async def test_at_most_max_concurrency_tool_processes_run_at_once(tmp_path: Path) -> None:
    manifest = agentcli_manifest(tmp_path / "m", [TOOL], {"gated": GATED})
    marker = str(tmp_path / "m" / "tools" / "bin" / "gated")
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY, encoding="utf-8")
    settings = Settings(paths=[manifest], max_concurrency=LIMIT, audit=False, policy_file=policy)
    loaded = load_catalog(settings)
    assert not loaded.errors, [p.render() for p in loaded.errors]
    send, arrivals = anyio.create_memory_object_stream[SocketStream](CALLS)
    outcomes: dict[int, CallOutcome] = {}
    running_seen: list[int] = []

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    async with listener, send, arrivals:
        port = listener.extra(SocketAttribute.local_port)
        with anyio.fail_after(60):
            async with open_bridge(settings, loaded) as bridge, anyio.create_task_group() as tg:
                tg.start_soon(listener.serve, send.send)

                async def call(n: int) -> None:
                    outcomes[n] = await bridge.call("gated", {"port": port, "call": n})

                async with anyio.create_task_group() as calls:
                    for n in range(CALLS):
                        calls.start_soon(call, n)
                    waiting: list[SocketStream] = []
                    for released in range(CALLS):
                        while len(waiting) < min(LIMIT, CALLS - released):
                            waiting.append(await arrivals.receive())
                        await anyio.wait_all_tasks_blocked()
                        running_seen.append(_live_children(marker))
                        gate = waiting.pop(0)
                        await gate.send(b"g")
                        await gate.aclose()
                tg.cancel_scope.cancel()

    # Until the last gate every round waited for a new arrival, which needs a freed slot; in
    # the last round the call released just before may still be exiting.
    assert running_seen[:-1] == [LIMIT] * (CALLS - 1)
    assert running_seen[-1] in (1, 2)
    assert sorted(outcomes) == list(range(CALLS))
    for n, outcome in outcomes.items():
        assert outcome.ok, outcome.error
        assert outcome.value == {"call": n}
