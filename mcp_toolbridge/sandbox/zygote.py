"""Runs inside a warm sandbox, never in the server: starts one call's command at a time.

usage: python -I -S zygote.py CONTROL_FD IDLE_S PRIVATE_ROOT [PRIVATE_ROOT...]

A warm sandbox is set up before its calls come (``warm.py``): bubblewrap builds the namespaces
and the mount tree once, and this script waits inside on CONTROL_FD (a ``SOCK_SEQPACKET``
socket) for the server to send a call: a JSON object with ``program``, ``argv``, ``env``,
``cwd`` and ``fds`` (the target number of each descriptor sent with it; 0, 1 and 2 among
them). It starts the command in a session of its own and answers ``{"started": true}`` (or
``{"error": [errno, strerror, filename]}`` as ``execve`` would fail). While the command runs
the server may send ``{"signal": N}`` (to the command's process group) and ``{"kill": true}``
(to every process of the sandbox). When the command exits, everything else left in the
sandbox is killed and waited for (this process is the sandbox's sub-reaper, so every orphan
is its child), then it answers ``{"exit": STATUS}`` (128 + N for a command killed by signal
N, as a shell reports it, and as a sandbox made for one call reports it too) with
``"clean": false`` when the call left anything behind in the sandbox's private places (the
PRIVATE_ROOTs: its own ``/``, ``/tmp``, ``/dev`` and home folder, which are not bind mounts
of the host; or a System V IPC object). The server does not reuse a sandbox that is not
clean: the next call starts in a fresh one. Nor one left idle for IDLE_S seconds: it ends.

Processes started here cannot trace or read this one (it is not dumpable). They can signal it,
being the same user: that ends the warm sandbox, and with it their own call, nothing else.

Standard library only, started with ``-I -S``: it must not depend on the server's
environment. It decides nothing: what runs was decided by the server, what it can reach by the
sandbox around it.
"""

import array
import ctypes
import fcntl
import json
import os
import select
import signal
import socket
import sys
from typing import Any

MESSAGE_BYTES = 1024 * 1024
MAX_FDS = 16
MAX_ENTRIES = 10_000
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
IPC_TABLES = ("/proc/sysvipc/shm", "/proc/sysvipc/msg", "/proc/sysvipc/sem")


def prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option})")


def receive(control: socket.socket, flags: int = 0) -> tuple[dict[str, Any], list[int]]:
    fds = array.array("i")
    data, ancillary, _, _ = control.recvmsg(
        MESSAGE_BYTES,
        socket.CMSG_SPACE(MAX_FDS * fds.itemsize),
        socket.MSG_CMSG_CLOEXEC | flags,
    )
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    if not data:
        raise EOFError
    return json.loads(data), list(fds)


def answer(control: socket.socket, message: dict[str, Any]) -> None:
    control.send(json.dumps(message).encode())


def fingerprint(roots: list[str]) -> list[tuple[object, ...]] | None:
    """Every entry of the private places (not crossing into mounts), with what changes when
    anything is created, removed, renamed, written or made unreadable there; and the IPC
    objects. None past MAX_ENTRIES: never the same as before a call."""
    seen: list[tuple[object, ...]] = []
    for root in roots:
        try:
            device = os.lstat(root).st_dev
        except OSError:
            seen.append((root, "missing"))
            continue
        stack = [root]
        while stack:
            folder = stack.pop()
            seen.append(_entry(folder))
            try:
                entries = list(os.scandir(folder))
            except OSError as exc:
                seen.append((folder, "unreadable", exc.errno))
                continue
            for entry in entries:
                try:
                    mounted = entry.stat(follow_symlinks=False).st_dev != device
                except OSError:
                    mounted = False
                if mounted:
                    continue  # a mount (of the host, or /proc): not the sandbox's own
                seen.append(_entry(entry.path))
                if len(seen) > MAX_ENTRIES:
                    return None
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
    for table in IPC_TABLES:
        try:
            with open(table) as file:
                seen.append((table, len(file.read().splitlines())))
        except OSError:
            pass
    return sorted(seen, key=repr)


