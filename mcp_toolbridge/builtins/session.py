"""Per-session state of the built-in tools: the sidecar folder, and the State port where
the values they keep between calls live (the todo list, the web_search count: per person when
the caller is identified, else per session; see ``CallContext.owner``).

A session is one client connection (stdio: the process). Its sidecar folder holds outputs too
large to return inline (the spec's truncation shape: head + ``output_path``). It is created on
first use with mode 0700 under an unguessable name, files in it are created with
``O_EXCL | O_NOFOLLOW`` and mode 0600, its total size is capped, and it is removed when the
session closes. Nothing lives at a fixed, shared path that another user could pre-plant.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from mcp_toolbridge.state import MemoryState, State, forgetting

MAX_SIDECAR_BYTES = 256 * 1024 * 1024
"""All sidecar files of one session together; past it, output is not kept."""


@dataclass
class SessionState:
    session_id: str
    root: Path
    """Where this session's sidecar folder is created (the system temp dir by default)."""
    _sidecars: Path | None = None
    _sidecar_bytes: int = 0

    @property
    def sidecar_dir(self) -> Path | None:
        return self._sidecars

    def _ensure_sidecars(self) -> Path:
        if self._sidecars is None:
            self.root.mkdir(parents=True, exist_ok=True)
            self._sidecars = Path(tempfile.mkdtemp(prefix="toolbridge-", dir=self.root))
            os.chmod(self._sidecars, 0o700)
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
