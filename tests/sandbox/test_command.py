"""The bubblewrap command line: placing the mounts is cached, what it depends on is not."""

from __future__ import annotations

from pathlib import Path

from mcp_toolbridge.sandbox.bwrap import HostView, plan_launch
from mcp_toolbridge.sandbox.profile import SandboxProfile, secret_paths


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
