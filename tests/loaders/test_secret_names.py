"""A Runloop secret reaches its tool as its id upper-cased: one whose id is ``path`` or
``home`` (any case, any punctuation that maps to the same name) replaced the PATH or HOME
every tool gets from the server, and ``toolbridge_*`` set a name of the server's own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from mcp_toolbridge.loaders import load_paths
from mcp_toolbridge.model import ExecTransport, Format, Source, ToolSpec


def _runloop(folder: Path, secrets: list[str]) -> Path:
    tool = {
        "id": "secretive",
        "description": "Uses a secret",
        "transport": {"kind": "exec", "command": "/bin/true"},
        "input_schema": {"type": "object"},
        "result_schema": {"type": "object"},
        "secrets": secrets,
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tools.json").write_text(json.dumps({"version": 1, "tools": [tool]}), "utf-8")
    return folder


@pytest.mark.parametrize(
    ("secret", "name"),
    [
        ("path", "PATH"),
        ("Path", "PATH"),
        ("home", "HOME"),
        ("HOME", "HOME"),
        ("toolbridge-token", "TOOLBRIDGE_TOKEN"),
    ],
)
def test_a_runloop_secret_named_as_a_variable_the_server_sets_is_a_load_error(
    tmp_path: Path, secret: str, name: str
) -> None:
    report = load_paths([_runloop(tmp_path / "m", ["api_key", secret])])
    assert report.tools == []
    messages = [problem.render() for problem in report.problems]
    assert any(f"{secret!r} would reach the tool as {name}" in m for m in messages), messages


def test_other_secret_ids_load(tmp_path: Path) -> None:
    report = load_paths([_runloop(tmp_path / "m", ["api_key", "home_dir_token", "pathway"])])
    assert [spec.secrets for spec in report.tools] == [("api_key", "home_dir_token", "pathway")]


def test_a_tool_spec_made_any_other_way_refuses_it() -> None:
    with pytest.raises(ValidationError, match="would reach the tool as HOME"):
        ToolSpec(
            name="t",
            id="t",
            input_schema={"type": "object"},
            runtime_input_schema={"type": "object"},
            transport=ExecTransport(argv=("/bin/true",)),
            secrets=("home",),
            source=Source(path="x", index=0, format=Format.RUNLOOP),
        )
