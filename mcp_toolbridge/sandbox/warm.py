"""Warm sandboxes: set up before their calls come, one call at a time each.

Setting a sandbox up (bubblewrap's namespaces and mount tree) costs about 4 ms of mostly kernel
CPU, and a network namespace's teardown more after the call. A tool called again and again gets
the same sandbox every time (the same :attr:`~.bwrap.Plan.options`), so the server keeps one
ready: bubblewrap runs ``zygote.py`` in it, which starts each call's command when the server
sends it (its descriptors passed over a unix socket), ends every process the call left once its
command exits, and then (once the call's status is sent: the answer does not wait for it)
looks whether the call left anything in the sandbox's private places. A sandbox is reused only
after its word that nothing was left (otherwise it ends, and the next call gets a fresh one),
so a call in a warm sandbox sees what a call in a fresh sandbox sees.

The pool: a sandbox is made for a set of options the second time a call needs it (a one-off
never costs one) and after a call that found none of them ready (up to :data:`PER_KEY` a set,
for calls in flight together, and :data:`TOTAL` in all); an idle one ends by itself after
:data:`IDLE_S`. A program whose calls leave its sandbox unusable runs fresh for a while. A
call never waits for one to be made: it runs in a fresh sandbox when none is ready (it
waits only for one still looking after its last call, :meth:`WarmSandbox.settled`). Launches
with a proxy (a profile granting specific hosts) are never warm: their proxy is per call; nor
are those of a tool granted ``/`` for writing (the zygote's mount point would be made in the
host's /run).
"""

from __future__ import annotations

import array
import json
import os
import select
import signal
import socket
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import anyio

from mcp_toolbridge.sandbox.bwrap import ROOT_READ_ONLY, Plan
from mcp_toolbridge.sandbox.seccomp import open_program

ZYGOTE = Path(__file__).with_name("zygote.py")
ZYGOTE_INSIDE = "/run/mcp-toolbridge/zygote.py"
PER_KEY = 4
TOTAL = 12
IDLE_S = 60.0
REQUEST_BYTES = 128 * 1024
"""A call whose command and environment need more than this runs in a fresh sandbox (one
datagram carries them, and a socket's send buffer bounds a datagram)."""
REAP_S = 1.0
SETTLE_S = 5.0
"""The longest a launch waits for a warm sandbox's word that its last call left nothing
(the zygote's look at its private places: well under a millisecond of CPU)."""
TIDY_S = 1.0
"""A launch that finds a warm sandbox looks for ended ones at most this often (each look
polls every idle sandbox's bubblewrap: a ``waitpid`` each)."""
_SEEN = 256


class WarmLost(Exception):
    """The warm sandbox ended under its call (its processes were killed or it failed);
    ``sent``: after the call was handed to it (its command may have started)."""

    def __init__(self, message: str, *, sent: bool = True) -> None:
        super().__init__(message)
        self.sent = sent


class Process(Protocol):
    """What the pool needs of a spawned sandbox (a ``subprocess.Popen``)."""

    @property
    def pid(self) -> int: ...

    def poll(self) -> int | None: ...


Spawn = Callable[[Sequence[str], Sequence[int]], Process]
"""Starts a command with these descriptors inherited (the executors do: they start
processes)."""


