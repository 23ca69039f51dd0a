"""What a launch's program is and needs: the command found as ``execve`` would find it, the
folders (and prefixes) it and the interpreter of its ``#!`` line come from, and paths resolved
as the kernel resolves them. ``bwrap.py`` mounts what this finds."""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Callable, Sequence
from pathlib import Path

PREFIX_FOLDERS = frozenset({"bin", "sbin", "shims"})
"""A folder of these names brings its prefix (``~/.nvm/.../bin/node`` brings its ``lib``)."""
_SHEBANG_BYTES = 256


def within(path: str, root: str) -> bool:
    """Whether the normalised absolute ``path`` is ``root`` or lies under it, as text (nothing
    is resolved or looked up)."""
    return path == root or root == "/" or path.startswith(root.rstrip("/") + "/")


Resolve = Callable[[str | os.PathLike[str]], str]
"""What a path leads to (:func:`real_path`)."""


def find_program(
    command: str,
    workdir: str,
    path: str,
    resolve: Resolve,
) -> tuple[str, list[str]]:
    """The program's absolute path (found on ``path``, the server's PATH, or relative to the
    working directory) and what it needs to be visible; raises OSError the way execve
    would."""
    if "/" in command:
        found = os.path.join(workdir, command)
    else:
        located = shutil.which(command, path=path)
        if located is None:
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", command)
        found = os.path.abspath(located)
    try:
        info = os.stat(found)
    except (OSError, ValueError):  # what os.path.exists says False to
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", command) from None
    if stat.S_ISDIR(info.st_mode) or not os.access(found, os.X_OK):
        raise PermissionError(errno.EACCES, "Permission denied", command)
    folders = [os.path.dirname(found)]
    interpreter = _shebang(found)
    if interpreter is not None:
        folders.append(os.path.dirname(interpreter))
    return found, [*_prefixes_of(folders, resolve), resolve(found), found]


def _prefixes_of(folders: Sequence[str], resolve: Resolve) -> list[str]:
    out: list[str] = []
    for folder in folders:
        for path in dict.fromkeys((folder, resolve(folder))):
            out.append(path)
            head, name = os.path.split(path)
            if name in PREFIX_FOLDERS and head:
                out.append(head)
    return out


def path_prefixes(folders: Sequence[str], home: Path | None) -> list[str]:
    """The folders of the server's ``PATH`` a launch shows: each folder and, for ``.../bin``,
    ``.../sbin`` or ``.../shims``, its prefix (for ``~/.local/bin``: ``~/.local/lib``
    only)."""
    out: list[str] = []
    for folder in folders:
        for path in dict.fromkeys((folder, real_path(folder))):
            out.append(path)
            head, name = os.path.split(path.rstrip("/"))
            if name not in PREFIX_FOLDERS or not head:
                continue
            if home is not None and head == str(home / ".local"):
                out.append(os.path.join(head, "lib"))
            else:
                out.append(head)
    return out


def _shebang(path: str) -> str | None:
    """The interpreter of a ``#!`` script; raises ENOEXEC for a file that is neither a
    script nor an ELF binary (what execve says)."""
    try:  # a bare descriptor: a file object costs an fstat, an ioctl, a seek and a read more
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None  # executable but unreadable: let the kernel decide
    try:
        head = os.read(fd, _SHEBANG_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    if head.startswith(b"#!"):
        line = head[2:].split(b"\n", 1)[0].strip()
        word = line.split(maxsplit=1)[0] if line else b""
        return os.fsdecode(word) if word.startswith(b"/") else None
    if head.startswith(b"\x7fELF"):
        return None
    raise OSError(errno.ENOEXEC, "Exec format error", path)


def resolver() -> Resolve:
    """:func:`real_path` for one launch, each path resolved once (a launch names the same
    folder several times: its working directory, a read root, the program's folder)."""
    seen: dict[str, str] = {}

    def resolve(path: str | os.PathLike[str]) -> str:
        key = os.fspath(path)
        found = seen.get(key)
        if found is None:
            found = seen[key] = real_path(key)
        return found

    return resolve


def real_path(path: str | os.PathLike[str]) -> str:
    """``os.path.realpath(path)``, asked of the kernel where the path exists: the path of an
    ``O_PATH`` descriptor on it, read back from ``/proc/self/fd`` (three system calls instead
    of an ``lstat`` and Python's work per component; a launch resolves about ten paths)."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except (OSError, ValueError):
        return os.path.realpath(path)
    try:
        found = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        found = ""
    finally:
        os.close(fd)
    if not found.startswith("/") or found.endswith(" (deleted)"):
        return os.path.realpath(path)
    return found
