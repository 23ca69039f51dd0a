"""The command line as a user runs it: ``python -m mcp_toolbridge ARGV`` in a process of its
own, stdin closed, its output captured, bounded in time."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path


def run_cli(
    argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, timeout_s: float = 60.0
) -> subprocess.CompletedProcess[str]:
    """Run ``mcp-toolbridge ARGV`` and return what it did (never raising on its exit)."""
    return subprocess.run(
        [sys.executable, "-m", "mcp_toolbridge", *argv],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=dict(env),
        cwd=cwd,
        check=False,
    )
