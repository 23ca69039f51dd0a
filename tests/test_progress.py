"""Progress of long start-up steps: quiet when short, a line a second when long, then one
summary line."""

from __future__ import annotations

from pathlib import Path

from mcp_toolbridge.catalog import SearchIndex
from mcp_toolbridge.loaders.parallel import load_in_shares
from mcp_toolbridge.progress import Meter
from tests.support.policy_fixtures import exec_tool


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _meter(lines: list[str], clock: Clock, total: int = 1000, **kw: float) -> Meter:
    return Meter("loading manifests", total, "files", write=lines.append, clock=clock, **kw)


def test_a_short_step_says_nothing() -> None:
    lines: list[str] = []
    clock = Clock()
    meter = _meter(lines, clock)
    for done in range(0, 1000, 10):
        clock.now += 0.005
        meter.update(done)
    meter.finish("loaded 1,000 files")
    assert lines == []


def test_a_long_step_shows_count_rate_and_time_left_once_a_second() -> None:
    lines: list[str] = []
    clock = Clock()
    meter = _meter(lines, clock)
    for done in range(1, 1001):
        clock.now += 0.004  # 4 s in all
        meter.update(done)
    meter.finish("loaded 1,000 files")
    assert len(lines) == 5  # at 1, 2, 3 and 4 s (not one per update), then the summary
    assert lines[0] == "loading manifests: 250 of 1,000 files (25%), 250 files/s, 3.0 s left"
    assert lines[-1] == "loaded 1,000 files in 4.0 s"


def test_time_left_follows_the_work_when_items_differ_in_cost() -> None:
    lines: list[str] = []
    clock = Clock()
    meter = _meter(lines, clock, total=10, total_work=1000)
    clock.now += 2
    meter.update(9, work=500)  # nine small files are half of the bytes
    assert lines == ["loading manifests: 9 of 10 files (50%), 4 files/s, 2.0 s left"]


def test_a_summary_can_be_asked_for_whatever_the_time() -> None:
    lines: list[str] = []
    meter = _meter(lines, Clock())
    meter.finish("100,000 tools", always=True)
    assert lines == ["100,000 tools in 0.0 s"]


def test_loading_in_shares_reports_each_file(tmp_path: Path) -> None:
    files = [(tmp_path / f"{i}.json", str(i)) for i in range(5)]
    seen: list[int] = []

    class Counting(Meter):
        def due(self) -> bool:
            return True

        def update(self, done: int, work: float | None = None) -> None:
            seen.append(done)

    load_in_shares(files, lambda path, shown: shown, Counting("x", 5, "files"))
    assert seen == [1, 2, 3, 4, 5]


def test_indexing_reports_progress_through_both_passes() -> None:
    fractions: list[float] = []

    class Counting(Meter):
        def due(self) -> bool:
            return True

        def update(self, done: int, work: float | None = None) -> None:
            fractions.append((work or 0) / self.total_work)

    specs = [exec_tool(f"tool_{i}") for i in range(1500)]
    SearchIndex.build(specs, meter=Counting("indexing", len(specs), "tools"))
    assert fractions == sorted(fractions)
    assert fractions[0] == 0 and 0.5 <= fractions[-1] < 1
