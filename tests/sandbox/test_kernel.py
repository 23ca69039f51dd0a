"""The kernel's knobs stay out of reach: nothing under /proc (but the sandbox's own processes)
or /sys opens for writing in a sandbox, fresh or warm, even for a tool granted ``/`` for
writing, and what container runtimes mask shows nothing.

These run as whoever runs the suite (root on CI: the case that matters, since a root server's
tools run as uid 0 and the kernel checks only the file's owner on most of these files; no
capability is needed). tests/sandbox/test_ordinary_user.py runs the same probes through a real
server started as an ordinary user. Writes only ever write a harmless value: the setting
core_pattern already has, and ``4`` to drop_caches (which only silences its log line)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_toolbridge.sandbox.kernel import PROC_HIDDEN
from tests.sandbox.conftest import Box, report

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")


@pytest.fixture(params=["fresh", "warm"])
def box(request: pytest.FixtureRequest, tmp_path: Path, sandbox_support: None) -> Iterator[Box]:
    box = Box(tmp_path, warm=request.param == "warm")
    yield box
    box.close()


KNOBS = r"""
import errno, json, os, sys
WRITE = sys.argv[1] == "write"
def attempt(path, value):
    if not os.path.lexists(path):
        return None
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as exc:
        return {"open": errno.errorcode[exc.errno]}
    try:
        if not WRITE or value is None:
            return {"open": "ok"}
        try:
            os.write(fd, value)
        except OSError as exc:
            return {"open": "ok", "write": errno.errorcode[exc.errno]}
        return {"open": "ok", "write": "ok"}
    finally:
        os.close(fd)
core = open("/proc/sys/kernel/core_pattern", "rb").read()
print(json.dumps({
    "/proc/sys/kernel/core_pattern": attempt("/proc/sys/kernel/core_pattern", core),
    "/proc/sys/vm/drop_caches": attempt("/proc/sys/vm/drop_caches", b"4"),
    "/proc/sysrq-trigger": attempt("/proc/sysrq-trigger", None),
    "/proc/sys/fs/binfmt_misc/register": attempt("/proc/sys/fs/binfmt_misc/register", None),
}))
"""
"""Opens each knob for writing and, where that is harmless, writes it (``write``); a knob
this kernel does not have is None. Never writes sysrq-trigger or binfmt_misc's register."""

SWEEP = r"""
import errno, json, os
opened, seen = [], 0
for top in ("/proc", "/sys"):
    stack = [top] if os.path.isdir(top) else []
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            own = entry.name.isdigit() or entry.name in ("self", "thread-self")
            if folder == "/proc" and (own or entry.name == "pressure"):
                continue  # the sandbox's own processes; pressure-stall triggers (below)
            if entry.is_symlink():
                continue
            if entry.is_dir():
                stack.append(entry.path)
                continue
            seen += 1
            try:
                fd = os.open(entry.path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY)
            except OSError:
                continue
            os.close(fd)
            opened.append(entry.path)
print(json.dumps({"seen": seen, "sys": os.path.isdir("/sys/kernel"), "opened": opened}))
"""
"""Opens every file under /proc and /sys for writing, writing nothing: opening one of these has
no effect. Left out: the sandbox's own processes, and /proc/pressure, whose files the kernel
opens to every user (mode 0666) for pressure-stall triggers: a trigger watches, it changes
nothing (and is bounded per user)."""


HOST_SYS = os.path.isdir("/sys/kernel")
HIDDEN_HERE = [path for path in PROC_HIDDEN if os.path.lexists(path)]
"""What this kernel has of what the runtimes mask."""


def run_folder_exists() -> bool:
    return os.path.lexists("/run/mcp-toolbridge")


def core_pattern() -> bytes:
    return Path("/proc/sys/kernel/core_pattern").read_bytes()


def refused() -> set[str]:
    """How the sandbox refuses a write: a read-only mount (EROFS); an ordinary user meets the
    file's owner first (EACCES)."""
    return {"EROFS"} if os.geteuid() == 0 else {"EROFS", "EACCES"}


async def test_core_pattern_and_drop_caches_cannot_be_opened_or_written(box: Box) -> None:
    before = core_pattern()
    probes = report(await box.python(KNOBS, argv=["write"]))
    present = {path: result for path, result in probes.items() if result is not None}
    assert {"/proc/sys/kernel/core_pattern", "/proc/sys/vm/drop_caches"} <= set(present)
    assert {result["open"] for result in present.values()} <= refused(), probes
    assert core_pattern() == before
    if os.geteuid() == 0:  # the probe is real: unconfined, root opens them (and writes nothing)
        unconfined = report(await box.python(KNOBS, argv=["open"], mode="off"))
        assert unconfined["/proc/sys/kernel/core_pattern"] == {"open": "ok"}
        assert unconfined["/proc/sys/vm/drop_caches"] == {"open": "ok"}


async def test_nothing_under_proc_or_sys_opens_for_writing(box: Box) -> None:
    swept = report(await box.python(SWEEP))
    assert swept["opened"] == []
    assert swept["seen"] > 100  # it looked: /proc/sys alone holds hundreds of files
    assert swept["sys"] is False  # not mounted at all


async def test_a_tool_granted_root_for_writing_reaches_no_knob_either(
    tmp_path: Path, sandbox_support: None
) -> None:
    """It sees the host's /sys, read-only, and a fresh /proc with its knobs read-only; its
    launches are never warm (the zygote's mount point would be made in the host's /run), and
    nothing is left in the host's /run."""
    box = Box(tmp_path)
    requires = {"write": ["/"]}
    try:
        for _ in range(3):
            swept = report(await box.python(SWEEP, requires=requires))
            assert swept["opened"] == [] and swept["seen"] > 100
            assert swept["sys"] is HOST_SYS
            knobs = report(await box.python(KNOBS, argv=["write"], requires=requires))
            assert {p["open"] for p in knobs.values() if p} <= refused(), knobs
        pool = box.confine(requires=requires).sandbox.warm
        assert pool.sandboxes == [] and pool.taken == 0
    finally:
        box.close()
    assert not run_folder_exists()


async def test_what_container_runtimes_mask_shows_nothing(box: Box) -> None:
    present = HIDDEN_HERE
    script = (
        "import json, os\n"
        "def look(path):\n"
        "    if os.path.isdir(path):\n"
        "        return os.listdir(path)\n"
        "    try:\n"
        "        return open(path, 'rb').read(4096).decode('latin-1')\n"
        "    except OSError as exc:\n"
        "        return type(exc).__name__\n"
        f"print(json.dumps({{p: look(p) for p in {present!r}}}))\n"
    )
    seen = report(await box.python(script))
    assert set(seen) == set(present)
    assert all(value in ([], "", "PermissionError") for value in seen.values()), seen
