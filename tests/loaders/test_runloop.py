from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from blake3 import blake3

from mcp_toolbridge.errors import ErrorCode
from mcp_toolbridge.loaders import LoadReport, load_file
from mcp_toolbridge.model import SAFETY_FACTS, Budget, ExecTransport, Format, HttpTransport
from mcp_toolbridge.schemas import compile_schema
from tests.support.paths import FIXTURES
from tests.support.problems import unlined

BUNDLE = FIXTURES / "manifests" / "runloop" / "notes_bundle"
SHAPES = FIXTURES / "shapes" / "runloop"
SHOWN = "rl/tools.json"
OBJ = {"type": "object"}


def entry(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "demo.run",
        "description": "Run the demo.",
        "transport": {"kind": "exec", "command": "/usr/bin/demo"},
        "input_schema": OBJ,
        "result_schema": OBJ,
    }
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None}


def write(folder: Path, name: str, content: object) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    text = content if isinstance(content, str) else json.dumps(content, indent=2)
    path.write_text(text, encoding="utf-8", newline="\n")
    return path


def load(tmp_path: Path, doc: object) -> LoadReport:
    return load_file(write(tmp_path / "rl", "tools.json", doc), display=SHOWN)


def messages(report: LoadReport) -> list[str]:
    """The problems as printed, but for their lines (tests/loaders/test_json_lines.py)."""
    return [unlined(p) for p in report.problems]


def test_fixture_bundle_normalizes_exec_and_http_tools():
    report = load_file(BUNDLE / "manifest.toml", display="b/manifest.toml")
    assert report.problems == []
    assert report.manifests == ["b/manifest.toml"]
    append, publish = report.tools
    assert (append.name, append.id, append.namespace) == (
        "notes_append",
        "notes.append",
        "notes_bundle",
    )
    assert append.source.path == "b/tools.json"
    assert append.source.format is Format.RUNLOOP
    assert append.transport == ExecTransport(
        argv=("/usr/local/bin/notes", "--append"), args_via="file", stdout="json", ok_flag=False
    )
    assert append.input_schema_ref == "schema:notes.append.request.v1"
    assert append.input_schema["required"] == ["line"]
    assert append.requires.fs_write == ("/var/notes",)
    assert append.requires.capabilities == ("kb_write",)
    assert append.budget == Budget(tokens=2000)
    assert append.safety.read_only is False  # it declares an fs.write capability
    assert append.safety.inferred == frozenset(SAFETY_FACTS) - {"read_only"}
    assert publish.transport == HttpTransport(
        method="POST",
        url="https://wiki.example/api/pages/{page}",
        headers={"Authorization": "Bearer ${secret:runloop/wiki/token}"},
    )
    assert publish.requires.net_hosts == ("wiki.example",)
    assert publish.secrets == ("runloop/wiki/token",)
    assert publish.tags == ("external", "wiki")
    assert publish.budget == Budget(usd=0.5)
    assert publish.safety.requires_confirmation is True
    assert publish.safety.open_world is True
    assert publish.safety.read_only is False  # POST changes state (RFC 9110)
    assert publish.safety.inferred == frozenset(SAFETY_FACTS) - {
        "requires_confirmation",
        "open_world",
        "read_only",
    }
    assert publish.output_schema_ref == "schema:notes.publish.result.v1"
    assert publish.output_schema == {"type": "object", "properties": {"url": {"type": "string"}}}
    compiled = compile_schema(publish.runtime_input_schema)
    assert compiled.validate({"page": "p", "body": 3}) == [
        "at /body: expected a string; got an integer (3)"
    ]


def test_version_must_be_one(tmp_path):
    assert messages(load(tmp_path, {"version": 2, "tools": [entry()]})) == [
        f"{SHOWN}: unsupported tools.json version 2 (expected 1)"
    ]
    assert messages(load(tmp_path, {"tools": [entry()]})) == [
        f"{SHOWN}: tools.json version is missing (expected 1)"
    ]


@pytest.mark.parametrize(("version", "shown"), [(1.0, "1.0"), (True, "true"), ("1", '"1"')])
def test_version_must_be_the_integer_one(tmp_path, version, shown):
    assert messages(load(tmp_path, {"version": version, "tools": [entry()]})) == [
        f"{SHOWN}: unsupported tools.json version {shown} (expected 1)"
    ]


