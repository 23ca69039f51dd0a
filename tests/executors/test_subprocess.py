"""run_process against real children: output caps, deadlines, group kills, spawn errors."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import anyio
import pytest

from mcp_toolbridge.errors import ErrorCode, ExecSpawnError, ExecTimeoutError
from mcp_toolbridge.executors.outcome import ProcessOutcome, ProcessTimeout
from mcp_toolbridge.executors.subprocess import run_process
from tests.support.paths import TOOLS

PY = [sys.executable, "-S"]
ENV = {"PATH": os.environ.get("PATH", os.defpath)}
MIB = 1024 * 1024
PIDFD_OPEN = os.pidfd_open  # kept: one test removes os.pidfd_open to force the fallback


def live_members(pgid: int) -> list[int]:
    """Processes still running (zombies excluded) in process group ``pgid``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        state, group = fields[0], int(fields[2])
        if group == pgid and state not in "ZX":
            found.append(int(entry))
    return found


async def assert_group_gone(pgid: int) -> None:
    """Every member exits promptly: SIGKILL is sent at once, but dying takes the target a
    moment, so each one still listed is awaited through a pidfd (readable once it exits); the
    limit only guards against a hang (a loaded machine may take seconds)."""
    with anyio.fail_after(30):
        for pid in live_members(pgid):
            try:
                pidfd = PIDFD_OPEN(pid)
            except ProcessLookupError:
                continue
            try:
                await anyio.wait_readable(pidfd)
            finally:
                os.close(pidfd)
    assert live_members(pgid) == []


class PgidCatcher:
    """An on_stderr_line callback that records the child's {"pgid": n} line."""

    def __init__(self, cancel: anyio.CancelScope | None = None) -> None:
        self.pgid: int | None = None
        self.cancel = cancel

    async def __call__(self, line: bytes) -> bool:
        if line.startswith(b'{"pgid"'):
            self.pgid = json.loads(line)["pgid"]
            if self.cancel is not None:
                self.cancel.cancel()
            return True
        return False


async def run(argv: list[str], **kw: object) -> ProcessOutcome:
    options: dict[str, object] = {
        "stdin": None,
        "cwd": None,
        "env": ENV,
        "timeout_s": 10,
        "sandbox": None,
    }
    options.update(kw)
    with anyio.fail_after(10):
        return await run_process(argv, **options)  # type: ignore[arg-type]


async def test_stdin_bytes_reach_the_child_and_stdout_comes_back() -> None:
    outcome = await run(["/bin/cat"], stdin=b'{"a": 1}')
    assert outcome.stdout == b'{"a": 1}'
    assert (outcome.exit_code, outcome.signal) == (0, None)
    assert outcome.stdout_bytes == 8 and not outcome.stdout_truncated
    assert outcome.duration_ms > 0


async def test_stdin_larger_than_a_pipe_buffer_is_fed_completely() -> None:
    payload = bytes(range(256)) * 8192  # 2 MiB
    outcome = await run(["/bin/cat"], stdin=payload)
    assert outcome.stdout == payload


async def test_without_stdin_the_child_reads_dev_null_not_the_server_stdin() -> None:
    outcome = await run(["/bin/sh", "-c", "readlink /proc/self/fd/0"])
    assert outcome.stdout.strip() == b"/dev/null"


async def test_inheritable_descriptors_of_the_server_are_not_passed_on() -> None:
    read_fd, write_fd = os.pipe()
    os.set_inheritable(write_fd, True)
    try:
        outcome = await run(["/bin/sh", "-c", "ls /proc/$$/fd"])
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert str(write_fd).encode() not in outcome.stdout.split()
    assert {b"0", b"1", b"2"} <= set(outcome.stdout.split())


async def test_exit_status_and_killing_signal_are_reported_apart() -> None:
    exited = await run(["/bin/sh", "-c", "echo oops >&2; exit 3"])
    assert (exited.exit_code, exited.signal) == (3, None)
    assert exited.stderr_tail == b"oops\n"
    killed = await run(["/bin/sh", "-c", "kill -KILL $$"])
    assert (killed.exit_code, killed.signal) == (None, signal.SIGKILL)


