"""Attacks on what the per-process limits (``sandbox/limits.py``) leave open, by real bash
through the served ``bash`` tool of a real ``serve`` run as an ordinary user (``nobody`` under
root, as in ``test_limits.py``): a call that lowers the warm sandbox's zygote's limits,
priority or CPU affinity for the next call, and a call that fills ``/dev/shm`` or ``/dev``
(tmpfs in memory, half the machine's by default). And a policy whose limits no command can
start under, refused at load."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest

from mcp_toolbridge.errors import ConfigError
from mcp_toolbridge.policy import Policy
from mcp_toolbridge.sandbox.bwrap import SHM_BYTES
from tests.sandbox.test_limits import OPEN_FILES, _served, place  # noqa: F401
from tests.support.procs import keeps_warm_sandbox
from tests.support.results import text_of

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox"),
]
TAMPER = "prlimit --pid 2 --nofile=20:20 --cpu=5:5; renice -n 19 -p 2; taskset -p 1 2"
"""The zygote is PID 2 in a warm sandbox (``zygote.py``): the same user may lower its limits,
raise its nice value and pin it to one CPU, none of which needs a capability."""
LOOK = "ulimit -n; ulimit -t; nice; nproc"
SHM_FILL = (
    "for i in $(seq 40); do head -c 8M /dev/zero > /dev/shm/f$i || break; done; "
    "du -sm /dev/shm; : > /dev/planted; : > /planted"
)
"""8 MiB files (the test policy's file size limit) up to 320 MiB, then a file in /dev and one in
the sandbox's root (both bubblewrap's tmpfs of half the machine's memory): a script
in the workspace (the capability check looks at the command line, not inside the script)."""


@pytest.mark.usefixtures("sandbox_support")
async def test_a_call_cannot_lower_the_next_calls_limits_through_the_zygote(
    place: Path,  # noqa: F811
) -> None:
    cpus = str(len(os.sched_getaffinity(0)))
    with anyio.fail_after(120):
        async with _served(place, warm=True) as (client, server, _):
            for _ in range(3):
                await client.call_tool("bash", {"command": "true"})
            assert await keeps_warm_sandbox(server)
            tampered = await client.call_tool("bash", {"command": TAMPER})
            assert not tampered.is_error, text_of(tampered)  # the kernel let it
            # the next calls: the first may find the sandbox not ready yet and start fresh
            after = [text_of(await client.call_tool("bash", {"command": LOOK})) for _ in range(3)]
    for said in after:
        assert said.split()[:4] == [str(OPEN_FILES), "unlimited", "0", cpus], said


@pytest.mark.usefixtures("sandbox_support")
@pytest.mark.parametrize("warm", [False, True], ids=["fresh", "warm"])
async def test_dev_shm_is_size_capped_and_dev_and_the_root_read_only(
    place: Path,  # noqa: F811
    warm: bool,
) -> None:
    with anyio.fail_after(120):
        async with _served(place, warm=warm) as (client, server, workspace):
            (workspace / "fill.sh").write_text(SHM_FILL + "\n")
            if warm:
                for _ in range(3):
                    await client.call_tool("bash", {"command": "true"})
                assert await keeps_warm_sandbox(server)
            said = text_of(await client.call_tool("bash", {"command": "bash fill.sh"}))
    held = int(next(line for line in said.split("\n") if line.endswith("/dev/shm")).split()[0])
    assert held <= SHM_BYTES // (1024 * 1024), said
    assert "No space left on device" in said, said
    assert "/dev/planted: Read-only file system" in said, said
    assert "/planted: Read-only file system" in said.replace("/dev/planted", ""), said


@pytest.mark.parametrize(
    ("setting", "value", "minimum"),
    [("open_files", 5, 64), ("memory_mib", 1, 64), ("processes", 2, 16)],
)
def test_limits_no_command_can_start_under_are_refused_at_load(
    tmp_path: Path, setting: str, value: int, minimum: int
) -> None:
    """Below these the loader, the shell or a warm sandbox's zygote fail (``open_files = 5``:
    bash cannot make a pipe; ``memory_mib = 1``: no dynamic program loads)."""
    path = tmp_path / "policy.toml"
    path.write_text(f'default_action = "allow"\n[sandbox]\n{setting} = {value}\n')
    with pytest.raises(ConfigError) as raised:
        Policy.load(path, workspace=tmp_path, user_data=None)
    said = str(raised.value)
    assert f"line 3: sandbox.{setting}" in said, said
    assert f"set at least {minimum}, or 0 for no limit" in said, said
    path.write_text(f'default_action = "allow"\n[sandbox]\n{setting} = 0\n')
    Policy.load(path, workspace=tmp_path, user_data=None)  # 0: no limit, still allowed
