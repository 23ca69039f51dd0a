"""The bubblewrap command line for one launch: a profile, the host's facts and the command.

The sandbox's root is an empty tmpfs; into it go, in order of depth (parents first):

- the system view, read-only: ``/usr``, ``/etc`` and the ``/bin``, ``/sbin``, ``/lib*`` links
  or folders; the server's interpreter (``sys.prefix``, ``sys.base_prefix``);
- what the launch itself needs, read-only: the command (and the folder it was found in, and
  that folder's prefix when it is a ``bin``, ``sbin`` or ``shims`` folder: ``~/.nvm/.../bin/node``
  brings its ``lib``), the interpreter named by a script's ``#!`` line, each folder (and
  prefix) on the server's ``PATH`` and the working directory. A command name is looked up on
  the server's ``PATH`` too: never on the launch's own, so no tool's environment can choose a
  folder its sandbox shows. None of these may be ``/``, the home folder or a
  folder above it, or lie inside a secret path: those are only visible when granted;
- the profile's ``fs.read`` roots read-only, its ``fs.write`` roots writable;
- a fresh ``/proc`` (of the sandbox's own PID namespace), a minimal read-only ``/dev`` with
  a private size-capped ``/dev/shm``, a private size-capped ``/tmp`` and, when the home
  folder is not granted, an empty private one;
- the kernel's knobs out of reach (``kernel.py``): some of ``/proc`` read-only, some hidden;
  ``/sys`` is not there (read-only under a grant of ``/``), and a root granted inside
  ``/proc`` or ``/sys`` is read-only even when granted for writing;
- the masks: each secret path that exists under a visible root becomes empty and read-only,
  unless it is granted by name; a granted root inside it is mounted over the mask;
- what decides a tool's trust (``guard.py``: served manifests, their programs, the
  project's ``.toolbridge/``, the policy, secrets and audit files), read-only over a writable
  root holding it, each folder between bound onto itself so that none can be renamed; a
  writable root at or inside one is read-only (a write grant inside a served folder).

Namespaces: user, mount, PID, IPC, UTS, cgroup and (unless the profile has the full network)
network; no capabilities, ``no_new_privs`` (bubblewrap always sets it), no further user
namespaces inside, SIGKILL when the server dies. A mount nested in one of the same kind is left
out (it would change nothing), which keeps the command short.
"""

from __future__ import annotations

import errno
import functools
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mcp_toolbridge.sandbox import seccomp
from mcp_toolbridge.sandbox.guard import guard_plan
from mcp_toolbridge.sandbox.kernel import SYS, kernel_mounts, kernel_path
from mcp_toolbridge.sandbox.limits import Limits
from mcp_toolbridge.sandbox.profile import SandboxProfile
from mcp_toolbridge.sandbox.program import (
    Resolve,
    find_program,
    path_prefixes,
    real_path,
    resolver,
    within,
)

SYSTEM_PATHS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
TMP_BYTES = 1024 * 1024 * 1024
"""The private /tmp's size limit (tmpfs: memory is only used as files are written)."""
HOME_BYTES = 256 * 1024 * 1024
SHM = "/dev/shm"
SHM_BYTES = 256 * 1024 * 1024
"""The private /dev/shm's (bubblewrap's ``--dev`` leaves it a folder of ``/dev``'s own tmpfs,
whose size is the kernel's default: half the machine's memory); ``/dev`` itself is read-only,
and so is the sandbox's root (bubblewrap's tmpfs of the same size), after every mount
(:data:`ROOT_READ_ONLY`: the last option, after a warm sandbox's zygote's too)."""
ROOT_READ_ONLY = ("--remount-ro", "/")
PROXY_DIR = "/run/mcp-toolbridge"
"""Where the proxy's socket folder is mounted inside the sandbox."""
PROXY_SOCKET = "proxy.sock"
PROXY_PORT = 3128
"""The port the relay listens on inside the sandbox's own network namespace."""
RELAY = Path(__file__).with_name("relay.py")
RLIMIT = Path(__file__).with_name("rlimit.py")
"""Sets the call's resource limits in a fresh sandbox where ``prlimit`` is missing."""
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")


# Kinds of mount, in the order they are applied to one path (writable first: a read-only
# mount of the same path then adds nothing). _PIN: a folder above a guarded path inside a
# writable root, bound onto itself (writable); _GUARD: a guarded path, read-only (guard.py).
_RW, _PIN, _RO, _GUARD, _PRIVATE, _MASK, _FIXED, _KERNEL = range(8)


