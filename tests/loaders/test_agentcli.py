from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from mcp_toolbridge.errors import ErrorCode, Severity
from mcp_toolbridge.loaders import LoadReport, load_file
from mcp_toolbridge.model import ExecTransport, Format, Safety
from tests.support.paths import FIXTURES
from tests.support.problems import unlined

FIXTURE = FIXTURES / "manifests" / "agentcli" / "tools.json"
SHAPES = FIXTURES / "shapes" / "agentcli"
SHOWN = "manifests/x/tools.json"
MUST_MATCH = "(must match [A-Z_][A-Z0-9_]*)"
ESCAPES = "command[0] escapes ./tools/bin after normalization"


def relative(raw: str) -> str:
    return (
        f"relative command[0] must start with ./tools/bin/ (got {json.dumps(raw)}; put the "
        "program in tools/bin/ beside this tools.json, or give its absolute path)"
    )


def tool(name: str = "t", command: object = None, **fields: Any) -> dict[str, Any]:
    return {"name": name, "command": ["./tools/bin/t"] if command is None else command, **fields}


def load(tmp_path: Path, doc: object) -> LoadReport:
    folder = tmp_path / "x"
    folder.mkdir(exist_ok=True)
    path = folder / "tools.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return load_file(path, display=SHOWN)


def rendered(report: LoadReport) -> list[str]:
    """The problems as printed, but for their lines (tests/loaders/test_json_lines.py)."""
    return [unlined(p) for p in report.problems]


def test_fixture_loads_into_normalized_tool_specs():
    report = load_file(FIXTURE, display="fixtures/agentcli/tools.json")
    assert report.problems == []
    assert report.manifests == ["fixtures/agentcli/tools.json"]
    clock, disk = report.tools
    assert (clock.name, clock.id, clock.namespace) == ("clock_now", "clock_now", "agentcli")
    assert clock.description == "Current time in an IANA timezone"
    assert clock.timeout_s == 3
    assert clock.source.format is Format.AGENTCLI
    assert (clock.source.path, clock.source.index) == ("fixtures/agentcli/tools.json", 0)
    assert clock.safety == Safety()
    transport = clock.transport
    assert isinstance(transport, ExecTransport)
    program = os.path.normpath(FIXTURE.parent.absolute() / "tools" / "bin" / "clock_now")
    assert transport.argv == (program + (".exe" if os.name == "nt" else ""), "--json")
    assert (transport.args_via, transport.stdout, transport.ok_flag) == ("stdin", "json", False)
    assert transport.cwd is None
    assert transport.env.passthrough == ("TZ", "LANG")
    assert "trace_id" not in clock.input_schema["properties"]
    assert clock.input_schema["required"] == ["zone"]
    assert "trace_id" in clock.runtime_input_schema["properties"]
    assert (disk.name, disk.id) == ("disk_usage", "disk.usage")
    assert disk.input_schema == {"type": "object"}
    assert disk.timeout_s is None
    assert isinstance(disk.transport, ExecTransport)
    assert disk.transport.argv == ("/usr/bin/env", "du")


def test_relative_command_resolves_against_the_manifest_folder_not_the_cwd(tmp_path, monkeypatch):
    nested = tmp_path / "configs" / "sub"
    nested.mkdir(parents=True)
    path = nested / "tools.json"
    path.write_text(json.dumps({"tools": [tool(command=["./tools/bin/hello_tool"])]}), "utf-8")
    monkeypatch.chdir(tmp_path)
    report = load_file(Path("configs/sub/tools.json"))
    assert report.problems == []
    program = report.tools[0].transport.argv[0]  # type: ignore[union-attr]
    expected = str(tmp_path / "configs" / "sub" / "tools" / "bin" / "hello_tool")
    assert program == expected + (".exe" if os.name == "nt" else "")
    assert report.tools[0].namespace == "sub"
    assert report.tools[0].source.path == "configs/sub/tools.json"


