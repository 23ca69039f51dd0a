from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from mcp_toolbridge.errors import Severity
from mcp_toolbridge.loaders import LoadReport, load_file
from mcp_toolbridge.model import ExecTransport, Format
from tests.support import paths
from tests.support.problems import unlined

FIXTURES = paths.FIXTURES / "manifests" / "agentpm"
SHAPES = paths.FIXTURES / "shapes" / "agentpm"
SHOWN = "pkg/agent.json"


def manifest(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "kind": "tool",
        "name": "echo-tool",
        "version": "0.1.0",
        "description": "Echo the input back.",
        "files": ["main.py"],
        "entrypoint": {"command": "python", "args": ["main.py"]},
        "inputs": {"type": "object", "properties": {"text": {"type": "string"}}},
        "outputs": {"type": "object"},
    }
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None}


def load(tmp_path: Path, doc: object, environ: dict[str, str] | None = None) -> LoadReport:
    folder = tmp_path / "pkg"
    folder.mkdir(exist_ok=True)
    path = folder / "agent.json"
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return load_file(path, display=SHOWN, environ={} if environ is None else environ)


def rendered(report: LoadReport) -> list[str]:
    """The problems as printed, but for their lines (tests/loaders/test_json_lines.py)."""
    return [unlined(p) for p in report.problems]


def test_fixture_tool_normalizes_entrypoint_env_and_schemas():
    report = load_file(
        FIXTURES / "word-count" / "agent.json", display="wc/agent.json", environ={"WC_TOKEN": "t"}
    )
    assert report.problems == []
    (spec,) = report.tools
    assert (spec.name, spec.id, spec.namespace) == ("word-count", "word-count", "word-count")
    assert spec.version == "1.0.0-beta.2+build.7"
    assert spec.description == "Count the words in a text."
    assert spec.timeout_s == 1.5
    assert (spec.source.path, spec.source.index, spec.source.format) == (
        "wc/agent.json",
        0,
        Format.AGENTPM,
    )
    transport = spec.transport
    assert isinstance(transport, ExecTransport)
    assert transport.argv == ("python3", "-u", "src/main.py")
    assert transport.cwd == os.path.normpath(FIXTURES.absolute() / "word-count")
    assert (transport.args_via, transport.stdout, transport.ok_flag) == (
        "stdin",
        "first_json_object",
        True,
    )
    assert transport.env.passthrough == ("WC_LOCALE", "WC_TOKEN")
    assert transport.env.values == {"WC_LOCALE": "en", "PYTHONIOENCODING": "utf-8"}
    assert spec.output_schema is not None
    assert "oneOf" in spec.output_schema
    assert spec.input_schema["required"] == ["text"]


def test_a_required_variable_without_default_must_be_in_the_environment():
    report = load_file(FIXTURES / "word-count" / "agent.json", display="wc/agent.json", environ={})
    assert rendered(report) == [
        "wc/agent.json: Missing environment variable: WC_TOKEN. "
        "WC_TOKEN is required and has no default value. Set it where the server starts: "
        "export WC_TOKEN=... in the shell that runs it, or "
        '"env": {"WC_TOKEN": "..."} in the client\'s entry for the server (Claude Desktop '
        "passes none of the shell's variables; docs/clients.md)"
    ]
    assert report.tools == []


def test_a_required_variable_may_come_from_the_entrypoint_env(tmp_path):
    doc = manifest(
        entrypoint={"command": "node", "args": ["i.js"], "env": {"KEY": "v"}},
        environment={"vars": {"KEY": {"required": True, "description": "k"}}},
    )
    assert load(tmp_path, doc).errors == []


def test_a_non_tool_kind_is_skipped_with_a_notice():
    report = load_file(FIXTURES / "research-agent" / "agent.json", display="a/agent.json")
    assert rendered(report) == ['a/agent.json: kind "agent" is not a tool; skipped']
    assert report.problems[0].severity is Severity.NOTICE
    assert report.errors == []
    assert report.tools == []


@pytest.mark.parametrize(
    "command", ["node", "nodejs", "python", "python3", "python3.12", "/opt/py/bin/python3"]
)
def test_allowed_interpreters_load(tmp_path, command):
    report = load(tmp_path, manifest(entrypoint={"command": command, "args": ["x"]}))
    assert report.problems == []


@pytest.mark.parametrize("command", ["bash", "/bin/sh", "/usr/bin/ruby", "C:\\bin\\deno.exe"])
def test_an_unsupported_interpreter_is_rejected_with_the_sdk_text(tmp_path, command):
    # An absolute path is allowed only to one of the interpreters (the SDK checks its basename).
    report = load(tmp_path, manifest(entrypoint={"command": command, "args": ["x"]}))
    assert rendered(report) == [
        f"{SHOWN}: Unsupported agent.json.entrypoint.command {json.dumps(command)}. "
        "Allowed: node|nodejs|python|python3 (or an absolute path to one of them, like "
        '"/usr/bin/python3")'
    ]
    assert report.tools == []


