"""A schema's ``#/...`` JSON pointers are checked at load: one that points to nothing (or is
not a JSON Pointer, or points to a value that is not a schema) loaded fine, and every call of
the tool then failed (``cannot be resolved``, or an internal error for ``#/allOf/x``)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest

from mcp_toolbridge.loaders import load_paths
from tests.support.cli import run_cli
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool, write_script
from tests.support.served import OPEN_POLICY, locked_settings, served_client

pytestmark = pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")

HELD: dict[str, Any] = {
    "t": {"type": "string"},
    "a/b": {"type": "string"},
    "c~d": {"type": "string"},
    "e f": {"type": "string"},
    "%25": {"type": "string"},
    "word": {"$anchor": "word", "type": "string"},
    "both": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
    "n": {"$id": "https://x.test/n", "$defs": {"i": {"type": "integer"}}, "$ref": "#/$defs/i"},
}
"""Definitions whose names need escaping, and an embedded resource with pointers of its own."""

FOUND = {
    "plain": "#/$defs/t",
    "slash": "#/$defs/a~1b",
    "tilde": "#/$defs/c~0d",
    "space": "#/$defs/e%20f",
    "percent": "#/$defs/%2525",
    "through-an-array": "#/$defs/both/anyOf/0",
    "encoded-slash": "#/$defs%2Ft",
    "the-root": "#",
    "anchor": "#word",
    "resource": "https://x.test/n#/$defs/i",
}


def _kept_tool() -> dict[str, Any]:
    tool = echo_tool("kept")
    tool["schema"] = {
        "type": "object",
        "properties": {name: {"$ref": ref} for name, ref in FOUND.items() if name != "the-root"}
        | {"text": {"type": "string"}, "count": {"$ref": "#/$defs/n"}},
        "$defs": HELD,
    }
    return tool


NOWHERE = {
    "missing-def": ("#/$defs/missing", "points to nothing"),
    "missing-definitions": ("#/definitions/x", "points to nothing"),
    "past-the-array": ("#/$defs/both/anyOf/2", "points to nothing"),
    "into-a-string": ("#/$defs/t/type/x", "points to nothing"),
    "unescaped-slash": ("#/$defs/a/b", "points to nothing"),
    "bad-escape": ("#/$defs/c~2d", "is not a JSON Pointer"),
    "not-an-index": ("#/$defs/both/anyOf/x", "is not a JSON Pointer"),
    "leading-zero": ("#/$defs/both/anyOf/00", "is not a JSON Pointer"),
    "not-a-schema": ("#/required", "not a schema"),
    "missing-anchor": ("#wrod", "points to no anchor"),
    "in-a-resource": ("https://x.test/n#/$defs/j", "points to nothing"),
}


@pytest.mark.parametrize("name", sorted(NOWHERE))
def test_a_pointer_to_nowhere_is_a_load_error_naming_the_tool(tmp_path: Path, name: str) -> None:
    ref, said = NOWHERE[name]
    tool = echo_tool("broken")
    tool["schema"] = {
        "type": "object",
        "properties": {"text": {"$ref": ref}},
        "required": ["text"],
        "$defs": HELD,
    }
    folder = agentcli_manifest(tmp_path / "m", [tool, _kept_tool()], {"echo": ECHO}).parent
    done = run_cli(["lint", str(folder)], env=dict(os.environ), cwd=tmp_path)
    assert done.returncode != 0, done.stdout
    [line] = [line for line in done.stdout.splitlines() if "$ref" in line]
    assert 'tool[0] "broken": schema: at /properties/text/$ref: $ref ' in line, line
    assert json.dumps(ref) in line and said in line and "every call would fail" in line, line
    assert not line.startswith("notice") and "kept" not in done.stdout


async def test_pointers_escaped_as_json_pointer_says_load_and_resolve_in_a_call(
    tmp_path: Path,
) -> None:
    agentcli_manifest(tmp_path / "kept", [_kept_tool()], {"echo": ECHO})
    settings = locked_settings(tmp_path, OPEN_POLICY)
    settings = dataclasses.replace(settings, paths=[*settings.paths, tmp_path / "kept"])
    settings = dataclasses.replace(settings, sandbox="off")
    arguments = {name: "x" for name in FOUND if name not in ("the-root", "resource")}
    async with served_client(settings) as client:
        good = await client.call_tool("kept", {**arguments, "resource": 3, "count": 4})
        bad = await client.call_tool("kept", {**arguments, "resource": "x", "percent": 1})
    assert not good.is_error, good
    assert bad.is_error and "/resource" in str(bad.content) and "/percent" in str(bad.content)


def _runloop_bundle(folder: Path, inner: dict[str, Any]) -> Path:
    """A Runloop tools.json whose input schema is ``schema:in``, a file with pointers of its
    own (they resolve inside that file once it is embedded under ``$id: schema:in``)."""
    (folder / "schemas").mkdir(parents=True)
    (folder / "schemas" / "in.json").write_text(json.dumps(inner), "utf-8")
    script = write_script(folder / "bin" / "ok", "print('{}')\n")
    tool = {
        "id": "ref.tool",
        "description": "Takes a ref'd schema",
        "transport": {"kind": "exec", "command": str(script)},
        "input_schema": {
            "type": "object",
            "properties": {"a": {"$ref": "schema:in"}, "b": {"$ref": "#/$defs/b"}},
            "$defs": {"b": {"type": "integer"}},
        },
        "result_schema": {"type": "object"},
        "annotations": {"destructiveHint": False},
    }
    (folder / "tools.json").write_text(json.dumps({"version": 1, "tools": [tool]}), "utf-8")
    return folder


async def test_a_runloop_schema_ref_with_pointers_of_its_own_still_loads_and_serves(
    tmp_path: Path,
) -> None:
    inner = {
        "type": "object",
        "properties": {"v": {"$ref": "#/$defs/v"}},
        "$defs": {"v": {"type": "string"}},
    }
    folder = _runloop_bundle(tmp_path / "bundle", inner)
    assert load_paths([folder]).problems == []
    settings = locked_settings(tmp_path, OPEN_POLICY)
    settings = dataclasses.replace(settings, paths=[*settings.paths, folder], sandbox="off")
    async with served_client(settings) as client:
        good = await client.call_tool("ref_tool", {"a": {"v": "x"}, "b": 1})
        bad = await client.call_tool("ref_tool", {"a": {"v": 1}, "b": 1})
    assert not good.is_error, good
    assert bad.is_error and "/a/v" in str(bad.content), bad


def test_a_runloop_schema_file_pointing_to_nowhere_is_a_load_error(tmp_path: Path) -> None:
    inner = {"type": "object", "properties": {"v": {"$ref": "#/$defs/gone"}}}
    folder = _runloop_bundle(tmp_path / "bundle", inner)
    [problem] = [p.render() for p in load_paths([folder]).problems]
    assert '"ref.tool"' in problem and '"#/$defs/gone" points to nothing' in problem, problem
