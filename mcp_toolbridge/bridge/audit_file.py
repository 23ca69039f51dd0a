"""Where the audit log is, and opening it (audit.py writes it): apart from the records, so a
server that opens its bridge after its first tools/list can open the file first, and fail the
start when it cannot (cli/startup.py), without importing the bridge.

The server writes the log as the user, outside any sandbox, so what is at the path is checked
as it is opened: a symbolic link there is not followed (it would make the server append to any
file the user may write), a FIFO or device does not hold the start (``O_NONBLOCK``), and a file
that another user made is not filled (they could read it)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import platformdirs


def default_audit_path() -> Path:
    """Where the audit log goes without ``--audit``: the per-user data directory."""
    return Path(platformdirs.user_data_dir("mcp-toolbridge")) / "audit.ndjson"


def open_audit_file(path: Path | None = None) -> tuple[Path, int]:
    """Open ``path`` (or the default location) to append, creating it with mode 0600 (its
    folder 0700): the path and the file descriptor. Raises OSError, also when the path is a
    symbolic link, not a regular file, or a file of another user."""
    target = path if path is not None else default_audit_path()
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(target, flags, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(exc.errno, f"{target} is a symbolic link; not followed") from None
        if exc.errno == errno.ENXIO:  # a FIFO nobody reads
            raise OSError(exc.errno, f"{target} is not a regular file") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, f"{target} is not a regular file")
        if info.st_uid != os.getuid():
            raise OSError(errno.EPERM, f"{target} belongs to another user")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return target, fd
