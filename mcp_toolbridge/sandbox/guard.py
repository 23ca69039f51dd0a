"""What decides a tool's trust, held read-only in every sandbox that could write it.

The server reads, at its next start (at once under ``--watch``), files a tool with a write
grant could otherwise change: the served manifests (under ``grant = "declared"`` a manifest's
requirements extend its tool's scope), the programs served tools run (and the policy's
watchdog, run for every call), the workspace's ``.toolbridge/`` (its allow rules apply with
``trust_project_allow = true``), the ``--policy`` file, the secrets file, the audit log. Each
of these (its real path, links followed) is mounted read-only over any writable grant holding
it, and each folder between that grant and it is bound onto itself, writable as before, so
that it is a mount point: the kernel refuses to rename or remove a mount point (``EBUSY``),
and renaming an ancestor cannot put another folder at the path the server reads (found by
the red-team pass of 2026-11-29, 5th).

These are set when a sandbox is set up (a warm sandbox's before its calls): nothing per call.
A path a served tool's command names that is missing cannot be mounted over: a launch naming
one that exists later is refused instead (:func:`appeared`; a look per call only while some
are missing). A call running when a reload holds a path it may write is ended
(:class:`Running`: an entry added and removed per call).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mcp_toolbridge.policy import Decision, Policy, named_files
from mcp_toolbridge.sandbox.program import within

log = logging.getLogger("mcp_toolbridge.sandbox")

PROJECT_FOLDER = ".toolbridge"
MADE_LATER = (
    "did not exist when the server loaded the tools that name it, and a tool may have made "
    "it since, so it is not run: restart the server once it is in place"
)
"""Why a launch naming such a path is refused (:func:`appeared`)."""
LINKED = (
    "it may write {}, which holds a link on a path that decides what tools may do (the "
    "start warned which), and could point it elsewhere for the next start, so nothing is "
    "run: name the real path instead"
)
"""Why a launch whose writable roots hold such a link is refused (:func:`guard_plan`)."""
MAX_ABSENT = 4096
_ABSENT: dict[str, None] = {}
"""The paths of served tools' commands that a load in this process found missing (the
latest :data:`MAX_ABSENT`): one made since is refused after a reload too, which a tool can
cause (a ``.toolbridge/policy.toml`` it makes where the folder is not held)."""
MAX_PROGRAMS = 64
"""Programs of served tools guarded one by one (besides those inside a served folder, which
the folder guards); past this, the rest are not, and the start says so (docs/security.md)."""


Guard = tuple[Sequence[Path], Sequence[Path | None], Sequence[str], Sequence[Path]]
"""What :func:`guarded_by` is given besides the policy: the served manifest paths, the files
that decide trust, the programs served tools run, the folders hidden too (the recording's)."""


@dataclass(frozen=True, slots=True)
class Guarded:
    """The paths guarded in every sandbox, and what a start says about them."""

    paths: tuple[str, ...] = ()
    """Real paths, none inside another."""
    asked: tuple[str, ...] = ()
    """Every guarded path, ``.toolbridge/`` when missing too (real paths): a write into one by
    ``write`` or ``edit`` (in the server, outside any sandbox) or bash asks, whatever the rules
    say."""
    warnings: tuple[str, ...] = ()
    missing: frozenset[str] = frozenset()
    """The paths of served tools' commands (and the watchdog's) outside the served folders
    that did not exist when a load of this process looked, as named and as real paths:
    nothing can be mounted over what is not there, so a launch that names one that exists
    now is refused (:func:`appeared`): a tool granted its folder may have made it."""
    links: tuple[str, ...] = ()
    """The real folders holding a symbolic link on a served or trusted path: only the real
    path can be mounted over, so a launch whose writable roots hold one is refused
    (:func:`guard_plan`): it could point the link elsewhere for the next start."""
    hidden: tuple[str, ...] = ()
    """Guarded folders that no sandbox shows either (real paths): ``serve --record``'s, whose
    files hold every caller's calls and results (``Sandbox.from_environ`` masks them)."""


def guarded(
    served: Sequence[Path],
    *,
    workspace: Path | None,
    trust_project: bool,
    files: Iterable[Path | None] = (),
    programs: Iterable[str] = (),
    writable: Sequence[Path] = (),
    hidden: Iterable[Path] = (),
) -> Guarded:
    """The guarded paths of a server serving ``served`` (manifest folders or files) in
    ``workspace``; ``files``: the policy, secrets and audit files; ``hidden``: folders held
    as these are and shown to no sandbox (the recording folder); ``programs``: the absolute
    paths served exec tools (and the watchdog) run, those that are not files left out;
    ``writable``: the policy's write grant, inside which a link on a served path or a missing
    one is warned about, and whose programs are held first past :data:`MAX_PROGRAMS`.

    With ``trust_project``, a missing ``<workspace>/.toolbridge`` is made (as the cache
    folder is): only a folder that exists can be mounted read-only, and a tool that made it
    would give itself allow rules."""
    warnings: list[str] = []
    paths: list[str] = []
    links: list[str] = []
    for path in served:
        real = os.path.realpath(path)
        links += _link_holders(path)
        paths.append(real)  # a served file: that file (its folder may be the workspace)
        if workspace is not None and within(os.path.realpath(workspace), real):
            warnings.append(
                f"the workspace lies inside the served manifest folder {path}, which is "
                "read-only to every tool: serve a folder of manifests inside it instead"
            )
        if not os.path.lexists(path) and any(within(real, os.path.realpath(w)) for w in writable):
            warnings.append(
                f"the served manifest path {path} does not exist, so it cannot be held "
                "read-only: a tool that may write its folder can make it, and the next start "
                "serves what it puts there; make it (an empty folder) or stop serving it"
            )
        fix = f"serve the real path ({real}) instead"
        warnings += _linked(path, writable, "the served manifest path", "serves", fix)
    hidden = list(hidden)  # a link on one is warned about and refused as on the audit file
    trusted = [*(f for f in files if f is not None), *hidden]
    if workspace is not None:
        project = workspace / PROJECT_FOLDER
        if trust_project:
            with contextlib.suppress(OSError):  # unusable: the rules are read from nothing
                project.mkdir(mode=0o755, exist_ok=True)
        trusted.insert(0, project)
    for path in trusted:  # a link on these too (red-team pass of 2026-11-29, 7th)
        real = os.path.realpath(path)
        links += _link_holders(path)
        paths.append(real)
        fix = f"name the real path ({real}) instead"
        if path.name == PROJECT_FOLDER:
            fix = f"make {path} a folder, not a link"
        warnings += _linked(path, writable, "the trusted path", "reads", fix)
    kept = _outermost(paths)
    for root in writable:
        real = os.path.realpath(root)
        inside = next((k for k in kept if within(real, k)), None)
        if inside is not None:
            warnings.append(
                f"the write grant {root} lies inside {inside}, which decides what tools may "
                "do: it is read-only in every sandbox; grant a folder outside it instead"
            )
    given = (*kept, *(os.path.abspath(p) for p in served))
    loose: list[str] = []
    missing: dict[str, None] = {}
    absent: list[str] = []  # warned and asked about: not words of a command beside a served file
    beside = {os.path.dirname(k) for k in kept if not os.path.isdir(k)}
    for program in dict.fromkeys(programs):  # most lie in a served folder: no system call
        if not program.startswith("/") or any(within(program, k) for k in given):
            continue
        real = os.path.realpath(program)
        if any(within(real, k) for k in kept):
            continue
        named = dict.fromkeys((os.path.normpath(program), real))
        there = os.path.exists(real)
        if not there:
            _ABSENT.update(named)
            if os.path.dirname(real) not in beside:  # git log from it: "log" is no program
                absent.append(real)
        if not there or not _ABSENT.keys().isdisjoint(named):
            missing.update(named)  # or made since: a tool can make a reload come (red-team 7)
        if os.path.isfile(real):
            loose.append(real)
    while len(_ABSENT) > MAX_ABSENT:
        del _ABSENT[next(iter(_ABSENT))]
    warnings += _missing_warning(absent, writable)
    # Those in the write grant first (a catalog of many /usr/bin programs would otherwise
    # leave out a script in a workspace whose name sorts after /usr: red-team pass 7).
    grant = [os.path.realpath(w) for w in writable]
    loose = sorted(set(loose), key=lambda p: (not any(within(p, w) for w in grant), p))
    if len(loose) > MAX_PROGRAMS:
        warnings.append(
            f"{len(loose)} programs of served tools lie outside the served folders; "
            f"{MAX_PROGRAMS} are read-only in every sandbox (those in the policy's write "
            "grant first, then by name), the others are not: a tool that may write one "
            "could change what another tool runs"
        )
    held = _outermost([*kept, *loose[:MAX_PROGRAMS]])
    asked = _outermost([*held, *loose, *absent])
    links = list(dict.fromkeys(links))
    masked = tuple(dict.fromkeys(os.path.realpath(h) for h in hidden))
    return Guarded(held, asked, tuple(warnings), frozenset(missing), tuple(links), masked)


def appeared(missing: frozenset[str], argv: Sequence[str], cwd: str | None) -> str | None:
    """The first path ``argv`` names (a word with a ``/``, taken from ``cwd``) among
    ``missing`` that exists now, else None: what it runs may be a tool's (found by the
    red-team pass of 2026-11-29, 7th). Nothing is looked up unless a word is such a path."""
    folder = ""
    for word in argv:
        if "/" not in word:
            continue
        folder = folder or (cwd if cwd is not None else os.getcwd())
        path = os.path.normpath(os.path.join(folder, word))
        if path in missing and os.path.lexists(path):
            return path
    return None


def _missing_warning(missing: Sequence[str], writable: Sequence[Path]) -> list[str]:
    """A warning naming the missing paths inside the write grant (where a tool may make
    one), if any."""
    grant = [os.path.realpath(w) for w in writable]
    named = sorted({p for p in missing if any(within(p, w) for w in grant)})
    if not named:
        return []
    shown = ", ".join(named[:3]) + (f" and {len(named) - 3} more" if len(named) > 3 else "")
    return [
        f"served tools name paths that do not exist where a tool may write ({shown}): "
        "nothing can be held read-only over them, so a launch that names one made while "
        "this server runs is refused (a tool may have made it); restart the server once "
        "it is in place"
    ]


@functools.lru_cache(maxsize=256)
def guard_plan(
    paths: tuple[str, ...],
    links: tuple[str, ...],
    read: tuple[str, ...],
    write: tuple[str, ...],
) -> tuple[tuple[str, ...], ...]:
    """For the roots ``read`` and ``write``: the folders to bind onto themselves (between
    the outermost writable root holding a guarded path and it: a writable root nested in
    another is not mounted), the guarded paths inside a writable root, and the roots again,
    a writable one at or inside a guarded path moved to the read-only ones (a write grant
    inside a served folder; its folder is not shown for it), as ``(pins, guards, read,
    write)``. Raises PermissionError where a writable root holds a folder of ``links``."""
    held = tuple(w for w in write if any(within(w, p) for p in paths))
    if held:
        read, write = (*read, *held), tuple(w for w in write if w not in held)
    for holder in links:  # a link cannot be mounted over: bubblewrap follows it
        if any(within(holder, w) for w in write) and not any(within(holder, p) for p in paths):
            raise PermissionError(errno.EPERM, LINKED.format(holder), holder)
    pins: dict[str, None] = {}
    guards: dict[str, None] = {}
    for path in paths:
        root = min((w for w in write if within(path, w)), key=len, default=None)
        if root is None:
            continue
        guards[path] = None
        folder = os.path.dirname(path)
        while folder != root and within(folder, root):
            pins[folder] = None
            folder = os.path.dirname(folder)
    return tuple(p for p in pins if p not in guards), tuple(guards), read, write


def _outermost(paths: Iterable[str]) -> tuple[str, ...]:
    """``paths`` without those inside another of them (sorted: parents first)."""
    out: list[str] = []
    for path in sorted(dict.fromkeys(paths)):
        if not any(within(path, kept) for kept in out):
            out.append(path)
    return tuple(out)


def _linked(path: Path, writable: Sequence[Path], what: str, does: str, fix: str) -> list[str]:
    """A warning when ``path`` goes through a link in a folder of ``writable``: the real path
    is held, the link cannot be (a mount goes where a link leads), so a tool that may write
    its folder is not run (:func:`guard_plan`)."""
    if not writable:
        return []
    link = _link_on(path)
    holder = os.path.realpath(os.path.dirname(link)) if link is not None else ""
    if not holder or not any(within(holder, os.path.realpath(w)) for w in writable):
        return []
    return [
        f"{what} {path} goes through the link {link}: a tool that may write the folder "
        f"holding the link could point it elsewhere, and the next start {does} what it "
        f"points to, so no such tool is run; {fix}"
    ]


def _link_holders(path: Path) -> list[str]:
    """The real folders holding each symbolic link on ``path`` (itself or a folder above):
    what may write one can point its link elsewhere."""
    absolute = Path(os.path.abspath(path))
    places = (*reversed(absolute.parents), absolute)
    return [os.path.realpath(p.parent) for p in places if p.is_symlink()]


def _link_on(path: Path) -> str | None:
    """The first symbolic link on ``path`` (itself or a folder above), or None."""
    absolute = Path(os.path.abspath(path))
    for place in (*reversed(absolute.parents), absolute):
        if place.is_symlink():
            return str(place)
    return None


def guarded_by(
    policy: Policy,
    served: Sequence[Path],
    files: Iterable[Path | None] = (),
    programs: Iterable[str] = (),
    hidden: Iterable[Path] = (),
) -> Guarded:
    """:func:`guarded` for a server under ``policy`` (its workspace, its trust of the
    project's rules, its write grant, its watchdog's program and the files its command
    names: run afresh for every call, a rewritten one would judge the next), each warning
    logged."""
    watchdog = policy.watchdog
    if watchdog is not None:  # found by the red-team pass of 2026-11-29, 7th
        named = named_files(watchdog, Path.cwd())  # its cwd: the server's (bridge/gate.py)
        first = watchdog.argv[0]  # a bare name is looked up on PATH; ./check.py is not
        program = os.path.abspath(first) if "/" in first else first
        programs = [*programs, program, *(str(p) for p in named)]
    found = guarded(
        served,
        workspace=policy.workspace,
        trust_project=policy.file.trust_project_allow,
        files=files,
        programs=programs,
        writable=[p.root for p in policy.scope.fs_write],
        hidden=hidden,
    )
    for warning in found.warnings:
        log.warning("*** WARNING: %s", warning)
    return found


def write_floor(
    decision: Decision,
    writes: Iterable[Path],
    asked: Sequence[str],
    reads: Iterable[Path] = (),
    hidden: Sequence[str] = (),
) -> Decision:
    """``decision``, or an ask where it allows a write inside a guarded path (a served
    manifest folder, ``.toolbridge/``, a program, the policy file) by a tool that runs in the
    server, outside any sandbox (the built-in ``write`` and ``edit``), or by bash: what is
    written there decides what tools may do; or a read naming a path inside a hidden one
    (the recording folder: every caller's calls and results)."""
    if decision.action != "allow" or not asked:
        return decision
    for path in reads if hidden else ():
        held = next((f for f in hidden if within(str(path), f)), None)
        if held is not None:
            why = (
                f"it reads {path}, inside {held}, where serve --record keeps every caller's "
                "calls and results, so every read there is asked about"
            )
            return Decision("ask", why, "guard")
    for path in writes:  # canonical already (policy.targets)
        held = next((f for f in asked if within(str(path), f)), None)
        if held is not None:
            why = (
                f"it writes {path}, inside {held}, which decides what tools may do from the "
                "next start (served manifests and their programs, the project policy, the "
                "server's own files), so every write there is asked about"
            )
            return Decision("ask", why, "guard")
    return decision


# A sandbox's mounts are set when it is set up, so a call running when ``--watch`` reloads
# keeps the ones it started with. Where the reload holds a path read-only that a running call
# may write (a tool added to a manifest, its program in the workspace; a folder newly served),
# the reload ends that call (SIGKILL, and a bounded wait until nothing in its sandbox runs:
# executors/reaper.py, end_now) before it serves the new tools,
# and the call is told why (RELOADED). Per call: one entry added and removed
# (executors/subprocess.py); the roots are looked at only when a reload holds new paths.
RELOADED = (
    "the server reloaded its tools while this call ran, and the call could write {}, which "
    "the reload now holds read-only (it decides what tools do), so the call was ended; run "
    "the call again"
)


@dataclass(eq=False, slots=True)
class RunningCall:
    """One call between its launch and its end: its writable roots, how to end it."""

    write: Sequence[Path]
    kill: Callable[[], None] | None = None
    """Ends its sandbox at once (set once its process is started)."""
    ended: str | None = None
    """Why a reload ended it (None: it was not)."""

    def started(self, kill: Callable[[], None]) -> None:
        """Its process runs and ``kill`` ends it; ended already: at once."""
        self.kill = kill
        if self.ended is not None:
            kill()


class Running:
    """The sandboxed calls of one :class:`~.confine.Sandbox` that are running now."""

    def __init__(self) -> None:
        self._calls: set[RunningCall] = set()

    def add(self, write: Sequence[Path]) -> RunningCall:
        call = RunningCall(write)
        self._calls.add(call)
        return call

    def discard(self, call: RunningCall) -> None:
        self._calls.discard(call)

    def end_writing(self, paths: Sequence[str]) -> int:
        """End every running call that may write one of ``paths`` (real paths): a writable
        root holding it or inside it. Returns how many."""
        if not paths or not self._calls:
            return 0
        ended = 0
        for call in list(self._calls):
            roots = [os.path.realpath(w) for w in call.write]
            hit = next((p for p in paths for r in roots if within(p, r) or within(r, p)), None)
            if hit is None or call.ended is not None:
                continue
            call.ended = RELOADED.format(hit)
            ended += 1
            if call.kill is not None:
                call.kill()
        return ended
