"""uv.lock, the versions the MCP bundle installs (scripts/bundle writes it with ``uv lock`` and
packs it; the bundle runs ``uv run --frozen``), still satisfies pyproject.toml: a dependency
added or bounds moved in pyproject.toml without the lock written again fail here, before a
bundle would start without it. ``uv lock --check --offline`` with an empty cache: no network,
about 0.2 s."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.package.conftest import ROOT, find_uv


def test_uv_lock_satisfies_pyproject(tmp_path: Path) -> None:
    uv = find_uv()
    if uv is None:
        pytest.skip("uv is not installed (it comes with the dev extra: ./scripts/setup dev)")
    assert (ROOT / "uv.lock").is_file(), "no uv.lock: run ./scripts/bundle (or uv lock)"
    done = subprocess.run(
        [str(uv), "lock", "--check", "--offline", "--project", str(ROOT)],
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "UV_CACHE_DIR": str(tmp_path / "cache"),
            "UV_NO_CONFIG": "1",
            "UV_PYTHON": sys.executable,
            "UV_PYTHON_DOWNLOADS": "never",
        },
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, (
        "uv.lock no longer matches pyproject.toml: run ./scripts/bundle (or uv lock) and "
        f"commit uv.lock\n{done.stderr}"
    )