@dataclass(frozen=True, slots=True, eq=False)
class HostView:
    """The facts about the host every launch uses (looked up once). Compared and hashed by
    identity: it keys per-launch caches, and one is made per set of facts (confine.py)."""

    bwrap: str
    home: Path | None
    masks: tuple[Path, ...]
    system: tuple[tuple[str, ...], ...]
    """``("--ro-bind", p, p)`` or ``("--symlink", target, p)`` for each system path."""
    python: tuple[Path, ...]
    python_exe: str
    resolver: tuple[Path, ...]
    """What name resolution needs beyond /etc (for profiles with the full network)."""
    kernel: tuple[tuple[str, ...], ...]
    """The mounts that put the kernel's knobs under /proc out of reach (``PROC_READ_ONLY``,
    ``PROC_HIDDEN``), for those this kernel has."""
    prlimit: str | None = None
    """util-linux's ``prlimit`` in the system view: what sets a fresh sandbox's resource
    limits (``limits.py``); else ``rlimit.py`` does, with the server's interpreter."""
    seccomp: bytes | None = None
    """The seccomp filter every sandbox runs under (``seccomp.py``); None without libseccomp."""
    guarded: tuple[str, ...] = ()
    """Real paths read-only in every sandbox whose writable roots hold them (``guard.py``)."""
    links: tuple[str, ...] = ()
    """Folders holding a link on a guarded path: no writable root may hold one."""
    path: str | None = None
    """The server's ``PATH`` (what ``build_env`` gives a tool): the folders every launch shows
    and where a command name is looked up. Never the launch's environment: whatever set a
    tool's ``PATH`` would choose what its sandbox shows (found by the red-team pass of
    2026-11-29, 4th, through an AgentPM manifest's ``PATH``)."""
    lookup: str = field(init=False)
    """``path``, or ``os.defpath`` without one: where :func:`find_program` looks."""
    path_shown: tuple[str, ...] = field(init=False)
    """The folders of ``path`` (and prefixes) a launch shows, found once."""
    mask_names: frozenset[str] = field(init=False)
    """``masks`` as strings, for lookups."""
    system_roots: frozenset[str] = field(init=False)
    """The paths ``system`` puts in place."""
    mask_index: tuple[tuple[str, frozenset[str]], ...] = field(init=False)
    """Each mask and its ancestors (itself included): a mask is only needed under a visible
    root, and checking that is one set lookup per launch."""

    def __post_init__(self) -> None:
        names = tuple(map(str, self.masks))
        object.__setattr__(self, "mask_names", frozenset(names))
        object.__setattr__(self, "system_roots", frozenset(args[-1] for args in self.system))
        object.__setattr__(self, "mask_index", tuple((m, frozenset(_ancestors(m))) for m in names))
        object.__setattr__(self, "lookup", self.path if self.path is not None else os.defpath)
        folders = [d for d in (self.path or "").split(os.pathsep) if d.startswith("/")]
        shown = dict.fromkeys(path_prefixes(folders, self.home))
        object.__setattr__(self, "path_shown", tuple(p for p in shown if _implicit_ok(self, p)))

    @classmethod
    def detect(
        cls,
        bwrap: str,
        *,
        home: Path | None,
        masks: Sequence[Path],
        path: str | None = None,
        guarded: tuple[str, ...] = (),
        links: tuple[str, ...] = (),
    ) -> HostView:
        system: list[tuple[str, ...]] = []
        for where in SYSTEM_PATHS:
            if os.path.islink(where):
                system.append(("--symlink", os.readlink(where), where))
            elif os.path.isdir(where):
                system.append(("--ro-bind", where, where))
        prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
        python = tuple(
            sorted({Path(os.path.realpath(p)) for p in prefixes} | set(map(Path, prefixes)))
        )
        resolv = Path(os.path.realpath("/etc/resolv.conf")).parent
        resolver = () if within(str(resolv), "/etc") else (resolv,)
        real_home = Path(os.path.realpath(home)) if home is not None else None
        real_masks = tuple(dict.fromkeys(Path(os.path.realpath(m)) for m in masks))
        return cls(
            bwrap=bwrap,
            home=real_home,
            masks=real_masks,
            system=tuple(system),
            python=python,
            python_exe=sys.executable or "python3",
            resolver=resolver,
            kernel=kernel_mounts(),
            prlimit=_system_prlimit(),
            seccomp=seccomp.program(),
            guarded=guarded,
            links=links,
            path=path,
        )


