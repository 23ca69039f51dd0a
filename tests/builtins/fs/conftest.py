"""Fixtures of the file tools' tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.builtin_fs import Layout, make_layout


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    """A workspace and its prefix twin (``<ws>_evil``) holding ``secret.txt``."""
    return make_layout(tmp_path)