@pytest.mark.parametrize("doc", [{"version": 1, "tools": []}, {"version": 1}])
def test_an_empty_or_missing_tool_list_is_zero_tools(tmp_path, doc):
    report = load(tmp_path, doc)
    assert (report.tools, report.problems) == ([], [])


@pytest.mark.parametrize("tools", [{}, "none", 0])
def test_a_tool_list_of_another_type_is_an_error(tmp_path, tools):
    report = load(tmp_path, {"version": 1, "tools": tools})
    assert messages(report) == [f"{SHOWN}: tools must be a list of tool objects"]


def test_an_id_that_is_not_a_string_is_named_as_such(tmp_path):
    report = load(tmp_path, {"version": 1, "tools": [entry(id=7)]})
    assert messages(report) == [f"{SHOWN}: tool[0]: id must be a string"]


def test_empty_schemas_mean_any_object_and_no_result_check(tmp_path):
    # {} used to drop the tool without a word.
    report = load(tmp_path, {"version": 1, "tools": [entry(input_schema={}, result_schema={})]})
    assert report.problems == []
    (spec,) = report.tools
    assert spec.input_schema == spec.runtime_input_schema == OBJ
    assert spec.output_schema is None


def test_entry_problems_use_runloop_texts_and_are_all_collected(tmp_path):
    doc = {
        "version": 1,
        "tools": [
            entry(id="  ", description=""),
            entry(id="a", transport={"kind": "exec"}),
            entry(id="b", transport={"kind": "http"}),
            entry(id="c", transport={"kind": "unix", "path": "/s"}),
            entry(id="d", transport={"kind": "exec", "command": "bin/demo"}),
            entry(id="e", transport={"kind": "http", "method": "GET", "url": "/relative"}),
            entry(id="f", input_schema=None, result_schema={"type": "nope"}),
            entry(id="a"),
        ],
    }
    assert messages(load(tmp_path, doc)) == [
        f"{SHOWN}: tool[0]: tool id cannot be empty",
        f"{SHOWN}: tool[0]: description cannot be empty",
        f'{SHOWN}: tool[1] "a": exec transport requires a command',
        f'{SHOWN}: tool[2] "b": http transport requires a method',
        f'{SHOWN}: tool[2] "b": http transport requires a url',
        f'{SHOWN}: tool[3] "c": unknown transport.kind "unix" (supported kinds: "exec", "http")',
        f'{SHOWN}: tool[4] "d": exec transport command must be an absolute path (got "bin/demo"): '
        f'write "{tmp_path / "rl" / "bin" / "demo"}" (the path "bin/demo" names from this '
        "tools.json's folder)",
        f'{SHOWN}: tool[5] "e": http transport url must be an absolute http:// or https:// URL '
        '(got "/relative")',
        f'{SHOWN}: tool[6] "f": input_schema is required (an inline JSON Schema or '
        '{"$ref": "schema:ID"})',
        f"{SHOWN}: tool[6] \"f\": result_schema: at /type: 'nope' is not one of "
        "['array', 'boolean', 'integer', 'null', 'number', 'object', 'string']",
        f'{SHOWN}: tool[7] "a": duplicate id',
    ]


def test_refs_resolve_from_the_schemas_folder_including_nested_ones(tmp_path):
    schemas = tmp_path / "rl" / "schemas"
    write(
        schemas, "req.v1.json", {"type": "object", "properties": {"n": {"$ref": "schema:pos.v1"}}}
    )
    write(schemas, "pos.v1.json", {"type": "integer", "minimum": 1})
    report = load(
        tmp_path, {"version": 1, "tools": [entry(input_schema={"$ref": "schema:req.v1"})]}
    )
    assert report.problems == []
    (spec,) = report.tools
    assert spec.input_schema_ref == "schema:req.v1"
    assert spec.input_schema["properties"]["n"] == {"$ref": "schema:pos.v1"}
    assert compile_schema(spec.runtime_input_schema).validate({"n": 0}) == [
        "at /n: expected at least 1; got 0"
    ]


def test_schema_refs_may_point_at_files_relative_to_the_tools_json(tmp_path):
    write(tmp_path / "rl" / "shared", "res.json", {"type": "object", "required": ["ok"]})
    doc = {
        "version": 1,
        "tools": [
            entry(
                result_schema={"$ref": "schema:res.v1"},
                schema_refs={"schema:res.v1": "shared/res.json"},
            )
        ],
    }
    (spec,) = load(tmp_path, doc).tools
    assert spec.output_schema == {"type": "object", "required": ["ok"]}
    assert spec.output_schema_ref == "schema:res.v1"


