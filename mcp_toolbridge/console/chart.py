"""The timeline's chart, drawn on the server as SVG: calls per minute as bars, p50 and p95
latency as two lines, over the last hour. No script draws it, so it needs nothing from the
network and shows with scripts off; the table under it says the same in numbers."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from mcp_toolbridge.console.feed import Minute

WIDTH = 720
HEIGHT = 200
PAD_LEFT = 44
PAD_RIGHT = 52
PAD_TOP = 12
PAD_BOTTOM = 28


@dataclass(frozen=True, slots=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    label: str


@dataclass(frozen=True, slots=True)
class Chart:
    width: int
    height: int
    bars: tuple[Bar, ...]
    p50: str
    """SVG polyline points of the p50 latency (empty: no call in the hour)."""
    p95: str
    max_calls: int
    max_ms: float
    ticks: tuple[tuple[float, str], ...]
    """(x, ``HH:MM``) labels under the time axis."""
    calls: int
    summary: str
    p50_dots: tuple[tuple[str, str], ...] = ()
    p95_dots: tuple[tuple[str, str], ...] = ()
    """The chart in words, for screen readers and as its title."""

    @property
    def plot_bottom(self) -> int:
        return self.height - PAD_BOTTOM

    @property
    def plot_right(self) -> int:
        return self.width - PAD_RIGHT


def _nice(value: float) -> float:
    """The smallest of 1, 2, 5 × 10^n at or above ``value`` (an axis maximum)."""
    step = 1.0
    while True:
        for factor in (1.0, 2.0, 5.0):
            if step * factor >= value:
                return step * factor
        step *= 10.0


def draw(minutes: list[Minute]) -> Chart:
    inner_w = WIDTH - PAD_LEFT - PAD_RIGHT
    inner_h = HEIGHT - PAD_TOP - PAD_BOTTOM
    slot = inner_w / max(1, len(minutes))
    max_calls = int(_nice(max([m.calls for m in minutes] + [1])))
    latencies = [m.p95_ms for m in minutes if m.p95_ms is not None]
    max_ms = _nice(max([*latencies, 1.0]))
    bottom = PAD_TOP + inner_h
    bars = []
    p50: list[tuple[str, str]] = []
    p95: list[tuple[str, str]] = []
    ticks = []
    for i, minute in enumerate(minutes):
        x = PAD_LEFT + i * slot
        height = inner_h * minute.calls / max_calls
        when = datetime.fromtimestamp(minute.start, UTC).strftime("%H:%M")
        bars.append(
            Bar(
                round(x + 1, 1),
                round(bottom - height, 1),
                round(slot - 2, 1),
                round(height, 1),
                f"{when} UTC: {minute.calls} calls",
            )
        )
        middle = x + slot / 2
        if minute.p50_ms is not None and minute.p95_ms is not None:
            p50.append((f"{middle:.1f}", f"{bottom - inner_h * minute.p50_ms / max_ms:.1f}"))
            p95.append((f"{middle:.1f}", f"{bottom - inner_h * minute.p95_ms / max_ms:.1f}"))
        if i % 10 == 0:
            ticks.append((round(x, 1), when))
    calls = sum(m.calls for m in minutes)
    all_p95 = [m.p95_ms for m in minutes if m.p95_ms is not None]
    summary = f"{calls} calls in the last hour"
    if all_p95:
        summary += f"; the slowest minute's p95 latency was {max(all_p95):g} ms"
    return Chart(
        WIDTH,
        HEIGHT,
        tuple(bars),
        " ".join(f"{x},{y}" for x, y in p50),
        " ".join(f"{x},{y}" for x, y in p95),
        max_calls,
        max_ms,
        tuple(ticks),
        calls,
        summary,
        tuple(p50),
        tuple(p95),
    )
