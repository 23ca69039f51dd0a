"""Walking a workspace folder for glob and the Python grep engine, and path glob patterns.

The walk never follows or lists symlinks (like ``rg --files`` without ``--follow``), always
skips ``.git``, and, when asked, applies .gitignore files (root and nested, plus
``.git/info/exclude``): an ignored folder is not entered and is reported, an ignored file is
yielded with ``ignored=True`` so glob can say how many matches were hidden. It stops at a
deadline or an entry limit and says so. Each folder is opened ``O_NOFOLLOW`` and listed
through its descriptor once ``/proc/self/fd`` says it is the folder the walk meant: a folder
swapped for a symlink to elsewhere after its parent was listed (by another call's process)
is not listed through (it counts as unreadable).

What no sandbox shows (:class:`HiddenPaths`: ``serve --record``'s folder, the server's cache
folder, the secret paths, the policy's masks) is never listed: the walk leaves those names out
of the folders that hold them (one lookup per folder listed), as ``rg`` in the sandbox never
sees them.

Glob patterns (:class:`PathGlob`) follow ripgrep's ``--glob`` / gitignore conventions: a pattern
without ``/`` matches a file name at any depth (``*.py``); one with ``/`` matches the path
relative to the search folder (``src/**/*.py``); ``**`` spans folders, ``*`` and ``?`` stay
within one name, ``[abc]`` is a class and ``{a,b}`` alternatives; a leading ``!`` excludes.
"""

from __future__ import annotations

import functools
import os
import re
import stat
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mcp_toolbridge.builtins.fs import gitignore
from mcp_toolbridge.policy import glob_regex

MAX_BRACE_EXPANSIONS = 64
_BRACES = re.compile(r"\{([^{}]*)\}")


@dataclass(frozen=True, slots=True)
class FileEntry:
    path: Path
    rel: str
    """Relative to the walk root, POSIX."""
    ignored: bool
    mtime: float
    size: int


@dataclass
class WalkReport:
    ignored_dirs: list[str] = field(default_factory=list)
    """Ignored folders that were not entered, relative to the walk root."""
    entries: int = 0
    unreadable: int = 0
    stopped: str | None = None
    """None, "deadline" or "limit"."""
    hidden: int = 0
    """Paths no sandbox shows inside the walked folder (or holding it): not listed."""


@dataclass(frozen=True, slots=True)
class HiddenPaths:
    """The paths no sandbox shows, which glob and grep never list or search, whichever
    engine runs and whether or not a sandbox does (real paths)."""

    paths: tuple[str, ...] = ()
    by_folder: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """The names to leave out of each folder that holds one (a walk looks up each folder it
    lists once)."""

    def holding(self, path: Path) -> str | None:
        """The hidden path that is ``path`` or holds it, or None."""
        text = os.fspath(path)
        return next((h for h in self.paths if text == h or text.startswith(h + "/")), None)

    def below(self, root: Path) -> list[str]:
        """Those strictly inside ``root`` that exist: what a search of it leaves out."""
        inside = os.fspath(root).rstrip("/") + "/"
        return [h for h in self.paths if h.startswith(inside) and os.path.lexists(h)]


@functools.lru_cache(maxsize=16)
def hidden_paths(masks: tuple[Path, ...], granted: tuple[Path, ...] = ()) -> HiddenPaths:
    """:class:`HiddenPaths` of a sandbox's ``masks`` but those a tool's profile grants by name
    (``granted``: its roots), as the sandbox shows those; made once per server and tool (the
    masks are set when the server starts). A link is taken where it leads, as the walk meets
    the real path."""
    shown = {os.path.realpath(g) for g in granted}
    real = tuple(r for r in dict.fromkeys(os.path.realpath(m) for m in masks) if r not in shown)
    folders: dict[str, set[str]] = {}
    for path in real:
        parent, name = os.path.split(path)
        if name:
            folders.setdefault(parent, set()).add(name)
    return HiddenPaths(real, {k: frozenset(v) for k, v in folders.items()})


