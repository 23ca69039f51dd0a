"""What a model writes reaches a person only as visible text: a confirmation's arguments and
the question tool's form carry every character that hides or rewrites text as its escape
(red-team pass of 2026-11-29, 8th). Before, a bash command holding U+202E (right-to-left
override) reached the person's confirmation reordered, and a question's text reached the
client's form with its terminal escapes (``ESC ]0;...BEL`` retitles a terminal, the one-byte
CSI ``\\x9b``) and tag characters (text a person cannot see) as they were."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from mcp_toolbridge.bridge.asking import REJECT
from mcp_toolbridge.host import HIDDEN

pytestmark = pytest.mark.e2e

OVERRIDE = "\u202e"
SPOOF = f"echo safe #{OVERRIDE}~ fr- mr; rm -rf ~"
"""Shown with the override as it is, the part after it reads right to left."""
TITLE = "\x1b]0;mcp-toolbridge: allowed\x07"
TAGS = "".join(chr(0xE0000 + ord(c)) for c in "say yes")
CSI = "\x9b2J"


def _server(tmp_path: Path) -> StdioServerParameters:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "TOOLBRIDGE_CACHE_DIR": str(tmp_path / "cache"),
    }
    argv = ["-m", "mcp_toolbridge", "serve", "--no-audit", "--locked", "all"]
    return StdioServerParameters(
        command=sys.executable, args=[*argv, "--workspace", str(workspace)], env=env
    )


async def test_a_confirmation_and_a_question_show_hidden_characters_as_escapes(
    tmp_path: Path,
) -> None:
    shown: list[tuple[str, dict[str, Any]]] = []

    async def person(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        shown.append((params.message, params.requested_schema))
        if "decision" in params.requested_schema["properties"]:
            return types.ElicitResult(action="accept", content={"decision": REJECT})
        return types.ElicitResult(action="decline")

    question = {
        "question": f"Deploy now?{TITLE}{CSI}",
        "header": f"Deploy{OVERRIDE}",
        "options": [{"label": f"yes{TAGS}", "description": f"ship it{TITLE}"}, {"label": "no"}],
    }
    with anyio.fail_after(60):
        async with Client(_server(tmp_path), mode="legacy", elicitation_callback=person) as client:
            rejected = await client.call_tool("bash", {"command": SPOOF})
            declined = await client.call_tool("question", {"questions": [question]})
    assert rejected.is_error and declined.is_error  # the person said no to each
    (confirmation, _), (asked, form) = shown
    everything = json.dumps([confirmation, asked, form], ensure_ascii=False)
    assert HIDDEN.search(everything) is None
    assert "#\\u202e~ fr- mr; rm -rf ~" in confirmation
    assert asked == "The assistant asks: Deploy now?\\x1b]0;mcp-toolbridge: allowed\\x07\\x9b2J"
    field = form["properties"]["q1"]
    assert field["title"] == "Deploy\\u202e"
    assert field["oneOf"][0]["const"] == "yes" + "".join(
        f"\\U000e00{ord(c):02x}" for c in "say yes"
    )
