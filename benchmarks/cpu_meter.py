"""CPU used by a server and by every process it starts, sandboxes included, for the benchmarks.

A sandboxed call's processes are not all children the server reaps: a warm sandbox's zygote
(and bubblewrap around it) lives across calls and is reaped only when the server ends it, and
a fresh sandbox's init is reaped by the system. Their CPU is in no rusage of the server, and
measured from the outside it looks like another program's load. Two ways to count it:

- **cgroup** (precise, needs root): the server is started in a cgroup of its own
  (:func:`launcher` writes its pid into ``cgroup.procs`` and then ``exec``s it), and everything
  it ever starts stays in that cgroup, whoever reaps it. The cgroup's CPU counter (cgroup v2
  ``cpu.stat`` ``usage_usec``, or cgroup v1 ``cpuacct.usage``) is read before and after the
  timed calls.
- **tree** (anywhere): the ``utime + stime + cutime + cstime`` of every live descendant of
  this process, from ``/proc/<pid>/stat``, so a zygote still running is counted and a tool it
  reaped is counted in it. A process that left the tree (reparented to init) is missed.

Kernel work done for a sandbox in kernel threads (a network namespace's teardown) is counted
by neither; the benchmark's "others %" shows it as load from outside.
"""

from __future__ import annotations

import os
import resource
import uuid
from dataclasses import dataclass
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")
_CGROUP_ROOTS = (
    (Path("/sys/fs/cgroup"), "v2"),
    (Path("/sys/fs/cgroup/unified"), "v2"),
    (Path("/sys/fs/cgroup/cpuacct"), "v1"),
)

LAUNCHER = (
    "import os, sys\n"
    "with open(sys.argv[1], 'w') as f: f.write(str(os.getpid()))\n"
    "os.execv(sys.executable, [sys.executable, *sys.argv[2:]])\n"
)
"""``python -c LAUNCHER PROCS_FILE ARGS...``: join the cgroup, then become ``python ARGS``."""


def _stat_fields(pid: str) -> tuple[int, float] | None:
    """(ppid, utime + stime + cutime + cstime in seconds) of a live process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            data = file.read()
    except OSError:
        return None
    rest = data[data.rindex(b")") + 2 :].split()
    # rest[0] is field 3 (state): ppid is field 4, utime..cstime fields 14-17.
    return int(rest[1]), sum(int(x) for x in rest[11:15]) / TICKS


def tree_cpu(root: int, *, include_root: bool) -> float:
    """CPU seconds of every live descendant of ``root`` (and of ``root`` itself, with what it
    reaped, when ``include_root``)."""
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        fields = _stat_fields(name)
        if fields is not None:
            parents[int(name)], cpu[int(name)] = fields
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    total = 0.0
    stack = list(children.get(root, []))
    while stack:
        pid = stack.pop()
        total += cpu.get(pid, 0.0)
        stack.extend(children.get(pid, []))
    if include_root:
        own = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        total += own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
    return total


@dataclass
class Cgroup:
    """A cgroup of its own for one server (see the module doc)."""

    path: Path
    version: str

    @classmethod
    def make(cls) -> Cgroup | None:
        """A new cgroup, or None when none can be made here (not root, no cgroup fs)."""
        for root, version in _CGROUP_ROOTS:
            marker = "cgroup.controllers" if version == "v2" else "cpuacct.usage"
            if not (root / marker).exists():
                continue
            path = root / f"toolbridge-bench-{uuid.uuid4().hex[:12]}"
            try:
                path.mkdir()
            except OSError:
                continue
            return cls(path, version)
        return None

    @property
    def procs(self) -> Path:
        return self.path / "cgroup.procs"

    def cpu(self) -> float:
        """CPU seconds used by every process that has been in the cgroup."""
        if self.version == "v2":
            for line in (self.path / "cpu.stat").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "usage_usec":
                    return int(value) / 1e6
            return 0.0
        return int((self.path / "cpuacct.usage").read_text()) / 1e9

    def remove(self) -> None:
        """Remove the cgroup once its processes are gone (moved to the parent if not)."""
        parent = self.path.parent / "cgroup.procs"
        try:
            for pid in self.procs.read_text().split():
                try:
                    parent.write_text(pid)
                except OSError:
                    pass
            self.path.rmdir()
        except OSError:
            pass
