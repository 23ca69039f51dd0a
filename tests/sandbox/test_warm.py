"""Warm sandboxes (sandbox/warm.py): what one call leaves never reaches the next, the zygote
cannot be read or used by the calls it starts, and a call runs there exactly as in a fresh
sandbox. Every test runs real calls in real sandboxes."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_toolbridge.errors import ExecSpawnError, ExecTimeoutError
from mcp_toolbridge.executors import run_process
from mcp_toolbridge.sandbox import Plan, warm, zygote
from tests.sandbox.conftest import Box, report
from tests.sandbox.test_escapes import _lock_is_free

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")


@pytest.fixture
def box(tmp_path: Path, sandbox_support: None) -> Iterator[Box]:
    box = Box(tmp_path, warm=True)
    yield box
    box.close()


LEFTOVERS = {
    "tmp": "open('/tmp/planted', 'w').write('x')",
    "dev-shm": "open('/dev/shm/planted', 'w').write('x')",
    "home": "open(os.path.join(os.environ['HOME'], 'planted'), 'w').write('x')",
    "tmp-removed-and-made-again": "os.makedirs('/tmp/d'); os.rmdir('/tmp/d')",
    "tmp-unreadable": "os.chmod('/tmp', 0)",
    "too-many-to-list": "[open(f'/dev/shm/{i}', 'w').close() for i in range(10_001)]",
    "sysv-shm": (
        "import ctypes; libc = ctypes.CDLL(None); assert libc.shmget(0, 4096, 0o1600) >= 0"
    ),
}
READ_ONLY = {
    "root": "open('/planted', 'w').write('x')",
    "dev-link": "os.unlink('/dev/stdout'); os.symlink('/tmp', '/dev/stdout')",
    # a folder's names as many as before: told by the names' inodes, not by its size
    "dev-one-for-another": "os.unlink('/dev/stderr'); os.symlink('/tmp', '/dev/planted')",
    "dev-renamed": "os.rename('/dev/stderr', '/dev/planted')",
    "dev-swapped": (
        "import ctypes; libc = ctypes.CDLL(None, use_errno=True)\n"
        "if libc.renameat2(-100, b'/dev/stdout', -100, b'/dev/stderr', 2) != 0:\n"  # EXCHANGE
        "    raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))"
    ),
}
"""What the sandbox's root and ``/dev`` (read-only: bubblewrap's tmpfs of half the machine's
memory) no longer let a call leave."""
LOOK = (
    "import json, os\n"
    "print(json.dumps({'tmp': os.listdir('/tmp'), 'shm': os.listdir('/dev/shm'),"
    " 'root': 'planted' in os.listdir('/'), 'home': os.listdir(os.environ['HOME']),"
    " 'stdout': os.readlink('/dev/stdout'), 'dev': sorted(os.listdir('/dev')),"
    " 'ipc': open('/proc/sysvipc/shm').read().count('\\n')}))"
)


@pytest.mark.parametrize("leave", sorted(READ_ONLY))
async def test_the_root_and_dev_cannot_be_changed(box: Box, leave: str) -> None:
    before = report(await box.python(LOOK))
    planted = await box.python("import os\n" + READ_ONLY[leave] + "\nprint('[]')")
    assert planted.exit_code == 1, planted.stdout.decode()
    assert b"Read-only file system" in planted.stderr_tail, planted.stderr_tail.decode()
    assert report(await box.python(LOOK)) == before


@pytest.mark.parametrize("leave", sorted(LEFTOVERS))
async def test_what_a_call_leaves_never_reaches_the_next(box: Box, leave: str) -> None:
    pool = box.confine().sandbox.warm
    before = report(await box.python(LOOK))
    planted = await box.python("import os\n" + LEFTOVERS[leave] + "\nprint('[]')")
    assert planted.exit_code == 0, planted.stderr_tail.decode()
    (dirtied,) = [s for s in pool.sandboxes if s.settling]  # its zygote looks after the exit
    await _ended(dirtied)  # found what the call left, and ended the sandbox
    assert not dirtied.poll_ready() and dirtied.gone, "the sandbox it dirtied was kept"
    box.warm = False  # the next call may run fresh or warm: either way it sees nothing
    assert report(await box.python(LOOK)) == before


async def test_a_call_right_after_one_that_left_something_never_sees_it(box: Box) -> None:
    """The zygote answers a call before it looks at what the call left; the next call, sent
    at once (when the sandbox may still be looking), waits for that look and runs in a
    fresh sandbox when it found something."""
    pool = box.confine().sandbox.warm
    before = report(await box.python(LOOK))
    planted = await box.python("import os\n" + LEFTOVERS["tmp"] + "\nprint('[]')")
    assert planted.exit_code == 0, planted.stderr_tail.decode()
    (dirtied,) = [s for s in pool.sandboxes if s.settling]
    box.warm = False  # fresh or warm: either way it sees nothing
    assert report(await box.python(LOOK)) == before
    assert dirtied.gone  # the launch looked at it (or took it and waited for its word)


async def test_a_launch_that_finds_its_sandbox_already_ended_runs_fresh(box: Box) -> None:
    """The sandbox a call dirtied has ended (its bubblewrap exited) before the next launch
    asks whether it is ready: the answer is no, and that call runs in a fresh sandbox (the
    closed socket is never waited on)."""
    pool = box.confine().sandbox.warm
    before = report(await box.python(LOOK))
    planted = await box.python("import os\n" + LEFTOVERS["tmp"] + "\nprint('[]')")
    assert planted.exit_code == 0, planted.stderr_tail.decode()
    (dirtied,) = [s for s in pool.sandboxes if s.settling]
    await _ended(dirtied)  # exited, not yet seen: the next look finds it gone
    assert not await dirtied.settled() and dirtied.gone
    box.warm = False
    assert report(await box.python(LOOK)) == before


async def test_the_zygote_cannot_be_read_by_the_calls_it_starts(box: Box) -> None:
    script = (
        "import json, os\n"
        "def attempt(path):\n"
        "    try:\n"
        "        return open(path, 'rb').read(64).decode('latin-1')\n"
        "    except OSError as exc:\n"
        "        return type(exc).__name__\n"
        "me = os.getpid()\n"
        "others = [p for p in filter(str.isdigit, os.listdir('/proc')) if int(p) not in (1, me)]\n"
        "print(json.dumps({p: [open(f'/proc/{p}/cmdline', 'rb').read().decode().split(chr(0)),"
        " attempt(f'/proc/{p}/environ'), attempt(f'/proc/{p}/mem')] for p in others}))\n"
    )
    seen = report(await box.python(script))
    assert len(seen) == 1, seen  # the zygote and nothing else
    ((cmdline, environ, mem),) = seen.values()
    assert any("zygote" in part for part in cmdline)
    assert environ == "PermissionError" and mem == "PermissionError"


async def test_the_zygote_refuses_to_run_anywhere_but_as_a_sandboxs_command(
    box: Box, tmp_path: Path
) -> None:
    """Its sweep (``kill(-1)``) would reach every process its user may signal outside a PID
    namespace of its own: run as PID 1 of one (where, were the guard broken, ``kill(-1)``
    would still reach nothing outside), it does nothing and says why."""
    assert not zygote.in_own_namespace()  # this test's process, in the host's namespace
    sandbox = box.confine().sandbox
    assert sandbox.bwrap is not None
    argv = [sandbox.bwrap, "--unshare-all", "--unshare-user", "--as-pid-1", "--die-with-parent"]
    argv += ["--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--"]
    argv += [sys.executable, "-I", "-S", str(warm.ZYGOTE), "0", "60", str(tmp_path)]
    outcome = await run_process(argv, stdin=b"", cwd=None, env={}, timeout_s=30, sandbox=None)
    assert outcome.exit_code == 2
    assert b"not in a sandbox's PID namespace of its own" in outcome.stderr_tail


async def test_a_call_that_kills_the_zygote_ends_only_itself(box: Box) -> None:
    outcome = await box.python("import os, signal; os.kill(-1, signal.SIGKILL)")
    assert (outcome.exit_code, outcome.signal) == (None, 9)
    box.warm = False
    assert report(await box.python("print('[1]')")) == [1]


async def test_a_timed_out_call_in_a_warm_sandbox_leaves_nothing(box: Box) -> None:
    lock = box.ws / "held.lock"
    script = (
        "import fcntl, os, time\n"
        f"handle = open({str(lock)!r}, 'w')\n"
        "fcntl.flock(handle, fcntl.LOCK_EX)\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    time.sleep(60)\n"
        "time.sleep(60)\n"
    )
    await box.python("pass")  # made ready by the box; this run is served warm
    confinement = box.confine()
    taken = confinement.sandbox.warm.taken
    with pytest.raises(ExecTimeoutError):
        await run_process(
            [sys.executable, "-I", "-c", script],
            stdin=None,
            cwd=str(box.ws),
            env=box.env,
            timeout_s=1.0,
            kill_grace_s=0.2,
            sandbox=confinement,
        )
    assert confinement.sandbox.warm.taken == taken + 1
    assert _lock_is_free(lock)  # both holders are gone


@pytest.mark.parametrize("depth", [1, 2])
async def test_what_a_warm_call_leaves_running_is_gone_when_it_returns(
    box: Box, depth: int
) -> None:
    """The command exits at once and leaves a process holding a lock: its child, or (a
    double fork) an orphan the zygote inherited. The call returns only once it is gone, and
    the sandbox serves the next call (a process is nothing left in its private places)."""
    lock = box.ws / "held.lock"
    script = (
        "import fcntl, os, time\n"
        f"handle = open({str(lock)!r}, 'w')\n"
        "fcntl.flock(handle, fcntl.LOCK_EX)\n"
        + "if os.fork():\n    os._exit(0)\n"
        * (depth - 1)
        + "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    time.sleep(60)\n"
        "os._exit(0)\n"
    )
    pool = box.confine().sandbox.warm
    assert (await box.python(script)).exit_code == 0  # the box runs it warm, or fails
    assert _lock_is_free(lock)  # the process it left is gone
    assert any(s.reusable and not s.gone for s in pool.sandboxes)  # and the sandbox is kept
    assert report(await box.python("print('[1]')")) == [1]


async def test_stdin_argv0_cwd_environment_and_passed_descriptors_arrive(box: Box) -> None:
    await box.python("pass")  # a warm sandbox for these options is ready now
    confinement = box.confine()
    taken = confinement.sandbox.warm.taken
    read, write = os.pipe()
    script = (
        "import json, os, sys\n"
        f"os.write({write}, b'progress')\n"
        "print(json.dumps([sys.stdin.read(), os.getcwd(), os.environ['MARK'],"
        " sorted(os.listdir('/proc/self/fd'))]))\n"
    )
    try:
        with anyio.fail_after(30):
            outcome = await run_process(
                [sys.executable, "-I", "-c", script],
                stdin=b"the input",
                cwd=str(box.ws),
                env={**box.env, "MARK": "here"},
                timeout_s=20,
                sandbox=confinement,
                pass_fds=(write,),
            )
        assert confinement.sandbox.warm.taken == taken + 1
        assert os.read(read, 64) == b"progress"
    finally:
        os.close(read)
        os.close(write)
    stdin, cwd, mark, fds = json.loads(outcome.stdout)
    assert (stdin, cwd, mark) == ("the input", str(box.ws), "here")
    assert set(fds) - {"3"} == {"0", "1", "2", str(write)}  # 3: the listing itself


def test_the_zygote_places_descriptors_whose_numbers_cross(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Descriptors usually arrive above every number they go to and are placed directly; when
    one arrives at a number another goes to, each is first copied above them all, so that no
    placement overwrites one still to place. (``start`` only spawns: run here, outside a
    sandbox, on two pipes whose numbers each go to the other's.)"""
    monkeypatch.chdir(tmp_path)  # start() leaves the working directory at /
    a_read, a_write = os.pipe()
    b_read, b_write = os.pipe()
    script = f"import os; os.write({b_write}, b'to a'); os.write({a_write}, b'to b')"
    request = {
        "program": sys.executable,
        "argv": [sys.executable, "-I", "-c", script],
        "env": {},
        "cwd": str(tmp_path),
        "fds": [b_write, a_write],
    }
    try:
        pid = zygote.start(request, [a_write, b_write])
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
        assert (os.read(a_read, 16), os.read(b_read, 16)) == (b"to a", b"to b")
    finally:
        for fd in (a_read, a_write, b_read, b_write):
            os.close(fd)


