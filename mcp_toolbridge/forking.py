"""Work done beside this process by a forked child: when that is safe, and talking to it.

Start-up work on a big catalog (loading manifests, building the search index) is pure Python,
so one process uses one core; a forked child inherits everything loaded so far for free and
works on the second core. Forking is only done where it is safe and natural:

- Linux, where ``fork`` is the native way to start a process (the child costs ≈ 10 ms to
  start, instead of an interpreter start and every import);
- at least two cores usable by this process;
- no other thread in this process: a forked child gets a copy of every lock, including locks
  another thread held at that moment (a reload in a server runs in a worker thread, so it
  works in process).

Python's own buffers of stdout and stderr are flushed before a fork (a child flushes its copy
when it ends, and stdout may carry MCP frames), and the child leaves signals to this process.
Callers always have a way to do the same work in process when a child fails.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import signal
import stat
import sys
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

__all__ = [
    "ChildGone",
    "Connection",
    "Forked",
    "before_fork",
    "fork_allowed",
    "in_child",
    "write_behind",
]


class ChildGone(RuntimeError):
    """The forked child died, or what it sent could not be read."""


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def fork_allowed() -> bool:
    """Whether this process may fork a helper now (see the module docstring)."""
    return sys.platform == "linux" and _usable_cores() >= 2 and threading.active_count() == 1


def before_fork() -> None:
    """Flush Python's stdio buffers, which a child would otherwise write out a second time."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass


def in_child() -> None:
    """First thing in a forked child: signals (Ctrl-C, a terminating server) are this
    process's business, and must not reach the event loop's wake-up pipe it shares."""
    signal.set_wakeup_fd(-1)
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, signal.SIG_DFL)


def _child_main(main: Callable[[Connection], None], conn: Connection) -> None:
    in_child()
    try:
        main(conn)
    except Exception:  # the parent does the work itself and raises what there is to raise
        os._exit(1)
    finally:
        conn.close()


class Forked:
    """A forked child running ``main(conn)``, talking to this process over a duplex pipe."""

    def __init__(self, main: Callable[[Connection], None]) -> None:
        before_fork()
        fork = multiprocessing.get_context("fork")
        self._conn, theirs = fork.Pipe(duplex=True)
        self._process = fork.Process(target=_child_main, args=(main, theirs), daemon=True)
        self._process.start()
        theirs.close()

    def send(self, message: Any) -> None:
        try:
            self._conn.send(message)
        except (OSError, ValueError, pickle.PickleError) as exc:
            raise ChildGone(f"could not send to the child: {exc}") from exc

    def recv(self) -> Any:
        try:
            return self._conn.recv()
        except (EOFError, OSError, pickle.UnpicklingError) as exc:
            raise ChildGone(f"the child ended without an answer: {exc!r}") from exc

    def close(self) -> None:
        """Close the pipe and reap the child (it ends when the pipe closes, if not before)."""
        self._conn.close()
        self._process.join(timeout=5)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()


WRITE_LIMIT_S = 600
"""A writer still at work after this long is ended (``SIGALRM``); what it had not finished is
written by a later start."""


def write_behind(work: Callable[[], None]) -> bool:
    """Run ``work`` (writing caches) in a forked child, so this process goes on at once;
    False when forking is not safe or failed (the caller then does the work itself).

    The child has its own copy of everything, runs at the lowest priority (``nice 19``: the
    start it was forked from, which may still be building an index on both cores, goes
    first), and outlives this process: a client that connects briefly (start, list, exit)
    ends the server before a big catalog's caches are written, and the next start needs
    them. So the writer leaves this process's session and process group (the MCP SDK's stdio
    client kills the server's whole group) and, forked once more, its tree (clients that end
    a server's descendants); it ends after :data:`WRITE_LIMIT_S` at the latest. Its stdin,
    stdout and stderr go to /dev/null (stdout may carry MCP frames, and a reader of this
    process's pipes waits for every holder to close them); it ends with ``os._exit`` so no
    exit handler of this process runs twice."""
    if not fork_allowed():
        return False
    before_fork()
    try:
        pid = os.fork()
    except OSError:
        return False
    if pid == 0:  # pragma: no cover - runs in the child, reported by its effects
        code = 0
        try:
            in_child()
            # before the second fork, which the parent waits for: once write_behind returns,
            # the writer holds none of this process's sockets or pipes
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            _close_sockets()
            os.setsid()
            if os.fork() != 0:
                os._exit(0)  # the writer is the grandchild, reparented to init
            signal.alarm(WRITE_LIMIT_S)
            with contextlib.suppress(OSError, AttributeError):
                os.nice(19)
            work()
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)  # the intermediate child, which exits at once
    return True


def _close_sockets() -> None:
    """Close every socket the writer inherited: it writes files only, and a listening
    socket it held (``serve --http``) would keep the port bound after the server ends, for
    as long as the writer runs; a connection it held would never see its end."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd <= 2:
            continue
        with contextlib.suppress(OSError):
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                os.close(fd)