def test_a_broken_schema_file_is_reported_once(tmp_path):
    write(tmp_path / "rl" / "schemas", "bad.v1.json", "{not json")
    report = load(
        tmp_path, {"version": 1, "tools": [entry(input_schema={"$ref": "schema:bad.v1"})]}
    )
    assert messages(report) == [
        f'{SHOWN}: tool[0] "demo.run": schema file rl/schemas/bad.v1.json: invalid JSON: line 1 '
        "column 2: Expecting property name enclosed in double quotes"
    ]


def test_unresolved_refs_are_load_errors_naming_where_we_looked(tmp_path):
    doc = {
        "version": 1,
        "tools": [
            entry(
                input_schema={"type": "object", "properties": {"a": {"$ref": "schema:gone.v1"}}},
                result_schema={"$ref": "schema:mail.send.result.v1"},
            )
        ],
    }
    report = load(tmp_path, doc)
    assert messages(report) == [
        f'{SHOWN}: tool[0] "demo.run": input_schema: unresolved schema ref schema:gone.v1 '
        "(looked in schema_refs and rl/schemas/)",
        f'{SHOWN}: tool[0] "demo.run": result_schema: unresolved schema ref '
        "schema:mail.send.result.v1 (looked in schema_refs and rl/schemas/)",
    ]
    assert report.tools == []


def test_a_ref_id_cannot_climb_out_of_the_schemas_folder(tmp_path):
    write(tmp_path / "rl", "secret.json", OBJ)
    report = load(
        tmp_path, {"version": 1, "tools": [entry(input_schema={"$ref": "schema:../secret"})]}
    )
    assert [p.message for p in report.problems] == [
        "input_schema: unresolved schema ref schema:../secret "
        "(looked in schema_refs and rl/schemas/)"
    ]


def bundle(tmp_path: Path, tools_text: str, **artifact: object) -> Path:
    folder = tmp_path / "agents" / "mailer"
    write(folder, "tools.json", tools_text)
    fields = {"path": "tools.json", "blake3": blake3(tools_text.encode()).hexdigest(), "version": 1}
    fields.update(artifact)
    table = "\n".join(f"{k} = {json.dumps(v)}" for k, v in fields.items() if v is not None)
    return write(
        folder, "manifest.toml", f'[agent]\nname = "mailer"\n\n[artifacts.tools]\n{table}\n'
    )


EMPTY = '{\n  "version": 1,\n  "tools": []\n}'


@pytest.mark.parametrize("text", [EMPTY, EMPTY + "\n"])
def test_bundle_digest_is_checked_over_the_raw_bytes(tmp_path, text):
    report = load_file(bundle(tmp_path, text), display="agents/mailer/manifest.toml")
    assert (report.tools, report.problems) == ([], [])
    assert report.manifests == ["agents/mailer/manifest.toml"]


def test_a_trailing_newline_changes_the_digest(tmp_path):
    pinned = blake3(EMPTY.encode()).hexdigest()
    report = load_file(bundle(tmp_path, EMPTY + "\n", blake3=pinned), display="m/manifest.toml")
    actual = blake3((EMPTY + "\n").encode()).hexdigest()
    assert messages(report) == [
        f"m/manifest.toml: tools.json digest mismatch (expected {pinned}, got {actual})"
    ]
    assert report.problems[0].code is ErrorCode.MANIFEST_DIGEST


def test_a_tampered_tools_json_loads_no_tools(tmp_path):
    good = json.dumps({"version": 1, "tools": [entry()]})
    path = bundle(tmp_path, good)
    write(path.parent, "tools.json", good.replace("/usr/bin/demo", "/usr/bin/evil"))
    report = load_file(path)
    assert report.tools == []
    assert [p.code for p in report.problems] == [ErrorCode.MANIFEST_DIGEST]


def test_bundle_tools_load_with_the_bundle_folder_as_namespace(tmp_path):
    report = load_file(bundle(tmp_path, json.dumps({"version": 1, "tools": [entry()]})))
    assert [(t.name, t.namespace) for t in report.tools] == [("demo_run", "mailer")]


