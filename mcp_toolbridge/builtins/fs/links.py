"""Hard links: a file's other names in the workspace, and whether one of them is read stricter.

The policy's read rules match paths (``**/.env`` asks), so a ``config.txt`` hard-linked to
``.env`` is the same file under a name no rule names. When ``read`` has opened a regular file
that has more than one link (``st_nlink`` of the ``fstat`` it has anyway), or ``grep`` is about
to show one, the workspace is searched for the file's other names: one walk of its folders
(``readdir`` gives each entry's inode, so no file is stat'ed but those with the same inode),
done once per call. The stricter of the policy's verdicts for those names is the verdict for
the file. A file with one link, the common case, costs nothing more.

A workspace of more than :data:`MAX_ENTRIES` entries is not searched: a multiply-linked file
there is treated as asking (fail closed), since its other names cannot be known.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mcp_toolbridge.policy import ACTION_RANK, Action

MAX_ENTRIES = 200_000
"""Entries (files and folders) the search for a file's other names reads at most."""


@dataclass(frozen=True, slots=True)
class Stricter:
    """Reading a file is stricter than its own name says: ``action`` (ask or deny), because of
    ``name`` (None when the workspace was too large to search)."""

    action: Action
    name: Path | None


class HardLinks:
    """The other names of multiply-linked files inside ``root``, for one call (not
    thread-safe: one per call). ``verdict`` is the policy's answer for reading a path."""

    def __init__(
        self, root: Path, verdict: Callable[[Path], Action], limit: int = MAX_ENTRIES
    ) -> None:
        self._root = root
        self._verdict = verdict
        self._limit = limit
        self._by_inode: dict[int, list[str]] | None = None
        self._overflow = False

    def stricter(self, path: Path, st: os.stat_result) -> Stricter | None:
        """None when ``st`` (``path``'s file) has one link, is not a regular file, or no other
        name of it in the workspace is read more strictly than ``path``; else the strictest."""
        if st.st_nlink <= 1 or not stat.S_ISREG(st.st_mode):
            return None
        own = ACTION_RANK[self._verdict(path)]
        names = self._names(st.st_ino)
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

    def _names(self, inode: int) -> list[str] | None:
        if self._by_inode is None:
            self._by_inode = self._walk()
        return None if self._overflow else self._by_inode.get(inode, [])

    def _walk(self) -> dict[int, list[str]]:
        """Every regular file's path under the root by inode, symlinks not followed."""
        by_inode: dict[int, list[str]] = {}
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
                        self._overflow = True
                        return by_inode
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            folders.append(entry.path)
                        elif entry.is_file(follow_symlinks=False):
                            by_inode.setdefault(entry.inode(), []).append(entry.path)
                    except OSError:
                        continue
        return by_inode


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
