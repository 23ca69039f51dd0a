"""Write small, real manifests (with real executable tools) into a test folder."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path
from typing import Any

PY = sys.executable


def write_script(path: Path, body: str, *, python: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    shebang = f"#!{PY}\n" if python else "#!/bin/sh\n"
    path.write_text(shebang + body, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def agentcli_manifest(folder: Path, tools: list[dict[str, Any]], scripts: dict[str, str]) -> Path:
    """tools.json in ``folder``; ``scripts`` maps a tool/bin name to a Python script body."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, body in scripts.items():
        write_script(folder / "tools" / "bin" / name, body)
    path = folder / "tools.json"
    path.write_text(json.dumps({"tools": tools}, indent=2), encoding="utf-8")
    return path


ECHO = "import json, sys\nprint(json.dumps({'echo': json.load(sys.stdin)}))\n"
FAIL = (
    "import json, sys\n"
    "print(json.dumps({'error': 'the input was rejected'}), file=sys.stderr)\n"
    "sys.exit(3)\n"
)
SLEEP = "import time\ntime.sleep(30)\n"
NOT_DESTRUCTIVE = {"destructiveHint": False}
"""The one fact a harmless test tool (it prints, fails or sleeps) declares so that the default
policy runs it without asking: a manifest tool that declares nothing is treated as destructive
and asks first (fail-closed). Its other facts stay inferred."""


def echo_tool(name: str = "echo", **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "description": "Echo the arguments back",
        "schema": {
            "type": "object",
            "properties": {"text": {"type": "string"}, "n": {"type": "integer", "minimum": 1}},
            "required": ["text"],
            "additionalProperties": False,
        },
        "command": [f"./tools/bin/{extra.pop('bin', 'echo')}"],
        "annotations": NOT_DESTRUCTIVE,
        **extra,
    }
