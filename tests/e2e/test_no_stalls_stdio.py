"""Over real stdio: a catastrophic grep pattern that needs backtracking runs in a child
process, the server answers pings meanwhile, and closing stdin ends the server once the grace
for requests already read is over (``--eof-grace``, 1 s here), kills the child and audits the
call as ended by the shutdown."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from tests.support.rawstdio import raw_server, request

pytestmark = pytest.mark.e2e


def _children_running(parent: int, marker: bytes) -> list[int]:
    """Processes of ``parent`` whose command line holds ``marker`` (zombies left out)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
        except OSError:
            continue
        if int(fields[1]) == parent and fields[0] != "Z" and marker in cmdline:
            found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    """Running (a zombie is not: it has ended, its parent has not reaped it yet)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def _wait_for(predicate, within_s: float) -> None:
    with anyio.fail_after(within_s):
        # Polling /proc: no event tells one process that an unrelated one started or ended.
        while not predicate():  # noqa: ASYNC110
            await anyio.sleep(0.02)


async def test_a_catastrophic_grep_neither_stalls_nor_outlives_the_server(tmp_path: Path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "aaa.txt").write_text("a" * 5_000 + "b\n", encoding="utf-8")
    audit = tmp_path / "audit.ndjson"
    args = ("--workspace", str(workspace), "--locked", "grep", "--timeout", "120")
    grace = ("--eof-grace", "1")  # the grep outlives it: no 10 s default to wait out
    async with raw_server(tmp_path, *args, *grace, audit=audit) as server:
        await server.initialize()
        call = {"name": "grep", "arguments": {"pattern": r"(a+)+(?=c)"}}
        await server.send_json(request(7, "tools/call", call))
        await _wait_for(lambda: _children_running(server.pid, b"grep_child.py"), 60)
        children = _children_running(server.pid, b"grep_child.py")
        for n in range(5):
            # Answered while the grep still runs (its children alive after the answer): the
            # pings did not wait for it; the limit only guards against a hang.
            with anyio.fail_after(60):
                answer = await server.call(request(f"ping-{n}", "ping"))
            assert answer["result"] == {}
            assert all(_alive(pid) for pid in children)
        await server.close_stdin()
        assert await server.wait_exit(1 + 60) == 0  # the grace, then a guard
    await _wait_for(lambda: not any(_alive(pid) for pid in children), 30)
    [entry] = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
    assert entry["tool"] == "grep" and entry["outcome"] == "shutdown"