class WarmSandbox:
    """One sandbox set up ahead, the zygote in it, and the server's end of its socket."""

    def __init__(self, plan: Plan, proc: Process, control: socket.socket) -> None:
        self.options = plan.options
        self.key = sandbox_key(plan)
        self.proc = proc
        self.control = control
        self.ready = False
        self.busy = False
        self.gone = False
        self.reusable = False
        """Set by the end of a call whose command exited (not killed with its sandbox)."""
        self.settling = False
        """After such a call, until the zygote says the call left nothing behind (ready
        again): it looks after sending the exit, so the call's answer need not wait."""
        self.program: str | None = None
        """The program of the call it was last handed."""

    @classmethod
    def spawn(cls, plan: Plan, python: str, spawn: Spawn) -> WarmSandbox:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        zygote = ("--ro-bind", str(ZYGOTE), ZYGOTE_INSIDE, *ROOT_READ_ONLY, "--chdir", "/", "--")
        run = [python, "-I", "-S", ZYGOTE_INSIDE, str(theirs.fileno()), str(IDLE_S), plan.limits]
        run += plan.private
        fds = [theirs.fileno()]
        options = list(plan.options)
        try:
            if plan.seccomp is not None:  # read by bubblewrap as it starts: nothing per call
                fds.append(open_program(plan.seccomp))
                options[:0] = ["--seccomp", str(fds[-1])]
            proc = spawn([plan.bwrap, *options, *zygote, *run], fds)
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
            for fd in fds[1:]:
                os.close(fd)
        ours.setblocking(False)
        return cls(plan, proc, ours)

    def poll_ready(self) -> bool:
        """Whether it can take a call now (without waiting)."""
        if self.gone or self.busy:
            return False
        return self._heard()

    async def settled(self) -> bool:
        """Whether it is ready for the call it was taken for: after a call, the zygote's word
        that the call left nothing behind, waited for (at most :data:`SETTLE_S`); False when
        it ended instead (the call left something: the zygote ends the sandbox) or is
        silent."""
        if self.ready:
            return not self.gone
        with anyio.move_on_after(SETTLE_S):
            # `_heard` ends a sandbox it finds gone (its socket then closed): look at `gone`
            # after it, never wait on a closed socket
            while not self._heard() and not self.gone:
                try:
                    await anyio.wait_readable(self.control)
                except (OSError, ValueError, anyio.ClosedResourceError):
                    self.end()
        return self.ready and not self.gone

    def _heard(self) -> bool:
        """Whether it has said it is ready (read without waiting); ends it when it is gone."""
        if self.proc.poll() is not None:
            self.end()
            return False
        if not self.ready:
            try:
                self.ready = bool(_decode(self.control.recv(4096)).get("ready"))
            except (BlockingIOError, InterruptedError):
                return False
            except (OSError, ValueError):  # the end of the stream (b""): the zygote ended
                self.end()
                return False
            self.settling = not self.ready
        return self.ready

    def start(self, plan: Plan, fds: Sequence[tuple[int, int]]) -> None:
        """Hand the call's command over: ``fds`` are (descriptor here, its number there).
        Raises WarmLost (``sent`` False) when the sandbox is gone; a command that cannot be
        started is told by :meth:`wait_exit`."""
        request = {
            "program": plan.program,
            "argv": list(plan.argv),
            "env": plan.env,
            "cwd": plan.workdir,
            "fds": [target for _, target in fds],
        }
        self.reusable = False
        rights = array.array("i", [fd for fd, _ in fds])
        ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, rights.tobytes())]
        try:
            self.control.sendmsg([json.dumps(request).encode()], ancillary)
        except OSError as exc:
            raise WarmLost(f"the warm sandbox did not take the call ({exc})", sent=False) from exc
        self.program = plan.program

    async def wait_exit(self) -> int:
        """The command's status (128 + N when killed by signal N) once it and every process it
        left are gone. Raises OSError as ``execve`` would when the command could not be
        started, WarmLost when the sandbox ended. The sandbox is then :attr:`settling`: the
        zygote looks at its private places and says whether it is ready again."""
        reply = await self._receive()
        if "error" in reply:
            number, text, name = reply["error"]
            raise OSError(number, text, name)
        code = int(reply["exit"])
        self.ready = False
        self.settling = self.reusable = True
        return code

    def signal_group(self, signum: int) -> None:
        self._tell({"signal": int(signum)})

    def kill_all(self) -> None:
        self._tell({"kill": True})

    def end(self) -> None:
        """Kill the sandbox (its init, and with it every process in it) and reap bubblewrap,
        which exits at once (waited for at most :data:`REAP_S`)."""
        if not self.gone:
            self.gone = True
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.control.close()
        if self.proc.poll() is None:
            try:
                pidfd = os.pidfd_open(self.proc.pid)
            except OSError:
                return
            try:
                select.select([pidfd], [], [], REAP_S)
            finally:
                os.close(pidfd)
            self.proc.poll()

    @property
    def ended(self) -> bool:
        """Ended and reaped (bubblewrap exits at once when killed)."""
        return self.gone and self.proc.poll() is not None

    def _tell(self, message: dict[str, Any]) -> None:
        try:
            self.control.send(json.dumps(message).encode())
        except OSError:
            pass  # gone: the call's wait says so

    async def _receive(self) -> dict[str, Any]:
        while True:
            try:
                await anyio.wait_readable(self.control)
                data = self.control.recv(4096)
            except (BlockingIOError, InterruptedError):
                continue
            except (OSError, anyio.ClosedResourceError) as exc:
                raise WarmLost(f"the warm sandbox ended ({exc})") from exc
            if not data:
                raise WarmLost("the warm sandbox ended during the call")
            try:
                return _decode(data.decode())
            except ValueError as exc:
                raise WarmLost(f"the warm sandbox answered {data[:80]!r}") from exc