@dataclass(frozen=True, slots=True)
class _Mount:
    path: str
    kind: int
    args: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Plan:
    """One launch in its sandbox: what bubblewrap sets up (``options``: everything but the
    working directory and the command, so launches with equal options can share a sandbox set
    up before them, see ``warm.py``) and what then runs."""

    bwrap: str
    options: tuple[str, ...]
    workdir: str
    program: str
    argv: tuple[str, ...]
    """The command as given (``argv[0]`` is what the program sees as its name)."""
    env: dict[str, str]
    private: tuple[str, ...]
    """The sandbox's own writable places, which are not the host's: its root, ``/dev``,
    ``/tmp`` and (when not granted) the home folder."""
    run: tuple[str, ...]
    """What bubblewrap runs: the program, or what sets the call's resource limits and then
    runs it (``prlimit``, or the relay of a proxy profile)."""
    limits: str = ""
    """The call's resource limits as the zygote and the relay read them (``limits.py``)."""
    seccomp: bytes | None = None
    """The seccomp filter bubblewrap is given (``--seccomp FD``), None for none."""

    def command(self, info_fd: int | None = None, seccomp_fd: int | None = None) -> list[str]:
        """The bubblewrap argv that runs the command (``seccomp_fd``: where bubblewrap reads
        :attr:`seccomp` from)."""
        command = [self.bwrap, *self.options]
        if info_fd is not None:
            command[1:1] = ["--info-fd", str(info_fd)]
        if seccomp_fd is not None:
            command[1:1] = ["--seccomp", str(seccomp_fd)]
        if self.program != self.argv[0] and self.run == (self.program, *self.argv[1:]):
            command += ["--argv0", self.argv[0]]
        return [*command, *ROOT_READ_ONLY, "--chdir", self.workdir, "--", *self.run]


def plan_launch(
    view: HostView,
    profile: SandboxProfile,
    argv: Sequence[str],
    *,
    cwd: str | None,
    env: Mapping[str, str],
    proxy_dir: str | None = None,
    limits: Limits | None = None,
) -> Plan:
    """How ``argv`` runs inside ``profile`` (under ``limits``, set inside the sandbox).

    Raises OSError (as ``execve`` would, with the file name) when the program or the working
    directory cannot be used, so spawn errors read the same with and without the sandbox.
    """
    resolve = resolver()
    workdir = resolve(cwd if cwd is not None else os.getcwd())
    if cwd is not None and not os.path.isdir(workdir):
        raise FileNotFoundError(errno.ENOENT, "No such directory", cwd)
    program, needs = find_program(argv[0], workdir, view.lookup, resolve)
    fallback = limits is not None and proxy_dir is None and view.prlimit is None
    implicit = _implicit(view, profile, needs, workdir, proxy=proxy_dir is not None)
    implicit += [str(RLIMIT)] if fallback else []
    mounts = _mounts(view, profile, implicit, resolve)
    options = ["--unshare-all", "--unshare-user", "--disable-userns"]
    if profile.network == "full":
        options.append("--share-net")
    options += ["--die-with-parent", "--cap-drop", "ALL"]
    for mount in mounts:
        options += mount.args
    for mount in mounts:  # last, so that granted roots inside a masked folder could be mounted
        if mount.kind == _MASK and mount.args[0] == "--tmpfs":
            options += ["--remount-ro", mount.path]
    options += ["--remount-ro", "/dev"]  # a tmpfs of half the machine's memory
    private = ("/", "/dev", *(m.path for m in mounts if m.kind == _PRIVATE))
    child_env = dict(env)
    if "TMPDIR" in child_env:
        child_env["TMPDIR"] = "/tmp"
    run: tuple[str, ...] = (program, *argv[1:])
    encoded = limits.encoded() if limits is not None else ""
    if limits is not None and proxy_dir is None:
        if view.prlimit is not None:
            name = _exec_name(view, program, argv[0], env)
            run = (*limits.prlimit_args(view.prlimit), name, *argv[1:])
        else:
            run = (view.python_exe, "-I", "-S", str(RLIMIT), encoded, program, *argv)
    if proxy_dir is not None:
        options += ["--ro-bind", proxy_dir, PROXY_DIR]
        proxy = f"http://127.0.0.1:{PROXY_PORT}"
        child_env.update(dict.fromkeys(PROXY_VARIABLES, proxy))
        child_env.pop("NO_PROXY", None)
        child_env.pop("no_proxy", None)
        socket = f"{PROXY_DIR}/{PROXY_SOCKET}"
        relay = (view.python_exe, "-I", "-S", str(RELAY), socket, str(PROXY_PORT), encoded)
        run = (*relay, program, *argv)
    return Plan(
        bwrap=view.bwrap,
        options=tuple(options),
        workdir=workdir,
        program=program,
        argv=tuple(argv),
        env=child_env,
        private=private,
        run=run,
        limits=encoded,
        seccomp=view.seccomp,
    )


