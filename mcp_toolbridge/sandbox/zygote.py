"""Runs inside a warm sandbox, never in the server: starts one call's command at a time.

usage: python -I -S zygote.py CONTROL_FD IDLE_S LIMITS PRIVATE_ROOT [PRIVATE_ROOT...]

A warm sandbox is set up before its calls come (``warm.py``): bubblewrap builds the namespaces
and the mount tree once, and this script waits inside on CONTROL_FD (a ``SOCK_SEQPACKET``
socket) for the server to send a call: a JSON object with ``program``, ``argv``, ``env``,
``cwd`` and ``fds`` (the target number of each descriptor sent with it; 0, 1 and 2 among
them). It starts the command in a session of its own (and answers
``{"error": [errno, strerror, filename]}`` when that fails as ``execve`` would: the call's only
answer; a started command gets none until it ends, so that a call costs one wake-up of the
server less). While the command runs
the server may send ``{"signal": N}`` (to the command's process group) and ``{"kill": true}``
(to every process of the sandbox). When the command exits, everything else left in the
sandbox is killed and waited for (this process is the sandbox's sub-reaper, so every orphan
is its child), then it answers ``{"exit": STATUS}`` (128 + N for a command killed by signal
N, as a shell reports it, and as a sandbox made for one call reports it too). Only then does
it look whether the call left anything behind in the sandbox's private places (the
PRIVATE_ROOTs: its own ``/`` and ``/dev`` (read-only), ``/dev/shm``, ``/tmp`` and home folder,
which are not bind mounts of the host; or a System V IPC object), so that the call's answer
does not wait for the look: when nothing was left it says ``{"ready": true}`` again (as when
it was set up), else it ends, and the sandbox with it. The server hands a sandbox its next
call only after that word (and runs the call in a fresh sandbox when the sandbox ended
instead). Nor is one left idle for IDLE_S seconds reused: it ends.

LIMITS (``nproc=1024,nofile=4096,...``, see ``limits.py``) are set on this process once, when
the sandbox is set up, after its walk of the private places: every call's command inherits
them, as a fresh sandbox's command gets them from ``prlimit``. This process needs far less of
each: one process (the sandbox's count is back to init and this one after each sweep), a few
descriptors, a few MiB, no file written.

Processes started here cannot trace or read this one (it is not dumpable). They can signal it,
being the same user: that ends the warm sandbox, and with it their own call, nothing else.
They can also lower its resource limits (``prlimit(2)``), its priority, CPU affinity or I/O
priority, which the next call's command would inherit: after each call this process compares
them with what they were at set-up (:func:`own_state`), and ends when one changed, as when a
call left a file behind.

It runs only as bubblewrap's command in a PID namespace of its own (PID 2, under bubblewrap's
init, PID 1): anywhere else it exits at once, without touching anything, since its sweep
(``kill(-1)``) would reach every process its user may signal.

Standard library only, started with ``-I -S``: it must not depend on the server's
environment. It decides nothing: what runs was decided by the server, what it can reach by the
sandbox around it.
"""

import array
import ctypes
import fcntl
import json
import os
import resource
import select
import signal
import socket
import stat
import sys
from typing import Any

MESSAGE_BYTES = 1024 * 1024
MAX_FDS = 16
MAX_ENTRIES = 10_000
READY = b'{"ready": true}'
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
SHM_INFO, MSG_INFO, SEM_INFO = 14, 12, 19
TMPFS_MAGIC = 0x01021994
BOGO_DIRENT_BYTES = 20
"""What tmpfs counts in a folder's size for each entry (``shmem``'s ``BOGO_DIRENT_SIZE``)."""
LIBC = ctypes.CDLL(None, use_errno=True)
RESOURCES = {
    "nproc": resource.RLIMIT_NPROC,
    "nofile": resource.RLIMIT_NOFILE,
    "data": resource.RLIMIT_DATA,
    "fsize": resource.RLIMIT_FSIZE,
    "core": resource.RLIMIT_CORE,
}


def set_limits(encoded: str) -> None:
    """Soft and hard limits alike (as ``rlimit.py`` and the relay set them)."""
    for item in filter(None, encoded.split(",")):
        name, value = item.split("=", 1)
        resource.setrlimit(RESOURCES[name], (int(value), int(value)))


RLIMITS = tuple(
    getattr(resource, name) for name in sorted(dir(resource)) if name.startswith("RLIMIT_")
)
IOPRIO_GET = {"x86_64": 252, "aarch64": 31}.get(os.uname().machine)
IOPRIO_WHO_PROCESS = 1


def own_state() -> tuple[object, ...]:
    """What this process passes on to every command it starts and a command may change from
    outside, being the same user: its resource limits (``prlimit(2)`` lowers another process's
    limits without a capability, and none can raise them back), its nice value, CPU
    affinity, scheduling policy and I/O priority. Compared after each call: changed, the
    sandbox is not reused (:func:`main`)."""
    io = LIBC.syscall(IOPRIO_GET, IOPRIO_WHO_PROCESS, 0) if IOPRIO_GET is not None else 0
    return (
        *(resource.getrlimit(kind) for kind in RLIMITS),
        os.getpriority(os.PRIO_PROCESS, 0),
        os.sched_getaffinity(0),
        os.sched_getscheduler(0),
        io,
    )