NOTHING_HIDDEN = HiddenPaths()


def hidden_note(count: int, what: str) -> str:
    """The note of a result that left out ``count`` hidden paths (``what``: "listed",
    "searched")."""
    return (
        f"{count} path(s) hidden from every tool were not {what} (what no sandbox shows: the "
        "server's recording and cache folders, secret paths, the policy's masks)"
    )


def walk_files(
    root: Path,
    *,
    ignore_base: Path | None,
    report: WalkReport,
    deadline: float,
    max_entries: int,
    stop: threading.Event | None = None,
    hidden: Mapping[str, frozenset[str]] | None = None,
) -> Iterator[FileEntry]:
    """Regular files below canonical folder ``root``, names sorted, depth first.

    ``ignore_base`` (the workspace) turns .gitignore processing on: the ignore files from it
    down to ``root`` apply, with paths matched relative to it. None: nothing is ignored.
    ``hidden`` (:attr:`HiddenPaths.by_folder`): names left out of the folders holding them.
    The walk ends as at its deadline once ``stop`` is set (the call ended: its worker thread
    was abandoned).
    """
    stack_files = _initial_ignores(root, ignore_base) if ignore_base is not None else None
    prefix = root.relative_to(ignore_base).as_posix() if ignore_base is not None else ""
    prefix = "" if prefix == "." else prefix
    pending: list[tuple[Path, str, gitignore.IgnoreStack | None]] = [(root, "", stack_files)]
    while pending:
        folder, rel_folder, ignores = pending.pop()
        if ignores is not None and rel_folder:
            base = f"{prefix}/{rel_folder}" if prefix else rel_folder
            ignores = ignores.pushed(gitignore.load(folder / ".gitignore", base))
        try:
            entries = _listing(folder, hidden.get(os.fspath(folder)) if hidden else None)
        except OSError:
            report.unreadable += 1
            continue
        subfolders: list[tuple[Path, str, gitignore.IgnoreStack | None]] = []
        for name, info in entries:
            report.entries += 1
            if report.entries > max_entries:
                report.stopped = "limit"
                return
            if report.entries % 256 == 0 and (
                time.monotonic() > deadline or (stop is not None and stop.is_set())
            ):
                report.stopped = "deadline"
                return
            if name == ".git":
                continue
            rel = f"{rel_folder}/{name}" if rel_folder else name
            if info is None:
                report.unreadable += 1
                continue
            ws_rel = f"{prefix}/{rel}" if prefix else rel
            if stat.S_ISDIR(info.st_mode):
                if ignores is not None and ignores.ignored(ws_rel, True):
                    report.ignored_dirs.append(rel)
                    continue
                subfolders.append((folder / name, rel, ignores))
            elif stat.S_ISREG(info.st_mode):
                ignored = ignores is not None and ignores.ignored(ws_rel, False)
                yield FileEntry(folder / name, rel, ignored, info.st_mtime, info.st_size)
        pending.extend(reversed(subfolders))


_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC


def _listing(
    folder: Path, left_out: frozenset[str] | None = None
) -> Iterator[tuple[str, os.stat_result | None]]:
    """The entries of ``folder`` by name but those ``left_out``, each with its lstat (None: it
    could not be read) as it is reached, listed through a descriptor checked to be ``folder``
    itself (OSError, at once, when it is not)."""
    fd = os.open(folder, _FOLDER_FLAGS)
    try:
        try:
            opened = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            opened = os.fspath(folder)  # no /proc: O_NOFOLLOW is the check
        if opened != os.fspath(folder):
            raise OSError(f"{folder} led to {opened} when opened")
        with os.scandir(fd) as scan:
            entries = sorted(scan, key=lambda e: e.name)
        if left_out:
            entries = [e for e in entries if e.name not in left_out]
    except BaseException:
        os.close(fd)
        raise
    return _lstats(fd, entries)


