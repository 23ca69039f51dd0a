"""Run one child process, bounded: the only module that spawns processes.

:func:`run_process` is the primitive under every manifest ``exec`` tool and the ``bash``
built-in. Its guarantees:

- argv only, never a shell; ``close_fds``; the child starts its own session, so it leads a new
  process group that is signalled as a whole;
- stdin is a pipe carrying the given bytes and then closed, or ``/dev/null``; never the
  server's own stdin or stdout (they carry MCP);
- stdout and stderr are drained concurrently and never block the child; stdout keeps at most
  ``max_output_bytes``, stderr a bounded tail; the rest is counted and discarded, so a child
  printing gigabytes costs the server bounded memory;
- on the deadline or on cancellation the group gets SIGTERM, then SIGKILL after
  ``kill_grace_s``; after the direct child exits normally, whatever is left in its group gets
  SIGKILL, so backgrounded grandchildren never outlive the call;
- on the deadline the raised :class:`ProcessTimeout` (an ``ExecTimeoutError``) carries what
  was collected so far as a partial :class:`ProcessOutcome`, including what was still in the
  pipes once the group was killed (at most ``LEFTOVER_BYTES`` per pipe).

What cannot be done from here: a descendant that calls ``setsid()``/``setpgid()`` leaves the
group and cannot be found by group signals (only a cgroup or a sub-reaper could). Such a
process may hold the pipes open; the call then still finishes ``DRAIN_GRACE_S`` after the
direct child's exit, our pipe ends are closed, and the escapee gets EPIPE/SIGPIPE on its next
write. It is otherwise left running.

Linux path: exit is watched with a pidfd, so the group is signalled while the direct child is
still an unreaped zombie (its id cannot be reused under us). Elsewhere a worker thread waits
with ``waitid(WNOWAIT)`` instead. Windows is not supported.
"""

from __future__ import annotations

import errno
import os
import signal as signals
import subprocess
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

import anyio
import anyio.lowlevel
import anyio.to_thread

from mcp_toolbridge.errors import ExecSpawnError, ExecTimeoutError
from mcp_toolbridge.executors.base import DEFAULT_MAX_OUTPUT_BYTES

STDERR_TAIL_BYTES = 64 * 1024
MAX_STDERR_LINE_BYTES = 64 * 1024
"""Longer stderr lines are not offered to ``on_stderr_line``; they stay plain stderr text."""
DRAIN_GRACE_S = 0.2
"""How long pipes are still read after the group is gone (only an escaped process holds them)."""
REAP_LIMIT_S = 5.0
"""Upper bound on waiting for a SIGKILLed child to be reaped (a child stuck in the kernel)."""
LEFTOVER_BYTES = 1024 * 1024
"""After a timeout, at most this much is read from each pipe once the group is gone."""
_READ_SIZE = 256 * 1024

OutputFn = Callable[[int], None]
"""Told the size of each chunk of output read (stdout or stderr)."""

StderrLineFn = Callable[[bytes], Awaitable[bool]]
"""Called with each complete stderr line (newline stripped); True means the line was consumed
and is kept out of ``stderr_tail``."""


@dataclass(frozen=True, slots=True)
class ProcessOutcome:
    exit_code: int | None
    """The exit status, or None when the child was killed by a signal."""
    signal: int | None
    stdout: bytes
    """At most ``max_output_bytes`` of stdout, from the start."""
    stderr_tail: bytes
    """The last bytes of stderr, lines consumed by ``on_stderr_line`` left out."""
    stdout_bytes: int
    stderr_bytes: int
    stdout_truncated: bool
    stderr_truncated: bool
    duration_ms: float


class ProcessTimeout(ExecTimeoutError):
    """The deadline passed; the group was killed. ``outcome`` is what was collected until
    then, with the child's status as reaped (usually ``signal`` SIGTERM or SIGKILL; both None
    when it could not be reaped)."""

    def __init__(self, message: str, *, outcome: ProcessOutcome) -> None:
        super().__init__(message)
        self.outcome = outcome


