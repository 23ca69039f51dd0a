"""The resource limits of a sandboxed call: how many processes, open files, memory, file size.

Each is an rlimit, the one mechanism an ordinary user has on every kernel the sandbox runs on
(a cgroup needs delegation, which most machines do not give a user's server). They are set
inside the sandbox, on the call's command, after bubblewrap has made the sandbox's user
namespace, never on the server or on bubblewrap:

- ``RLIMIT_NPROC`` (processes and threads) is counted per user namespace since Linux 5.14
  (ucounts): set inside, it bounds the call's own sandbox, whatever the user runs elsewhere.
  Set on bubblewrap before the namespace is made, it would also count every process the user
  has on the machine (the kernel checks the namespace's creator's count too, against the
  creator's limit). The kernel does not enforce it for uid 0 (a server run as root): its
  sandboxed processes are uid 0 too.
- ``RLIMIT_NOFILE``, ``RLIMIT_DATA`` (the heap and private writable mappings: what a memory
  bomb grows; reservations without access, as V8 and Go make, are not counted) and
  ``RLIMIT_FSIZE`` (a write past it fails with ``EFBIG`` and ``SIGXFSZ`` ends the writer) are
  per process; ``RLIMIT_CORE`` is 0 (no core dumps written into the workspace).

Soft and hard limits are equal, and a sandboxed process has no capabilities, so it cannot raise
them. Where they are set: by ``prlimit`` (util-linux) as the command's parent in a fresh
sandbox, by the zygote on itself once when a warm sandbox is set up (every call's command
inherits them; the zygote's own needs are far below them), by the relay in a proxy sandbox.
"""

from __future__ import annotations

import re
import resource
import signal
from dataclasses import dataclass, replace
from typing import Protocol

MIB = 1024 * 1024


class Settings(Protocol):
    """Where the limits are set: the policy's ``[sandbox]`` table."""

    @property
    def processes(self) -> int: ...
    @property
    def open_files(self) -> int: ...
    @property
    def memory_mib(self) -> int: ...
    @property
    def file_size_mib(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Limits:
    """0 for a limit: none (the server's own, inherited)."""

    processes: int = 1024
    open_files: int = 4096
    memory_mib: int = 4096
    file_size_mib: int = 4096

    @classmethod
    def of(cls, settings: Settings) -> Limits:
        return cls(
            settings.processes, settings.open_files, settings.memory_mib, settings.file_size_mib
        )

    def within_hard(self) -> Limits:
        """These limits, none above the server's own hard limit (which a sandboxed process
        cannot raise: setting it would fail)."""
        lowered: dict[str, int] = {}
        for name, kind, unit in _RESOURCES:
            hard = resource.getrlimit(kind)[1]
            value = getattr(self, name)
            if hard != resource.RLIM_INFINITY and 0 < value * unit > hard:
                lowered[name] = max(hard // unit, 1)
        return replace(self, **lowered) if lowered else self

    def pairs(self) -> tuple[tuple[str, int], ...]:
        """``(prlimit's name, value)`` for each limit that is set, ``core`` 0 always."""
        named = (
            ("nproc", self.processes),
            ("nofile", self.open_files),
            ("data", self.memory_mib * MIB),
            ("fsize", self.file_size_mib * MIB),
        )
        return (*((name, value) for name, value in named if value > 0), ("core", 0))

    def encoded(self) -> str:
        """The limits as the zygote and the relay read them: ``nproc=1024,nofile=4096,...``."""
        return ",".join(f"{name}={value}" for name, value in self.pairs())

    def prlimit_args(self, prlimit: str) -> tuple[str, ...]:
        """``prlimit --nproc=N:N ... --`` (the command follows)."""
        return (prlimit, *(f"--{name}={value}:{value}" for name, value in self.pairs()), "--")

    def described(self) -> str:
        """The limits in words, for ``inspect`` and the hint of a call that hit one."""
        parts = [
            f"{self.processes} processes and threads per call" if self.processes else "",
            f"{self.open_files} open files per process" if self.open_files else "",
            f"{self.memory_mib} MiB of memory per process" if self.memory_mib else "",
            f"files up to {self.file_size_mib} MiB" if self.file_size_mib else "",
        ]
        return ", ".join(p for p in parts if p) or "none"


_RESOURCES = (
    ("processes", resource.RLIMIT_NPROC, 1),
    ("open_files", resource.RLIMIT_NOFILE, 1),
    ("memory_mib", resource.RLIMIT_DATA, MIB),
    ("file_size_mib", resource.RLIMIT_FSIZE, MIB),
)

_SIGNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "processes",
        re.compile(
            r"fork: (retry: )?Resource temporarily unavailable|can't fork|"
            r"Cannot fork|BlockingIOError: \[Errno 11\]|pthread_create|"
            r"Resource temporarily unavailable.{0,40}(fork|spawn|thread)|"
            r"(fork|spawn|thread).{0,40}Resource temporarily unavailable",
            re.IGNORECASE,
        ),
    ),
    ("open_files", re.compile(r"Too many open files|EMFILE")),
    (
        "memory_mib",
        re.compile(
            r"Cannot allocate memory|cannot allocate \d+ bytes|MemoryError|out of memory|ENOMEM|"
            r"memory exhausted|std::bad_alloc|allocation failed",
            re.IGNORECASE,
        ),
    ),
    ("file_size_mib", re.compile(r"File too large|EFBIG|File size limit exceeded")),
)
_SETTING = {
    "processes": "processes",
    "open_files": "open files",
    "memory_mib": "memory",
    "file_size_mib": "file size",
}


_PLAIN = re.compile(
    rb"Resource temporarily unavailable|Too many open files|[Cc]annot allocate|"
    rb"File size limit exceeded|File too large|MemoryError"
)
"""What a call that succeeded may still say of a limit it hit (a fork bomb whose first shell
exits at once): the hint is looked for after a success only when this is in its stderr."""


def limit_hint(
    limits: Limits | None, signum: int | None, output: bytes, *, failed: bool
) -> str | None:
    """What a sandboxed call that seems to have hit a limit is told (None: no sign of one):
    killed by ``SIGXFSZ``, or its output (stderr first) saying the kernel refused a process,
    a file descriptor, memory or a file size. ``failed``: it did not exit with status 0."""
    if limits is None or not (failed or signum is not None or _PLAIN.search(output)):
        return None
    text = output.decode("utf-8", "replace")
    hit: list[str] = []
    if signum == signal.SIGXFSZ:
        hit.append("file_size_mib")
    for name, sign in _SIGNS:
        if name not in hit and getattr(limits, name) and sign.search(text):
            hit.append(name)
    if not hit:
        return None
    which = " and ".join(f"{_SETTING[name]} ({name} = {getattr(limits, name)})" for name in hit)
    return (
        f"The command seems to have hit the sandbox's limit on {which}. Every sandboxed call "
        f"is limited to {limits.described()}: do the work in smaller steps (fewer processes "
        "at once, smaller files or inputs), or ask the user to raise the setting under "
        "[sandbox] in the policy."
    )
