"""The sandbox's seccomp filter (``sandbox/seccomp.py``): real children trying each refused
system call, in a fresh sandbox and a warm one, get ``EPERM`` (``clone3``: ``ENOSYS``, so that
the C library falls back to ``clone``); the control, the same probe in the same sandbox built
without the filter, shows the calls an unprivileged process can make there; and ordinary work
(fork, threads, ``posix_spawn``, pipelines, git, a compiler) goes on."""

from __future__ import annotations

import dataclasses
import json
import logging
import platform
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from mcp_toolbridge.executors import probe_sandbox, run_process
from mcp_toolbridge.sandbox import Sandbox, SandboxProfile, seccomp
from mcp_toolbridge.sandbox.bwrap import plan_launch
from tests.sandbox.conftest import Box, report

pytestmark = [
    pytest.mark.skipif(platform.machine() != "x86_64", reason="x86-64 system call numbers"),
    pytest.mark.skipif(seccomp.program() is None, reason="no libseccomp here"),
]

CALLS = {  # name: (number, harmless arguments: invalid or empty, so that nothing happens)
    "keyctl": (250, (0, -3, 0)),  # KEYCTL_GET_KEYRING_ID of the session keyring
    "add_key": (248, (0, 0, 0, 0, 0)),
    "request_key": (249, (0, 0, 0, 0)),
    "bpf": (321, (0xFFFF, 0, 0)),
    "userfaultfd": (323, (0xFFFF,)),
    "perf_event_open": (298, (0, 0, -1, -1, 0)),
    "kexec_load": (246, (0, 0, 0, 0xFFFF)),
    "init_module": (175, (0, 0, 0)),
    "finit_module": (313, (-1, 0, 0)),
    "delete_module": (176, (0, 0)),
    "mount": (165, (0, 0, 0, 0, 0)),
    "umount2": (166, (0, 0)),
    "pivot_root": (155, (0, 0)),
    "setns": (308, (-1, 0)),
    "unshare(CLONE_NEWNET)": (272, (0x40000000,)),
    "unshare(CLONE_NEWUSER)": (272, (0x10000000,)),
    "clone(CLONE_NEWNS)": (56, (0x00020000 | 17, 0, 0, 0, 0)),
    "io_uring_setup": (425, (1, 0)),
    "io_uring_enter": (426, (-1, 0, 0, 0, 0, 0)),
    "io_uring_register": (427, (-1, 0, 0, 0)),
    "open_by_handle_at": (304, (-1, 0, 0)),
    "personality(READ_IMPLIES_EXEC)": (135, (0x0400000,)),
    "clone3": (435, (0, 0)),
}
PROBE = f"""
import ctypes, errno, json, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
found = {{}}
for name, (number, args) in {CALLS!r}.items():
    ctypes.set_errno(0)
    result = libc.syscall(number, *[ctypes.c_long(a) for a in args])
    found[name] = errno.errorcode[ctypes.get_errno()] if result == -1 else "ok"
    if name.startswith("personality") and result != -1:
        libc.syscall(number, ctypes.c_long(result))  # as it was
print(json.dumps(found))
"""
REFUSED = {name: "ENOSYS" if name == "clone3" else "EPERM" for name in CALLS}


@pytest.fixture(params=["fresh", "warm"])
def box(request: pytest.FixtureRequest, tmp_path: Path, sandbox_support: None) -> Iterator[Box]:
    box = Box(tmp_path, warm=request.param == "warm")
    yield box
    box.close()


async def test_each_refused_system_call_fails_with_eperm(box: Box) -> None:
    assert report(await box.python(PROBE)) == REFUSED


def test_without_the_filter_the_same_sandbox_lets_them_through(tmp_path: Path) -> None:
    """The control: bubblewrap's own confinement (no capabilities, no user namespace inside)
    refuses some of them too, but not the ones an unprivileged process may make."""
    view = dataclasses.replace(Sandbox("required", home=tmp_path)._view(), seccomp=None)
    profile = SandboxProfile(tool="probe")
    env = {"PATH": "/usr/bin:/bin"}
    argv = [sys.executable, "-I", "-c", PROBE]
    plan = plan_launch(view, profile, argv, cwd="/", env=env)
    assert plan.seccomp is None
    ran = subprocess.run(plan.command(), env=plan.env, capture_output=True, timeout=30, check=True)
    found = json.loads(ran.stdout)
    through = {name for name, said in found.items() if said != REFUSED[name]}
    assert {"keyctl", "add_key", "request_key", "clone3"} <= through, found
    assert "personality(READ_IMPLIES_EXEC)" in through, found


SCRIPT = """
import ctypes, json, os, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
out = {}
pid = os.fork()
if pid == 0:
    os._exit(7)
out["fork"] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
box = []
thread = threading.Thread(target=lambda: box.append(1))
thread.start(); thread.join()
out["thread"] = box
def sh(line):
    return subprocess.run(["/bin/sh", "-c", line], capture_output=True, text=True).stdout
out["spawn"] = sh("echo a | tr a b")
out["unshare(CLONE_FILES)"] = libc.unshare(0x400)
out["personality(query)"] = libc.personality(0xFFFFFFFF) != -1
out["git"] = sh(
    "git init -q r && cd r && echo x > f && git add f && "
    "git -c user.name=a -c user.email=a@b commit -qm m && git log --format=%s"
)
print(json.dumps(out))
"""


async def test_ordinary_work_goes_on_under_the_filter(box: Box) -> None:
    assert report(await box.python(SCRIPT)) == {
        "fork": 7,
        "thread": [1],
        "spawn": "b\n",
        "unshare(CLONE_FILES)": 0,
        "personality(query)": True,
        "git": "m\n",
    }


async def test_without_libseccomp_the_sandbox_runs_without_the_filter_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    built = (seccomp._build, seccomp.program, seccomp.unavailable)
    monkeypatch.setattr(seccomp, "LIBRARY", "libseccomp-not-here.so.2")
    for cached in built:
        cached.cache_clear()
    try:
        said = seccomp.unavailable()
        assert said is not None and "libseccomp-not-here.so.2 cannot be loaded" in said
        assert "apt install libseccomp2" in said
        sandbox = Sandbox("auto", home=tmp_path / "home")
        sandbox.support = None
        with caplog.at_level(logging.WARNING, logger="mcp_toolbridge.sandbox"):
            await probe_sandbox(sandbox)
        assert f"WITHOUT its seccomp filter ({said})" in caplog.text
        assert sandbox.describe(SandboxProfile(tool="probe"))["seccomp"] == said
        confinement = sandbox.confine(SandboxProfile(tool="probe"))
        env = {"PATH": "/usr/bin:/bin"}
        with anyio.fail_after(30):
            outcome = await run_process(
                [sys.executable, "-I", "-c", PROBE],
                stdin=None,
                cwd="/",
                env=env,
                timeout_s=20,
                sandbox=confinement,
            )
        assert outcome.sandboxed
        assert json.loads(outcome.stdout)["keyctl"] != "EPERM"  # sandboxed, but unfiltered
        sandbox.close()
    finally:
        for cached in built:
            cached.cache_clear()