def prctl(option: int, value: int) -> None:
    if LIBC.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option})")


BUFFER = bytearray(MESSAGE_BYTES)
"""Every message is read into this one buffer: ``recvmsg`` would map (and unmap) a fresh
megabyte for each."""
ANCILLARY_BYTES = socket.CMSG_SPACE(MAX_FDS * array.array("i").itemsize)
RECEIVE_FLAGS = int(socket.MSG_CMSG_CLOEXEC)
"""A plain int: or-ing the enum flag with another runs the enum module's Python a call."""


def receive(control: socket.socket, flags: int = 0) -> tuple[dict[str, Any], list[int]]:
    fds = array.array("i")
    size, ancillary, _, _ = control.recvmsg_into([BUFFER], ANCILLARY_BYTES, RECEIVE_FLAGS | flags)
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    if not size:
        raise EOFError
    return json.loads(BUFFER[:size]), list(fds)


def answer(control: socket.socket, message: dict[str, Any]) -> None:
    control.send(json.dumps(message).encode())


def answer_exit(control: socket.socket, status: int) -> None:
    """``{"exit": status}``, written out without the JSON encoder."""
    control.send(b'{"exit": %d}' % status)


class Places:
    """The private places as they were when the sandbox was set up: each folder's entries by
    name and every entry's ``lstat`` (what changes when anything is created, removed, renamed,
    written or made unreadable there), not crossing into mounts; and the IPC objects.

    :meth:`same` looks again: a ``stat`` of every entry that is not a mount, and the names of
    every folder whose entries its own ``stat`` does not count (one ``getdents`` each). Mount
    points are not looked at again: nothing in the sandbox can unmount, move or remove one (no
    capabilities: ``EPERM``/``EBUSY``). A name that disappears fails its ``stat``, one replaced
    (renamed over, exchanged) shows another inode, and one that appears changes its folder's
    count: on tmpfs (the sandbox's ``/``, ``/dev``, ``/tmp`` and home are) a folder's size is
    :data:`BOGO_DIRENT_BYTES` per entry, two more for ``.`` and ``..``, kept exactly by the
    kernel, so a folder found so at set-up (on a file system that says it is tmpfs) is not
    listed again: its size, in its ``stat``, proves its names as a listing would. Any other
    folder is listed. Past MAX_ENTRIES nothing is ever the same (the sandbox is not reused)."""

    def __init__(self, roots: list[str]) -> None:
        self.roots = roots
        self.names: dict[str, list[str]] = {}
        """Each folder walked whose size does not count its entries: their names, sorted."""
        self.states: dict[str, object] = {}
        """Each entry that is not a mount (the roots too): its state."""
        self.complete = self._walk()
        self.ipc = _ipc_objects()

    def _walk(self) -> bool:
        for root in self.roots:
            try:
                info = os.lstat(root)
            except OSError:
                self.states[root] = "missing"
                continue
            device = info.st_dev
            self.states[root] = _state(info)
            counts = _on_tmpfs(root)
            stack = [(root, info.st_size)]
            while stack:
                folder, size = stack.pop()
                try:
                    entries = list(os.scandir(folder))
                except OSError:
                    return False  # not readable now: never the same after a call
                if not counts or size != BOGO_DIRENT_BYTES * (len(entries) + 2):
                    self.names[folder] = sorted(entry.name for entry in entries)
                for entry in entries:
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        return False
                    if info.st_dev != device:
                        continue  # a mount (of the host, or /proc): not the sandbox's own
                    self.states[entry.path] = _state(info)
                    if len(self.states) > MAX_ENTRIES:
                        return False
                    if stat.S_ISDIR(info.st_mode):
                        stack.append((entry.path, info.st_size))
        return True

    def same(self) -> bool:
        """Whether the private places are as they were (see the class doc)."""
        if not self.complete:
            return False
        try:
            for folder, names in self.names.items():
                if sorted(os.listdir(folder)) != names:
                    return False
            for path, state in self.states.items():
                if state != "missing" and _state(os.lstat(path)) != state:
                    return False
        except OSError:
            return False
        return _ipc_objects() == self.ipc


def _on_tmpfs(path: str) -> bool:
    """Whether ``path`` is on tmpfs (``statfs``'s ``f_type``, the struct's first field: a
    ``long`` where Linux's ``__fsword_t`` is one; elsewhere the value read is not the magic
    number, and every folder is listed)."""
    buffer = (ctypes.c_long * 32)()
    if LIBC.statfs(os.fsencode(path), buffer) != 0:
        return False
    return buffer[0] == TMPFS_MAGIC


