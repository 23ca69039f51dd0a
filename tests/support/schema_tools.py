"""Tools of every manifest format, most with an output schema, and a call of each that fails.

TypeScript-SDK clients (the Inspector, Claude Desktop, VS Code, Cursor) check a result's
structuredContent against the tool's outputSchema, failures included, so these are the calls
whose error results used to be rejected whole. :func:`write_catalog` writes real manifests
with real scripts; :data:`FAILURES` says how each call must fail; :data:`POLICY` allows every
tool, and ``rl_confirm`` asks for a confirmation, which a headless client cannot give.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.manifests import PY, agentcli_manifest, write_script

RESULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"message": {"type": "string"}},
    "required": ["message"],
    "additionalProperties": False,
}

RUNLOOP_SCRIPT = """
import json, sys, time
payload = json.load(open(sys.argv[1]))
mode = sys.argv[2]
if mode == "fail":
    print(json.dumps({"error": "the payload was refused on purpose"}), file=sys.stderr)
    sys.exit(3)
if mode == "wrong":
    print(json.dumps({"count": 1}))
else:
    print(json.dumps({"message": payload["message"]}))
"""

AGENTPM_SCRIPT = """
import json, sys, time
args = json.load(sys.stdin)
if args["text"] == "slow":
    time.sleep(30)
if not any(c.isalnum() for c in args["text"]):
    print(json.dumps({"ok": False, "error": {"code": "empty_slug", "message": "no letters"}}))
else:
    print(json.dumps({"ok": True, "slug": args["text"].lower()}))
"""

AGENTPM_OUTPUTS: dict[str, Any] = {
    "oneOf": [
        {
            "type": "object",
            "properties": {"ok": {"const": True}, "slug": {"type": "string"}},
            "required": ["ok", "slug"],
        },
        {
            "type": "object",
            "properties": {"ok": {"const": False}, "error": {"type": "object"}},
            "required": ["ok", "error"],
        },
    ]
}

FAIL_SCRIPT = (
    "import json, sys\n"
    "print(json.dumps({'error': 'the input was rejected'}), file=sys.stderr)\n"
    "sys.exit(3)\n"
)

POLICY = """
default_action = "allow"
"""


@dataclass(frozen=True)
class Failure:
    tool: str
    arguments: dict[str, Any]
    code: str
    """The expected ``_meta["toolbridge/code"]``."""
    says: str
    """A part of the error text the model must see."""
    details: dict[str, Any] | None = field(default=None)
    """The tool's own failure value, expected in ``_meta["toolbridge/details"]``."""


FAILURES = (
    Failure(
        "rl_echo",
        {"message": "hi", "count": -1},
        "args.invalid",
        "at /count: expected at least 0; got -1",
        details={
            "errors": [
                {
                    "path": "/count",
                    "keyword": "minimum",
                    "expected": "at least 0",
                    "got": "-1",
                    "message": "at /count: expected at least 0; got -1",
                }
            ]
        },
    ),
    Failure("rl_confirm", {"message": "hi"}, "permission.denied", "needs a person's confirmation"),
    Failure("rl_fail", {"message": "hi"}, "exec.failed", "the payload was refused on purpose"),
    Failure("rl_wrong", {"message": "hi"}, "output.invalid", "does not match its output schema"),
    Failure(
        "apm-slug",
        {"text": "!!"},
        "exec.failed",
        "empty_slug: no letters",
        details={"ok": False, "error": {"code": "empty_slug", "message": "no letters"}},
    ),
    Failure("apm-slug", {"text": "slow"}, "exec.timeout", "timed out"),
    Failure("cli_fail", {"text": "x"}, "exec.failed", "the input was rejected"),
)
"""One failure of each kind: a schema failure, a policy denial, a non-zero exit, a result
breaking the output schema, a tool-reported failure, a timeout; in each format."""


def _runloop_tool(tool_id: str, script: Path, mode: str) -> dict[str, Any]:
    input_schema = {
        "type": "object",
        "properties": {"message": {"type": "string"}, "count": {"type": "integer", "minimum": 0}},
        "required": ["message"],
        "additionalProperties": False,
    }
    return {
        "id": tool_id,
        "description": f"A test tool with a result schema ({mode})",
        "transport": {"kind": "exec", "command": str(script), "args": [mode]},
        "input_schema": input_schema,
        "result_schema": RESULT_SCHEMA,
    }


def write_catalog(folder: Path, *, agentpm_timeout_ms: int = 1000) -> Path:
    """Three manifests under ``folder`` (Runloop, AgentPM, agentcli); returns ``folder``."""
    script = write_script(folder / "runloop" / "bin" / "tool", RUNLOOP_SCRIPT)
    tools = [
        _runloop_tool("rl.echo", script, "echo"),
        {**_runloop_tool("rl.confirm", script, "echo"), "requires_confirmation": True},
        _runloop_tool("rl.fail", script, "fail"),
        _runloop_tool("rl.wrong", script, "wrong"),
    ]
    doc = json.dumps({"version": 1, "tools": tools}, indent=2)
    (folder / "runloop" / "tools.json").write_text(doc, encoding="utf-8")
    agentpm = folder / "agentpm"
    agentpm.mkdir(parents=True)
    (agentpm / "main.py").write_text(AGENTPM_SCRIPT, encoding="utf-8")
    agent = {
        "kind": "tool",
        "name": "apm-slug",
        "version": "0.1.0",
        "description": "A test slug tool that reports failures with ok: false",
        "files": ["main.py"],
        "entrypoint": {"command": PY, "args": ["main.py"], "timeout_ms": agentpm_timeout_ms},
        "inputs": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
        "outputs": AGENTPM_OUTPUTS,
    }
    (agentpm / "agent.json").write_text(json.dumps(agent, indent=2), encoding="utf-8")
    cli_tool = {
        "name": "cli_fail",
        "description": "A test tool that exits non-zero",
        "schema": {"type": "object", "properties": {"text": {"type": "string"}}},
        "command": ["./tools/bin/fail"],
    }
    agentcli_manifest(folder / "agentcli", [cli_tool], {"fail": FAIL_SCRIPT})
    return folder


def write_policy(path: Path) -> Path:
    path.write_text(POLICY, encoding="utf-8")
    return path
