"""A sandboxed call that fails on a path its sandbox does not show is told so
(``executors/hidden.py``): the served bash tool and a served manifest tool, in real sandboxes.

The hint judges from the output and the profile alone: it reads the same for a hidden file that
exists and one that does not, and a file missing inside the workspace gets none."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from mcp_toolbridge.executors.hidden import named_missing
from mcp_toolbridge.runtime import Settings
from tests.support.manifests import agentcli_manifest
from tests.support.results import text_of
from tests.support.served import OPEN_POLICY, served_client

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

HIDDEN = "is outside what this tool's sandbox shows"
SECRET = "is inside a secret path"
CAT = (
    "import json, os, sys\n"
    "path = json.load(sys.stdin)['path']\n"
    "os.execv('/bin/cat', ['cat', path])\n"
)
TOOL = {
    "name": "show",
    "description": "Print a file",
    "schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    "command": ["./tools/bin/show"],
}


def _settings(tmp_path: Path) -> Settings:
    """A workspace ``ws``, ``opt/somewhere/x`` outside every grant, a home with a key."""
    base = Path(os.path.realpath(tmp_path))
    ws = base / "ws"
    ws.mkdir()
    (base / "opt" / "somewhere").mkdir(parents=True)
    (base / "opt" / "somewhere" / "x").write_text("there\n", encoding="utf-8")
    (base / "home" / ".ssh").mkdir(parents=True)
    (base / "home" / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n", encoding="utf-8")
    agentcli_manifest(base / "m", [TOOL], {"show": CAT})
    policy = base / "policy.toml"
    policy.write_text(OPEN_POLICY, encoding="utf-8")
    return Settings(
        paths=[base / "m"],
        workspace=ws,
        policy_file=policy,
        audit_path=base / "audit.ndjson",
        environ={**os.environ, "HOME": str(base / "home")},
        sandbox="required",
    )


async def _allow_once(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    """The person, who allows the commands the shell rules cannot fully check."""
    return types.ElicitResult(action="accept", content={"decision": "Allow once"})


def _hint(text: str, path: Path) -> str:
    """The hint's sentence(s), the path it names made generic."""
    start = text.index(f'"{path}"')
    return text[start:].replace(str(path), "PATH")


async def test_bash_is_told_a_path_outside_its_sandbox_is_hidden_not_missing(
    tmp_path: Path, sandbox_support: None
) -> None:
    settings = _settings(tmp_path)
    assert settings.workspace is not None
    base = settings.workspace.parent
    there, missing = base / "opt" / "somewhere" / "x", base / "opt" / "somewhere" / "missing"
    async with served_client(settings, locked=True, elicitation_callback=_allow_once) as client:
        said = {}
        for path in (there, missing):
            # a path the capability check cannot read off the command line, as a script's
            command = f"cat $(dirname {settings.workspace})/{path.relative_to(base)}"
            result = await client.call_tool("bash", {"command": command})
            text = text_of(result)
            assert "No such file or directory" in text and HIDDEN in text, text
            assert "fs.read" in text and "ask the user" in text, text
            said[path] = _hint(text, path)
        assert said[there] == said[missing]  # nothing says whether the hidden file exists
        result = await client.call_tool("bash", {"command": "cat ~/.ssh/id_ed25519"})
        text = text_of(result)
        assert SECRET in text and HIDDEN not in text and "fs.read" not in text, text
        assert "PRIVATE KEY" not in text
        nope = settings.workspace / "nope.txt"
        result = await client.call_tool("bash", {"command": f"cat {nope}"})
        text = text_of(result)
        assert "No such file or directory" in text, text
        assert HIDDEN not in text and SECRET not in text, text  # really missing: no hint
        command = f"cat $(dirname {settings.workspace})/opt/none || echo went on"
        result = await client.call_tool("bash", {"command": command})
        text = text_of(result)
        assert "went on" in text and "exit code 0" in text, text
        assert HIDDEN not in text, text  # a call that succeeded gets nothing


