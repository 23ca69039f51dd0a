"""The soak of benchmarks/soak.py, short: a few hundred calls over real stdio, 32 in flight,
through every misbehaving tool, and calls the client cancels midway."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from benchmarks.soak import MIX, SoakConfig, SoakReport, run_soak

pytestmark = pytest.mark.e2e

RSS_GROWTH_LIMIT_KIB = 64 * 1024
"""Resident memory the server may gain over the run: the output bombs are cut at 256 KiB."""
assert SoakConfig().max_rss_growth_mib * 1024 == RSS_GROWTH_LIMIT_KIB  # the benchmark's bound


async def test_a_mixed_soak_answers_every_call_frees_every_process_and_keeps_memory_bounded(
    tmp_path: Path,
) -> None:
    config = SoakConfig(
        calls=600,
        inflight=32,
        bomb_bytes=4 << 20,
        max_output=256 << 10,
        hang_timeout_s=0.5,
        max_concurrency=32,
    )
    with anyio.fail_after(60):
        report = await run_soak(config, tmp_path)
    print(report.table())  # the figures, for `pytest -s`
    assert report.problems == []
    assert set(report.kinds) == set(MIX)
    assert report.cancelled > 0
    assert sum(report.expected.values()) == config.calls
    assert report.left_behind == []
    assert report.still_answering
    assert report.server_exited
    assert report.left_after_exit == []
    assert report.rss_growth_kib < RSS_GROWTH_LIMIT_KIB
    assert report.failures() == []
    assert report.table().endswith("verdict: pass")


def _passing(config: SoakConfig) -> SoakReport:
    report = SoakReport(["soak"], config, still_answering=True, server_exited=True)
    report.kinds["ok"] = report.expected["ok"] = config.calls
    report.memory_before, report.memory_after = {"VmRSS": 100 << 10}, {"VmRSS": 110 << 10}
    return report


def test_the_benchmark_fails_on_memory_growth_unanswered_calls_and_leftover_processes() -> None:
    config = SoakConfig(calls=10, max_rss_growth_mib=16)
    assert _passing(config).failures() == []

    grown = _passing(config)
    grown.memory_after = {"VmRSS": 117 << 10}
    assert grown.failures() == [
        "server RSS grew 17.0 MiB, over the 16 MiB bound (--max-rss-growth-mib)"
    ]
    unanswered = _passing(config)
    unanswered.expected["ok"] = 9
    unanswered.problems.append("call 3 (ok): no answer in 30 s")
    assert unanswered.failures() == ["1 of 10 calls not answered as expected"]
    leftover = _passing(config)
    leftover.left_after_exit = [4242]
    assert leftover.failures() == [
        "processes left behind: 0 while serving, 1 after the client closed"
    ]
    assert leftover.table().splitlines()[-2:] == [
        "verdict: FAIL",
        "  failed: processes left behind: 0 while serving, 1 after the client closed",
    ]
