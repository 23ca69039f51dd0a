"""The command line as people type it: options anywhere among the positional arguments, and a
usage error that shows the verb's own usage (``policy show`` included)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_toolbridge.cli.main import main
from mcp_toolbridge.cli.parsing import parse_args
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool


@pytest.fixture
def manifests(tmp_path: Path) -> Path:
    agentcli_manifest(tmp_path / "m", [echo_tool("echo_json")], {"echo": ECHO})
    return tmp_path / "m"


@pytest.mark.parametrize(
    "order",
    [
        ("TOOL", "--args", "PATH"),
        ("TOOL", "PATH", "--args"),
        ("--args", "TOOL", "PATH"),
    ],
)
def test_call_takes_its_options_before_between_or_after_the_positionals(
    order: tuple[str, ...], manifests: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    words = {
        "TOOL": ["echo_json"],
        "--args": ["--args", '{"text": "anywhere"}'],
        "PATH": [str(manifests)],
    }
    argv = ["call", *(w for part in order for w in words[part]), "--no-audit"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out) == {"echo": {"text": "anywhere"}}


def test_list_takes_options_after_the_paths(
    manifests: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["list", str(manifests), "--json", "--locked", "none"]) == 0
    assert [row["name"] for row in json.loads(capsys.readouterr().out)] == ["echo_json"]


def test_an_unknown_option_shows_the_verbs_usage_and_exits_2(manifests: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mcp_toolbridge", "call", "echo_json", str(manifests), "--bogus"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: mcp-toolbridge call ")
    assert "--args JSON" in proc.stderr
    assert "mcp-toolbridge call: error: unrecognized arguments: --bogus" in proc.stderr


def test_an_unknown_verb_still_shows_the_top_level_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["frobnicate", "--json"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: mcp-toolbridge [-h] [--version] VERB")
    assert "invalid choice: 'frobnicate'" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["policy", "show", "PATH", "--allow", "write", "--locked", "none"],
        ["policy", "--allow", "write", "show", "PATH", "--locked", "none"],
        ["policy", "--locked", "none", "PATH", "--show", "--allow", "write"],
    ],
)
def test_policy_show_takes_its_options_anywhere(
    argv: list[str], manifests: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    typed = [str(manifests) if word == "PATH" else word for word in argv]
    assert main([*typed, "--workspace", str(tmp_path)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [layer["layer"] for layer in shown["layers"]] == ["default", "--allow"]
    assert shown["layers"][1]["allow"] == ["write"]


def test_an_unknown_option_of_policy_show_shows_its_usage_and_exits_2(manifests: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mcp_toolbridge", "policy", "show", str(manifests), "--bogus"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: mcp-toolbridge policy show ")
    assert "--allow NAME[=PATTERN]" in proc.stderr
    assert "mcp-toolbridge policy show: error: unrecognized arguments: --bogus" in proc.stderr


def test_an_empty_policy_or_secrets_file_means_none() -> None:
    """What a launcher writes for a setting left blank (an MCP bundle's
    ``--policy=${user_config.policy}`` with the default "")."""
    args = parse_args(["serve", "--policy=", "--secrets=", "m"])
    assert args.policy is None and args.secrets is None
    assert parse_args(["serve", "--policy", "p.toml"]).policy == Path("p.toml")
