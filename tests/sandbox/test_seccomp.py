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


AROUND = r"""
#include <errno.h>
#include <stdio.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
static long x32(long nr, long a) {  /* the x32 ABI: the number with bit 30 set */
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "0"(nr | 0x40000000L), "D"(a) : "rcx", "r11", "memory");
    return r;
}
static long i386(long nr, long a) {  /* the i386 ABI from a 64-bit process */
    long r;
    __asm__ volatile("int $0x80" : "=a"(r) : "0"(nr), "b"(a) : "memory");
    return r;
}
static long raw(long r) { return r == -1 ? -errno : r; }
int main(int argc, char **argv) {
    char byte = 0;
    int zygote = argc > 1;  /* PID 2 is the zygote: in a warm sandbox only */
    struct iovec local = {&byte, 1}, remote = {(void *)0x400000, 1};
    long clone = raw(syscall(SYS_clone, 0x10000000L | 0x100000000L | 17, 0, 0, 0, 0));
    if (clone == 0) _exit(0);
    printf("{\"x32 keyctl\": %ld, \"x32 unshare(CLONE_NEWUSER)\": %ld, ", x32(250, 0),
           x32(272, 0x10000000));
    printf("\"i386 keyctl\": %ld, \"i386 unshare(CLONE_NEWUSER)\": %ld, ", i386(288, 0),
           i386(310, 0x10000000));
    printf("\"i386 io_uring_setup\": %ld, \"clone(CLONE_NEWUSER | 1 << 32)\": %ld, ",
           i386(425, 1), clone);
    printf("\"unshare(CLONE_NEWUSER | 1 << 32)\": %ld, ",
           raw(syscall(SYS_unshare, 0x10000000L | 0x100000000L)));
    printf("\"ptrace(PTRACE_ATTACH, 2)\": %ld, \"process_vm_writev(2)\": %ld}\n",
           zygote ? raw(ptrace(PTRACE_ATTACH, 2, 0, 0)) : -1,
           zygote ? raw(process_vm_writev(2, &local, 1, &remote, 1, 0)) : -1);
    return 0;
}
"""


async def test_the_filter_holds_for_other_abis_and_wide_flags(box: Box) -> None:
    """A C program (compiled here) makes refused calls by their x32 and i386 numbers and with
    flag bits above 32; in a warm sandbox it also reaches for the zygote (PID 2: not dumpable).
    In a fresh one PID 2 is the command's own parent, which the call may trace."""
    source = box.ws / "around.c"
    source.write_text(AROUND)
    await anyio.run_process(["cc", "-O1", "-o", str(box.ws / "around"), str(source)])
    argv = ["./around", *(["zygote"] if box.warm else [])]
    run = (
        "import subprocess, sys\n"
        f"ran = subprocess.run({argv!r}, capture_output=True, text=True, check=True)\n"
        "sys.stdout.write(ran.stdout)"
    )
    eperm = -1
    assert report(await box.python(run)) == {
        "x32 keyctl": eperm,
        "x32 unshare(CLONE_NEWUSER)": eperm,
        "i386 keyctl": eperm,
        "i386 unshare(CLONE_NEWUSER)": eperm,
        "i386 io_uring_setup": eperm,
        "clone(CLONE_NEWUSER | 1 << 32)": eperm,
        "unshare(CLONE_NEWUSER | 1 << 32)": eperm,
        "ptrace(PTRACE_ATTACH, 2)": eperm,
        "process_vm_writev(2)": eperm,
    }