def test_runtime_type_must_match_the_interpreter_family(tmp_path):
    doc = manifest(entrypoint={"command": "node", "args": ["x.js"]}, runtime={"type": "python"})
    assert rendered(load(tmp_path, doc)) == [
        f"{SHOWN}: `runtime.type` should match `entrypoint.command` (node vs python)"
    ]
    doc = manifest(entrypoint={"command": "nodejs"}, runtime={"type": "node", "version": "20"})
    assert load(tmp_path, doc).problems == []


def test_a_missing_field_is_required_and_a_misspelt_one_names_the_field_meant(tmp_path):
    """The slips of a first agent.json: ``input`` for ``inputs``, no version, no outputs, a
    ``timeout`` in the entrypoint. Each message names the field and what it takes."""
    doc = manifest(
        version=None,
        inputs=None,
        outputs=None,
        input={"type": "object"},
        entrypoint={"command": "python3", "args": ["main.py"], "timeout": 5000},
    )
    assert [unlined(p) for p in load(tmp_path, doc).problems] == [
        f"{SHOWN}: version is required: a SemVer string like 1.2.3 (pre-release/build allowed)",
        f"{SHOWN}: entrypoint.timeout: unknown field, ignored; "
        'did you mean "entrypoint.timeout_ms"?',
        f"{SHOWN}: inputs is required: a JSON Schema object ({{}} for none)",
        f"{SHOWN}: outputs is required: a JSON Schema object ({{}} for none)",
        f'{SHOWN}: input: unknown field, ignored; did you mean "inputs"?',
    ]
    doc = manifest(name=None)
    assert [p.message for p in load(tmp_path, doc).problems] == [
        "name is required: lower-case letters, digits and '-' (^[a-z][a-z0-9-]{0,63}$)"
    ]


def test_every_field_problem_is_collected(tmp_path):
    doc = manifest(
        name="Bad_Name",
        version="1.0",
        description=None,
        files=[],
        entrypoint={"command": "ruby", "cwd": "../outside", "timeout_ms": 0},
        inputs={"type": "object", "properties": {"n": {"type": "integr"}}},
        outputs=None,
        environment={"vars": {"lower": {"required": True, "description": "x"}}},
    )
    messages = [p.message for p in load(tmp_path, doc).problems]
    assert messages[:3] == [
        'name "Bad_Name" must match ^[a-z][a-z0-9-]{0,63}$',
        'version "1.0" must be a SemVer string like 1.2.3 (pre-release/build allowed)',
        "description is required (a string saying what the tool does)",
    ]
    assert (
        'Unsupported agent.json.entrypoint.command "ruby". Allowed: node|nodejs|python|python3 '
        '(or an absolute path to one of them, like "/usr/bin/python3")' in messages
    )
    assert 'entrypoint.cwd "../outside" escapes the manifest folder' in messages
    assert "entrypoint.timeout_ms must be a positive number of milliseconds" in messages
    assert (
        "files must be a non-empty list of paths or globs to package (everything the tool needs "
        'at runtime, the entrypoint\'s script too): for example "files": ["main.py", '
        '"src/**"]' in messages
    )
    assert 'environment.vars: invalid name "lower" (must match ^[A-Z][A-Z0-9_]*$)' in messages
    assert any(
        m.startswith("inputs: at /properties/n/type: 'integr' is not one of") for m in messages
    )
    assert "outputs is required: a JSON Schema object ({} for none)" in messages
    assert len(messages) == 10


def test_empty_inputs_and_outputs_mean_any_object_and_no_output_schema(tmp_path):
    report = load(tmp_path, manifest(inputs={}, outputs={}))
    (spec,) = report.tools
    assert spec.input_schema == spec.runtime_input_schema == {"type": "object"}
    assert spec.output_schema is None
    assert spec.timeout_s is None
    assert spec.transport.cwd == os.path.normpath(tmp_path.absolute() / "pkg")  # type: ignore[union-attr]


def test_inputs_whose_root_is_not_an_object_are_rejected(tmp_path):
    report = load(tmp_path, manifest(inputs={"type": "string"}))
    assert [p.message for p in report.problems] == [
        'inputs: the root type must be "object" (MCP passes tool arguments as one JSON object), '
        'got "string"'
    ]


def test_invalid_json_reports_line_and_column(tmp_path):
    report = load(tmp_path, '{\n  "kind": "tool",\n  "name": oops\n}')
    assert rendered(report) == [f"{SHOWN}: invalid JSON: line 3 column 11: Expecting value"]
    assert report.manifests == [SHOWN]


