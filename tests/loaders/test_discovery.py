from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from blake3 import blake3

from mcp_toolbridge.errors import ErrorCode, Severity
from mcp_toolbridge.loaders import detect_format, load_file, load_paths
from mcp_toolbridge.model import Format
from tests.support import paths

FIXTURES = paths.FIXTURES / "manifests"
SHAPES = paths.FIXTURES / "shapes"
AGENTCLI = {"tools": [{"name": "t", "command": ["/bin/true"]}]}
RUNLOOP = {
    "version": 1,
    "tools": [
        {
            "id": "r.t",
            "description": "d",
            "transport": {"kind": "exec", "command": "/bin/true"},
            "input_schema": {"type": "object"},
            "result_schema": {"type": "object"},
        }
    ],
}


def write(path: Path, content: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("tools.json", AGENTCLI, Format.AGENTCLI),
        ("tools.json", {"tools": []}, Format.AGENTCLI),
        ("tools.json", RUNLOOP, Format.RUNLOOP),
        ("tools.json", {"version": 1}, Format.RUNLOOP),
        ("custom.json", {"tools": [{"id": "x", "transport": {}}]}, Format.RUNLOOP),
        ("custom.json", {"kind": "tool", "entrypoint": {}}, Format.AGENTPM),
        ("agent.json", {}, Format.AGENTPM),
        ("manifest.toml", "[agent]\n", Format.RUNLOOP),
        ("custom.json", {"hello": 1}, None),
        ("custom.json", "[1, 2]", None),
        ("broken.json", "{", None),
        ("tools.yaml", "tools: []", None),
    ],
)
def test_detect_format_by_name_then_content(tmp_path, name, content, expected):
    assert detect_format(write(tmp_path / name, content)) is expected


def test_detect_format_of_a_missing_file_is_none(tmp_path):
    assert detect_format(tmp_path / "nope.json") is None


def test_an_undecidable_file_explains_the_accepted_shapes(tmp_path):
    report = load_file(write(tmp_path / "x.json", {"hello": 1}), display="x.json")
    (problem,) = report.problems
    assert problem.code is ErrorCode.MANIFEST_FORMAT
    assert problem.message.startswith("cannot tell which manifest format this is; accepted shapes:")
    for shape in ('"command"', '"kind": "tool"', '"version": 1', "manifest.toml"):
        assert shape in problem.message


def test_a_file_that_is_not_json_or_a_bundle_is_a_format_problem(tmp_path):
    report = load_file(write(tmp_path / "tools.yaml", "tools: []"))
    assert [p.code for p in report.problems] == [ErrorCode.MANIFEST_FORMAT]


def test_a_missing_path_is_unreadable(tmp_path):
    report = load_paths([tmp_path / "nowhere" / "tools.json"])
    assert [p.code for p in report.problems] == [ErrorCode.MANIFEST_UNREADABLE]
    assert (
        report.problems[0]
        .render()
        .endswith("nowhere/tools.json: no such file or folder; check the path")
    )
    assert report.manifests == []


def test_a_folder_without_manifests_is_reported(tmp_path):
    write(tmp_path / "empty" / "readme.txt", "nothing here")
    report = load_paths([tmp_path / "empty"])
    assert [p.code for p in report.problems] == [ErrorCode.MANIFEST_UNREADABLE]


def test_walk_is_sorted_skips_hidden_and_vendored_folders(tmp_path):
    root = tmp_path / "m"
    for folder in ("b", "a", "a/deeper", ".hidden", "node_modules/pkg", "__pycache__", ".venv/x"):
        write(root / folder / "tools.json", AGENTCLI)
    write(root / "a" / "other.json", {"hello": 1})
    report = load_paths([root])
    shown = os.path.join(str(root), "")
    assert [m.removeprefix(shown) for m in report.manifests] == [
        os.path.join("a", "tools.json"),
        os.path.join("a", "deeper", "tools.json"),
        os.path.join("b", "tools.json"),
    ]
    assert report.problems == []


def test_display_paths_stay_relative_as_given(tmp_path, monkeypatch):
    write(
        tmp_path / "manifests" / "x" / "tools.json",
        {"tools": [{"name": "git_log", "command": ["git"]}]},
    )
    monkeypatch.chdir(tmp_path)
    report = load_paths([Path("manifests")])
    assert [p.render() for p in report.problems] == [
        os.path.join("manifests", "x", "tools.json")
        + ': tool[0] "git_log": relative command[0] must start with ./tools/bin/ (got "git"; '
        "put the program in tools/bin/ beside this tools.json, or give its absolute path)"
    ]


def test_a_bundle_pinned_tools_json_is_loaded_once_through_the_bundle(tmp_path):
    folder = tmp_path / "agents" / "notes"
    text = json.dumps(RUNLOOP)
    write(folder / "tools.json", text)
    digest = blake3(text.encode()).hexdigest()
    write(
        folder / "manifest.toml", f'[artifacts.tools]\npath = "tools.json"\nblake3 = "{digest}"\n'
    )
    report = load_paths([tmp_path / "agents", folder / "tools.json"])
    assert [t.id for t in report.tools] == ["r.t"]
    assert report.tools[0].namespace == "notes"
    assert report.problems == []


