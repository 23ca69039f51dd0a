"""Hard links: whether another name of a file in the workspace is read more strictly.

The policy's read rules match paths (``**/.env`` asks), so a ``config.txt`` hard-linked to
``.env`` is the same file under a name no rule names. When ``read`` has opened a regular file
that has more than one link (``st_nlink`` of the ``fstat`` it has anyway), or ``grep`` is about
to show one, the stricter of the policy's verdicts for the file's names in the workspace is the
verdict for the file. A file with one link, the common case, costs nothing more.

Those names come from :class:`LinkIndex`: every file that has more than one name in the
workspace, with its names, from a walk of its folders (``readdir`` gives each entry's inode, so
no file is stat'ed), kept between calls. The index answers for a file whose inode has not
changed since the walk began; a question about a file changed later walks again. Every name of
a file is a link to its inode, and making, removing or renaming one sets the inode's ``ctime``
(``link``, ``unlink``, ``rename``), so a file whose ``ctime`` is older than the walk's start
(by :data:`SETTLED_NS`, for file systems that round their stamps) had all its names before the
walk began, and the walk saw each of them that was in the workspace. A package store's links
(pnpm's ``node_modules``: thousands of files, each with its other name outside the workspace)
cost one walk in all, not one each.

Not seen until the next walk: a folder renamed (its files keep their ``ctime``) into a place
whose reading asks, or moved into the workspace, with a file inside that is linked to a name
already there. A workspace of more than :data:`MAX_ENTRIES` entries is not searched: a
multiply-linked file there is treated as asking (fail closed), since its other names cannot be
known.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mcp_toolbridge.policy import ACTION_RANK, Action

MAX_ENTRIES = 1_000_000
"""Entries (files and folders) a walk of the workspace reads at most."""
SETTLED_NS = 3_000_000_000
"""How much older than a walk's start a file's ``ctime`` must be for the walk to have seen
its names: a file system may round its stamps down (two seconds on FAT)."""
_COARSE = 5 if sys.platform == "linux" else time.CLOCK_REALTIME
"""Linux stamps a change with its coarse real-time clock (``CLOCK_REALTIME_COARSE``), which
lags the fine one by up to a tick: a walk's start read from the fine clock could be later
than the stamp of a change made after it."""


def coarse_now() -> int:
    """Now, by the clock a file's ``ctime`` is stamped with."""
    return time.clock_gettime_ns(_COARSE)


@dataclass(frozen=True, slots=True)
class Stricter:
    """Reading a file is stricter than its own name says: ``action`` (ask or deny), because of
    ``name`` (None when the workspace was too large to search)."""

    action: Action
    name: Path | None


class LinkIndex:
    """The names of each file that has more than one under ``root``, for the other names of
    multiply-linked files, judged by ``verdict`` (the policy's answer for reading a path). One
    per workspace and verdict, kept for as long as they are; safe to share between threads."""

    def __init__(
        self,
        root: Path,
        verdict: Callable[[Path], Action],
        limit: int = MAX_ENTRIES,
        clock: Callable[[], int] = coarse_now,
    ) -> None:
        self._root = root
        self._verdict = verdict
        self._limit = limit
        self._clock = clock
        self._lock = threading.Lock()
        self._walked_ns: int | None = None
        """When the last walk began, by ``clock`` (the clock ``ctime`` is stamped by)."""
        self._names_of: dict[int, list[str]] = {}
        """The names of each inode that has more than one under the root."""
        self._overflow = False
        self.walks = 0
        """How many walks were made (a figure for tests and benchmarks)."""

    def stricter(self, path: Path, st: os.stat_result) -> Stricter | None:
        """None when ``st`` (``path``'s file) has one link, is not a regular file, or no other
        name of it in the workspace is read more strictly than ``path``; else the strictest."""
        if st.st_nlink <= 1 or not stat.S_ISREG(st.st_mode):
            return None
        own = ACTION_RANK[self._verdict(path)]
        names = self._names(st)
        if names is None:
            return Stricter("ask", None) if own < ACTION_RANK["ask"] else None
        worst: Stricter | None = None
        for text in names:
            name = Path(text)
            if name == path or not _same_file(name, st):
                continue
            action = self._verdict(name)
            rank = ACTION_RANK[action]
            if rank > own and (worst is None or rank > ACTION_RANK[worst.action]):
                worst = Stricter(action, name)
        return worst

    def _names(self, st: os.stat_result) -> list[str] | None:
        """The strict names with ``st``'s inode, walking again first when the file changed
        after the last walk began; None when the workspace is too large to walk."""
        with self._lock:
            if self._walked_ns is None or st.st_ctime_ns >= self._walked_ns - SETTLED_NS:
                self._walk()
            if self._overflow:
                return None
            return list(self._names_of.get(st.st_ino, ()))

    def _walk(self) -> None:
        """The names of every file with more than one name under the root, by inode; symlinks
        not followed. Two passes, so that what is kept in between is one number an entry: the
        inodes seen, then the names of those seen twice."""
        self._walked_ns = self._clock()
        self.walks += 1
        inodes = array("Q")
        if not self._files(inodes.append):
            self._names_of, self._overflow = {}, True
            return
        twice: set[int] = set()
        last = -1
        for inode in sorted(inodes):
            if inode == last:
                twice.add(inode)
            last = inode
        del inodes
        names: dict[int, list[str]] = {}

        def keep(inode: int, path: str) -> None:
            if inode in twice:
                names.setdefault(inode, []).append(path)

        self._files(keep, with_paths=True)
        self._names_of, self._overflow = names, False

    def _files(self, found: Callable[..., None], *, with_paths: bool = False) -> bool:
        """Call ``found(inode)`` (and the path, ``with_paths``) for every regular file under
        the root; False when it holds more than the limit's entries."""
        folders = [str(self._root)]
        seen = 0
        while folders:
            try:
                entries = os.scandir(folders.pop())
            except OSError:
                continue
            with entries:
                for entry in entries:
                    seen += 1
                    if seen > self._limit:
                        return False
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            folders.append(entry.path)
                        elif entry.is_file(follow_symlinks=False):
                            if with_paths:
                                found(entry.inode(), entry.path)
                            else:
                                found(entry.inode())
                    except OSError:
                        continue
        return True


def _same_file(name: Path, st: os.stat_result) -> bool:
    try:
        other = os.stat(name, follow_symlinks=False)
    except OSError:
        return False
    return (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino)


def refusal(shown: str, stricter: Stricter, display: Callable[[Path], str]) -> str:
    """Why ``read`` refuses a hard link (``shown``: its name as the call gave it)."""
    if stricter.name is None:
        return (
            f"{shown} has several hard links, and the workspace holds more than "
            f"{MAX_ENTRIES:,} entries, too many to look for its other names (a hard link to a "
            "file whose reading asks, such as .env, is that file); read refuses it"
        )
    if stricter.action == "deny":
        return f"{shown} is a hard link to a file whose reading the policy denies"
    return (
        f"{shown} is a hard link to {display(stricter.name)}, whose reading asks first: "
        f"read {display(stricter.name)} by that name instead, and the person is asked"
    )
