"""A catalog for the deferred-loading tests: manifest tools to find and run through call_tool,
one of them behind an ask rule, one denied outright, one slow, and an http tool whose calls to
one host a rule denies (so the tool is served, and a call of it can be denied)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.manifests import ECHO, SLEEP, agentcli_manifest, echo_tool

POLICY = """
default_action = "allow"

[requires]
net.hosts = ["*.example.test"]

[[rules]]
permission = "guarded"
action = "ask"

[[rules]]
permission = "forbidden"
action = "deny"

[[rules]]
permission = "post_note"
pattern = "blocked.example.test"
action = "deny"
"""

BLOCKED_NOTE = {"host": "blocked.example.test", "text": "x"}
"""Arguments of post_note that the policy denies (nothing is sent)."""


def write_catalog(folder: Path, policy: str = POLICY) -> tuple[list[Path], Path]:
    """The manifests (agentcli: send_email, guarded, forbidden, slow; Runloop: post_note,
    tagged "notes team") and the policy file under ``folder``."""
    tools = [
        echo_tool("send_email", description="Send an email message"),
        echo_tool("guarded"),
        echo_tool("forbidden"),
        echo_tool("slow", bin="sleep", timeoutSec=1),
    ]
    agentcli_manifest(folder / "m", tools, {"echo": ECHO, "sleep": SLEEP})
    notes = folder / "notes"
    notes.mkdir(parents=True)
    post = {
        "id": "post_note",
        "description": "Post a note to a team's note server",
        "transport": {"kind": "http", "method": "POST", "url": "http://{host}/notes"},
        "input_schema": {
            "type": "object",
            "properties": {"host": {"type": "string"}, "text": {"type": "string"}},
            "required": ["host", "text"],
        },
        "result_schema": {},
        "observability": {"tags": ["notes", "team"]},
    }
    (notes / "tools.json").write_text(json.dumps({"version": 1, "tools": [post]}), "utf-8")
    policy_file = folder / "policy.toml"
    policy_file.write_text(policy, encoding="utf-8")
    return [folder / "m", notes], policy_file


def proxied(name: str, **arguments: Any) -> dict[str, Any]:
    """call_tool's arguments for a call of ``name``."""
    return {"name": name, "arguments": arguments}


def audit_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
