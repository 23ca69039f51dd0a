"""A file hard-linked to ``.env`` inside the workspace, read and grepped through the served
tools under the default policy (``.env`` asks) and under a deny rule.

The rules match paths, so ``config.txt``, another name of ``.env``'s file, was read and
grepped without asking (listed under "Not covered" by the red-team pass of 2026-11-29). Now a
file with several links is judged by its strictest name in the workspace: ``read`` refuses it
and names the file to read instead, ``grep`` withholds it. Two ordinary files linked to each
other are read as before."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_toolbridge.bridge.gate import HEADLESS_DENIED
from mcp_toolbridge.builtins.fs.links import HardLinks, Stricter
from mcp_toolbridge.policy import Action
from tests.builtins.fs.test_served_visibility import WITHHELD, engine
from tests.support.results import text_of
from tests.support.served import error_text, locked_settings, served_client

__all__ = ["engine"]  # the fixture: grep with each engine

SECRET = "DB_PASSWORD=swordfish-0417"
DENY_ENV = """
[requires]
fs.read = ["{workspace}"]
[[rules]]
permission = "read"
action = "allow"
[[rules]]
permission = "grep"
action = "allow"
[[rules]]
permission = "fs.read"
pattern = "**/.env"
action = "deny"
"""


def _project(workspace: Path) -> None:
    (workspace / ".env").write_text(SECRET + "\n", encoding="utf-8")
    (workspace / "app").mkdir()
    os.link(workspace / ".env", workspace / "app" / "config.txt")
    (workspace / "notes.txt").write_text("swordfish is a fish\n", encoding="utf-8")
    os.link(workspace / "notes.txt", workspace / "app" / "notes-copy.txt")


async def test_read_refuses_a_hard_link_to_env_and_names_the_file_that_asks(tmp_path: Path):
    settings = locked_settings(tmp_path)
    assert settings.workspace is not None
    _project(settings.workspace)
    async with served_client(settings, locked=True) as client:
        asked = error_text(await client.call_tool("read", {"file_path": ".env"}))
        assert HEADLESS_DENIED in asked  # the rule the link went around
        error = error_text(await client.call_tool("read", {"file_path": "app/config.txt"}))
        plain = await client.call_tool("read", {"file_path": "app/notes-copy.txt"})
    assert "app/config.txt is a hard link to .env, whose reading asks first" in error, error
    assert "swordfish" not in error
    assert not plain.is_error and "swordfish is a fish" in text_of(plain)


async def test_read_refuses_a_hard_link_to_a_file_whose_reading_is_denied(tmp_path: Path):
    settings = locked_settings(tmp_path, DENY_ENV)
    assert settings.workspace is not None
    _project(settings.workspace)
    async with served_client(settings, locked=True) as client:
        error = error_text(await client.call_tool("read", {"file_path": "app/config.txt"}))
    assert error.endswith("app/config.txt is a hard link to a file whose reading the policy denies")
    assert ".env" not in error and "swordfish" not in error


@pytest.mark.usefixtures("engine")
async def test_grep_withholds_a_hard_link_to_env(tmp_path: Path):
    settings = locked_settings(tmp_path)
    assert settings.workspace is not None
    _project(settings.workspace)
    arguments = {"pattern": "swordfish", "output_mode": "content"}
    async with served_client(settings, locked=True) as client:
        found = await client.call_tool("grep", arguments)
        named = await client.call_tool("grep", {**arguments, "path": "app/config.txt"})
    text = text_of(found)
    assert not found.is_error and "swordfish is a fish" in text and "0417" not in text, text
    assert "2 " + WITHHELD in text, text  # .env and its other name
    assert "0417" not in text_of(named), text_of(named)


def test_a_workspace_too_large_to_search_makes_a_hard_link_ask(tmp_path: Path):
    """Fail closed: past the bound the other names cannot be known, so reading asks; a file
    with one link is never searched for."""
    _project(tmp_path)

    def verdict(path: Path) -> Action:
        return "ask" if path == tmp_path / ".env" else "allow"

    links = HardLinks(tmp_path, verdict, limit=2)
    config = tmp_path / "app" / "config.txt"
    assert links.stricter(config, config.stat()) == Stricter("ask", None)
    alone = tmp_path / "alone.txt"
    alone.write_text("x", encoding="utf-8")
    assert links.stricter(alone, alone.stat()) is None
    whole = HardLinks(tmp_path, verdict)
    assert whole.stricter(config, config.stat()) == Stricter("ask", tmp_path / ".env")
    notes = tmp_path / "notes.txt"
    assert whole.stricter(notes, notes.stat()) is None