def _exec_name(view: HostView, program: str, name: str, env: Mapping[str, str]) -> str:
    """What ``prlimit`` is told to run (it has no ``--argv0``: the program gets what it is
    told as ``argv[0]``): the command as given when its ``execvp`` finds ``program`` from it
    as :func:`find_program` did (a name looked up on the same ``PATH``, the server's, of
    absolute folders, all shown), else ``program``."""
    if name == program or "/" in name or env.get("PATH", os.defpath) != view.lookup:
        return program
    folders = view.lookup.split(os.pathsep)
    return name if all(folder.startswith("/") for folder in folders) else program


def _system_prlimit() -> str | None:
    found = shutil.which("prlimit", path="/usr/bin:/bin")
    return os.path.realpath(found) if found is not None else None


def _implicit(
    view: HostView,
    profile: SandboxProfile,
    needs: Sequence[str],
    workdir: str,
    *,
    proxy: bool,
) -> list[str]:
    """What a launch shows by itself: what its program needs, the working directory, the
    interpreter, the relay (a proxy profile), the resolver (the full network), the folders on
    the server's PATH."""
    implicit = [*needs, workdir, *map(str, view.python)]
    implicit.append(str(RELAY) if proxy else "")
    if profile.network == "full":
        implicit += map(str, view.resolver)
    implicit = [p for p in implicit if p and _implicit_ok(view, p)]
    return implicit + list(view.path_shown)


def shows(
    view: HostView,
    profile: SandboxProfile,
    argv: Sequence[str],
    path: str,
    *,
    cwd: str | None,
    env: Mapping[str, str],
) -> bool:
    """Whether the host's ``path`` is visible, as it is on the host, to ``argv`` launched in
    ``profile`` (what :func:`plan_launch` would mount): the deepest mount above it binds the
    host's folder, not an empty or private one, a mask, or nothing. ``env`` changes nothing
    of that (the launch's PATH included: the server's is used)."""
    workdir = real_path(cwd if cwd is not None else os.getcwd())
    try:
        _, needs = find_program(argv[0], workdir, view.lookup, real_path)
    except OSError:
        needs = []
    implicit = _implicit(view, profile, needs, workdir, proxy=profile.network == "proxy")
    target = real_path(path)
    holder: _Mount | None = None
    try:
        mounts = _mounts(view, profile, implicit, real_path)
    except OSError:  # refused (guard.py): it would not run
        return False
    for mount in mounts:  # parents first: the last one holding it
        if within(target, mount.path):
            holder = mount
    if holder is not None and holder.kind == _KERNEL:  # the host's, read-only, or hidden
        return holder.args[1] == holder.path
    return holder is not None and holder.kind in (_RO, _RW, _PIN, _GUARD)


def _mounts(
    view: HostView,
    profile: SandboxProfile,
    implicit: list[str],
    resolve: Resolve,
) -> tuple[_Mount, ...]:
    """Every mount, parents first, leaving out those nested in one of the same kind.

    What can change between launches is looked up every time (where each root leads, which
    secret paths exist and whether they are folders, whether the home folder exists); placing
    the mounts from those facts is done once per distinct set of facts."""
    read = tuple(resolve(p) for p in profile.read)
    write = tuple(resolve(p) for p in profile.write)
    if any(map(kernel_path, write)):  # the kernel's knobs are never writable
        read += tuple(filter(kernel_path, write))
        write = tuple(p for p in write if not kernel_path(p))
    shown = tuple(dict.fromkeys(implicit))
    roots = {*view.system_roots, *shown, *read, *write}
    granted = {*read, *write}
    masks: list[tuple[str, bool]] = []
    for mask, above in view.mask_index:
        if roots.isdisjoint(above):
            continue  # under no visible root: nothing to hide
        if mask in granted:
            continue  # granted by name; a root inside it is mounted over the mask instead
        if os.path.isdir(mask):
            masks.append((mask, True))
        elif os.path.lexists(mask):
            masks.append((mask, False))
    home = str(view.home) if view.home is not None else None
    private_home = home is not None and home != "/" and os.path.isdir(home)
    if view.guarded:  # raises where a writable root holds a link (guard.py)
        pins, guards, read, write = guard_plan(view.guarded, view.links, read, write)
    else:
        pins, guards = (), ()
    return _place(view, shown, read, write, tuple(masks), private_home, pins, guards)


