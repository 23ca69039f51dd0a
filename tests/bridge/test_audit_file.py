"""What is planted at the audit log's path before the server opens it: the server runs as the
user, outside any sandbox, so a link there (planted by a tool that may write the folder the
log is in, or by another user where that folder is shared) would make it append its lines to
any file the user may write; a FIFO would hold the start forever (red-team pass of 2026-11-29,
5th). Real ``mcp-toolbridge call`` processes."""

from __future__ import annotations

import os
import pwd
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import run_cli

TIMEOUT_S = 60.0


def _call(tmp_path: Path, audit: Path) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "home"
    workspace = tmp_path / "ws"
    home.mkdir(exist_ok=True)
    workspace.mkdir(exist_ok=True)
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")}
    argv = ["call", "--audit", str(audit), "--locked", "read", "--workspace", str(workspace)]
    return run_cli(
        [*argv, "read", "--args", '{"file_path":"x"}'], env=env, cwd=workspace, timeout_s=TIMEOUT_S
    )


def test_a_link_at_the_audit_path_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's file\n")
    audit = tmp_path / "audit.ndjson"
    audit.symlink_to(victim)

    done = _call(tmp_path, audit)

    assert victim.read_text() == "the user's file\n"
    assert done.returncode != 0
    assert f"{audit} is a symbolic link" in done.stderr, done.stderr


def test_a_fifo_at_the_audit_path_fails_the_start_at_once(tmp_path: Path) -> None:
    audit = tmp_path / "audit.ndjson"
    os.mkfifo(audit)

    done = _call(tmp_path, audit)  # before: blocked in open() until the timeout

    assert done.returncode != 0
    assert f"{audit} is not a regular file" in done.stderr, done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="making a file of another user needs root")
def test_an_audit_file_another_user_made_is_refused(tmp_path: Path) -> None:
    nobody = pwd.getpwnam("nobody")
    audit = tmp_path / "audit.ndjson"
    audit.write_text("")
    os.chown(audit, nobody.pw_uid, nobody.pw_gid)
    audit.chmod(0o666)  # made by the other user for the server to fill, and to read

    done = _call(tmp_path, audit)

    assert audit.read_text() == ""
    assert done.returncode != 0
    assert f"{audit} belongs to another user" in done.stderr, done.stderr


def test_an_ordinary_audit_file_is_still_appended_to(tmp_path: Path) -> None:
    audit = tmp_path / "logs" / "audit.ndjson"
    for _ in range(2):
        _call(tmp_path, audit)
    assert len(audit.read_text().splitlines()) == 2
