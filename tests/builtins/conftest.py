"""Fixtures of the locked tools' tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_toolbridge.builtins.session import Sessions


@pytest.fixture
def sessions(tmp_path: Path) -> Iterator[Sessions]:
    """Per-session state with its sidecar folders under ``tmp_path / "sidecars"``, closed
    after the test."""
    state = Sessions(root=tmp_path / "sidecars")
    yield state
    state.close_all()