def _entry(path: str) -> tuple[object, ...]:
    try:
        info = os.lstat(path)
    except OSError as exc:
        return (path, "gone", exc.errno)
    return (path, info.st_ino, info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def start(request: dict[str, Any], fds: list[int]) -> int:
    """The command, in a session of its own, with the descriptors at their numbers."""
    targets = [int(t) for t in request["fds"]]
    if len(targets) != len(fds):
        raise OSError(22, "descriptors and their numbers do not match")
    # Above every target first, so that no placement overwrites a descriptor still to place.
    floor = max(targets, default=2) + 1
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, floor) for fd in fds]
    actions = [(os.POSIX_SPAWN_DUP2, fd, target) for fd, target in zip(high, targets, strict=True)]
    os.chdir(request["cwd"])
    try:
        return os.posix_spawn(
            request["program"],
            request["argv"],
            request["env"],
            file_actions=actions,
            setsid=True,
            setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),  # what Python ignores, as Popen does
            setsigmask=(),
        )
    finally:
        os.chdir("/")
        for fd in high:
            os.close(fd)


def sweep() -> None:
    """Kill every process of the sandbox but this one, and wait until each is gone."""
    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        pass
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def run(control: socket.socket, request: dict[str, Any], fds: list[int]) -> int | None:
    """One call: start, follow the server's signals, return the command's status."""
    try:
        pid = start(request, fds)
    except OSError as exc:
        answer(control, {"error": [exc.errno, exc.strerror, exc.filename]})
        return None
    finally:
        for fd in fds:
            os.close(fd)
    answer(control, {"started": True})
    pidfd = os.pidfd_open(pid)
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    poller.register(control, select.POLLIN)
    try:
        while True:
            ready = dict(poller.poll())
            if pidfd in ready:
                break
            if control.fileno() in ready:
                message, extra = receive(control)
                for fd in extra:
                    os.close(fd)
                if message.get("kill"):
                    os.kill(-1, signal.SIGKILL)
                elif "signal" in message:
                    try:
                        os.killpg(pid, int(message["signal"]))
                    except ProcessLookupError:
                        pass
    finally:
        os.close(pidfd)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


def next_request(control: socket.socket, idle_s: float) -> tuple[dict[str, Any], list[int], bool]:
    """The next call, and whether it is the last: after ``idle_s`` without one, reading is shut
    down (the server's next send fails, so it runs that call in a fresh sandbox) and a call
    sent just before that is the last one served. Raises EOFError when there is none."""
    if select.select([control], [], [], idle_s)[0]:
        request, fds = receive(control)
        return request, fds, False
    control.shutdown(socket.SHUT_RD)
    try:
        request, fds = receive(control, socket.MSG_DONTWAIT)
    except BlockingIOError:
        raise EOFError from None
    return request, fds, True


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    control.set_inheritable(False)
    idle_s = float(sys.argv[2])
    roots = sys.argv[3:]
    prctl(PR_SET_DUMPABLE, 0)
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    os.chdir("/")
    clean = fingerprint(roots)
    answer(control, {"ready": True})
    while True:
        try:
            request, fds, last = next_request(control, idle_s)
        except (EOFError, OSError):
            return
        if "program" not in request:  # a signal for a call that has ended: nothing to do
            for fd in fds:
                os.close(fd)
            if last:
                return
            continue
        status = run(control, request, fds)
        sweep()
        if status is None:
            if last:
                return
            continue
        now_clean = not last and clean is not None and fingerprint(roots) == clean
        answer(control, {"exit": status, "clean": now_clean})
        if not now_clean:
            return


if __name__ == "__main__":
    try:
        main()
    except (EOFError, ConnectionError, KeyboardInterrupt):
        pass