async def test_output_bomb_keeps_stdout_capped_and_the_stderr_tail_bounded() -> None:
    outcome = await run(
        [*PY, str(TOOLS / "output_bomb.py"), "200", "20"],
        max_output_bytes=MIB,
        stderr_tail_bytes=4096,
    )
    assert outcome.exit_code == 0
    assert len(outcome.stdout) == MIB and outcome.stdout_truncated
    assert outcome.stdout_bytes == 200 * MIB
    assert len(outcome.stderr_tail) == 4096 and outcome.stderr_truncated
    assert outcome.stderr_bytes == 20 * MIB
    assert outcome.stderr_tail.endswith(b"x\n")


async def test_stderr_lines_consumed_by_the_callback_stay_out_of_the_tail() -> None:
    seen: list[bytes] = []

    async def on_line(line: bytes) -> bool:
        seen.append(line)
        return line.startswith(b"PROGRESS")

    script = "printf 'PROGRESS 1\\nplain one\\r\\nPROGRESS 2\\nlast without newline'"
    outcome = await run(["/bin/sh", "-c", script + " >&2"], on_stderr_line=on_line)
    assert seen == [b"PROGRESS 1", b"plain one", b"PROGRESS 2", b"last without newline"]
    assert outcome.stderr_tail == b"plain one\r\nlast without newline"
    assert outcome.stderr_bytes == 53


async def test_an_overlong_stderr_line_is_kept_as_text_and_not_offered_to_the_callback() -> None:
    seen: list[bytes] = []

    async def on_line(line: bytes) -> bool:
        seen.append(line)
        return True

    script = "import sys; sys.stderr.write('y' * 100000 + '\\nshort\\n')"
    outcome = await run([*PY, "-c", script], on_stderr_line=on_line, stderr_tail_bytes=200000)
    assert seen == [b"short"]
    assert outcome.stderr_tail == b"y" * 100000 + b"\n"


async def test_a_failing_stderr_callback_raises_its_own_error_and_kills_the_group() -> None:
    async def on_line(line: bytes) -> bool:
        raise RuntimeError(f"callback failed on {line!r}")

    with pytest.raises(RuntimeError, match="callback failed on b'ready'"):
        await run(["/bin/sh", "-c", "echo ready >&2; sleep 30"], on_stderr_line=on_line)


async def test_timeout_terminates_the_whole_group_including_a_forked_grandchild() -> None:
    catcher = PgidCatcher()
    with pytest.raises(ExecTimeoutError, match=r"^tool timed out after 1s$") as info:
        await run(
            [*PY, str(TOOLS / "forker.py"), "hang"],
            timeout_s=1,
            on_stderr_line=catcher,
            kill_grace_s=5,
        )
    assert info.value.code is ErrorCode.EXEC_TIMEOUT
    assert catcher.pgid is not None, "the forker never got its grandchild running"
    await assert_group_gone(catcher.pgid)


async def test_a_timeout_carries_what_was_printed_until_the_group_was_killed() -> None:
    """The partial outcome holds the output before the deadline and what the child printed
    while dying (it was still in the pipe when the group was gone)."""
    script = "trap 'echo bye; exit 3' TERM; echo before; echo err >&2; sleep 30 & wait"
    with pytest.raises(ProcessTimeout, match=r"^tool timed out after 0\.5s$") as info:
        await run(["/bin/sh", "-c", script], timeout_s=0.5, kill_grace_s=5)
    assert isinstance(info.value, ExecTimeoutError)
    partial = info.value.outcome
    assert partial.stdout == b"before\nbye\n" and partial.stderr_tail == b"err\n"
    assert (partial.exit_code, partial.signal) == (3, None)
    assert partial.stdout_bytes == 11 and not partial.stdout_truncated


