"""Each format can say that a tool reports progress on its progress channel; inspect shows the
channel's schema for such a tool (and for no other); a value that is not a boolean is a load
error naming the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcp_toolbridge.cli.main import main
from mcp_toolbridge.loaders import LoadReport, load_file
from mcp_toolbridge.model import ExecTransport
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool
from tests.support.paths import ROOT


def _agentcli(tmp_path: Path, progress: object) -> LoadReport:
    tool = echo_tool("echo") if progress is None else echo_tool("echo", progress=progress)
    return load_file(agentcli_manifest(tmp_path / "a", [tool], {"echo": ECHO}))


def _agentpm(tmp_path: Path, progress: object) -> LoadReport:
    entrypoint: dict[str, Any] = {"command": "python", "args": ["main.py"]}
    if progress is not None:
        entrypoint["progress"] = progress
    doc = {
        "kind": "tool",
        "name": "echo-tool",
        "version": "0.1.0",
        "description": "Echo the input back.",
        "files": ["main.py"],
        "entrypoint": entrypoint,
        "inputs": {"type": "object"},
        "outputs": {"type": "object"},
    }
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "agent.json").write_text(json.dumps(doc), encoding="utf-8")
    return load_file(folder / "agent.json", environ={})


def _runloop(tmp_path: Path, progress: object) -> LoadReport:
    transport: dict[str, Any] = {"kind": "exec", "command": "/usr/bin/true"}
    if progress is not None:
        transport["progress"] = progress
    tool = {
        "id": "echo",
        "description": "Echo",
        "transport": transport,
        "input_schema": {"type": "object"},
        "result_schema": {"type": "object"},
    }
    folder = tmp_path / "r"
    folder.mkdir()
    (folder / "tools.json").write_text(json.dumps({"version": 1, "tools": [tool]}), "utf-8")
    return load_file(folder / "tools.json")


LOADERS = {"agentcli": _agentcli, "agentpm": _agentpm, "runloop": _runloop}
BAD_VALUE = {
    "agentcli": "progress must be true or false (the tool reports progress)",
    "agentpm": "entrypoint.progress must be true or false (the tool reports progress)",
    "runloop": "exec transport progress must be true or false",
}


@pytest.mark.parametrize("fmt", LOADERS)
@pytest.mark.parametrize(("given", "declared"), [(None, False), (False, False), (True, True)])
def test_each_format_can_say_a_tool_reports_progress(
    tmp_path: Path, fmt: str, given: object, declared: bool
) -> None:
    report = LOADERS[fmt](tmp_path, given)
    assert not report.errors, [p.render() for p in report.problems]
    (spec,) = report.tools
    assert isinstance(spec.transport, ExecTransport)
    assert spec.transport.reports_progress is declared


@pytest.mark.parametrize("fmt", LOADERS)
def test_a_progress_value_that_is_not_a_boolean_is_a_load_error(tmp_path: Path, fmt: str) -> None:
    report = LOADERS[fmt](tmp_path, "yes")
    assert report.tools == []
    assert [p.message for p in report.errors] == [BAD_VALUE[fmt]]


def test_inspect_shows_the_progress_schema_of_a_tool_that_says_it_reports_progress(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tools = [echo_tool("quiet"), echo_tool("chatty", progress=True)]
    agentcli_manifest(tmp_path / "t", tools, {"echo": ECHO})
    schemas = {}
    for name in ("quiet", "chatty"):
        assert main(["inspect", name, str(tmp_path / "t")]) == 0
        schemas[name] = json.loads(capsys.readouterr().out)["Execution"]["progress_schema"]
    assert schemas["quiet"] is None
    assert schemas["chatty"] == {
        "channel": "JSON lines on the file descriptor named by $TOOLBRIDGE_PROGRESS_FD",
        "progress_line": {"progress": "number", "total": "number?", "message": "string?"},
        "log_line": {"log": "string", "level": "debug|info|notice|warning|error?"},
    }


def test_the_conformance_fixture_loads_cleanly() -> None:
    report = load_file(ROOT / "tests" / "conformance" / "tools.json")
    assert not report.errors, [p.render() for p in report.errors]
    names = {spec.name for spec in report.tools}
    assert {"test_simple_text", "test_tool_with_progress", "json_schema_2020_12_tool"} <= names
