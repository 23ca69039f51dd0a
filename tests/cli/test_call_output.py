"""What ``mcp-toolbridge call`` writes where a person reads it: a tool's result or error may
hold terminal escapes (ESC ]52 writes the clipboard, ESC ]0; the title, ESC [2J clears the
screen, ``\\x9b`` is the one-byte CSI), bidi overrides or tag characters. Stdout stays JSON
with the same data, those characters written as JSON escapes; a real pty and a real pipe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.manifests import ECHO, agentcli_manifest, echo_tool

HOSTILE = (
    "\x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;owned\x07\x1b[2J\x9b2J\x9d0;title\x9c"
    "\u202eexe.png\u2066x\u2069\U000e0041\x7f\x85end"
)
"""What a tool prints to reach the terminal of the person who called it."""
RAW = ("\x1b", "\x07", "\x9b", "\x9d", "\x9c", "\x85", "\x7f", "\u202e", "\u2066", "\U000e0041")

SAYS = "import json, sys\ntext = json.load(sys.stdin)['text']\nprint(json.dumps({'said': text}))\n"
FAILS = (
    "import json, sys\n"
    "text = json.load(sys.stdin)['text']\n"
    "print(json.dumps({'error': text}), file=sys.stderr)\n"
    "sys.exit(3)\n"
)


def _call(tmp_path: Path, tool: str) -> subprocess.CompletedProcess[bytes]:
    tools = [echo_tool("says", bin="says"), echo_tool("fails", bin="fails")]
    path = agentcli_manifest(tmp_path / "m", tools, {"says": SAYS, "fails": FAILS, "echo": ECHO})
    argv = ["call", tool, str(path), "--args", json.dumps({"text": HOSTILE}), "--no-audit"]
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    return subprocess.run(
        [sys.executable, "-m", "mcp_toolbridge", *argv],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(("tool", "status", "key"), [("says", 0, "said"), ("fails", 1, "error")])
def test_a_tools_escapes_reach_stdout_as_json_escapes_with_the_data_exact(
    tmp_path: Path, tool: str, status: int, key: str
) -> None:
    proc = _call(tmp_path, tool)
    assert proc.returncode == status, proc.stderr
    shown = proc.stdout.decode("utf-8")
    for raw in RAW:
        assert raw not in shown, repr(raw)
    assert "\\u202e" in shown and "\\u009b" in shown and "\\udb40\\udc41" in shown
    value = json.loads(shown)[key]  # the same data as the tool's
    assert value == HOSTILE if tool == "says" else HOSTILE in value


def test_inspect_shows_a_manifests_argv_with_its_escapes_as_json_escapes(tmp_path: Path) -> None:
    tool = {
        "name": "argv",
        "description": "Print its words",
        "schema": {"type": "object", "properties": {}},
        "command": ["/bin/echo", HOSTILE],
    }
    (tmp_path / "tools.json").write_text(json.dumps({"tools": [tool]}), encoding="utf-8")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "mcp_toolbridge", "inspect", "argv", str(tmp_path)],
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    shown = proc.stdout.decode("utf-8")
    for raw in RAW:
        assert raw not in shown, repr(raw)
    assert HOSTILE in _strings(json.loads(shown))  # the argv as the manifest wrote it


def _strings(value: object) -> list[str]:
    """Every string in a parsed JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [s for v in value for s in _strings(v)] if isinstance(value, list) else []