@functools.lru_cache(maxsize=256)
def _place(
    view: HostView,
    shown: tuple[str, ...],
    read: tuple[str, ...],
    write: tuple[str, ...],
    masks: tuple[tuple[str, bool], ...],
    private_home: bool,
    pins: tuple[str, ...] = (),
    guards: tuple[str, ...] = (),
) -> tuple[_Mount, ...]:
    """The mounts for these facts (``masks``: each secret path to hide, True for a folder;
    ``pins`` and ``guards``: see :func:`.guard.guard_plan`)."""
    wanted: list[_Mount] = [_Mount(args[2], _RO, args) for args in view.system]
    for path in shown:
        wanted.append(_Mount(path, _RO, ("--ro-bind-try", path, path)))
    for path in read:
        wanted.append(_Mount(path, _RO, ("--ro-bind-try", path, path)))
    for path in write:
        wanted.append(_Mount(path, _RW, ("--bind-try", path, path)))
    wanted += (_Mount(path, _PIN, ("--bind-try", path, path)) for path in pins)
    wanted += (_Mount(path, _GUARD, ("--ro-bind-try", path, path)) for path in guards)
    wanted.append(_Mount("/tmp", _PRIVATE, ("--size", str(TMP_BYTES), "--tmpfs", "/tmp")))
    home = str(view.home) if view.home is not None else None
    if home is not None and private_home:
        wanted.append(_Mount(home, _PRIVATE, ("--size", str(HOME_BYTES), "--tmpfs", home)))
    for mask, folder in masks:
        args = ("--tmpfs", mask) if folder else ("--ro-bind", "/dev/null", mask)
        wanted.append(_Mount(mask, _MASK, args))
    wanted.append(_Mount("/proc", _FIXED, ("--proc", "/proc")))
    wanted.append(_Mount("/dev", _FIXED, ("--dev", "/dev")))
    wanted.append(_Mount(SHM, _PRIVATE, ("--size", str(SHM_BYTES), "--tmpfs", SHM)))
    wanted += (_Mount(args[-1], _KERNEL, args) for args in view.kernel)
    wanted.append(_Mount(SYS, _KERNEL, ("--ro-bind-try", SYS, SYS)))
    wanted.sort(key=lambda m: (m.path.count("/") - (m.path == "/"), m.kind))
    placed: list[_Mount] = []
    latest: dict[str, _Mount] = {}
    for mount in wanted:
        parent = next((latest[a] for a in _ancestors(mount.path) if a in latest), None)
        if _keep(mount, parent, home):
            placed.append(mount)
            latest[mount.path] = mount
    return tuple(placed)


def _keep(mount: _Mount, parent: _Mount | None, home: str | None) -> bool:
    kind = mount.kind
    if kind == _FIXED:
        return True
    if kind in (_PIN, _GUARD):  # only inside a writable root: elsewhere nothing writes it
        return parent is not None and parent.kind in (_RW, _PIN)
    if kind == _KERNEL:  # in /proc; /sys only where a writable root shows it
        return parent is not None and parent.kind in (_FIXED, _RW, _PIN)
    if kind == _MASK:  # only what is visible needs hiding
        return parent is not None and parent.kind in (_RO, _RW, _PIN, _GUARD)
    if kind == _PRIVATE and mount.path == home:  # home granted: it stays as granted
        return parent is None or parent.kind == _PRIVATE
    if kind == _PRIVATE:
        return parent is None or parent.kind not in (_RW, _PIN, _PRIVATE)
    if parent is None or parent.kind in (_PRIVATE, _MASK, _FIXED):
        return True
    # Writing implies reading: a read-only root inside a writable one would take writes away.
    return not (kind == _RO or (kind == _RW and parent.kind == _RW))


@functools.lru_cache(maxsize=1024)
def _implicit_ok(view: HostView, path: str) -> bool:
    """What a launch adds by itself never exposes /, the home folder or what is above it,
    nor anything inside a secret path."""
    if path == "/":
        return False
    if view.home is not None and within(str(view.home), path):
        return False
    return view.mask_names.isdisjoint(_ancestors(path))


def _ancestors(path: str) -> list[str]:
    """``/a/b`` -> ``/a/b``, ``/a``, ``/``."""
    out = [path]
    while path != "/":
        path = path.rsplit("/", 1)[0] or "/"
        out.append(path)
    return out
