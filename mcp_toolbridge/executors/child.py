"""One started command as ``run_process`` follows it: its pipes, its exit and its signals.

:class:`Child` holds what every kind shares; ``spawn.PopenChild`` is a process this
server spawned (directly, or ``bwrap`` around a fresh sandbox); :class:`WarmChild` is a
command started by the zygote of a warm sandbox (``sandbox/warm.py``), followed through that
sandbox's socket. Both answer the same calls, so ``run_process`` treats them alike.
"""

from __future__ import annotations

import os
import signal as signals
from collections.abc import Sequence
from typing import Protocol

import anyio
import anyio.to_thread

from mcp_toolbridge.executors.streams import READ_SIZE, Sink
from mcp_toolbridge.sandbox import Plan, WarmLost, WarmSandbox

REAP_LIMIT_S = 5.0
"""Upper bound on waiting for a SIGKILLed child to be reaped (a child stuck in the kernel)."""
LEFTOVER_BYTES = 1024 * 1024
"""After a timeout, at most this much is read from each pipe once the group is gone."""
_KILLED = 128 + signals.SIGKILL


class Pipe(Protocol):
    """Our end of one of a child's pipes: a file object, or a bare descriptor (:class:`Fd`)."""

    @property
    def closed(self) -> bool: ...

    def fileno(self) -> int: ...

    def close(self) -> None: ...


class Fd:
    """A bare descriptor with the calls a :class:`Pipe` answers (no file object: a warm
    sandbox's call makes three pipes, and ``os.fdopen`` costs an ``ioctl`` and an ``lseek``
    each)."""

    __slots__ = ("_fd",)

    def __init__(self, fd: int) -> None:
        self._fd = fd

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def fileno(self) -> int:
        if self._fd < 0:
            raise ValueError("I/O operation on closed pipe")
        return self._fd

    def close(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)


class Child:
    """The pipes and the state every kind of child shares."""

    def __init__(self, stdin: Pipe | None, stdout: Pipe | None, stderr: Pipe | None) -> None:
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr
        self.exited = False
        self.reaped = False
        self.returncode: int | None = None
        self.sandbox_init: int | None = None
        """A pidfd on a fresh sandbox's init (PID 1 of its namespace)."""
        for pipe in (stdin, stdout, stderr):
            if pipe is not None:
                os.set_blocking(pipe.fileno(), False)

    async def wait_exited(self) -> None:
        raise NotImplementedError

    def signal_group(self, signum: int) -> None:
        raise NotImplementedError

    def reap(self) -> None:
        raise NotImplementedError

    async def terminate_group(self, grace_s: float) -> None:
        """SIGTERM the group, give the child ``grace_s``, SIGKILL the group, reap."""
        if not self.exited:
            self.signal_group(signals.SIGTERM)
            with anyio.move_on_after(grace_s):
                await self.wait_exited()
        self.signal_group(signals.SIGKILL)
        with anyio.move_on_after(REAP_LIMIT_S):
            await self.wait_exited()
        if self.exited:
            self.reap()

    def close_stdin(self) -> None:
        if self.stdin is not None:
            self.stdin.close()

    def write_stdin_now(self, data: bytes) -> bytes:
        """Write what fits without blocking; close stdin when all is written; return the rest."""
        pipe = self.stdin
        assert pipe is not None
        try:
            written = os.write(pipe.fileno(), data) if data else 0
        except BlockingIOError:
            written = 0
        except BrokenPipeError:
            written = len(data)
        if written == len(data):
            pipe.close()
            return b""
        return data[written:]

    async def feed_stdin(self, data: bytes) -> None:
        pipe = self.stdin
        assert pipe is not None
        view = memoryview(data)
        try:
            while view:
                await anyio.wait_writable(pipe.fileno())
                try:
                    view = view[os.write(pipe.fileno(), view) :]
                except BlockingIOError:
                    continue
        except BrokenPipeError:
            pass  # the child stopped reading stdin; that is its business
        finally:
            pipe.close()

    def read_leftovers(self, stdout: Sink, stderr: Sink) -> None:
        """What the killed group left in the pipes (without waiting; at most
        ``LEFTOVER_BYTES`` each, in case an escaped process still writes)."""
        for pipe, sink in ((self.stdout, stdout), (self.stderr, stderr)):
            if pipe is None or pipe.closed:
                continue
            taken = 0
            while taken < LEFTOVER_BYTES:
                try:
                    chunk = os.read(pipe.fileno(), READ_SIZE)
                except (BlockingIOError, OSError):
                    break
                if not chunk:
                    break
                taken += len(chunk)
                sink.take(chunk)

    def close(self) -> None:
        for pipe in (self.stdin, self.stdout, self.stderr):
            if pipe is not None:
                pipe.close()
        if self.sandbox_init is not None:
            os.close(self.sandbox_init)
            self.sandbox_init = None


