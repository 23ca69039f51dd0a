"""What another user, or a tool that may write the cache folder, plants there before the server
starts: the server reads the folder as the user, outside any sandbox, and unpickles what it
trusts (red-team pass of 2026-11-29, 5th). Real ``mcp-toolbridge call`` processes where a
start could hang; the folder itself where it is a matter of what is trusted."""

from __future__ import annotations

import logging
import os
import pwd
import subprocess
from pathlib import Path

import pytest

from mcp_toolbridge.cache import CacheFolder
from tests.support.cli import run_cli

TIMEOUT_S = 60.0


def _call(tmp_path: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "home"
    workspace = tmp_path / "ws"
    home.mkdir(exist_ok=True)
    workspace.mkdir(exist_ok=True)
    env = {**os.environ, "HOME": str(home), "TOOLBRIDGE_CACHE_DIR": str(cache)}
    argv = ["call", "--no-audit", "--locked", "read", "--workspace", str(workspace)]
    return run_cli(
        [*argv, "read", "--args", '{"file_path":"x"}'], env=env, cwd=workspace, timeout_s=TIMEOUT_S
    )


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("where", ["key", "cache-file"])
def test_a_fifo_in_the_cache_folder_does_not_hold_the_start(tmp_path: Path, where: str) -> None:
    cache = tmp_path / "cache"
    first = _call(tmp_path, cache)  # writes the key and the cache files
    assert first.returncode == 1, first.stderr  # the file is not there: a tool error
    names = sorted(p.name for p in cache.iterdir())
    victim = "key" if where == "key" else next(n for n in names if n.startswith("index-"))
    (cache / victim).unlink()
    os.mkfifo(cache / victim)

    done = _call(tmp_path, cache)  # before: blocked in open() until the timeout

    assert done.returncode == 1, done.stderr
    assert "file not found" in done.stdout


def test_a_cache_file_linked_elsewhere_is_not_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = CacheFolder(tmp_path / "cache")
    assert folder.write("thing.bin", "test/1", 1)
    moved = tmp_path / "elsewhere.bin"
    folder.path("thing.bin").rename(moved)
    folder.path("thing.bin").symlink_to(moved)

    assert CacheFolder(folder.folder).read("thing.bin", "test/1") is None
    assert any("not a regular file" in m for m in _warnings(caplog)), _warnings(caplog)


@pytest.mark.skipif(os.geteuid() != 0, reason="making a folder of another user needs root")
@pytest.mark.parametrize("how", ["another-users", "world-writable"])
def test_a_cache_folder_others_can_write_is_not_used(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, how: str
) -> None:
    """Made first by another user (``TOOLBRIDGE_CACHE_DIR`` or ``XDG_CACHE_HOME`` on a shared
    path), or opened to everyone: whoever may write it may remove the key and every file, and
    plant what the server reads at start."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    if how == "another-users":
        nobody = pwd.getpwnam("nobody")
        os.chown(shared, nobody.pw_uid, nobody.pw_gid)
        shared.chmod(0o755)  # theirs, not writable by us (root may write it all the same)

    folder = CacheFolder(shared)
    assert not folder.write("thing.bin", "test/1", 1)
    assert folder.read("thing.bin", "test/1") is None
    assert folder.disabled
    assert list(shared.iterdir()) == []
    warned = _warnings(caplog)
    assert len(warned) == 1 and "others may write" in warned[0], warned