def test_a_tampered_pinned_tools_json_is_not_loaded_standalone_either(tmp_path):
    folder = tmp_path / "agents" / "notes"
    write(folder / "tools.json", json.dumps(RUNLOOP))
    write(folder / "manifest.toml", '[artifacts.tools]\npath = "tools.json"\nblake3 = "00"\n')
    report = load_paths([tmp_path])
    assert report.tools == []
    assert [p.code for p in report.problems] == [ErrorCode.MANIFEST_DIGEST]


def test_fixture_folder_loads_every_format_with_one_notice(tmp_path):
    report = load_paths([FIXTURES], environ={"WC_TOKEN": "x"})
    assert [(p.severity, p.message) for p in report.problems] == [
        (Severity.NOTICE, 'kind "agent" is not a tool; skipped')
    ]
    assert [t.id for t in report.tools] == [
        "clock_now",
        "disk.usage",
        "word-count",
        "notes.append",
        "notes.publish",
    ]
    assert sorted({t.source.format for t in report.tools}) == sorted(
        [Format.AGENTCLI, Format.AGENTPM, Format.RUNLOOP]
    )
    assert len(report.manifests) == 5


def test_problems_in_several_files_are_all_collected(tmp_path):
    write(tmp_path / "a" / "tools.json", {"tools": [{"command": ["/bin/true"]}]})
    write(tmp_path / "b" / "agent.json", "{")
    write(tmp_path / "c" / "tools.json", {"version": 3})
    report = load_paths([tmp_path])
    assert [p.message for p in report.errors] == [
        "name is required",
        "invalid JSON: line 1 column 2: Expecting property name enclosed in double quotes",
        "unsupported tools.json version 3 (expected 1)",
    ]


def test_load_file_on_a_folder_is_unreadable(tmp_path):
    report = load_file(tmp_path)
    assert [p.code for p in report.problems] == [ErrorCode.MANIFEST_UNREADABLE]


def pinned_bundle(folder: Path, tools_text: str, pin: str | None = None) -> Path:
    write(folder / "tools.json", tools_text)
    digest = blake3(tools_text.encode()).hexdigest()
    table = f'[artifacts.tools]\npath = "tools.json"\nblake3 = "{pin or digest}"\n'
    return write(folder / "manifest.toml", f'[agent]\nname = "{folder.name}"\n\n{table}')


def test_a_named_tools_json_goes_through_the_bundle_beside_it(tmp_path, monkeypatch):
    pinned_bundle(tmp_path / "agents" / "notes", json.dumps(RUNLOOP))
    monkeypatch.chdir(tmp_path)
    report = load_paths([Path("agents/notes/tools.json")])
    assert report.problems == []
    assert report.manifests == [os.path.join("agents", "notes", "manifest.toml")]
    assert [(t.id, t.namespace) for t in report.tools] == [("r.t", "notes")]
    assert report.tools[0].source.path == os.path.join("agents", "notes", "tools.json")


def test_a_named_tampered_tools_json_is_refused_by_its_bundle(tmp_path):
    folder = tmp_path / "agents" / "notes"
    pinned_bundle(folder, json.dumps({"version": 1, "tools": []}))
    write(folder / "tools.json", json.dumps(RUNLOOP))
    report = load_paths([folder / "tools.json"])
    assert report.tools == []
    assert [p.code for p in report.problems] == [ErrorCode.MANIFEST_DIGEST]
    assert report.problems[0].message.startswith("tools.json digest mismatch (expected ")


UNPINNED = (
    "this Runloop tools.json sits beside a bundle manifest.toml that does not pin it; a bundle "
    "must list it under [artifacts.tools] with its blake3 digest; not loaded"
)


def test_a_runloop_tools_json_that_its_bundle_does_not_pin_is_refused(tmp_path, monkeypatch):
    folder = tmp_path / "agents" / "helper"
    write(folder / "manifest.toml", '[agent]\nname = "helper"\n')
    write(folder / "tools.json", RUNLOOP)
    monkeypatch.chdir(tmp_path)
    for given in (Path("agents"), Path("agents/helper/tools.json")):
        report = load_paths([given])
        assert report.tools == []
        assert [(p.code, p.render()) for p in report.problems] == [
            (
                ErrorCode.MANIFEST_DIGEST,
                os.path.join("agents", "helper", "tools.json") + ": " + UNPINNED,
            )
        ]


def test_an_agentcli_tools_json_beside_some_manifest_toml_is_not_a_bundle_file(tmp_path):
    write(tmp_path / "proj" / "manifest.toml", '[package]\nname = "proj"\n')
    write(tmp_path / "proj" / "tools.json", AGENTCLI)
    report = load_paths([tmp_path / "proj"])
    assert report.problems == []
    assert [t.id for t in report.tools] == ["t"]


