"""Per-session state of the built-in tools: the sidecar folder, and the State port where
the values they keep between calls live (the todo list, the web_search count: per person when
the caller is identified, else per session; see ``CallContext.owner``).

A session is one client connection (stdio: the process). Its sidecar folder holds outputs too
large to return inline (the spec's truncation shape: head + ``output_path``). It is created on
first use with mode 0700 under an unguessable name, files in it are created with
``O_EXCL | O_NOFOLLOW`` and mode 0600, its total size is capped, and it is removed when the
session closes. Nothing lives at a fixed, shared path that another user could pre-plant.

A server that is killed (SIGKILL, out of memory) removes nothing: while a session's folder
exists, its server holds a lock on it (``flock``), and the first sidecar folder a server makes
starts a sweep, in a thread, of the ``toolbridge-*`` folders beside it that are this user's,
not locked and unchanged for an hour: those of servers that are gone.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from mcp_toolbridge.state import MemoryState, State, forgetting

MAX_SIDECAR_BYTES = 256 * 1024 * 1024
"""All sidecar files of one session together; past it, output is not kept."""
PREFIX = "toolbridge-"
STALE_SIDECARS_S = 3600.0
"""A folder of a server that is gone is swept once unchanged this long (older servers held no
lock)."""
SWEEPER: threading.Thread | None = None
"""The sweep this process started (one per process), for tests to wait on."""
_sweeping = threading.Lock()


@dataclass
class SessionState:
    session_id: str
    root: Path
    """Where this session's sidecar folder is created (the system temp dir by default)."""
    _sidecars: Path | None = None
    _sidecar_bytes: int = 0
    _lock_fd: int | None = None

    @property
    def sidecar_dir(self) -> Path | None:
        return self._sidecars

    def _ensure_sidecars(self) -> Path:
        if self._sidecars is None:
            self.root.mkdir(parents=True, exist_ok=True)
            folder = Path(tempfile.mkdtemp(prefix=PREFIX, dir=self.root))  # 0700
            self._lock_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            fcntl.flock(self._lock_fd, fcntl.LOCK_SH)
            self._sidecars = folder
            _start_sweep(self.root)
        return self._sidecars

    def write_sidecar(self, tool: str, data: bytes, *, suffix: str = ".txt") -> Path | None:
        """Keep ``data`` in a new private file; None when the session's cap is reached."""
        if self._sidecar_bytes + len(data) > MAX_SIDECAR_BYTES:
            return None
        folder = self._ensure_sidecars()
        path = folder / f"{tool}-{secrets.token_hex(8)}{suffix}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(path, flags, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        self._sidecar_bytes += len(data)
        return path

    def close(self) -> None:
        if self._sidecars is not None:
            shutil.rmtree(self._sidecars, ignore_errors=True)
            self._sidecars = None
            self._sidecar_bytes = 0
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None


def _start_sweep(root: Path) -> None:
    global SWEEPER
    with _sweeping:
        if SWEEPER is None:
            SWEEPER = threading.Thread(
                target=sweep_stale, args=(root,), name="toolbridge-sidecar-sweep", daemon=True
            )
            SWEEPER.start()


def sweep_stale(root: Path) -> int:
    """Remove the sidecar folders in ``root`` of servers that are gone: this user's folders
    (never a link) that no server holds locked and that are unchanged for an hour. How many."""
    removed = 0
    try:
        entries = [e for e in os.scandir(root) if e.name.startswith(PREFIX)]
    except OSError:
        return 0
    for entry in entries:
        try:
            fd = os.open(entry.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue  # a link, a file, gone, another user's
        try:
            info = os.fstat(fd)
            if info.st_uid != os.getuid() or not stat.S_ISDIR(info.st_mode):
                continue
            if time.time() - info.st_mtime < STALE_SIDECARS_S:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # its server still runs
            shutil.rmtree(entry.path, ignore_errors=True)  # never follows a link inside
            removed += 1
        finally:
            os.close(fd)
    return removed


class Sessions:
    """Every live session's state, by session id, and the State of every owner."""

    def __init__(self, root: Path | None = None, *, state: State | None = None) -> None:
        self._root = root or Path(tempfile.gettempdir())
        self._states: dict[str, SessionState] = {}
        self.state: State = state if state is not None else MemoryState()
        self._forget: Callable[[str], None] | None = None

    @asynccontextmanager
    async def forgetting(self) -> AsyncIterator[None]:
        """While open, :meth:`forget` forgets in the background (else it does nothing)."""
        async with forgetting(self.state) as forget:
            self._forget = forget
            try:
                yield
            finally:
                self._forget = None

    def forget(self, owner: str) -> None:
        """Forget the State's entries of ``owner`` (a session that ended), without waiting."""
        if self._forget is not None:
            self._forget(owner)

    def get(self, session_id: str) -> SessionState:
        state = self._states.get(session_id)
        if state is None:
            state = SessionState(session_id, self._root)
            self._states[session_id] = state
        return state

    def sidecar_dir(self, session_id: str) -> Path | None:
        """The session's sidecar folder, if it has one (a lookup: nothing is created)."""
        state = self._states.get(session_id)
        return state.sidecar_dir if state is not None else None

    def sidecar_dirs(self) -> list[Path]:
        return [s.sidecar_dir for s in self._states.values() if s.sidecar_dir is not None]

    def close(self, session_id: str) -> None:
        state = self._states.pop(session_id, None)
        if state is not None:
            state.close()

    def close_all(self) -> None:
        for session_id in list(self._states):
            self.close(session_id)