def _decode(data: bytes | str) -> dict[str, Any]:
    message = json.loads(data)
    if not isinstance(message, dict):
        raise ValueError("not an object")
    return message


class WarmPool:
    """The warm sandboxes of one server, by their options."""

    def __init__(self, python: str, *, per_key: int = PER_KEY, total: int = TOTAL) -> None:
        self.python = python
        self.enabled = True
        """False: no warm sandboxes (``[sandbox] warm = false``)."""
        self.spawn: Spawn | None = None
        """Set by the executors once the sandbox works (they start processes); None: no warm
        sandboxes."""
        self.per_key = per_key
        self.total = total
        self.sandboxes: list[WarmSandbox] = []
        self.seen: OrderedDict[tuple[str, ...], int] = OrderedDict()
        """Launches per set of options lately (bounded); a set seen before gets warmed."""
        self.cooling: OrderedDict[tuple[tuple[str, ...], str], _Cooling] = OrderedDict()
        """Programs whose calls left a warm sandbox unusable, by options (bounded)."""
        self.closed = False
        self.taken = 0
        """Launches given a warm sandbox (one found lost before the hand-over falls back to a
        fresh sandbox)."""
        self._tidied = float("-inf")
        weakref.finalize(self, _end_all, self.sandboxes)  # a pool dropped without close()

    def take(self, plan: Plan) -> WarmSandbox | None:
        """A ready sandbox for ``plan``, marked busy; None: run it in a fresh one."""
        now = time.monotonic()
        if now >= self._tidied + TIDY_S:
            self._tidy()
            self._tidied = now
        cooling = self.cooling.get((plan.options, plan.program))
        if cooling is not None and cooling.skip > 0:
            cooling.skip -= 1
            return None
        ours = list(self._of(sandbox_key(plan)))
        chosen = next((s for s in ours if self._poll(s)), None) or next(
            (s for s in ours if s.settling and not s.busy and not s.gone), None
        )  # one still looking after its last call: see WarmSandbox.settled
        if chosen is None or _request_bytes(plan) > REQUEST_BYTES:
            return None
        chosen.busy = True
        self.taken += 1
        return chosen

    def missed(self, plan: Plan) -> None:
        """A launch of ``plan`` ran in a fresh sandbox: warm one for the next when it is
        likely to come (these options were launched before), none is ready for it, and there
        is room."""
        if self.closed or self.spawn is None or not self.enabled:
            return
        self._tidy()  # the count below is of sandboxes not ended
        launches = self.seen.pop(plan.options, 0) + 1
        self.seen[plan.options] = launches
        _bound(self.seen)
        if launches < 2 or len(self.sandboxes) >= self.total or not _warmable(plan.options):
            return
        ours = list(self._of(sandbox_key(plan)))
        ready = [self._poll(s) for s in ours]  # each looked at: a strike for one ended
        if len(ours) >= self.per_key or any(ready):
            return  # at the cap, or one is ready (this launch was not given it: see take)
        try:
            self.sandboxes.append(WarmSandbox.spawn(plan, self.python, self.spawn))
        except OSError:
            return  # the next launch says why, in a fresh sandbox

    def give_back(self, sandbox: WarmSandbox) -> None:
        """After its call: idle again when the call left it as it was, else ended. A program
        whose call left it unusable (anything behind, or the sandbox killed) then runs in
        fresh sandboxes for 2, 4, ... 64 launches before it gets a warm one again: each warm
        one would serve it once. Other programs with the same options keep theirs."""
        sandbox.busy = False
        if sandbox.reusable and not self.closed and not sandbox.gone:
            return
        sandbox.end()
        self._strike(sandbox)
        self._tidy()

    def _poll(self, sandbox: WarmSandbox) -> bool:
        """``sandbox.poll_ready()``; a strike when it ended after a call instead (see
        :meth:`give_back`)."""
        ready = sandbox.poll_ready()
        if sandbox.gone and sandbox.settling:
            self._strike(sandbox)
        return ready

    def _strike(self, sandbox: WarmSandbox) -> None:
        """Its last call's program left it unusable: that program runs fresh for a while."""
        sandbox.settling = False
        if sandbox.program is not None and not self.closed:
            key = (sandbox.options, sandbox.program)
            cooling = self.cooling.pop(key, None) or _Cooling()
            cooling.strikes = min(cooling.strikes + 1, 6)
            cooling.skip = 2**cooling.strikes
            self.cooling[key] = cooling
            _bound(self.cooling)

    def close(self) -> None:
        """End the warm sandboxes (the server is stopping, or reloaded): the idle ones now,
        those running a call once it ends; none is made any more."""
        self.closed = True
        for sandbox in self.sandboxes:
            if not sandbox.busy:
                sandbox.end()
        self._tidy()

    def _of(self, key: tuple[object, ...]) -> Iterator[WarmSandbox]:
        return (s for s in self.sandboxes if s.key == key and not s.gone)

    def _tidy(self) -> None:
        """Forget ended sandboxes (those idle for :data:`IDLE_S` end by themselves)."""
        for sandbox in self.sandboxes:
            if not sandbox.busy and not sandbox.gone and sandbox.proc.poll() is not None:
                sandbox.end()
                if sandbox.settling:
                    self._strike(sandbox)
        self.sandboxes[:] = [s for s in self.sandboxes if not s.ended]