@pytest.mark.parametrize(
    ("command0", "message"),
    [
        ("/usr/bin/env", None),
        ("./tools/bin/fs_read_file", None),
        (".\\tools\\bin\\fs_read_file", None),
        ("tools/bin/fs_read_file", None),
        ("echo", relative("echo")),
        ("./tools/get_time", relative("./tools/get_time")),
        ("./bin/timecli", relative("./bin/timecli")),
        (
            "../tools/bin/get_time",
            "command[0] must not start with '..' or escape tools/bin "
            '(got "../tools/bin/get_time")',
        ),
        (
            "./tools/bin/../hack",
            f'{ESCAPES} (got "./tools/bin/../hack" -> "./tools/hack")',
        ),
        (
            ".\\tools\\bin\\..\\hack",
            "command[0] escapes ./tools/bin after normalization "
            '(got ".\\\\tools\\\\bin\\\\..\\\\hack" -> "./tools/hack")',
        ),
        (
            "./tools/bin",
            f'{ESCAPES} (got "./tools/bin" -> "./tools/bin")',
        ),
        # Written without "./", the path is only checked once cleaned (agentcli's branch).
        ("tools/bin/../hack", relative("tools/bin/../hack")),
        ("tools", relative("tools")),
        ("", relative("")),
        ("./tools/bin/sub/../fs_read_file", None),
    ],
)
def test_command0_rules_match_agentcli(tmp_path, command0, message):
    report = load(tmp_path, {"tools": [tool("get_time", [command0])]})
    if message is None:
        assert report.problems == []
        assert len(report.tools) == 1
    else:
        assert rendered(report) == [f'{SHOWN}: tool[0] "get_time": {message}']
        assert report.tools == []


def test_missing_name_is_reported_with_the_index_only(tmp_path):
    report = load(tmp_path, {"tools": [{"command": ["/bin/true"]}]})
    assert rendered(report) == [f"{SHOWN}: tool[0]: name is required"]


def test_duplicate_name_rejects_the_second_tool_only(tmp_path):
    report = load(tmp_path, {"tools": [tool("x"), tool("x")]})
    assert rendered(report) == [f'{SHOWN}: tool[1] "x": duplicate name']
    assert [t.source.index for t in report.tools] == [0]


def test_empty_or_missing_command_needs_a_program(tmp_path):
    report = load(tmp_path, {"tools": [tool("a", []), {"name": "b"}]})
    assert rendered(report) == [
        f'{SHOWN}: tool[0] "a": command must have at least program name; command is a list: '
        'the program, then its fixed arguments ("command": ["./tools/bin/NAME"])',
        f'{SHOWN}: tool[1] "b": command must have at least program name; command is missing; '
        'it is a list: the program, then its fixed arguments ("command": ["./tools/bin/NAME"])',
    ]


@pytest.mark.parametrize(
    ("command", "hint"),
    [
        ("./tools/bin/x", 'command is a list, not a string: "command": ["./tools/bin/x"]'),
        (
            "./tools/bin/x --fast",
            'command is a list, not a string: "command": ["./tools/bin/x", "--fast"]',
        ),
        (
            7,
            'command is a list: the program, then its fixed arguments ("command": '
            '["./tools/bin/NAME"]), not a number',
        ),
        (
            {"program": "x"},
            'command is a list: the program, then its fixed arguments ("command": '
            '["./tools/bin/NAME"]), not an object',
        ),
    ],
)
def test_a_command_that_is_not_a_list_says_how_to_write_it(tmp_path, command, hint):
    """agentcli's text alone ("at least program name") read as if nothing was written, for
    "command": "./x" too (found by the first-hour walkthrough)."""
    report = load(tmp_path, {"tools": [tool("a", command)]})
    assert rendered(report) == [
        f'{SHOWN}: tool[0] "a": command must have at least program name; {hint}'
    ]


def test_env_passthrough_is_trimmed_upper_cased_and_deduplicated(tmp_path):
    names = ["oai_api_key", "OAI_API_KEY", " Path ", "TZ"]
    report = load(tmp_path, {"tools": [tool(envPassthrough=names)]})
    assert report.tools[0].transport.env.passthrough == ("OAI_API_KEY", "PATH", "TZ")  # type: ignore[union-attr]


def test_invalid_env_passthrough_names_are_each_reported(tmp_path):
    report = load(
        tmp_path, {"tools": [tool("t", envPassthrough=["1BAD", "GOOD", "OAI-API-KEY", "  "])]}
    )
    assert rendered(report) == [
        f'{SHOWN}: tool[0] "t": envPassthrough[0]: invalid name "1BAD" {MUST_MATCH}',
        f'{SHOWN}: tool[0] "t": envPassthrough[2]: invalid name "OAI-API-KEY" {MUST_MATCH}',
        f'{SHOWN}: tool[0] "t": envPassthrough[3]: empty name',
    ]


