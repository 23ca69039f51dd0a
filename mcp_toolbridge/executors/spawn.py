"""Spawning a process: the only module that imports :mod:`subprocess`.

:func:`spawn` starts a call's command (``run_process`` in subprocess.py follows it as a
:class:`PopenChild`), :func:`spawn_warm` a warm sandbox for the pool (``sandbox/warm.py``).
Every child starts in a session of its own (it leads a new process group, signalled as a
whole), with ``close_fds``, from an argv (never a shell).

Linux path: exit is watched with a pidfd, so the group is signalled while the direct child is
still an unreaped zombie (its id cannot be reused under us). Elsewhere a worker thread waits
with ``waitid(WNOWAIT)`` instead. Windows is not supported.
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Mapping, Sequence

import anyio
import anyio.to_thread

from mcp_toolbridge.errors import ExecSpawnError
from mcp_toolbridge.executors.child import Child


def spawn(
    argv: Sequence[str],
    with_stdin: bool,
    cwd: str | None,
    env: Mapping[str, str],
    program: str,
    fds: tuple[int, ...],
) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE if with_stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            close_fds=True,
            pass_fds=fds,
            start_new_session=True,
            bufsize=0,
        )
    except OSError as exc:
        raise ExecSpawnError(spawn_message(program, cwd, exc)) from exc


def spawn_message(program: str, cwd: str | None, exc: OSError) -> str:
    if cwd is not None and exc.filename == cwd:
        return f'cannot start "{program}": working directory "{cwd}" is not usable ({exc.strerror})'
    if exc.errno == errno.ENOENT:
        return f'cannot start "{program}": no such file; check the path in the manifest'
    if exc.errno == errno.EACCES:
        return f'cannot start "{program}": permission denied; is it executable (chmod +x)?'
    if exc.errno == errno.ENOEXEC:
        return (
            f'cannot start "{program}": not an executable format; '
            'a script needs a "#!" interpreter line'
        )
    return f'cannot start "{program}": {exc.strerror or exc}'


class PopenChild(Child):
    """A process this server spawned. Linux: its exit is watched with a pidfd, so the group is
    signalled while the child is still an unreaped zombie (its id cannot be reused under us);
    elsewhere a worker thread waits with ``waitid(WNOWAIT)``."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        super().__init__(proc.stdin, proc.stdout, proc.stderr)
        self.proc = proc
        self.pidfd: int | None = None
        if hasattr(os, "pidfd_open"):
            try:
                self.pidfd = os.pidfd_open(proc.pid)
            except OSError:  # kernel without pidfd (< 5.3): use the thread fallback
                self.pidfd = None

    async def wait_exited(self) -> None:
        """Return once the child has exited, without reaping it."""
        if self.exited:
            return
        if self.pidfd is not None:
            await anyio.wait_readable(self.pidfd)
        else:
            await anyio.to_thread.run_sync(
                _block_until_exited, self.proc.pid, abandon_on_cancel=True
            )
        self.exited = True

    def signal_group(self, signum: int) -> None:
        try:
            os.killpg(self.proc.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass  # nobody left in the group

    def reap(self) -> None:
        self.returncode = self.proc.wait()
        self.reaped = True

    def close(self) -> None:
        super().close()
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


def _block_until_exited(pid: int) -> None:
    try:
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    except ChildProcessError:
        pass


def spawn_warm(command: Sequence[str], fds: Sequence[int]) -> subprocess.Popen[bytes]:
    """A warm sandbox (``sandbox/warm.py``): ``command`` with ``fds`` inherited, in a session
    of its own, nothing else open; it lives until the pool ends it (or the server exits)."""
    return subprocess.Popen(
        list(command),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={},
        close_fds=True,
        pass_fds=tuple(fds),
        start_new_session=True,
    )