def test_problems_come_out_in_the_order_of_the_paths_given(tmp_path):
    write(tmp_path / "b" / "tools.json", {"tools": [{"command": ["/bin/true"]}]})
    write(tmp_path / "empty" / "readme.txt", "nothing")
    write(tmp_path / "a" / "tools.json", {"version": 3})
    report = load_paths([tmp_path / "b", tmp_path / "empty", tmp_path / "a"])
    assert [p.message for p in report.problems] == [
        "name is required",
        "no manifests found (looked for tools.json, agent.json and manifest.toml)",
        "unsupported tools.json version 3 (expected 1)",
    ]


def test_the_real_manifest_shapes_load_as_their_sources_say(monkeypatch):
    """tests/fixtures/shapes mirrors shared/real-manifests; lint output, line by line."""
    monkeypatch.chdir(SHAPES)
    report = load_paths([Path("agentcli"), Path("agentpm"), Path("runloop")], environ={})
    lines = [
        ("notice: " if p.severity is Severity.NOTICE else "") + p.render() for p in report.problems
    ]

    def must_start(program: str) -> str:
        return (
            f'relative command[0] must start with ./tools/bin/ (got "{program}"; put the '
            "program in tools/bin/ beside this tools.json, or give its absolute path)"
        )

    notice = (
        "schema: top-level oneOf passes JSON Schema validation, but some MCP clients reject it "
        "at the root of an input schema (OpenAI-style function parameters must be a plain "
        "object schema); the tool is served as declared"
    )
    unresolved = "unresolved schema ref schema:notes.publish"
    looked = f"(looked in schema_refs and {os.path.join('runloop', 'docs-example', 'schemas')}/)"
    j = os.path.join
    assert lines == [
        f'{j("agentcli", "bin-prefix", "tools.json")}:7: tool[0] "clock_now": '
        f"{must_start('./bin/clockcli')}",
        f'{j("agentcli", "legacy-prefix", "tools.json")}:3: tool[0] "clock_now": '
        f"{must_start('./tools/clock_now')}",
        f'{j("agentcli", "legacy-prefix", "tools.json")}:4: tool[1] "file_read": '
        f"{must_start('./tools/file_read')}",
        f'{j("agentcli", "legacy-prefix", "tools.json")}:5: tool[2] "file_write": '
        f"{must_start('./tools/file_write')}",
        f"notice: {j('agentcli', 'toplevel-oneof', 'tools.json')}:6: "
        f'tool[0] "encyclopedia_lookup": {notice}',
        f'notice: {j("agentpm", "app", "agent.json")}:4: kind "agent" is not a tool; skipped',
        f"{j('agentpm', 'tools', 'chat-post', 'agent.json')}:10: Missing environment variable: "
        "CHAT_TOKEN. CHAT_TOKEN is required and has no default value. Set it where the server "
        'starts: export CHAT_TOKEN=... in the shell that runs it, or "env": {"CHAT_TOKEN": "..."} '
        "in the client's entry for the server (Claude Desktop passes none of the shell's "
        "variables; docs/clients.md)",
        f'{j("runloop", "docs-example", "tools.json")}:12: tool[0] "notes.page_publish": '
        f"input_schema: {unresolved}.request.v1 {looked}",
        f'{j("runloop", "docs-example", "tools.json")}:15: tool[0] "notes.page_publish": '
        f"result_schema: {unresolved}.result.v1 {looked}",
    ]
    assert [t.id for t in report.tools] == [
        "clock_now",
        "page_fetch",
        "picture_make",
        "file_stat",
        "encyclopedia_lookup",
        "clock_now",
        "doc-convert",
        "image-shrink",
    ]
    assert len(report.manifests) == 12


def test_a_package_json_named_is_not_read_as_a_runloop_manifest(tmp_path):
    """An npm package.json has a "version": it was read as a Runloop tools.json and refused
    with 'unsupported tools.json version "1.0.0"' (found by the first-hour walkthrough)."""
    package = {"name": "my-tool", "version": "1.0.0", "scripts": {"start": "node x.js"}}
    report = load_file(write(tmp_path / "package.json", package), display="package.json")
    assert [(p.code, p.render()) for p in report.problems] == [
        (
            ErrorCode.MANIFEST_FORMAT,
            "package.json: an npm package.json, not a manifest: mcp-toolbridge reads tools.json "
            "(agentcli or Runloop), agent.json (AgentPM) and a Runloop bundle's manifest.toml; "
            "name the manifest, or the folder that holds it",
        )
    ]
    other = load_file(write(tmp_path / "composer.json", {"version": "2.1"}), display="c.json")
    assert [p.message.split(";")[0] for p in other.problems] == [
        "cannot tell which manifest format this is"
    ]
    named = load_file(write(tmp_path / "x" / "tools.json", {"version": "1.0.0"}), display="t")
    assert [p.message for p in named.problems] == [
        'unsupported tools.json version "1.0.0" (expected 1)'
    ]