def _ipc_objects() -> tuple[int, ...]:
    """How many System V IPC objects the sandbox's IPC namespace holds, as the kernel counts
    them: shared memory segments (``shmctl(SHM_INFO)``: ``used_ids``), message queues
    (``msgctl(MSG_INFO)``: ``msgpool``) and semaphore sets (``semctl(SEM_INFO)``: ``semusz``);
    -1 where a count cannot be read."""
    info = _IPC_INFO  # each call that succeeds writes its whole structure over it
    shm = info[0] if LIBC.shmctl(0, SHM_INFO, info) >= 0 else -1
    msg = info[0] if LIBC.msgctl(0, MSG_INFO, info) >= 0 else -1
    sem = info[7] if LIBC.semctl(0, 0, SEM_INFO, info) >= 0 else -1
    return (shm, msg, sem)


_IPC_INFO = (ctypes.c_int * 32)()
"""Larger than each of ``shm_info``, ``msginfo`` and ``seminfo``."""


def _state(info: os.stat_result) -> tuple[int, int, int, int, int]:
    return (info.st_ino, info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def start(request: dict[str, Any], fds: list[int]) -> int:
    """The command, in a session of its own, with the descriptors at their numbers."""
    targets = [int(t) for t in request["fds"]]
    if len(targets) != len(fds):
        raise OSError(22, "descriptors and their numbers do not match")
    high: list[int] = []
    if not set(targets).isdisjoint(fds):
        # Above every target first, so that no placement overwrites a descriptor still to
        # place (received descriptors are above 2 and usually above every target: no copy).
        floor = max(targets, default=2) + 1
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, floor) for fd in fds]
        fds = high
    actions = [(os.POSIX_SPAWN_DUP2, fd, target) for fd, target in zip(fds, targets, strict=True)]
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


def sweep(command: int = 0) -> int:
    """Kill every process of the sandbox but this one, and wait until each is gone; the wait
    status of ``command`` (an exited child not reaped yet), 0 if none.

    Every process of the sandbox but its init descends from this one (an orphan comes back
    to it, the sub-reaper), so when this one has no child left, none is left at all, and
    nothing is killed: ``kill(-1)`` looks at every process of the machine."""
    found = os.waitpid(command, 0)[1] if command else 0
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return found  # nothing was left
    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        pass
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return found


def run(
    control: socket.socket, poller: select.poll, request: dict[str, Any], fds: list[int]
) -> int | None:
    """One call: start, follow the server's signals until the command exits, end every process
    left (:func:`sweep`), return the command's status (None: it could not be started).
    ``poller`` watches ``control``."""
    try:
        pid = start(request, fds)
    except OSError as exc:
        answer(control, {"error": [exc.errno, exc.strerror, exc.filename]})
        return None
    finally:
        for fd in fds:
            os.close(fd)
    pidfd = os.pidfd_open(pid)
    poller.register(pidfd, select.POLLIN)
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
        poller.unregister(pidfd)
        os.close(pidfd)
    code = os.waitstatus_to_exitcode(sweep(pid))
    return 128 - code if code < 0 else code


def next_request(
    control: socket.socket, poller: select.poll, idle_s: float
) -> tuple[dict[str, Any], list[int], bool]:
    """The next call, and whether it is the last: after ``idle_s`` without one, reading is shut
    down (the server's next send fails, so it runs that call in a fresh sandbox) and a call
    sent just before that is the last one served. Raises EOFError when there is none.
    ``poller`` watches ``control`` only."""
    if poller.poll(idle_s * 1000):
        request, fds = receive(control)
        return request, fds, False
    control.shutdown(socket.SHUT_RD)
    try:
        request, fds = receive(control, int(socket.MSG_DONTWAIT))
    except BlockingIOError:
        raise EOFError from None
    return request, fds, True


def in_own_namespace() -> bool:
    """Whether this is bubblewrap's command in a PID namespace of its own: PID 2, its parent
    bubblewrap's init (PID 1). In the host's namespace PID 2 is the kernel's ``kthreadd``, so
    no process started there passes this; a ``kill(-1)`` from here reaches only the sandbox."""
    return os.getpid() == 2 and os.getppid() == 1


def main() -> None:
    if not in_own_namespace():
        sys.stderr.write("zygote.py: not in a sandbox's PID namespace of its own: nothing done\n")
        raise SystemExit(2)
    control = socket.socket(fileno=int(sys.argv[1]))
    control.set_inheritable(False)
    idle_s = float(sys.argv[2])
    limits = sys.argv[3]
    roots = sys.argv[4:]
    prctl(PR_SET_DUMPABLE, 0)
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    os.chdir("/")
    clean = Places(roots)
    set_limits(limits)
    state = own_state()
    poller = select.poll()
    poller.register(control, select.POLLIN)
    control.send(READY)
    while True:
        try:
            request, fds, last = next_request(control, poller, idle_s)
        except (EOFError, OSError):
            return
        if "program" not in request:  # a signal for a call that has ended: nothing to do
            for fd in fds:
                os.close(fd)
            if last:
                return
            continue
        status = run(control, poller, request, fds)
        if status is None:
            sweep()
            if last:
                return
            continue
        answer_exit(control, status)  # the call's answer need not wait for the look below
        if last or not clean.same() or own_state() != state:
            return  # the sandbox ends with this process: the server sees the socket's end
        control.send(READY)


if __name__ == "__main__":
    try:
        main()
    except (EOFError, ConnectionError, KeyboardInterrupt):
        pass
