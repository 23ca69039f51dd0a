"""A bash call the shell check asks about for a reason of its own (a write inside .git, a
path through /proc/self, ...) says that reason wherever the ask is seen: the question the
person gets, the refusal a headless client's model gets, and the audit line. Under a
``bash=cat *`` allow the rules' own ask (the default's ``bash`` ask, met by the
``bash -c <command>`` subject the reason adds) decides, so the reason must be added to it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from mcp_toolbridge.bridge.asking import REJECT
from mcp_toolbridge.bridge.gate import HEADLESS_DENIED
from mcp_toolbridge.policy.shell.hooks import MAX_GLOB_MATCHES
from mcp_toolbridge.runtime import Settings
from tests.support.served import error_text, locked_settings, served_client

CAT_ALLOWED = 'allow = ["bash=cat *"]\n'


def _settings(tmp_path: Path) -> tuple[Settings, Path]:
    settings = locked_settings(tmp_path, CAT_ALLOWED)
    workspace = settings.workspace
    assert workspace is not None
    (workspace / ".git").mkdir()
    (workspace / "notes.txt").write_text("notes\n", encoding="utf-8")
    (workspace / "dirlink").symlink_to(workspace / ".git")
    many = workspace / "many"
    many.mkdir()
    for index in range(MAX_GLOB_MATCHES + 1):
        (many / f"{index}.txt").touch()
    return settings, workspace


def _cases(workspace: Path) -> list[tuple[str, str]]:
    """(command, what the ask must say) for every reason the shell check finds in paths."""
    return [
        ("cat notes.txt > .git/config", "it writes '.git/config', inside .git"),
        ("cat notes.txt >> .toolbridge/policy.toml", "inside .toolbridge"),
        (f"cat /proc/self/root{workspace}/notes.txt", "goes through /proc/self"),
        (f"cat /dev/fd/../root{workspace}/notes.txt", "goes through /proc/self"),
        ("cat many/*", f"matches more than {MAX_GLOB_MATCHES:,} paths"),
        ("mv dirlink y && cat y/notes.txt", "where a command of the same line may leave a"),
    ]


def _audit(settings: Settings) -> list[dict[str, Any]]:
    assert settings.audit_path is not None
    return [json.loads(x) for x in settings.audit_path.read_text().splitlines()]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_headless_refusal_and_the_audit_say_the_shell_checks_reason(tmp_path, mode):
    settings, workspace = _settings(tmp_path)
    cases = _cases(workspace)
    async with served_client(settings, mode, locked=True) as client:
        for command, reason in cases:
            refused = await client.call_tool("bash", {"command": command})
            text = error_text(refused)
            assert HEADLESS_DENIED in text, command
            assert "default policy rules[7]" in text, text
            assert reason in text, (command, text)
            assert "To allow it" in text, text
        ok = await client.call_tool("bash", {"command": "cat notes.txt"})
        assert not ok.is_error, ok
    lines = _audit(settings)
    assert [line["decision"] for line in lines] == ["deny"] * len(cases) + ["allow"]
    for (command, reason), line in zip(cases, lines, strict=False):
        assert reason in line["decidedBy"], (command, line)
    assert (workspace / ".git").is_dir() and not (workspace / ".git" / "config").exists()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_question_a_person_gets_says_the_reason(tmp_path, mode):
    settings, _ = _settings(tmp_path)
    asked: list[str] = []

    async def person(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": REJECT})

    async with served_client(settings, mode, locked=True, elicitation_callback=person) as client:
        refused = await client.call_tool("bash", {"command": "cat notes.txt > .git/config"})
    assert refused.is_error
    assert len(asked) == 1
    assert "Why you are asked: default policy rules[7]" in asked[0], asked[0]
    assert "it writes '.git/config', inside .git" in asked[0], asked[0]
    last = _audit(settings)[-1]
    assert last["answer"] == "reject" and last["decision"] == "deny", last
    assert "it writes '.git/config', inside .git" in last["decidedBy"], last


async def test_an_ask_for_an_unallowed_command_alone_names_only_the_rule(tmp_path):
    """No reason is made up: ``cat x; ls`` asks because nothing allows ``ls``."""
    settings, _ = _settings(tmp_path)
    async with served_client(settings, locked=True) as client:
        refused = await client.call_tool("bash", {"command": "cat notes.txt; ls"})
    text = error_text(refused)
    assert "default policy rules[7] (bash, any argument, ask))" in text, text
    assert "cannot be fully checked" not in text, text


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_scope_refusal_of_the_whole_command_says_the_reason(tmp_path, mode):
    """With shell entries in the scope, the ``bash -c <command>`` subject a reason adds is
    refused unless bash is granted: the refusal says which reason made it, not only that
    no entry grants ``bash``."""
    scoped = CAT_ALLOWED + '[requires]\nshell = [{ cmd = "cat" }]\n'
    settings = locked_settings(tmp_path, scoped)
    assert settings.workspace is not None
    (settings.workspace / ".git").mkdir()
    async with served_client(settings, mode, locked=True) as client:
        refused = await client.call_tool("bash", {"command": "cat notes.txt > .git/config"})
        plain = await client.call_tool("bash", {"command": "ls"})
    text = error_text(refused)
    assert "matches no granted shell entry" in text, text
    assert "it stands for the whole command" in text, text
    assert "it writes '.git/config', inside .git" in text, text
    assert "stands for the whole command" not in error_text(plain)
    assert "inside .git" in _audit(settings)[0]["decidedBy"]
