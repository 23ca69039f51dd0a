"""The bubblewrap command line: placing the mounts is cached, what it depends on is not; a
program it cannot run is refused as execve would refuse it."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_toolbridge.errors import ExecSpawnError
from mcp_toolbridge.executors import run_process
from mcp_toolbridge.sandbox.bwrap import HostView, plan_launch
from mcp_toolbridge.sandbox.profile import SandboxProfile, secret_paths
from tests.sandbox.conftest import Box, report


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


# Found by the red-team pass of 2026-11-29 (4th): the sandbox showed each folder on the
# launch's PATH (and the folder above a bin folder), so whatever set a tool's PATH chose what
# its sandbox showed. The loaders and EnvSpec refuse a PATH now; these launches carry one
# anyway, as any future way of setting a tool's environment could.


def _outside_bin(box: Box) -> tuple[Path, Path]:
    """``outside/bin`` holding a ``toolbridge-probe`` script, and ``outside/secret.txt``."""
    secret = box.outside / "secret.txt"
    secret.write_text("PRIVATE-DATA", encoding="utf-8")
    folder = box.outside / "bin"
    folder.mkdir()
    probe = folder / "toolbridge-probe"
    probe.write_text("#!/bin/sh\necho ran\n", encoding="utf-8")
    probe.chmod(0o755)
    return folder, secret


async def test_a_launch_whose_path_names_another_folder_is_not_shown_it(box: Box) -> None:
    folder, secret = _outside_bin(box)
    script = (
        "import json, sys\ntry:\n    s = open(sys.argv[1]).read()\n"
        "except OSError as e:\n    s = type(e).__name__\nprint(json.dumps({'read': s}))\n"
    )
    path = f"{folder}:{box.env['PATH']}"
    outcome = await box.python(script, env={"PATH": path}, argv=[str(secret)])
    assert report(outcome) == {"read": "FileNotFoundError"}


async def test_a_command_name_is_looked_up_on_the_servers_path_not_the_launchs(
    box: Box,
) -> None:
    folder, _ = _outside_bin(box)
    env = {**box.env, "PATH": f"{folder}:{box.env['PATH']}"}
    with pytest.raises(ExecSpawnError, match="no such file"):
        await run_process(
            ["toolbridge-probe"],
            stdin=None,
            cwd=str(box.ws),
            env=env,
            timeout_s=20,
            sandbox=box.confine(),
        )


def test_the_view_holds_the_servers_path_and_shows_its_folders(tmp_path: Path) -> None:
    folder = tmp_path / "tools" / "bin"
    folder.mkdir(parents=True)
    path = f"{folder}:/usr/bin:/bin"
    view = HostView.detect("bwrap", home=None, masks=(), path=path)
    assert view.path == view.lookup == path
    assert view.path_shown[:2] == (str(folder), str(folder.parent))