def test_every_problem_of_every_tool_is_collected_in_agentcli_order(tmp_path):
    doc = {
        "tools": [
            tool("a", ["./tools/a"], envPassthrough=["bad-name"]),
            tool("a", ["echo"]),
            {"command": []},
            tool("ok"),
        ]
    }
    report = load(tmp_path, doc)
    assert rendered(report) == [
        f'{SHOWN}: tool[0] "a": envPassthrough[0]: invalid name "bad-name" {MUST_MATCH}',
        f'{SHOWN}: tool[0] "a": {relative("./tools/a")}',
        f'{SHOWN}: tool[1] "a": duplicate name',
        f'{SHOWN}: tool[1] "a": {relative("echo")}',
        f"{SHOWN}: tool[2]: name is required",
        f"{SHOWN}: tool[2]: command must have at least program name; command is a list: the "
        'program, then its fixed arguments ("command": ["./tools/bin/NAME"])',
    ]
    assert [t.name for t in report.tools] == ["ok"]
    assert all(p.code is ErrorCode.MANIFEST_INVALID for p in report.problems)


def test_non_positive_timeout_means_the_server_default(tmp_path):
    report = load(
        tmp_path,
        {"tools": [tool("a", timeoutSec=0), tool("b", timeoutSec=-3), tool("c", timeoutSec=7)]},
    )
    assert [t.timeout_s for t in report.tools] == [None, None, 7]


@pytest.mark.parametrize("value", ["5", True, [5], {"s": 5}])
def test_timeout_must_be_a_number_of_seconds(tmp_path, value):
    report = load(tmp_path, {"tools": [tool("slow", timeoutSec=value)]})
    assert rendered(report) == [
        f'{SHOWN}: tool[0] "slow": timeoutSec must be a whole number of seconds '
        "(an integer like 30)"
    ]
    assert report.tools == []


@pytest.mark.parametrize(("value", "shown"), [(2.5, "2.5"), (0.25, "0.25"), (5.0, "5")])
def test_a_fractional_timeout_is_served_with_a_portability_notice(tmp_path, value, shown):
    report = load(tmp_path, {"tools": [tool("quick", timeoutSec=value)]})
    assert [(p.severity, unlined(p)) for p in report.problems] == [
        (
            Severity.NOTICE,
            f'{SHOWN}: tool[0] "quick": timeoutSec {shown} is not a whole number of seconds: '
            "agentcli itself reads an integer and refuses this manifest; served here with that "
            "deadline",
        )
    ]
    assert [t.timeout_s for t in report.tools] == [value]


@pytest.mark.parametrize("name", ["straße", "ﬁle_path"])
def test_env_names_upper_case_one_character_at_a_time_like_agentcli(tmp_path, name):
    # str.upper() would make STRASSE and FILE_PATH of these; agentcli's (Go's) ToUpper does not.
    report = load(tmp_path, {"tools": [tool("t", envPassthrough=[name])]})
    assert rendered(report) == [
        f'{SHOWN}: tool[0] "t": envPassthrough[0]: '
        f"invalid name {json.dumps(name, ensure_ascii=False)} {MUST_MATCH}"
    ]


def test_a_missing_tools_key_is_zero_tools(tmp_path):
    report = load(tmp_path, {"tools": []})
    assert (report.tools, report.problems) == ([], [])


def test_a_schema_is_meta_validated_and_problems_name_the_field(tmp_path):
    report = load(
        tmp_path,
        {"tools": [tool(schema={"type": "object", "properties": {"n": {"minimum": "1"}}})]},
    )
    assert rendered(report) == [
        f"{SHOWN}: tool[0] \"t\": schema: at /properties/n/minimum: '1' is not of type 'number'"
    ]


def test_a_schema_whose_root_is_not_an_object_is_rejected(tmp_path):
    report = load(tmp_path, {"tools": [tool(schema={"type": "array"})]})
    assert rendered(report) == [
        f'{SHOWN}: tool[0] "t": schema: the root type must be "object" (MCP passes tool '
        'arguments as one JSON object), got "array"'
    ]


