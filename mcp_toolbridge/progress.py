"""Progress of long start-up steps (loading and indexing a big catalog), for a person watching
stderr.

A :class:`Meter` says nothing during the first second: a step that ends sooner needs no
progress. After that it writes one line a second at most, with the count, the rate and the
time left, and it ends with one summary line when the step took long enough to have shown
progress or the caller asks for one. Work that runs in a tight loop asks :meth:`Meter.due`
first (a clock read) and computes its counts only when a line is due.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

__all__ = ["Meter", "Write", "stderr_line"]

Write = Callable[[str], None]


def stderr_line(line: str) -> None:
    try:
        sys.stderr.write(f"mcp-toolbridge: {line}\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr closed: progress is not worth failing for
        pass


def _duration(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min"


class Meter:
    """Progress of one step over ``total`` items called ``unit`` (plural), e.g. "files".

    ``update(done, work)`` takes the items done so far and, when items differ in cost, the
    work done so far out of ``total_work`` (bytes, say), which makes the time left better
    than counting items. Lines go to ``write`` (default: stderr, prefixed).
    """

    def __init__(
        self,
        what: str,
        total: int,
        unit: str,
        *,
        total_work: float | None = None,
        write: Write = stderr_line,
        delay_s: float = 1.0,
        every_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.what = what
        self.total = total
        self.unit = unit
        self.total_work = float(total_work if total_work is not None else total)
        self._write = write
        self._every = every_s
        self._clock = clock
        self.started = clock()
        self._next = self.started + delay_s
        self._delay = delay_s
        self.shown = 0
        """Progress lines written so far."""

    def due(self) -> bool:
        """Whether a progress line would be written now (cheap: one clock read)."""
        return self._clock() >= self._next

    def update(self, done: int, work: float | None = None) -> None:
        now = self._clock()
        if now < self._next or done <= 0:
            return
        self._next = now + self._every
        elapsed = now - self.started
        fraction = (done if work is None else work) / self.total_work if self.total_work else 1.0
        fraction = min(max(fraction, 0.0), 1.0)
        rate = done / elapsed if elapsed > 0 else 0.0
        line = f"{self.what}: {done:,} of {self.total:,} {self.unit} ({fraction:.0%}), "
        line += f"{rate:,.0f} {self.unit}/s"
        if 0 < fraction < 1:
            line += f", {_duration(elapsed * (1 - fraction) / fraction)} left"
        self._write(line)
        self.shown += 1

    def elapsed(self) -> float:
        return self._clock() - self.started

    def finish(self, summary: str, *, always: bool = False) -> None:
        """Write ``summary`` (with the time taken appended) if progress was shown, the step
        took longer than the delay, or ``always``."""
        elapsed = self.elapsed()
        if always or self.shown or elapsed >= self._delay:
            self._write(f"{summary} in {_duration(elapsed)}")