async def test_a_warm_call_reports_its_exit_status_and_signal(box: Box) -> None:
    await box.python("pass")
    assert (await box.python("raise SystemExit(7)")).exit_code == 7
    killed = await box.python("import os, signal; os.kill(os.getpid(), signal.SIGTERM)")
    assert (killed.exit_code, killed.signal) == (None, 15)


async def test_a_command_the_zygote_cannot_start_fails_as_execve_says(
    box: Box, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The zygote's only answer to a command it cannot start is the error: the call fails as a
    spawn error naming the program, and the next call still runs."""
    await box.python("pass")
    confinement = box.confine()
    real = warm.WarmSandbox.start

    def gone_by_then(self: warm.WarmSandbox, plan: Plan, fds: Any) -> None:
        real(self, replace(plan, program=str(box.ws / "removed-meanwhile")), fds)

    monkeypatch.setattr(warm.WarmSandbox, "start", gone_by_then)
    taken = confinement.sandbox.warm.taken
    with pytest.raises(ExecSpawnError, match="no such file"), anyio.fail_after(30):
        await run_process(
            [sys.executable, "-I", "-c", "pass"],
            stdin=b"input",
            cwd=str(box.ws),
            env=box.env,
            timeout_s=20,
            sandbox=confinement,
        )
    assert confinement.sandbox.warm.taken == taken + 1  # it went to the warm sandbox
    monkeypatch.undo()
    assert report(await box.python("print('[1]')")) == [1]


async def test_stdin_larger_than_a_pipe_arrives_whole_in_a_warm_sandbox(box: Box) -> None:
    await box.python("pass")
    confinement = box.confine()
    taken = confinement.sandbox.warm.taken
    data = os.urandom(300_000).hex().encode()  # 600 kB: the pipe takes 64 kB before the call
    with anyio.fail_after(30):
        outcome = await run_process(
            [sys.executable, "-I", "-c", "import sys; print(len(sys.stdin.read()))"],
            stdin=data,
            cwd=str(box.ws),
            env=box.env,
            timeout_s=20,
            sandbox=confinement,
        )
    assert confinement.sandbox.warm.taken == taken + 1
    assert outcome.stdout.strip() == str(len(data)).encode()


async def _until_ready(pool: warm.WarmPool) -> None:
    """Wait (on their sockets, no sleep) until every live sandbox of the pool has said ready."""
    for sandbox in pool.sandboxes:
        while not sandbox.gone and not sandbox.poll_ready() and not sandbox.busy:
            await anyio.wait_readable(sandbox.control)


async def _ended(sandbox: warm.WarmSandbox) -> None:
    """Until the sandbox's bubblewrap exits (its zygote has ended)."""
    pidfd = os.pidfd_open(sandbox.proc.pid)
    try:
        with anyio.fail_after(10):
            await anyio.wait_readable(pidfd)
    finally:
        os.close(pidfd)


async def test_an_idle_warm_sandbox_ends_by_itself(
    box: Box, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(warm, "IDLE_S", 1.0)
    await box.python("pass")  # served by a warm sandbox, which then stays idle
    pool = box.confine().sandbox.warm
    (idle,) = [s for s in pool.sandboxes if not s.gone]
    pidfd = os.pidfd_open(idle.proc.pid)
    try:
        with anyio.fail_after(10):
            await anyio.wait_readable(pidfd)  # bubblewrap exits: its zygote has ended
    finally:
        os.close(pidfd)
    taken = pool.taken
    box.warm = False
    pool.total = 1  # the ended one must not count: the fresh launch warms the next
    assert report(await box.python("print('[2]')")) == [2]
    assert pool.taken == taken  # nothing ready: a fresh sandbox, at once
    assert idle not in pool.sandboxes and idle.ended  # forgotten, and bubblewrap reaped
    assert [s for s in pool.sandboxes if not s.gone], "no sandbox warmed for the next call"


async def test_a_warm_sandbox_lost_before_the_hand_over_falls_back_to_a_fresh_one(
    box: Box,
) -> None:
    await box.python("pass")
    pool = box.confine().sandbox.warm
    with anyio.fail_after(30):
        await _until_ready(pool)  # the next warm sandbox may still be starting
    (ready,) = [s for s in pool.sandboxes if s.poll_ready()]
    # The zygote is gone the moment the call is sent: the send fails, nothing is handed over.
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    theirs.close()
    real, ready.control = ready.control, ours
    taken = pool.taken
    box.warm = False
    try:
        assert report(await box.python("print('[3]')")) == [3]
    finally:
        real.close()
    assert pool.taken == taken + 1 and ready.gone  # taken, found lost, run fresh


async def test_a_program_that_leaves_things_behind_runs_fresh_and_others_stay_warm(
    box: Box,
) -> None:
    confinement = box.confine()
    pool = confinement.sandbox.warm

    async def run(*argv: str) -> None:
        outcome = await run_process(
            list(argv), stdin=None, cwd=str(box.ws), env=box.env, timeout_s=20, sandbox=confinement
        )
        assert outcome.exit_code == 0, outcome.stderr_tail

    clean, dirty = ("/usr/bin/env", "true"), ("/bin/sh", "-c", "touch /tmp/left")
    with anyio.fail_after(30):
        await run(*clean)
        await run(*clean)  # the second launch of these options: a warm sandbox is made
        await _until_ready(pool)
        taken = pool.taken
        await run(*dirty)  # warm, and leaves it unusable: it ends
        assert pool.taken == taken + 1
        (dirtied,) = [s for s in pool.sandboxes if s.settling]
        await _ended(dirtied)
        await run(*clean)  # fresh; a new warm sandbox is made for the options
        await _until_ready(pool)
        await run(*dirty)  # this program now runs fresh
        assert pool.taken == taken + 1
        await run(*clean)  # the others keep their warm sandbox
        assert pool.taken == taken + 2


async def test_a_folder_replaced_since_the_sandbox_was_set_up_is_seen_as_it_is_now(
    box: Box,
) -> None:
    shelf = box.root / "shelf"
    shelf.mkdir()
    (shelf / "old.txt").write_text("old", encoding="utf-8")
    requires = {"read": [str(shelf)]}
    look = f"import json, os; print(json.dumps(sorted(os.listdir({str(shelf)!r}))))"
    assert report(await box.python(look, requires=requires)) == ["old.txt"]  # warm
    shutil.rmtree(shelf)  # a deploy replaces the folder: same path, another folder
    shelf.mkdir()
    (shelf / "new.txt").write_text("new", encoding="utf-8")
    box.warm = False
    assert report(await box.python(look, requires=requires)) == ["new.txt"]