async def run_process(
    argv: Sequence[str],
    *,
    stdin: bytes | None,
    cwd: str | None,
    env: Mapping[str, str],
    timeout_s: float,
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
    on_stderr_line: StderrLineFn | None = None,
    kill_grace_s: float = 2.0,
    stderr_tail_bytes: int = STDERR_TAIL_BYTES,
    on_output: OutputFn | None = None,
    pass_fds: Sequence[int] = (),
) -> ProcessOutcome:
    """Run ``argv`` to completion within ``timeout_s`` seconds.

    Raises :class:`ExecSpawnError` when the program cannot be started and
    :class:`ProcessTimeout` (an :class:`ExecTimeoutError` with the partial outcome) when the
    deadline passes (the group is killed first).
    Cancellation kills the group, then propagates. ``on_output`` is told the size of each
    chunk read from stdout or stderr (progress reports count output with it). ``pass_fds``
    are inherited by the child under the same numbers (a progress channel); the caller keeps
    and closes them.
    """
    await anyio.lowlevel.checkpoint_if_cancelled()  # never spawn for an already-cancelled call
    started = time.perf_counter()
    proc = _spawn(argv, stdin is not None, cwd, env, pass_fds)
    child = _Child(proc)
    stdout = _Sink(max_output_bytes, keep_tail=False, on_output=on_output)
    stderr = _Sink(stderr_tail_bytes, keep_tail=True, on_output=on_output)
    timed_out = False
    try:
        rest = child.write_stdin_now(stdin) if stdin is not None else b""
        with anyio.move_on_after(timeout_s):
            await _communicate(child, rest, stdout, stderr, max_output_bytes, on_stderr_line)
        timed_out = not child.reaped
    except BaseExceptionGroup as group:  # a failing on_stderr_line: surface the one error
        raise _first_leaf(group) from None
    finally:
        if not child.reaped:
            with anyio.CancelScope(shield=True):
                await child.terminate_group(kill_grace_s)
        if timed_out:
            child.read_leftovers(stdout, stderr)
        child.close()
    if timed_out:
        partial = _outcome(proc.returncode, stdout, stderr, started)
        raise ProcessTimeout(f"tool timed out after {timeout_s:g}s", outcome=partial)
    return _outcome(proc.returncode, stdout, stderr, started)


def _outcome(code: int | None, stdout: _Sink, stderr: _Sink, started: float) -> ProcessOutcome:
    """``code``: the child's return code (negative: killed by that signal); None when it was
    not reaped (only after a timeout)."""
    return ProcessOutcome(
        exit_code=code if code is not None and code >= 0 else None,
        signal=-code if code is not None and code < 0 else None,
        stdout=bytes(stdout.data),
        stderr_tail=bytes(stderr.data),
        stdout_bytes=stdout.total,
        stderr_bytes=stderr.total,
        stdout_truncated=stdout.dropped,
        stderr_truncated=stderr.dropped,
        duration_ms=(time.perf_counter() - started) * 1000.0,
    )


def _first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    first = group.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first


def _spawn(
    argv: Sequence[str],
    with_stdin: bool,
    cwd: str | None,
    env: Mapping[str, str],
    pass_fds: Sequence[int] = (),
) -> subprocess.Popen[bytes]:
    if not argv:
        raise ExecSpawnError("cannot start a tool with an empty command")
    program = argv[0]
    try:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE if with_stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            close_fds=True,
            pass_fds=tuple(pass_fds),
            start_new_session=True,
            bufsize=0,
        )
    except OSError as exc:
        raise ExecSpawnError(_spawn_message(program, cwd, exc)) from exc


def _spawn_message(program: str, cwd: str | None, exc: OSError) -> str:
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


class _Sink:
    """Counts everything, keeps the head (stdout) or the tail (stderr) up to ``limit``."""

    __slots__ = ("data", "dropped", "keep_tail", "limit", "on_output", "total")

    def __init__(self, limit: int, *, keep_tail: bool, on_output: OutputFn | None = None) -> None:
        self.data = bytearray()
        self.limit = limit
        self.keep_tail = keep_tail
        self.total = 0
        self.dropped = False
        self.on_output = on_output

    def counted(self, size: int) -> None:
        self.total += size
        if self.on_output is not None:
            self.on_output(size)

    def take(self, chunk: bytes) -> None:
        """Count a chunk read from the pipe, and keep it if there is still a use for it."""
        self.counted(len(chunk))
        if self.keep_tail or not self.dropped:
            self.keep(chunk)

    def keep(self, chunk: bytes) -> None:
        room = self.limit - len(self.data)
        if len(chunk) <= room:
            self.data += chunk
        elif self.keep_tail:
            self.data += chunk[-self.limit :]
            del self.data[: len(self.data) - self.limit]
            self.dropped = True
        else:
            self.data += chunk[: max(room, 0)]
            self.dropped = True


