"""The soak of benchmarks/soak.py, short: a few hundred calls over real stdio, 32 in flight,
through every misbehaving tool, and calls the client cancels midway."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from benchmarks.soak import MIX, SoakConfig, run_soak

pytestmark = pytest.mark.e2e

RSS_GROWTH_LIMIT_KIB = 64 * 1024
"""Resident memory the server may gain over the run: the output bombs are cut at 256 KiB."""


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