def test_bundle_artifact_errors(tmp_path):
    path = bundle(tmp_path, EMPTY, version=2)
    assert [p.message for p in load_file(path).problems] == [
        "unsupported tools.json version 2 (supported: 1)"
    ]
    path = bundle(tmp_path, EMPTY, path="missing.json")
    assert messages(load_file(path, display="m/manifest.toml")) == [
        "m/manifest.toml: missing tools.json at m/missing.json"
    ]
    path = bundle(tmp_path, EMPTY, blake3=None, path="missing.json")
    assert [p.message for p in load_file(path).problems] == [
        "[artifacts.tools] blake3 is required (the BLAKE3 hex digest of tools.json)"
    ]


def test_a_bundle_without_a_digest_is_shown_the_digest_its_tools_json_has(tmp_path):
    """ "blake3 is required" gave no digest: the user had to find a tool to compute it."""
    path = bundle(tmp_path, EMPTY, blake3=None)
    assert [p.message for p in load_file(path).problems] == [
        "[artifacts.tools] blake3 is required (the BLAKE3 hex digest of tools.json); write "
        f'blake3 = "{blake3(EMPTY.encode()).hexdigest()}", the digest tools.json has now, once '
        "it is the tools.json you mean to serve"
    ]


def test_a_manifest_without_a_tools_artifact_is_zero_tools_and_no_error(tmp_path):
    path = write(tmp_path / "helper", "manifest.toml", '[agent]\nname = "helper"\n')
    report = load_file(path)
    assert (report.tools, report.problems, report.manifests) == ([], [], [str(path)])


def test_invalid_toml_is_reported(tmp_path):
    path = write(tmp_path / "x", "manifest.toml", "[agent\n")
    (problem,) = load_file(path, display="x/manifest.toml").problems
    assert problem.render().startswith("x/manifest.toml: invalid TOML: ")


@pytest.mark.parametrize(
    ("folder", "digest"),
    [
        ("with-newline", "62c56dc05fea3039501e5d21bc43f268757dbc7ccd1d8d7abd03f64607e6f547"),
        ("no-newline", "afe8c80ddd828a277fa440f6fc431158d0429d2300d322786613b962a831a3be"),
    ],
)
def test_the_empty_bundle_shapes_verify_byte_for_byte(folder, digest):
    """The two byte layouts of Runloop's empty tools.json (scaffolded without a trailing
    newline, hand-kept with one) and the digests their bundles pin."""
    bundle = SHAPES / "agents" / folder
    assert blake3((bundle / "tools.json").read_bytes()).hexdigest() == digest
    report = load_file(bundle / "manifest.toml", display=f"{folder}/manifest.toml")
    assert (report.tools, report.problems) == ([], [])
    assert report.manifests == [f"{folder}/manifest.toml"]


def test_a_bundle_without_a_tools_artifact_shape_is_zero_tools():
    report = load_file(SHAPES / "agents" / "no-tools" / "manifest.toml")
    assert (report.tools, report.problems) == ([], [])


def test_an_upper_case_pinned_digest_matches(tmp_path):
    digest = blake3(EMPTY.encode()).hexdigest().upper()
    assert load_file(bundle(tmp_path, EMPTY, blake3=digest)).problems == []


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"blake3": "xyz"}, '[artifacts.tools] blake3 must be 64 hex digits (got "xyz")'),
        (
            {"blake3": "ab" * 31},
            f'[artifacts.tools] blake3 must be 64 hex digits (got "{"ab" * 20}…")',
        ),
        (
            {"path": "../writer/tools.json"},
            '[artifacts.tools] path "../writer/tools.json" must stay inside the bundle folder',
        ),
        ({"path": "."}, '[artifacts.tools] path "." must stay inside the bundle folder'),
        ({"version": 1.5}, "unsupported tools.json version 1.5 (supported: 1)"),
    ],
)
def test_malformed_pins_are_refused_before_reading(tmp_path, fields, message):
    report = load_file(bundle(tmp_path, EMPTY, **fields), display="m/manifest.toml")
    assert messages(report) == [f"m/manifest.toml: {message}"]


def test_the_docs_example_shape_fails_clearly_on_refs_defined_elsewhere():
    report = load_file(SHAPES / "docs-example" / "tools.json", display="d/tools.json")
    assert messages(report) == [
        f'd/tools.json: tool[0] "notes.page_publish": {field}: unresolved schema ref '
        f"schema:notes.publish.{kind}.v1 (looked in schema_refs and d/schemas/)"
        for field, kind in (("input_schema", "request"), ("result_schema", "result"))
    ]
    assert report.tools == []


