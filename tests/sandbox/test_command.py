"""The bubblewrap command line: placing the mounts is cached, what it depends on is not; a
program it cannot run is refused as execve would refuse it."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_toolbridge.errors import ExecSpawnError
from mcp_toolbridge.executors import run_process
from mcp_toolbridge.sandbox.bwrap import HostView, plan_launch
from mcp_toolbridge.sandbox.profile import SandboxProfile, secret_paths
from tests.sandbox.conftest import Box


def _command(view: HostView, profile: SandboxProfile, cwd: Path) -> list[str]:
    return plan_launch(view, profile, ["/bin/sh", "-c", "true"], cwd=str(cwd), env={}).command()


def test_a_secret_path_created_after_a_launch_is_masked_in_the_next(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    view = HostView.detect("bwrap", home=home, masks=secret_paths(home, ()))
    profile = SandboxProfile(tool="t", read=(home,))
    ssh, netrc = home / ".ssh", home / ".netrc"
    before = _command(view, profile, tmp_path)
    assert str(ssh) not in before and str(netrc) not in before
    ssh.mkdir()
    netrc.write_text("machine example.org password hunter2\n")
    after = _command(view, profile, tmp_path)
    assert ["--tmpfs", str(ssh)] == after[after.index(str(ssh)) - 1 : after.index(str(ssh)) + 1]
    assert ["--ro-bind", "/dev/null", str(netrc)] == after[after.index(str(netrc)) - 2 :][:3]
    ssh.rmdir()
    ssh.write_text("now a file\n")  # a folder that became a file is hidden as a file
    again = _command(view, profile, tmp_path)
    assert ["--ro-bind", "/dev/null", str(ssh)] == again[again.index(str(ssh)) - 2 :][:3]


def test_a_root_that_now_leads_elsewhere_is_mounted_where_it_leads(tmp_path: Path) -> None:
    first, second, link = tmp_path / "first", tmp_path / "second", tmp_path / "link"
    first.mkdir()
    second.mkdir()
    link.symlink_to(first)
    view = HostView.detect("bwrap", home=None, masks=())
    profile = SandboxProfile(tool="t", write=(link,))
    argv = _command(view, profile, tmp_path)
    assert ["--bind-try", str(first), str(first)] == _slice(argv, first)
    link.unlink()
    link.symlink_to(second)
    argv = _command(view, profile, tmp_path)
    assert ["--bind-try", str(second), str(second)] == _slice(argv, second)
    assert str(first) not in argv


def _slice(argv: list[str], path: Path) -> list[str]:
    at = argv.index(str(path))
    return argv[at - 1 : at + 2]


@pytest.mark.parametrize(
    ("content", "mode", "said"),
    [
        (None, 0o755, "no such file"),
        (b"#!/bin/sh\necho hi\n", 0o644, "permission denied"),
        (b"just words, no interpreter line\n", 0o755, "not an executable format"),
    ],
)
async def test_a_program_the_sandbox_cannot_run_fails_as_execve_says(
    tmp_path: Path, sandbox_support: None, content: bytes | None, mode: int, said: str
) -> None:
    """What the launch finds out about the program before the sandbox is built (missing, not
    executable, neither a script nor a binary) reads as the spawn error execve would give."""
    box = Box(tmp_path)
    program = box.ws / "tool"
    if content is not None:
        program.write_bytes(content)
        program.chmod(mode)
    with pytest.raises(ExecSpawnError, match=said):
        await run_process(
            ["./tool"],
            stdin=None,
            cwd=str(box.ws),
            env=box.env,
            timeout_s=20,
            sandbox=box.confine(),
        )