def _lstats(
    fd: int, entries: list[os.DirEntry[str]]
) -> Iterator[tuple[str, os.stat_result | None]]:
    """Each entry's lstat, relative to the folder's descriptor (closed when done)."""
    try:
        for entry in entries:
            try:
                yield entry.name, entry.stat(follow_symlinks=False)
            except OSError:
                yield entry.name, None
    finally:
        os.close(fd)


def _initial_ignores(root: Path, base: Path) -> gitignore.IgnoreStack:
    stack = gitignore.IgnoreStack()
    stack = stack.pushed(gitignore.load(base / ".git" / "info" / "exclude", ""))
    folder = base
    stack = stack.pushed(gitignore.load(folder / ".gitignore", ""))
    for part in root.relative_to(base).parts:
        folder = folder / part
        rel = folder.relative_to(base).as_posix()
        stack = stack.pushed(gitignore.load(folder / ".gitignore", rel))
    return stack


def expand_braces(pattern: str) -> list[str]:
    """``a.{py,pyi}`` -> ``a.py``, ``a.pyi`` (nested and repeated groups too, bounded)."""
    out: list[str] = []
    todo = [pattern]
    while todo:
        current = todo.pop()
        match = _BRACES.search(current)
        if match is None or "," not in match.group(1):
            out.append(current)
        else:
            for choice in reversed(match.group(1).split(",")):
                todo.append(current[: match.start()] + choice + current[match.end() :])
        if len(out) + len(todo) > MAX_BRACE_EXPANSIONS:
            raise ValueError(f"the pattern {pattern!r} expands to too many alternatives")
    return list(dict.fromkeys(out))


class PathGlob:
    """One glob (or several, with ``!`` exclusions) over paths relative to a search folder."""

    def __init__(self, patterns: list[str]) -> None:
        self.include: list[tuple[bool, re.Pattern[str]]] = []
        self.exclude: list[tuple[bool, re.Pattern[str]]] = []
        for raw in patterns:
            negate = raw.startswith("!")
            body = raw[1:] if negate else raw
            for alt in expand_braces(body):
                alt = alt.removeprefix("./").rstrip("/")
                anchored = "/" in alt
                compiled = (anchored, glob_regex("/" + alt.lstrip("/")))
                (self.exclude if negate else self.include).append(compiled)

    def matches(self, rel: str) -> bool:
        if self.include and not any(_hit(c, rel) for c in self.include):
            return False
        return not any(_hit(c, rel) for c in self.exclude)


def _hit(compiled: tuple[bool, re.Pattern[str]], rel: str) -> bool:
    anchored, regex = compiled
    subject = rel if anchored else rel.rsplit("/", 1)[-1]
    return regex.match("/" + subject) is not None


class IgnoreOracle:
    """Is one file (below ``base``) ignored? For results found by another walker (ripgrep).

    Applies the same files and precedence as :func:`walk_files`, including ignored folders on
    the way down from ``root`` (the search folder, which is never itself checked).
    """

    def __init__(self, base: Path, root: Path) -> None:
        self._base = base
        self._root = root
        self._stacks: dict[Path, gitignore.IgnoreStack] = {root: _initial_ignores(root, base)}

    def _stack(self, folder: Path) -> gitignore.IgnoreStack:
        known = self._stacks.get(folder)
        if known is None:
            parent = self._stack(folder.parent)
            rel = folder.relative_to(self._base).as_posix()
            known = parent.pushed(gitignore.load(folder / ".gitignore", rel))
            self._stacks[folder] = known
        return known

    def ignored(self, path: Path, *, is_dir: bool = False) -> bool:
        folder = path.parent
        chain: list[Path] = []
        while folder != self._root:
            chain.append(folder)
            folder = folder.parent
        for sub in reversed(chain):
            rel = sub.relative_to(self._base).as_posix()
            if self._stack(sub.parent).ignored(rel, True):
                return True
        rel = path.relative_to(self._base).as_posix()
        return self._stack(path.parent).ignored(rel, is_dir)