@dataclass(slots=True)
class _Cooling:
    strikes: int = 0
    skip: int = 0
    """Launches still to run fresh."""


def _bound(recent: OrderedDict[Any, Any]) -> None:
    while len(recent) > _SEEN:
        recent.popitem(last=False)


_BINDS = frozenset({"--bind", "--bind-try", "--ro-bind", "--ro-bind-try", "--dev-bind"})
_ABOVE_ZYGOTE = frozenset({"/", "/run", os.path.dirname(ZYGOTE_INSIDE)})


def _warmable(options: Sequence[str]) -> bool:
    """Whether the zygote can be put in this sandbox without touching the host: not where a
    writable root shows the host's ``/run`` (a tool granted ``/`` for writing), since bubblewrap
    would make the zygote's mount point there, on the host. Such launches always run fresh."""
    return not any(
        option in ("--bind", "--bind-try") and options[i + 2] in _ABOVE_ZYGOTE
        for i, option in enumerate(options)
    )


def sandbox_key(plan: Plan) -> tuple[object, ...]:
    """What a warm sandbox must match to run ``plan``: its options and limits, and what each
    bind mount found on the host (a folder made, removed or replaced since the sandbox was set
    up would be mounted otherwise now)."""
    found: list[object] = []
    seen: dict[str, object] = {}  # a source bound more than once (/dev/null) is looked at once
    options = plan.options
    for i, option in enumerate(options):
        if option in _BINDS:
            source = options[i + 1]
            if source not in seen:
                try:
                    info = os.stat(source)
                except OSError:
                    seen[source] = None
                else:
                    seen[source] = (info.st_dev, info.st_ino)
            found.append(seen[source])
    return (options, plan.limits, tuple(found))


def _end_all(sandboxes: list[WarmSandbox]) -> None:
    for sandbox in sandboxes:
        sandbox.end()


def _request_bytes(plan: Plan) -> int:
    size = sum(len(a) + 8 for a in plan.argv) + len(plan.program) + len(plan.workdir)
    return size + sum(len(k) + len(v) + 8 for k, v in plan.env.items()) + 256
