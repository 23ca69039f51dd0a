"""Safety facts: what each format declares, the ``annotations`` object every format may carry,
and fail-closed values for everything a manifest leaves unsaid (docs/manifests.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcp_toolbridge.loaders import LoadReport, load_file
from mcp_toolbridge.model import SAFETY_FACTS, Safety, ToolSpec

OBJ = {"type": "object"}


def _agentcli(tmp_path: Path, **fields: Any) -> LoadReport:
    tool = {"name": "fs_rm", "command": ["/usr/bin/fs_rm"], **fields}
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"tools": [tool]}), encoding="utf-8")
    return load_file(path, display="a/tools.json")


def _agentpm(tmp_path: Path, **fields: Any) -> LoadReport:
    doc = {
        "kind": "tool",
        "name": "slug",
        "version": "0.1.0",
        "description": "Make a slug.",
        "files": ["main.py"],
        "entrypoint": {"command": "python3", "args": ["main.py"]},
        "inputs": OBJ,
        "outputs": OBJ,
        **fields,
    }
    path = tmp_path / "agent.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return load_file(path, display="p/agent.json")


def _runloop(tmp_path: Path, **fields: Any) -> LoadReport:
    entry = {
        "id": "demo.run",
        "description": "Run the demo.",
        "transport": {"kind": "exec", "command": "/usr/bin/demo"},
        "input_schema": OBJ,
        "result_schema": OBJ,
        **fields,
    }
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"version": 1, "tools": [entry]}), encoding="utf-8")
    return load_file(path, display="r/tools.json")


def _only(report: LoadReport) -> ToolSpec:
    assert report.problems == [], [p.render() for p in report.problems]
    (spec,) = report.tools
    return spec


def _messages(report: LoadReport) -> list[str]:
    return [p.render() for p in report.problems]


def test_a_tool_that_declares_nothing_is_destructive_open_world_and_says_so(tmp_path: Path):
    for report in (_agentcli(tmp_path), _agentpm(tmp_path), _runloop(tmp_path)):
        safety = _only(report).safety
        assert safety == Safety()
        assert (safety.destructive, safety.read_only, safety.open_world) == (True, False, True)
        assert safety.idempotent is False and safety.requires_confirmation is False
        assert safety.inferred == frozenset(SAFETY_FACTS)


@pytest.mark.parametrize("load", [_agentcli, _agentpm, _runloop])
def test_annotations_declare_facts_in_every_format(tmp_path: Path, load: Any):
    spec = _only(load(tmp_path, annotations={"readOnlyHint": True, "openWorldHint": False}))
    assert spec.safety.read_only is True
    assert spec.safety.destructive is False  # read-only: changes nothing
    assert spec.safety.idempotent is True  # so calling it again changes nothing either
    assert spec.safety.open_world is False
    assert spec.safety.inferred == {"requires_confirmation"}


def test_annotations_can_declare_one_fact_and_leave_the_rest_inferred(tmp_path: Path):
    spec = _only(_agentcli(tmp_path, annotations={"destructiveHint": False, "title": "Remove"}))
    assert spec.safety.destructive is False
    assert spec.safety.read_only is False and spec.safety.open_world is True
    assert spec.safety.inferred == frozenset(SAFETY_FACTS) - {"destructive"}
    assert spec.title == "Remove"


def test_a_misspelt_annotation_is_an_error_that_names_the_closest_hint(tmp_path: Path):
    report = _agentcli(tmp_path, annotations={"readOnlyHnt": True})
    assert report.tools == []
    assert _messages(report) == [
        'a/tools.json: tool[0] "fs_rm": annotations.readOnlyHnt: unknown annotation; did you '
        'mean "readOnlyHint"? known: readOnlyHint, destructiveHint, idempotentHint, '
        "openWorldHint, title"
    ]


def test_annotations_must_be_booleans_and_consistent(tmp_path: Path):
    wrong = _agentpm(tmp_path, annotations={"destructiveHint": "no"})
    assert _messages(wrong) == [
        'p/agent.json: annotations.destructiveHint must be true or false, got "no"'
    ]
    both = _runloop(tmp_path, annotations={"readOnlyHint": True, "destructiveHint": True})
    assert both.tools == []
    assert _messages(both) == [
        'r/tools.json: tool[0] "demo.run": annotations: readOnlyHint and destructiveHint cannot '
        "both be true (a read-only tool changes nothing)"
    ]
    shape = _agentcli(tmp_path, annotations=["readOnlyHint"])
    assert shape.tools == [] and "annotations must be an object" in _messages(shape)[0]


def _http(method: str, **fields: Any) -> dict[str, Any]:
    transport = {"kind": "http", "method": method, "url": "https://api.example/x"}
    return {"transport": transport, "capabilities": ["net:api.example"], **fields}


@pytest.mark.parametrize(
    ("method", "read_only", "destructive", "idempotent"),
    [
        ("GET", True, False, True),
        ("head", True, False, True),
        ("PUT", False, True, True),  # idempotent, but whether it destroys is not said
        ("DELETE", False, True, True),
        ("POST", False, True, False),
    ],
)
def test_runloop_http_methods_declare_what_rfc_9110_says_they_do(
    tmp_path: Path, method: str, read_only: bool, destructive: bool, idempotent: bool
):
    safety = _only(_runloop(tmp_path, **_http(method))).safety
    assert (safety.read_only, safety.destructive, safety.idempotent) == (
        read_only,
        destructive,
        idempotent,
    )
    assert safety.open_world is True and "open_world" not in safety.inferred
    assert ("destructive" in safety.inferred) is (method in ("PUT", "POST"))


def test_runloop_capability_families_and_confirmation_are_declarations(tmp_path: Path):
    spec = _only(
        _runloop(
            tmp_path,
            capabilities=["net:mail.example", "fs.write:/var/spool", "kb_read"],
            requires_confirmation=True,
        )
    )
    assert spec.safety.open_world is True  # net: reaches the network
    assert spec.safety.read_only is False  # fs.write: writes
    assert spec.safety.requires_confirmation is True
    assert spec.safety.inferred == {"destructive", "idempotent"}
    assert spec.safety.destructive is True


def test_runloop_annotations_win_over_what_the_method_implies(tmp_path: Path):
    search = _only(_runloop(tmp_path, **_http("POST", annotations={"readOnlyHint": True})))
    assert search.safety.read_only is True and search.safety.destructive is False
    purge = _only(_runloop(tmp_path, **_http("GET", annotations={"destructiveHint": True})))
    assert purge.safety.destructive is True and purge.safety.read_only is False