async def test_a_manifest_tool_is_told_in_its_error(tmp_path: Path, sandbox_support: None) -> None:
    settings = _settings(tmp_path)
    assert settings.workspace is not None
    base = settings.workspace.parent
    there, missing = base / "opt" / "somewhere" / "x", base / "opt" / "somewhere" / "missing"
    async with served_client(settings) as client:
        said = {}
        for path in (there, missing):
            result = await client.call_tool("show", {"path": str(path)})
            text = text_of(result)
            assert result.is_error and HIDDEN in text, text
            said[path] = _hint(text, path)
        assert said[there] == said[missing]
        key = base / "home" / ".ssh" / "id_ed25519"
        result = await client.call_tool("show", {"path": str(key)})
        text = text_of(result)
        assert result.is_error and SECRET in text and "PRIVATE KEY" not in text, text
        assert HIDDEN not in text and "fs.read" not in text, text  # no way to grant it offered
        result = await client.call_tool("show", {"path": str(settings.workspace / "nope")})
        text = text_of(result)
        assert result.is_error and "No such file or directory" in text, text
        assert HIDDEN not in text and SECRET not in text, text


def _run_by_interpreter_in(folder: Path, script: Path) -> None:
    """``script`` (the tool's) now names ``folder/python3``, a link to this Python, on its
    ``#!`` line."""
    folder.mkdir(parents=True)
    (folder / "python3").symlink_to(os.path.realpath(sys.executable))
    script.write_text(f"#!{folder / 'python3'}\n{CAT}", encoding="utf-8")


async def test_the_folder_of_a_scripts_interpreter_is_shown_so_gets_no_hint(
    tmp_path: Path, sandbox_support: None
) -> None:
    """A script run by an interpreter outside every grant (``#!/opt/lang/bin/python3``): the
    sandbox shows that interpreter's folder and its prefix (``/opt/lang``, where its libraries
    are), so a file missing there is missing. The hint counted only the program's own folder,
    and told the tool that a path its sandbox shows was hidden."""
    settings = _settings(tmp_path)
    assert settings.workspace is not None
    base = settings.workspace.parent
    _run_by_interpreter_in(base / "lang" / "bin", base / "m" / "tools" / "bin" / "show")
    missing = base / "lang" / "lib" / "missing.txt"
    async with served_client(settings) as client:
        result = await client.call_tool("show", {"path": str(missing)})
        text = text_of(result)
        assert result.is_error and "No such file or directory" in text, text
        assert HIDDEN not in text, text
        result = await client.call_tool("show", {"path": str(base / "opt" / "somewhere" / "x")})
        text = text_of(result)
        assert result.is_error and HIDDEN in text, text  # a path beside it still gets the hint


def test_the_paths_are_found_in_the_messages_of_common_tools() -> None:
    text = (
        "cat: /opt/a: No such file or directory\n"
        "ls: cannot access '/opt/b c': No such file or directory\n"
        "python3: can't open file '/srv/s.py': [Errno 2] No such file or directory\n"
        "FileNotFoundError: [Errno 2] No such file or directory: '~/.ssh/id_rsa'\n"
        'Error: ENOENT: no such file or directory, open "/data/d"\n'
        "cat: relative/x: No such file or directory (see http://host/x)\n"
        "/opt/elsewhere is fine\n"
    )
    found = named_missing(text, "/home/u")
    assert found == [("/opt/a", "/opt/a"), ("/opt/b c", "/opt/b c"), ("/srv/s.py", "/srv/s.py")]
    found = named_missing("\n".join(text.splitlines()[3:]), "/home/u")
    assert found == [("~/.ssh/id_rsa", "/home/u/.ssh/id_rsa"), ("/data/d", "/data/d")]
    assert named_missing("x: /a/../../b//c: No such file or directory", None) == [
        ("/a/../../b//c", "/b/c")
    ]
