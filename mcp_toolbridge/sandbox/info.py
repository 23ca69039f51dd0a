"""The pipe bubblewrap reports a fresh sandbox's init on (``--info-fd``), and the descriptor
it reads the seccomp filter from (``--seccomp``): made per launch, closed once bwrap has them."""

from __future__ import annotations

import os

from mcp_toolbridge.sandbox import seccomp


class InfoPipe:
    """The pipe bwrap reports the sandbox's init on (``--info-fd``): the write end goes to
    bwrap and is closed here once it is spawned; the read end is followed by the executor.
    Made when first asked for (a launch in a warm sandbox spawns no bwrap). With it, the
    descriptor bwrap reads the seccomp filter from (``--seccomp``), closed with the write end.
    """

    def __init__(self, seccomp: bytes | None = None) -> None:
        self._read = self._write = -1
        self._program = seccomp
        self._seccomp = -1

    def seccomp(self) -> int | None:
        """Where bwrap reads the filter from (None: no filter)."""
        if self._program is None:
            return None
        if self._seccomp < 0:
            self._seccomp = seccomp.open_program(self._program)
        return self._seccomp

    @property
    def passed(self) -> tuple[int, ...]:
        """What bwrap inherits: the write end, and the filter's descriptor once made."""
        return (self.write, *((self._seccomp,) if self._seccomp >= 0 else ()))

    @property
    def read(self) -> int:
        if self._read < 0:
            self._read, self._write = os.pipe()
        return self._read

    @property
    def write(self) -> int:
        if self._read < 0:
            self._read, self._write = os.pipe()
        return self._write

    def close_write(self) -> None:
        if self._write >= 0:
            os.close(self._write)
            self._write = -1
        if self._seccomp >= 0:
            os.close(self._seccomp)
            self._seccomp = -1

    def close(self) -> None:
        self.close_write()
        if self._read >= 0:
            os.close(self._read)
            self._read = -1