async def test_a_timeout_of_a_silent_child_has_an_empty_partial_outcome() -> None:
    with pytest.raises(ProcessTimeout) as info:
        await run(["/bin/sleep", "30"], timeout_s=0.3, kill_grace_s=5)
    partial = info.value.outcome
    assert (partial.stdout, partial.stderr_tail, partial.stdout_bytes) == (b"", b"", 0)
    assert (partial.exit_code, partial.signal) == (None, signal.SIGTERM)


async def test_timeout_kills_a_child_that_ignores_sigterm_after_the_grace() -> None:
    catcher = PgidCatcher()
    with pytest.raises(ExecTimeoutError, match=r"after 0\.5s"):
        await run(
            [*PY, str(TOOLS / "ignore_sigterm.py")],
            timeout_s=0.5,
            on_stderr_line=catcher,
            kill_grace_s=0.2,
        )
    assert catcher.pgid is not None, "the child never started ignoring SIGTERM"
    await assert_group_gone(catcher.pgid)


async def test_cancelling_the_caller_kills_the_group_and_propagates() -> None:
    with anyio.CancelScope() as scope:
        catcher = PgidCatcher(cancel=scope)
        await run([*PY, str(TOOLS / "forker.py"), "hang"], on_stderr_line=catcher, kill_grace_s=0.2)
        pytest.fail("the call returned although its scope was cancelled")
    assert scope.cancelled_caught
    assert catcher.pgid is not None
    await assert_group_gone(catcher.pgid)


async def test_a_backgrounded_grandchild_is_killed_when_the_child_exits() -> None:
    catcher = PgidCatcher()
    # The grandchild holds stdout open for 60 s: the call must not wait for it.
    outcome = await run([*PY, str(TOOLS / "forker.py"), "exit"], on_stderr_line=catcher)
    assert outcome.exit_code == 0
    assert catcher.pgid is not None
    await assert_group_gone(catcher.pgid)


async def test_a_grandchild_that_left_the_session_cannot_hold_the_call_open() -> None:
    outcome = await run([*PY, str(TOOLS / "escape_session.py")])
    escapee = json.loads(outcome.stdout)["escapee"]
    try:
        assert outcome.exit_code == 0
        # Documented limit: it left the process group, so it is still running.
        assert live_members(escapee) == [escapee]
    finally:
        os.kill(escapee, signal.SIGKILL)


async def test_missing_program_is_a_spawn_error_naming_it(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-tool")
    with pytest.raises(ExecSpawnError, match="no such file") as info:
        await run([missing])
    assert f'"{missing}"' in str(info.value)
    assert info.value.code is ErrorCode.EXEC_SPAWN


async def test_non_executable_file_is_a_spawn_error_suggesting_chmod(tmp_path: Path) -> None:
    tool = tmp_path / "tool"
    tool.write_text("#!/bin/sh\necho {}\n")
    tool.chmod(0o644)
    with pytest.raises(ExecSpawnError, match=r"permission denied.*chmod \+x"):
        await run([str(tool)])


async def test_script_without_interpreter_line_is_a_spawn_error(tmp_path: Path) -> None:
    tool = tmp_path / "tool"
    tool.write_bytes(b"echo {}\n")
    tool.chmod(0o755)
    with pytest.raises(ExecSpawnError, match='needs a "#!" interpreter line'):
        await run([str(tool)])


async def test_missing_working_directory_is_a_spawn_error_naming_it(tmp_path: Path) -> None:
    gone = str(tmp_path / "gone")
    with pytest.raises(ExecSpawnError, match=f'working directory "{gone}"'):
        await run(["/bin/true"], cwd=gone)


async def test_without_pidfd_support_exit_is_watched_from_a_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delattr(os, "pidfd_open")
    outcome = await run(["/bin/cat"], stdin=b"{}")
    assert outcome.stdout == b"{}"
    catcher = PgidCatcher()
    with pytest.raises(ExecTimeoutError):
        await run(
            [*PY, str(TOOLS / "forker.py"), "hang"],
            timeout_s=1,
            on_stderr_line=catcher,
            kill_grace_s=0.2,
        )
    assert catcher.pgid is not None
    await assert_group_gone(catcher.pgid)
