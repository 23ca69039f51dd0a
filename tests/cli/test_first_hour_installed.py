"""The first hour of a person who installed the package (a wheel in a fresh virtualenv) and
wires it into a client: the slips of a config entry copied between clients, a manifest path
mistyped, a verb guessed from other tools; each is named with the fix, through the real
command line (a process per verb, a home folder of its own)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import run_cli

EXAMPLES = Path(__file__).resolve().parents[2] / "manifests" / "text-tools"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


@pytest.fixture
def project(home: Path) -> Path:
    folder = home / "code" / "project"
    folder.mkdir(parents=True)
    return folder


def cli(home: Path, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")}
    return run_cli(argv, env=env, cwd=cwd or home)


def _entry(*args: str) -> dict[str, object]:
    return {"command": sys.executable, "args": ["-m", "mcp_toolbridge", *args]}


def test_a_mistyped_manifest_path_is_not_answered_with_skip_invalid(home, project):
    """``serve ~/mytool`` (for ``~/mytools``) said to serve the valid tools with
    --skip-invalid: there were none, and the server that flag starts serves none of the
    user's tools. The hint stays where some tools are valid."""
    (home / "mytools").symlink_to(EXAMPLES)
    missing = str(home / "mytool")

    for verb in ("serve", "list"):
        done = cli(home, verb, "--workspace", str(project), missing)
        assert done.returncode == 2, done.stderr
        assert "--skip-invalid" not in done.stderr, done.stderr
        assert done.stderr.splitlines()[-1] == "mcp-toolbridge: 1 problem found; nothing served"

    done = cli(home, "doctor", "--workspace", str(project), missing, "--sandbox", "off")
    assert done.returncode == 1
    (line,) = [line for line in done.stdout.splitlines() if "manifests" in line]
    assert f"{missing}: no such file or folder" in line
    assert "--skip-invalid" not in done.stdout, done.stdout

    broken = home / "broken"
    broken.mkdir()
    (broken / "tools.json").write_text('{"tools": [{"name": "x"}]}', encoding="utf-8")
    done = cli(home, "serve", "--workspace", str(project), str(home / "mytools"), str(broken))
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "mcp-toolbridge: 1 problem found; nothing served (or serve the 3 valid tools with "
        "--skip-invalid)"
    )