class _Child:
    """The spawned process, its pipes and how its exit is watched."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.exited = False
        self.reaped = False
        self.pidfd: int | None = None
        if hasattr(os, "pidfd_open"):
            try:
                self.pidfd = os.pidfd_open(proc.pid)
            except OSError:  # kernel without pidfd (< 5.3): use the thread fallback
                self.pidfd = None
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                os.set_blocking(pipe.fileno(), False)

    def write_stdin_now(self, data: bytes) -> bytes:
        """Write what fits without blocking; close stdin when all is written; return the rest."""
        pipe = self.proc.stdin
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
        pipe = self.proc.stdin
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
        self.proc.wait()
        self.reaped = True

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

    def read_leftovers(self, stdout: _Sink, stderr: _Sink) -> None:
        """What the killed group left in the pipes (without waiting; at most
        ``LEFTOVER_BYTES`` each, in case an escaped process still writes)."""
        for pipe, sink in ((self.proc.stdout, stdout), (self.proc.stderr, stderr)):
            if pipe is None or pipe.closed:
                continue
            taken = 0
            while taken < LEFTOVER_BYTES:
                try:
                    chunk = os.read(pipe.fileno(), _READ_SIZE)
                except (BlockingIOError, OSError):
                    break
                if not chunk:
                    break
                taken += len(chunk)
                sink.take(chunk)

    def close(self) -> None:
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


def _block_until_exited(pid: int) -> None:
    try:
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    except ChildProcessError:
        pass


async def _communicate(
    child: _Child,
    stdin_rest: bytes,
    stdout: _Sink,
    stderr: _Sink,
    max_output_bytes: int,
    on_stderr_line: StderrLineFn | None,
) -> None:
    proc = child.proc
    assert proc.stdout is not None and proc.stderr is not None
    async with anyio.create_task_group() as tg:
        tg.start_soon(_drain, proc.stdout.fileno(), stdout)
        lines = None
        if on_stderr_line is not None:
            lines = _LineSplitter(stderr, on_stderr_line, max_output_bytes)
        tg.start_soon(_drain, proc.stderr.fileno(), stderr, lines)
        if stdin_rest:
            tg.start_soon(child.feed_stdin, stdin_rest)
        await child.wait_exited()
        # The direct child is a zombie: its id is still reserved, so the group id is safe.
        child.signal_group(signals.SIGKILL)
        child.reap()
        tg.cancel_scope.deadline = min(
            tg.cancel_scope.deadline, anyio.current_time() + DRAIN_GRACE_S
        )


async def _drain(fd: int, sink: _Sink, lines: _LineSplitter | None = None) -> None:
    """Read ``fd`` to its end into ``sink``, through ``lines`` when stderr lines are watched."""
    try:
        while True:
            await anyio.wait_readable(fd)
            try:
                chunk = os.read(fd, _READ_SIZE)
            except BlockingIOError:
                continue
            if not chunk:
                break
            if lines is None:
                sink.take(chunk)
            else:
                sink.counted(len(chunk))
                await lines.feed(chunk)
        if lines is not None:
            await lines.finish()
    finally:
        if lines is not None and lines.pending:  # stopped mid-line (the deadline): keep it
            sink.keep(lines.pending)
            lines.pending = b""


class _LineSplitter:
    """Feeds complete stderr lines to the callback; unconsumed bytes go to the tail."""

    def __init__(self, sink: _Sink, on_line: StderrLineFn, max_output_bytes: int) -> None:
        self.sink = sink
        self.on_line = on_line
        self.max_output_bytes = max_output_bytes
        self.pending = b""
        self.overlong = False

    async def feed(self, chunk: bytes) -> None:
        if self.sink.total > self.max_output_bytes:  # a flood: stop parsing, keep the tail
            self.sink.keep(self.pending + chunk)
            self.pending = b""
            return
        buf = self.pending + chunk if self.pending else chunk
        start = 0
        while (end := buf.find(b"\n", start)) >= 0:
            await self._line(buf[start : end + 1])
            start = end + 1
        self.pending = buf[start:]
        if len(self.pending) > MAX_STDERR_LINE_BYTES:
            self.sink.keep(self.pending)
            self.pending = b""
            self.overlong = True

    async def finish(self) -> None:
        if self.pending:
            await self._line(self.pending)
            self.pending = b""

    async def _line(self, line: bytes) -> None:
        if self.overlong:
            self.overlong = False
        elif len(line) <= MAX_STDERR_LINE_BYTES and await self.on_line(line.rstrip(b"\r\n")):
            return
        self.sink.keep(line)
