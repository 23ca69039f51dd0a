"""Where the file tools may look: path resolution and containment inside the workspace.

Every path argument of read, write, edit, glob and grep goes through :meth:`FsRoot.resolve`:
control characters refused, a relative path joined to the workspace, ``realpath`` applied to
the whole path (symlinks, dangling ones included, are followed to where they point), then a
component-wise containment check. The bridge's capability check has already done the same
before the tool runs; this is the second, independent layer (defense in depth).

Files are opened with :meth:`FsRoot.open_file`: non-regular files (FIFOs, devices, sockets) are
refused before any ``open`` (so nothing blocks), the descriptor is opened ``O_NOFOLLOW`` and
``O_NONBLOCK`` and checked again with ``fstat`` and, on Linux, ``/proc/self/fd``: a path swapped
for a symlink between the check and the open cannot take the tool outside the workspace.
"""

from __future__ import annotations

import difflib
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from mcp_toolbridge.errors import PermissionDeniedError
from mcp_toolbridge.policy import canonical_root, canonicalize, check_text, has_control, is_within

MAX_SIMILAR = 3
QUOTED_NOTE = (
    "a path in double quotes is written with escapes, as git shows a name that holds control "
    'characters (a newline, a tab...): \\n, \\t, \\r, \\xNN, and \\" and \\\\ for '
    "themselves; read, write and edit refuse a name with control characters (in bash, "
    "$'...' with the same escapes names such a file, to rename it)"
)
"""The note of a glob or grep result that shows such a path (see :func:`shown_path`)."""
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC


def shown_path(text: str) -> str:
    """``text`` as the file tools show it, one path per line and unambiguous: as it is, or,
    when it holds a control character (a file named ``a<newline>b.txt`` would read as two
    paths) or is itself enclosed in double quotes, in double quotes with C escapes, as git
    shows such names (``"a\\nb.txt"``). A path shown as it is names that very file."""
    if not has_control(text) and not (len(text) >= 2 and text[0] == text[-1] == '"'):
        return text
    inner = "".join(
        _ESCAPES.get(char) or (f"\\x{ord(char):02x}" if has_control(char) else char)
        for char in text
    )
    return f'"{inner}"'


def is_quoted(shown: str) -> bool:
    """Whether ``shown`` is in :func:`shown_path`'s quoted form (its escapes to be read)."""
    return len(shown) >= 2 and shown[0] == shown[-1] == '"'


class FileProblem(Exception):
    """A condition the model can fix (missing file, a directory, binary content...).

    The tools turn it into ``ExecResult(ok=False, error=message)``.
    """


class FsRoot:
    """The workspace a file tool is rooted at, plus extra readable roots (session sidecars)."""

    def __init__(self, workspace: Path) -> None:
        self.root = canonical_root(workspace)

    def resolve(self, raw: str, *, what: str, extra: Sequence[Path] = ()) -> Path:
        """The canonical path ``raw`` names; PermissionDeniedError when outside every root."""
        check_text(raw, what=what)
        real = canonicalize(raw, base=self.root)
        roots = (self.root, *(canonical_root(p) for p in extra))
        if any(is_within(real, r) for r in roots):
            return real
        lexical = Path(os.path.normpath(os.path.join(self.root, raw)))
        via = ""
        if lexical != real and is_within(lexical, self.root):
            via = f" (through a symlink: {self.display(lexical)} points to {real})"
        raise PermissionDeniedError(
            f"{what} {raw!r} is outside the workspace {self.root}{via}; "
            "only files inside the workspace can be used"
        )

    def display(self, path: Path) -> str:
        """Workspace-relative POSIX text for paths inside the workspace, else the absolute path;
        quoted when it holds a control character (:func:`shown_path`)."""
        if is_within(path, self.root):
            rel = path.relative_to(self.root).as_posix()
            return shown_path(rel or ".")
        return shown_path(str(path))

    def similar(self, path: Path) -> list[str]:
        """Up to three entries of ``path``'s folder whose names resemble its name."""
        parent = path.parent
        try:
            names = os.listdir(parent)
        except OSError:
            return []
        close = difflib.get_close_matches(path.name, names, n=MAX_SIMILAR, cutoff=0.5)
        return [self.display(parent / name) for name in close]

    def missing_message(self, raw: str, path: Path, *, hint: str = "") -> str:
        shown = self.display(path)
        message = f"file not found: {shown}"
        if not path.parent.is_dir():
            message += f" (the folder {self.display(path.parent)} does not exist either)"
        similar = self.similar(path)
        if similar:
            message += "; did you mean: " + ", ".join(similar) + "?"
        if is_quoted(path.name):
            message += (
                f"; {path.name} in double quotes is how glob and grep show a name that holds "
                "control characters, and the file tools cannot open such a name (in bash, "
                f"$'{path.name[1:-1]}' names it, to rename it)"
            )
        return message + (f" {hint}" if hint else "")

    def check_regular(self, path: Path, *, tool: str) -> os.stat_result:
        """lstat ``path`` (canonical: no symlinks) and refuse anything but a regular file."""
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            raise FileProblem(self.missing_message(str(path), path)) from None
        except OSError as exc:
            raise FileProblem(f"cannot access {self.display(path)}: {exc.strerror}") from None
        if stat.S_ISDIR(info.st_mode):
            use = "use glob to list its files" if tool == "read" else "give a file path"
            raise FileProblem(f"{self.display(path)} is a directory; {use}")
        if not stat.S_ISREG(info.st_mode):
            raise FileProblem(
                f"{self.display(path)} is not a regular file ({_kind(info.st_mode)}); "
                f"{tool} only works on regular files"
            )
        return info

    def open_file(self, path: Path, *, tool: str, extra: Sequence[Path] = ()) -> int:
        """A read-only descriptor for the regular file at canonical ``path``."""
        self.check_regular(path, tool=tool)
        try:
            fd = os.open(path, _OPEN_FLAGS)
        except OSError as exc:
            raise FileProblem(f"cannot open {self.display(path)}: {exc.strerror}") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise FileProblem(f"{self.display(path)} changed while opening it; try again")
            self._check_opened(fd, extra)
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _check_opened(self, fd: int, extra: Sequence[Path]) -> None:
        link = f"/proc/self/fd/{fd}"
        try:
            opened = Path(os.readlink(link))
        except OSError:
            return  # no /proc: the canonical path and O_NOFOLLOW are the check
        roots = (self.root, *(canonical_root(p) for p in extra))
        if not any(is_within(opened, r) for r in roots):
            raise PermissionDeniedError(
                f"the opened file {opened} is outside the workspace {self.root}; "
                "it was replaced while being opened"
            )


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISLNK(mode):
        return "a symlink"
    return "a special file"
