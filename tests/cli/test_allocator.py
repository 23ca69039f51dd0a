"""Pinning glibc's mmap threshold at serve time (see mcp_toolbridge/cli/allocator.py)."""

from __future__ import annotations

import platform

import pytest

from mcp_toolbridge.cli.allocator import pin_mmap_threshold


def test_an_operators_own_threshold_is_left_alone() -> None:
    assert pin_mmap_threshold({"MALLOC_MMAP_THRESHOLD_": "4194304"}) is False


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_the_threshold_is_pinned_on_glibc() -> None:
    assert pin_mmap_threshold({}) is True