def test_a_schema_without_type_gets_object_in_the_model_facing_copy(tmp_path):
    declared = {"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}
    report = load(tmp_path, {"tools": [tool(schema=declared)]})
    assert report.tools[0].input_schema == {**declared, "type": "object"}
    assert report.tools[0].runtime_input_schema == declared


def test_unknown_keys_are_ignored_with_a_notice_naming_the_field_meant(tmp_path):
    """agentcli ignores fields it does not know, and so does the load; but a misspelt optional
    field changes the tool silently (no schema for the model, the server's deadline), so each
    one is a notice that names the field it was probably meant to be."""
    doc = {
        "tools": [tool(extra={"x": 1}, inputSchema={"type": "object"}, timeout=5)],
        "comment": "hi",
    }
    report = load(tmp_path, doc)
    assert len(report.tools) == 1
    assert report.errors == []
    assert rendered(report) == [
        f'{SHOWN}: tool[0] "t": extra: unknown field, ignored; the fields are name, description, '
        "schema, command, timeoutSec, envPassthrough, progress, annotations",
        f'{SHOWN}: tool[0] "t": inputSchema: unknown field, ignored; did you mean "schema"?',
        f'{SHOWN}: tool[0] "t": timeout: unknown field, ignored; did you mean "timeoutSec"?',
    ]


def test_current_shape_loads_every_tool_from_tools_bin_with_its_env_names():
    """goagent HEAD's shape: every command[0] is ./tools/bin/<name>, some pass env through."""
    report = load_file(SHAPES / "current" / "tools.json", display="current/tools.json")
    assert report.problems == []
    assert [t.id for t in report.tools] == ["clock_now", "page_fetch", "picture_make", "file_stat"]
    folder = (SHAPES / "current").absolute()
    suffix = ".exe" if os.name == "nt" else ""
    for spec in report.tools:
        assert isinstance(spec.transport, ExecTransport)
        assert spec.transport.argv == (
            os.path.normpath(folder / "tools" / "bin" / spec.id) + suffix,
        )
        assert spec.namespace == "current"
    passthrough = {t.id: t.transport.env.passthrough for t in report.tools}  # type: ignore[union-attr]
    assert passthrough == {
        "clock_now": (),
        "page_fetch": ("FETCH_TIMEOUT_MS",),
        "picture_make": ("PIC_API_KEY", "PIC_BASE_URL", "FETCH_TIMEOUT_MS"),
        "file_stat": (),
    }
    assert [t.timeout_s for t in report.tools] == [5, 15, 120, None]


def test_a_top_level_one_of_beside_type_object_loads_with_a_notice():
    """goagent 2f58c99's shape: valid JSON Schema that some MCP clients refuse at the root."""
    report = load_file(SHAPES / "toplevel-oneof" / "tools.json", display="o/tools.json")
    assert report.errors == []
    assert [(p.severity, unlined(p)) for p in report.problems] == [
        (
            Severity.NOTICE,
            'o/tools.json: tool[0] "encyclopedia_lookup": schema: top-level oneOf passes JSON '
            "Schema validation, but some MCP clients reject it at the root of an input schema "
            "(OpenAI-style function parameters must be a plain object schema); the tool is "
            "served as declared",
        )
    ]
    lookup, clock = report.tools
    assert lookup.input_schema["type"] == "object"
    assert lookup.input_schema["oneOf"] == [{"required": ["titles"]}, {"required": ["search"]}]
    assert lookup.runtime_input_schema == lookup.input_schema
    assert "oneOf" not in clock.input_schema


@pytest.mark.parametrize("keyword", ["anyOf", "allOf", "not", "enum"])
def test_other_root_alternatives_are_noticed_too(tmp_path, keyword):
    value: object = [{"a": 1}] if keyword == "enum" else [{"required": ["a"]}]
    if keyword == "not":
        value = {"required": ["b"]}
    report = load(tmp_path, {"tools": [tool(schema={"type": "object", keyword: value})]})
    assert report.errors == []
    assert [p.message.split(" passes")[0] for p in report.problems] == [
        f"schema: top-level {keyword}"
    ]
    assert len(report.tools) == 1


@pytest.mark.parametrize(
    ("folder", "names"),
    [
        (
            "legacy-prefix",
            [
                ("clock_now", "./tools/clock_now"),
                ("file_read", "./tools/file_read"),
                ("file_write", "./tools/file_write"),
            ],
        ),
        ("bin-prefix", [("clock_now", "./bin/clockcli")]),
    ],
)
def test_older_command_prefixes_are_rejected_tool_by_tool(folder, names):
    """goagent e731e6a (./tools/<name>) and 78165e6 (./bin/<name>): agentcli's first error is
    tool[0]'s; every tool's is reported here."""
    report = load_file(SHAPES / folder / "tools.json", display="m/tools.json")
    assert rendered(report) == [
        f'm/tools.json: tool[{i}] "{name}": {relative(program)}'
        for i, (name, program) in enumerate(names)
    ]
    assert report.tools == []