class WarmChild(Child):
    """A command started in a warm sandbox. Its status arrives once it and everything it left
    are gone (the zygote waits for them); it is reported as a fresh sandbox reports it."""

    def __init__(self, warm: WarmSandbox, stdin: int | None, stdout: int, stderr: int) -> None:
        super().__init__(Fd(stdin) if stdin is not None else None, Fd(stdout), Fd(stderr))
        self.warm = warm
        self.stdin_rest = b""
        """Of the call's stdin, what did not fit in the pipe before the hand-over."""
        self.start_error: OSError | None = None
        """Why the command could not be started (as ``execve`` said), once it is known."""

    @classmethod
    def start(
        cls, warm: WarmSandbox, plan: Plan, stdin: bytes | None, fds: Sequence[int]
    ) -> WarmChild:
        """Hand ``plan``'s command over to ``warm`` with new pipes (and ``fds`` at their
        numbers), ``stdin`` already in its pipe as far as it fits (so the command finds it
        there). Raises WarmLost when the sandbox is gone first; a command that cannot be
        started is told by :meth:`wait_exited` (:attr:`start_error`)."""
        ours: list[int] = []
        theirs: list[int] = []
        rest = b""
        try:
            if stdin is not None:
                read, write = os.pipe()
                theirs.append(read)
                ours.append(write)
                os.set_blocking(write, False)
                try:
                    rest = stdin[os.write(write, stdin) :] if stdin else b""
                except BlockingIOError:
                    rest = stdin
            else:
                theirs.append(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
            for _ in range(2):
                read, write = os.pipe()
                ours.append(read)
                theirs.append(write)
            passed = [(theirs[0], 0), (theirs[1], 1), (theirs[2], 2), *((fd, fd) for fd in fds)]
            warm.start(plan, passed)
        except BaseException:
            for fd in ours:
                os.close(fd)
            raise
        finally:
            for fd in theirs:
                os.close(fd)
        if stdin is None:
            return cls(warm, None, ours[0], ours[1])
        child = cls(warm, ours[0], ours[1], ours[2])
        child.stdin_rest = rest
        if not rest:
            child.close_stdin()
        return child

    def write_stdin_now(self, data: bytes) -> bytes:
        """What :meth:`start` could not put in the pipe (``data`` is already there)."""
        return self.stdin_rest

    async def wait_exited(self) -> None:
        if self.exited:
            return
        code: int | None
        try:
            code = await self.warm.wait_exit()
        except WarmLost:
            self.warm.end()  # its processes were killed with it
            code = _KILLED
        except OSError as exc:  # never started: run_process raises it as a spawn error
            self.start_error = exc
            code = None
        self.returncode = code
        self.exited = True

    def signal_group(self, signum: int) -> None:
        if self.exited:
            return
        if signum == signals.SIGKILL:
            self.warm.kill_all()
        else:
            self.warm.signal_group(signum)

    def reap(self) -> None:
        self.reaped = self.exited

    async def terminate_group(self, grace_s: float) -> None:
        await super().terminate_group(grace_s)
        if not self.exited:  # the zygote does not answer: end the sandbox, and all in it
            self.warm.end()
            self.exited = self.reaped = True
