"""`mcp-toolbridge policy --show`: the effective policy, tools it hides, and {ad-hoc}."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_toolbridge.cli.main import main


def test_policy_show_names_the_tools_a_rule_hides_and_the_ad_hoc_folders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".toolbridge").mkdir(parents=True)
    (workspace / ".toolbridge" / "policy.toml").write_text(
        '[[rules]]\npermission = "hash_text"\naction = "deny"\n', encoding="utf-8"
    )
    notes = tmp_path / "notes"
    notes.mkdir()
    policy = tmp_path / "policy.toml"
    policy.write_text('[requires]\nfs.read = ["{ad-hoc}"]\n', encoding="utf-8")
    argv = ["policy", "--show", "--workspace", str(workspace), "--policy", str(policy)]
    assert main([*argv, "--ad-hoc", str(notes)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert "hash_text" in shown["hidden_tools"]
    assert shown["variables"]["ad-hoc"] == [str(notes.resolve())]
    assert str(notes.resolve()) in shown["requires"]["fs.read"]


def test_without_ad_hoc_folders_the_variable_expands_to_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[requires]\nfs.read = ["{ad-hoc}"]\n', encoding="utf-8")
    assert main(["policy", "--show", "--workspace", str(tmp_path), "--policy", str(policy)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["variables"]["ad-hoc"] == []
    assert shown["requires"]["expanded_to_nothing"]
