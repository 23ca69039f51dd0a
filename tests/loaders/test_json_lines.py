"""A manifest's problems name their line: the scan of the JSON text (loaders/json_lines.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from blake3 import blake3

from mcp_toolbridge.errors import Problem
from mcp_toolbridge.loaders import json_lines, load_file
from mcp_toolbridge.loaders.json_lines import key_lines, with_lines
from tests.support.cli import run_cli
from tests.support.paths import FIXTURES

TEXT = """{
  "tools": [
    {"name": "a", "command": ["./tools/bin/a"]},
    {
      "name": "b{[:,\\"}",
      "schema": {"type": "object",
                 "properties": {"x": {"enum": ["}", "]", ","]}}},
      "command": [
        "./tools/bin/b",
        "--x"
      ]
    }
  ],
  "\\u0074ail": [1, [2, 3], {"k": null}]
}
"""


def test_every_key_and_element_maps_to_the_line_it_is_written_on():
    lines = key_lines(TEXT)
    assert lines[("tools",)] == 2
    assert lines[("tools", 0)] == lines[("tools", 0, "command", 0)] == 3
    assert lines[("tools", 1)] == 4
    assert lines[("tools", 1, "name")] == 5
    assert lines[("tools", 1, "schema", "properties", "x", "enum", 2)] == 7
    assert lines[("tools", 1, "command")] == 8
    assert lines[("tools", 1, "command", 1)] == 10
    assert lines[("tail", 1)] == lines[("tail", 2, "k")] == 14
    assert ("tools", 2) not in lines


@pytest.mark.parametrize("path", sorted((FIXTURES / "shapes").rglob("*.json")), ids=str)
def test_the_scan_agrees_with_the_parser_on_every_fixture_reindented(path: Path):
    """Reindented, every key sits on its own line: the scan must find each there."""
    text = json.dumps(json.loads(path.read_text(encoding="utf-8")), indent=2)
    source = text.splitlines()
    lines = key_lines(text)
    for key_path, line in lines.items():
        if isinstance(key_path[-1], str):
            assert source[line - 1].lstrip().startswith(json.dumps(key_path[-1]) + ":")


def test_a_problem_takes_the_line_of_the_field_it_names_else_of_its_tool():
    problems = [
        Problem("t.json", "relative command[0] must start with ./tools/bin/", 'tool[1] "b"'),
        Problem("t.json", "name is required", "tool[0]"),
        Problem("t.json", 'tool id cannot be empty; "schema" would be', "tool[1]"),
        Problem("t.json", "tools must be a list"),
        Problem("t.json", "unsupported tools.json version 3"),
    ]
    assert [p.line for p in with_lines(problems, TEXT)] == [9, 3, 4, 2, None]


def test_a_one_line_document_gives_no_lines():
    problem = Problem("t.json", "name is required", "tool[0]")
    assert with_lines([problem], '{"tools": [{}]}\n') == [problem]


def test_load_file_prints_the_line_and_a_clean_load_never_scans(tmp_path, monkeypatch):
    broken = tmp_path / "x" / "tools.json"
    broken.parent.mkdir()
    broken.write_text(TEXT.replace('"./tools/bin/b"', '"b"'), encoding="utf-8")
    (problem,) = load_file(broken, display="x/tools.json").problems
    assert problem.render().startswith("x/tools.json:9: tool[1] ")
    assert problem.message.startswith("relative command[0] must start with ./tools/bin/")

    def scanned(text: str) -> None:
        raise AssertionError("a clean load scanned the text")

    monkeypatch.setattr(json_lines, "key_lines", scanned)
    clean = tmp_path / "y" / "tools.json"
    clean.parent.mkdir()
    clean.write_text(TEXT, encoding="utf-8")
    assert load_file(clean).problems == []


def test_a_runloop_bundles_tools_json_problems_name_their_lines(tmp_path):
    """A bundle's pinned tools.json is read by the bundle (runloop_bundle.py), not by
    load_file: its problems had no line, in lint's text and in its JSON."""
    entry = {
        "id": "notes.search",
        "description": "Search notes",
        "transport": {"kind": "exec", "command": "bin/search"},
        "input_schema": {"type": "object", "properties": {"q": {"type": "strin"}}},
        "result_schema": {"type": "object"},
    }
    text = json.dumps({"version": 1, "tools": [{"id": "ok"}, entry]}, indent=2)
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "tools.json").write_text(text, encoding="utf-8")
    digest = blake3(text.encode()).hexdigest()
    (folder / "manifest.toml").write_text(
        f'[artifacts.tools]\npath = "tools.json"\nblake3 = "{digest}"\n', encoding="utf-8"
    )
    source = text.splitlines()
    done = run_cli(["lint", "--format", "json", "notes"], env=dict(os.environ), cwd=tmp_path)
    problems = json.loads(done.stdout)["problems"]
    lines = {p["message"].split()[0]: p["line"] for p in problems if "tool[1]" in p["locator"]}
    assert source[lines["exec"] - 1].strip() == '"transport": {', (lines, problems)
    assert source[lines["input_schema:"] - 1].strip() == '"input_schema": {', (lines, problems)
    first = [p["line"] for p in problems if "tool[0]" in p["locator"]]
    assert first and all(source[line - 1].strip() == "{" for line in first), problems
    assert source[first[0]].strip() == '"id": "ok"', problems
    assert all(p["path"] == os.path.join("notes", "tools.json") for p in problems), problems
    text_out = run_cli(["lint", "notes"], env=dict(os.environ), cwd=tmp_path).stdout
    assert f"notes/tools.json:{lines['exec']}: tool[1]" in text_out, text_out