def test_the_docs_example_shape_loads_once_its_refs_resolve(tmp_path):
    folder = tmp_path / "docs"
    write(folder, "tools.json", (SHAPES / "docs-example" / "tools.json").read_text("utf-8"))
    request = {"type": "object", "properties": {"page": {"type": "string"}}, "required": ["page"]}
    write(folder / "schemas", "notes.publish.request.v1.json", request)
    write(folder / "schemas", "notes.publish.result.v1.json", {"type": "object"})
    report = load_file(folder / "tools.json")
    assert report.problems == []
    (spec,) = report.tools
    assert (spec.name, spec.namespace) == ("notes_page_publish", "docs")
    assert spec.input_schema == request
    assert (spec.input_schema_ref, spec.output_schema_ref) == (
        "schema:notes.publish.request.v1",
        "schema:notes.publish.result.v1",
    )
    assert spec.transport == HttpTransport(method="POST", url="https://wiki.example/api/publish")
    assert spec.safety.requires_confirmation is True
    assert spec.requires.net_hosts == ("wiki.example",)
    assert spec.secrets == ("runloop/wiki/api_token",)
    assert spec.tags == ("external", "wiki")


@pytest.mark.parametrize("secret", ["runloop/mail/smtp_api_key", "mail.smtp.key"])
def test_both_secret_id_styles_are_kept_as_written(tmp_path, secret):
    report = load(tmp_path, {"version": 1, "tools": [entry(secrets=[secret])]})
    assert report.tools[0].secrets == (secret,)


def test_a_missing_description_or_id_is_said_to_be_missing(tmp_path):
    """A missing description said "description cannot be empty" (found by the first-hour
    walkthrough); an empty one still does, as Runloop says it."""
    doc = {
        "version": 1,
        "tools": [
            {k: v for k, v in entry().items() if k not in ("id", "description")},
            entry(id="b", description=3),
            entry(id="c", description="  "),
        ],
    }
    assert messages(load(tmp_path, doc)) == [
        f'{SHOWN}: tool[0]: id is missing: a stable identifier such as "mail.smtp_send"',
        f"{SHOWN}: tool[0]: description is missing: a short summary of what the tool does",
        f'{SHOWN}: tool[1] "b": description must be a string (a short summary of what the tool '
        "does)",
        f'{SHOWN}: tool[2] "c": description cannot be empty',
    ]


def test_a_relative_or_bare_exec_command_says_which_absolute_path_to_write(tmp_path):
    """``./run.sh`` was refused as "must be an absolute path" with no path to write."""
    doc = {
        "version": 1,
        "tools": [
            entry(id="a", transport={"kind": "exec", "command": "./run.sh"}),
            entry(id="b", transport={"kind": "exec", "command": "python3"}),
        ],
    }
    assert messages(load(tmp_path, doc)) == [
        f'{SHOWN}: tool[0] "a": exec transport command must be an absolute path (got '
        f'"./run.sh"): write "{tmp_path / "rl" / "run.sh"}" (the path "./run.sh" names from '
        "this tools.json's folder)",
        f'{SHOWN}: tool[1] "b": exec transport command must be an absolute path (got '
        '"python3"): write the program\'s absolute path, as `command -v python3` prints it',
    ]


def test_an_exec_command_written_as_a_list_says_it_is_one_string(tmp_path):
    """A list said "exec transport requires a command", although one was there: Runloop's
    command is a string, its args follow the arguments file the program gets first."""
    doc = {
        "version": 1,
        "tools": [
            entry(id="a", transport={"kind": "exec", "command": ["/opt/t/tool", "--fast"]}),
            entry(id="b", transport={"kind": "exec", "command": ["python3", "tool.py", "-v"]}),
        ],
    }
    why = "the program gets the path of the arguments file first, then args"
    start = "exec transport command must be a string, the absolute path of one program, not a list"
    assert messages(load(tmp_path, doc)) == [
        f'{SHOWN}: tool[0] "a": {start}: write "command": "/opt/t/tool", "args": ["--fast"] '
        f"({why})",
        f'{SHOWN}: tool[1] "b": {start}: write "command": "{tmp_path / "rl" / "tool.py"}", '
        f'"args": ["-v"] ({why}; give the script a #! line (#!/usr/bin/env python3) and make it '
        "executable)",
    ]