def test_an_empty_description_is_only_a_notice(tmp_path):
    report = load(tmp_path, manifest(description="  "))
    assert [(p.severity, p.message) for p in report.problems] == [
        (Severity.NOTICE, "`description` should not be empty")
    ]
    assert len(report.tools) == 1


@pytest.mark.parametrize("name", ["image-shrink", "doc-convert"])
def test_the_documented_tool_shape_loads(name):
    """The shape of the real example tools: object entrypoint, files, runtime, $schema,
    readme, license, format/contentEncoding keywords; the stale CLI schema would reject all."""
    path = SHAPES / "tools" / name / "agent.json"
    report = load_file(path, display=f"{name}/agent.json", environ={})
    assert report.problems == []
    (spec,) = report.tools
    assert spec.id == spec.namespace == name
    assert spec.timeout_s == 30
    transport = spec.transport
    assert isinstance(transport, ExecTransport)
    assert (transport.stdout, transport.ok_flag) == ("first_json_object", True)
    assert transport.cwd == os.path.normpath(path.parent.absolute())
    assert spec.output_schema is not None
    assert [branch["properties"]["ok"] for branch in spec.output_schema["oneOf"]] == [
        {"const": True},
        {"const": False},
    ]


def test_a_file_without_a_trailing_newline_loads_the_same():
    path = SHAPES / "tools" / "image-shrink" / "agent.json"
    assert not path.read_bytes().endswith(b"\n")
    (spec,) = load_file(path, environ={}).tools
    assert spec.transport.argv == ("node", "dist/main.cjs")  # type: ignore[union-attr]
    assert spec.input_schema["properties"]["url"]["format"] == "uri"


def test_python_args_are_kept_in_order():
    (spec,) = load_file(SHAPES / "tools" / "doc-convert" / "agent.json", environ={}).tools
    assert spec.transport.argv == ("python", "-u", "doc_convert/__main__.py")  # type: ignore[union-attr]
    assert spec.input_schema["properties"]["to"]["default"] == "text"


def test_declared_variables_need_the_required_one_and_default_the_optional_one():
    path = SHAPES / "tools" / "chat-post" / "agent.json"
    report = load_file(path, display="chat/agent.json", environ={"HOME": "/h"})
    assert rendered(report) == [
        "chat/agent.json: Missing environment variable: CHAT_TOKEN. "
        "CHAT_TOKEN is required and has no default value. Set it where the server starts: "
        "export CHAT_TOKEN=... in the shell that runs it, or "
        '"env": {"CHAT_TOKEN": "..."} in the client\'s entry for the server (Claude Desktop '
        "passes none of the shell's variables; docs/clients.md)"
    ]
    assert report.tools == []
    (spec,) = load_file(path, environ={"CHAT_TOKEN": "t"}).tools
    env = spec.transport.env  # type: ignore[union-attr]
    assert env.passthrough == ("CHAT_TOKEN", "CHAT_API_BASE_URL")
    assert env.values == {"CHAT_API_BASE_URL": "https://chat.example/api"}


def test_an_agent_composition_is_skipped_with_a_notice():
    report = load_file(SHAPES / "app" / "agent.json", display="app/agent.json")
    assert [(p.severity, unlined(p)) for p in report.problems] == [
        (Severity.NOTICE, 'app/agent.json: kind "agent" is not a tool; skipped')
    ]
    assert report.tools == []


@pytest.mark.parametrize("kind", ["template", "skill", "knowledge", "memory", "profile", "loop"])
def test_every_other_documented_kind_is_skipped_with_a_notice(tmp_path, kind):
    report = load(tmp_path, manifest(kind=kind))
    assert [(p.severity, p.message) for p in report.problems] == [
        (Severity.NOTICE, f'kind "{kind}" is not a tool; skipped')
    ]


def test_a_kind_that_is_not_a_string_is_an_error(tmp_path):
    report = load(tmp_path, manifest(kind=1))
    assert rendered(report) == [f'{SHOWN}: kind must be a string ("tool" for a tool package)']


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"runtime": {"type": "node", "version": "latest"}, "entrypoint": {"command": "node"}},
            'runtime.version "latest" must be MAJOR[.MINOR[.PATCH]], like "20" or "3.11"',
        ),
        (
            {"runtime": {"type": "python", "version": 3.11}},
            'runtime.version must be a string MAJOR[.MINOR[.PATCH]], like "20" or "3.11"',
        ),
        ({"runtime": "python"}, 'runtime must be an object {type: "python" or "node", version}'),
        ({"readme": ["README.md"]}, "readme must be a string (the path to the README file)"),
        ({"license": "MIT"}, 'license must be an object {spdx: "MIT", file: "LICENSE"}'),
        ({"license": {"spdx": 1}}, "license.spdx must be a string"),
        (
            {"environment": {"vars": {"K": {"required": "yes", "description": "k"}}}},
            "environment.vars.K.required must be true or false",
        ),
        (
            {"environment": {"vars": {"K": {"required": False, "description": 5}}}},
            "environment.vars.K.description must be a string",
        ),
    ],
)
def test_documented_optional_fields_are_type_checked(tmp_path, fields, message):
    report = load(tmp_path, manifest(**fields))
    assert rendered(report) == [f"{SHOWN}: {message}"]
    assert report.tools == []


