"""glob and grep, served, withhold the result paths the policy would not let the caller read:
a deny rule (fs.read, or the read tool's own), a path whose reading asks (grep only), and
they count what they withheld without naming it. Both grep engines. grep's result is its text
alone (no structuredContent: see test_output_schemas.py), so that is what is checked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from mcp_toolbridge.bridge.asking import ALLOW_ONCE
from mcp_toolbridge.bridge.gate import HEADLESS_DENIED
from tests.support.results import text_of
from tests.support.served import error_text, locked_settings, served_client

DENY_SECRETS = """
default_action = "by-safety"
[requires]
fs.read = ["{workspace}"]
[[rules]]
permission = "fs.read"
pattern = "secrets/**"
action = "deny"
[[rules]]
permission = "fs.read"
pattern = "**/*.env"
action = "deny"
[[rules]]
permission = "read"
pattern = "**/*.pem"
action = "deny"
"""

ENGINES = ["python", "ripgrep"] if shutil.which("rg") else ["python"]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """The served grep's engine: ripgrep when rg is on PATH, else the in-process one (RE2 for
    the patterns here)."""
    if request.param == "python":
        monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
        return "re2"
    return str(request.param)


def _project(workspace: Path) -> None:
    (workspace / "secrets").mkdir()
    (workspace / "secrets" / "key.txt").write_text("API_KEY=hunter2\n", encoding="utf-8")
    (workspace / "app").mkdir()
    (workspace / "app" / "prod.env").write_text("API_KEY=swordfish\n", encoding="utf-8")
    (workspace / "app" / "cert.pem").write_text("API_KEY in a pem\n", encoding="utf-8")
    (workspace / "app" / "config.py").write_text(
        "API_KEY = os.environ['API_KEY']\n", encoding="utf-8"
    )


WITHHELD = (
    "matching file(s) withheld: the permission policy denies reading them or asks first (name "
    "such a file in path to be asked)"
)


def _text(result: types.CallToolResult) -> str:
    assert not result.is_error, result
    assert result.structured_content is None
    return text_of(result)


async def test_grep_withholds_files_the_policy_denies_reading_in_every_mode(tmp_path, engine):
    settings = locked_settings(tmp_path, DENY_SECRETS)
    assert settings.workspace is not None
    _project(settings.workspace)
    async with served_client(settings, locked=True) as client:
        for path in ("secrets/key.txt", "app/prod.env", "app/cert.pem"):
            assert "deny" in error_text(await client.call_tool("read", {"file_path": path})).lower()
        results = [
            await client.call_tool("grep", {"pattern": "API_KEY", "output_mode": mode})
            for mode in ("content", "files_with_matches", "count")
        ]
    content, files, counts = (_text(r) for r in results)
    note = f"\n\n(3 {WITHHELD})"
    assert content == "app/config.py:1:API_KEY = os.environ['API_KEY']" + note
    assert files == "Found 1 file(s)\napp/config.py" + note
    assert counts == "Found 1 matching line(s) in 1 file(s)\napp/config.py:1" + note
    dumped = json.dumps([r.model_dump() for r in results])
    for leaked in ("hunter2", "swordfish", "pem", "secrets", "prod.env"):
        assert leaked not in dumped


async def test_glob_withholds_denied_paths_and_counts_them(tmp_path):
    settings = locked_settings(tmp_path, DENY_SECRETS)
    assert settings.workspace is not None
    _project(settings.workspace)
    async with served_client(settings, locked=True) as client:
        envs = _text(await client.call_tool("glob", {"pattern": "**/*.env"}))
        everything = _text(await client.call_tool("glob", {"pattern": "**"}))
        inside = await client.call_tool("glob", {"pattern": "*", "path": "secrets"})
    denies = "the permission policy denies reading them"
    assert envs == f"(No files found; 1 matching file(s) withheld: {denies})"
    assert everything == f"app/config.py\n\n(3 matching file(s) withheld: {denies})"
    assert "deny" in error_text(inside).lower()  # the gate refuses naming the folder itself


async def test_grep_withholds_env_files_under_the_default_policy_until_named(tmp_path, engine):
    """The default policy asks before reading .env files: grep cannot ask per file, so it
    leaves them out; naming one in path asks the person, and then it is searched."""
    settings = locked_settings(tmp_path)
    assert settings.workspace is not None
    (settings.workspace / ".env").write_text("TOKEN=secret\n", encoding="utf-8")
    (settings.workspace / "main.py").write_text("TOKEN = load()\n", encoding="utf-8")
    asked: list[str] = []

    async def person(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": ALLOW_ONCE})

    async with served_client(settings, locked=True) as headless:
        found = _text(
            await headless.call_tool("grep", {"pattern": "TOKEN", "output_mode": "content"})
        )
        named = await headless.call_tool("grep", {"pattern": "TOKEN", "path": ".env"})
        listed = _text(await headless.call_tool("glob", {"pattern": ".env*"}))
    assert found == f"main.py:1:TOKEN = load()\n\n(1 {WITHHELD})"
    assert HEADLESS_DENIED in error_text(named)
    assert listed == ".env"  # a name is not content: glob lists what asks
    async with served_client(
        settings, "legacy", locked=True, elicitation_callback=person
    ) as client:
        allowed = _text(
            await client.call_tool(
                "grep", {"pattern": "TOKEN", "path": ".env", "output_mode": "content"}
            )
        )
    assert allowed == ".env:1:TOKEN=secret"
    assert len(asked) == 1 and "'grep'" in asked[0]
