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
from mcp_toolbridge.builtins.fs.links import SETTLED_NS, LinkIndex, Stricter, coarse_now
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

    links = LinkIndex(tmp_path, verdict, limit=2)
    config = tmp_path / "app" / "config.txt"
    assert links.stricter(config, config.stat()) == Stricter("ask", None)
    alone = tmp_path / "alone.txt"
    alone.write_text("x", encoding="utf-8")
    assert links.stricter(alone, alone.stat()) is None
    whole = LinkIndex(tmp_path, verdict)
    assert whole.stricter(config, config.stat()) == Stricter("ask", tmp_path / ".env")
    notes = tmp_path / "notes.txt"
    assert whole.stricter(notes, notes.stat()) is None


def _env_asks(path: Path) -> Action:
    return "ask" if path.name == ".env" else "allow"


def _package_store(tmp_path: Path, files: int) -> tuple[Path, list[Path]]:
    """A workspace whose node_modules files are hard links into a store outside it, as pnpm
    installs them, beside a .env."""
    store, workspace = tmp_path / "store", tmp_path / "ws"
    store.mkdir()
    package = workspace / "node_modules" / ".pnpm" / "left-pad@1.3.0"
    package.mkdir(parents=True)
    (workspace / ".env").write_text(SECRET + "\n", encoding="utf-8")
    linked = []
    for i in range(files):
        (store / f"{i}.js").write_text(f"module.exports = {i}\n", encoding="utf-8")
        os.link(store / f"{i}.js", package / f"{i}.js")
        linked.append(package / f"{i}.js")
    return workspace, linked


def test_a_package_stores_links_are_looked_up_in_one_walk(tmp_path: Path):
    """Each multiply-linked file once walked for its other names: a store's files (whose
    other names are outside the workspace) cost one walk in all, not one each."""
    workspace, linked = _package_store(tmp_path, 40)
    later = coarse_now() + 2 * SETTLED_NS  # every file here settled before the walk began
    index = LinkIndex(workspace, _env_asks, clock=lambda: later)
    assert all(index.stricter(path, path.stat()) is None for path in linked)
    assert index.walks == 1


@pytest.mark.parametrize("how", ["linked", "renamed"])
def test_a_name_that_asks_made_after_the_walk_is_found(tmp_path: Path, how: str):
    """A link made after the walk changes its file's ctime, so the next question about that
    file walks again: ``ln .env innocent.txt``, or a linked file renamed to ``.env``."""
    workspace, linked = _package_store(tmp_path, 2)
    index = LinkIndex(workspace, _env_asks)
    assert index.stricter(linked[0], linked[0].stat()) is None
    innocent = workspace / "innocent.txt"
    if how == "linked":
        os.link(workspace / ".env", innocent)
    else:
        os.link(linked[1], innocent)
        os.replace(linked[1], workspace / ".env")
    expected = Stricter("ask", workspace / ".env")
    assert index.stricter(innocent, innocent.stat()) == expected
    assert index.walks == 2