@pytest.mark.parametrize("version", ["20", "3.11", "3.11.4"])
def test_runtime_versions_of_one_to_three_numbers_load(tmp_path, version):
    report = load(tmp_path, manifest(runtime={"type": "python", "version": version}))
    assert report.problems == []


@pytest.mark.parametrize(
    ("entrypoint", "message"),
    [
        (
            "python3 x.py",
            "entrypoint must be an object {command, args, cwd, timeout_ms, env}, not a string: "
            'write "entrypoint": {"command": "python3", "args": ["x.py"]}',
        ),
        (
            ["node", "dist/x.js", "--fast"],
            "entrypoint must be an object {command, args, cwd, timeout_ms, env}, not a list: "
            'write "entrypoint": {"command": "node", "args": ["dist/x.js", "--fast"]}',
        ),
        (
            {"command": ["python3", "x.py"]},
            "entrypoint.command must be a string, the interpreter alone; what follows it goes "
            'in args: "command": "python3", "args": ["x.py"]',
        ),
        (None, "entrypoint is required: an object {command, args, cwd, timeout_ms, env}"),
        (
            "count.py",
            "entrypoint must be an object {command, args, cwd, timeout_ms, env}, not a string: "
            'write "entrypoint": {"command": "python3", "args": ["count.py"]}',
        ),
        (
            ["dist/count.mjs", "--fast"],
            "entrypoint must be an object {command, args, cwd, timeout_ms, env}, not a list: "
            'write "entrypoint": {"command": "node", "args": ["dist/count.mjs", "--fast"]}',
        ),
        (
            {"command": "count.py", "args": ["--fast"]},
            'Unsupported agent.json.entrypoint.command "count.py". Allowed: '
            'node|nodejs|python|python3 (or an absolute path to one of them, like "/usr/bin/'
            'python3"); to run the script, write "command": "python3", "args": ["count.py", '
            '"--fast"]',
        ),
        (
            {"command": "python3 x.py", "args": ["-v"]},
            "entrypoint.command must be the interpreter alone; what follows it goes in args: "
            '"command": "python3", "args": ["x.py", "-v"]',
        ),
        (
            "ruby x.rb",
            "entrypoint must be an object {command, args, cwd, timeout_ms, env}, not a string; "
            'and "ruby" is not an interpreter AgentPM runs (allowed: node|nodejs|python|python3)',
        ),
        (
            {"command": ["ruby", "x.rb"]},
            'entrypoint.command must be a string, the interpreter alone; and "ruby" is not an '
            "interpreter AgentPM runs (allowed: node|nodejs|python|python3)",
        ),
    ],
)
def test_an_entrypoint_of_the_wrong_type_says_how_to_write_it(tmp_path, entrypoint, message):
    """ "entrypoint": "python3 x.py" said "entrypoint is required" although it is there (found
    by the first-hour walkthrough). ``"command": "python3 x.py"`` was told to write ``"args":
    ["python3 x.py"]``, and ``"ruby x.rb"`` to write ``"command": "ruby"``, refused in turn."""
    doc = manifest(entrypoint=entrypoint)
    assert rendered(load(tmp_path, doc)) == [f"{SHOWN}: {message}"]


def test_a_script_without_an_extension_is_given_the_interpreter_of_its_first_line(tmp_path):
    """``"entrypoint": "count"`` (a script, no interpreter) was answered with ``"command":
    "count"``, which is refused in turn: the suggestion names the interpreter of its #! line."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "count").write_text("#!/usr/bin/env python3\nprint(1)\n")
    doc = manifest(entrypoint={"command": "count"})
    assert rendered(load(tmp_path, doc)) == [
        f'{SHOWN}: Unsupported agent.json.entrypoint.command "count". Allowed: '
        'node|nodejs|python|python3 (or an absolute path to one of them, like "/usr/bin/python3")'
        '; to run the script, write "command": "python3", "args": ["count"]'
    ]


def test_an_empty_files_list_names_the_entrypoints_script_to_write(tmp_path):
    """A scaffolded ``"files": []`` was refused without saying what to write."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "count.py").write_text("print(1)\n")
    doc = manifest(files=[], entrypoint={"command": "python3", "args": ["-u", "count.py"]})
    assert rendered(load(tmp_path, doc)) == [
        f"{SHOWN}: files must be a non-empty list of paths or globs to package (everything the "
        'tool needs at runtime, the entrypoint\'s script too): write "files": ["count.py"]'
    ]
