"""Atomic file replacement and per-path locks for write and edit.

:func:`atomic_write` writes a temporary file next to the target (created ``O_EXCL |
O_NOFOLLOW``, so nothing pre-planted is followed), flushes it, then renames it over the target.
A reader sees the old content or the new one, never a half-written file; a symlink that
appears at the target is replaced by the rename, never followed. An existing file keeps its
permission bits; a new one gets ``0o666`` minus the process umask (the kernel applies it).

The folder is opened first and every step after that names a file relative to its
descriptor, once ``/proc/self/fd`` says the descriptor is the folder the path check saw: a
folder on the way swapped for a symlink to elsewhere (``renameat2(RENAME_EXCHANGE)`` in a loop,
by a process of another call) cannot take the write outside the workspace between the check
and the rename. Before, it could (the red-team pass of 2026-11-29: the temporary file, with
the content, appeared outside).
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from mcp_toolbridge.builtins.fs.paths import FileProblem, FsRoot
from mcp_toolbridge.errors import PermissionDeniedError
from mcp_toolbridge.policy import is_within

_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC


def make_parents(fs: FsRoot, path: Path) -> None:
    """Create the missing folders above canonical ``path``, inside the workspace only."""
    missing: list[Path] = []
    folder = path.parent
    while not os.path.lexists(folder):
        missing.append(folder)
        folder = folder.parent
    if not os.path.isdir(folder) or os.path.islink(folder):
        raise FileProblem(f"cannot create {fs.display(path)}: {fs.display(folder)} is not a folder")
    for created in reversed(missing):
        if not is_within(created, fs.root):
            raise PermissionDeniedError(f"{created} is outside the workspace {fs.root}")
        try:
            os.mkdir(created, 0o777)
        except FileExistsError:
            pass
        except OSError as exc:
            raise FileProblem(
                f"cannot create the folder {fs.display(created)}: {exc.strerror}"
            ) from None
    try:
        real = Path(os.path.realpath(path.parent))
    except OSError:  # a link on the way changed while it was read (swapped to and fro)
        real = None
    if real != path.parent:
        raise PermissionDeniedError(
            f"the folder {fs.display(path.parent)} was replaced by a symlink while creating it"
        )


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC


def _open_folder(fs: FsRoot, path: Path) -> int:
    """A descriptor of canonical ``path``'s folder, checked to be that very folder."""
    try:
        fd = os.open(path.parent, _DIR_FLAGS)
    except OSError as exc:
        raise FileProblem(f"cannot write in {fs.display(path.parent)}: {exc.strerror}") from None
    try:
        opened = Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        return fd  # no /proc: the canonical path and O_NOFOLLOW are the check
    if opened != path.parent:
        os.close(fd)
        raise PermissionDeniedError(
            f"the folder {fs.display(path.parent)} was replaced while writing (it led to "
            f"{opened}); nothing was written"
        )
    return fd


def atomic_write(fs: FsRoot, path: Path, data: bytes) -> bool:
    """Replace (or create) the file at canonical ``path`` with ``data``; True when created."""
    folder = _open_folder(fs, path)
    try:
        return _write_in(fs, folder, path, data)
    finally:
        os.close(folder)


def _write_in(fs: FsRoot, folder: int, path: Path, data: bytes) -> bool:
    try:
        info = os.lstat(path.name, dir_fd=folder)
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise FileProblem(f"{fs.display(path)} is a directory; give a file path")
    if info is not None and not stat.S_ISREG(info.st_mode) and not stat.S_ISLNK(info.st_mode):
        raise FileProblem(f"{fs.display(path)} is not a regular file; it cannot be written")
    temp = f".{path.name}.{secrets.token_hex(6)}.tmp"
    try:
        fd = os.open(temp, _TEMP_FLAGS, 0o666, dir_fd=folder)
    except OSError as exc:
        raise FileProblem(f"cannot write in {fs.display(path.parent)}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            if info is not None and stat.S_ISREG(info.st_mode):
                os.fchmod(handle.fileno(), stat.S_IMODE(info.st_mode))
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path.name, src_dir_fd=folder, dst_dir_fd=folder)
    except OSError as exc:
        _unlink_quietly(temp, folder)
        raise FileProblem(f"cannot write {fs.display(path)}: {exc.strerror}") from None
    except BaseException:
        _unlink_quietly(temp, folder)
        raise
    return info is None


def _unlink_quietly(name: str, folder: int) -> None:
    try:
        os.unlink(name, dir_fd=folder)
    except OSError:
        pass


class PathLocks:
    """One anyio.Lock per path while someone holds or waits for it (edits serialize per file).

    Entries are dropped when their last user leaves, so no lock outlives the event loop that
    created it.
    """

    def __init__(self) -> None:
        self._entries: dict[Path, tuple[anyio.Lock, list[int]]] = {}

    @asynccontextmanager
    async def hold(self, path: Path) -> AsyncIterator[None]:
        entry = self._entries.get(path)
        if entry is None:
            entry = (anyio.Lock(), [0])
            self._entries[path] = entry
        lock, users = entry
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if users[0] == 0:
                self._entries.pop(path, None)

    def __len__(self) -> int:
        return len(self._entries)


SHARED_PATH_LOCKS = PathLocks()
"""The default lock table shared by write and edit, so they also serialize with each other."""


class WritingTool:
    """What write and edit share: paths resolved in one workspace (``_fs``) and the per-path
    locks their writes hold (``_locks``: :data:`SHARED_PATH_LOCKS` unless given, so the two
    tools serialize with each other)."""

    def __init__(self, workspace: Path, locks: PathLocks | None = None) -> None:
        self._fs = FsRoot(workspace)
        self._locks = locks if locks is not None else SHARED_PATH_LOCKS
