"""The CLI verbs, driven through ``mcp_toolbridge.cli.main.main``: lint, list, call, export, policy
--show, and serve's refusal of invalid manifests (with --skip-invalid over real stdio)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from mcp_toolbridge.cli.main import main
from mcp_toolbridge.runtime import bundled_manifests
from tests.support.manifests import ECHO, FAIL, agentcli_manifest, echo_tool

BUNDLED = bundled_manifests()
BUNDLED_NAMES = {"debug_echo", "slugify", "get_time", "word_count", "hash_text"}


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    """A manifest with three problems (and one valid tool) beside a valid one."""
    agentcli_manifest(tmp_path / "good", [echo_tool("echo")], {"echo": ECHO})
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "tools.json").write_text(
        json.dumps(
            {
                "tools": [
                    {"name": "a", "command": ["echo"]},
                    {"command": ["./tools/bin/x"]},
                    {"name": "c", "command": []},
                ]
            }
        ),
        encoding="utf-8",
    )
    return tmp_path


BROKEN_LINES = [
    'bad/tools.json: tool[0] "a": relative command[0] must start with ./tools/bin/ (got '
    '"echo"; put the program in tools/bin/ beside this tools.json, or give its absolute path)',
    "bad/tools.json: tool[1]: name is required",
    'bad/tools.json: tool[2] "c": command must have at least program name; command is a list: '
    'the program, then its fixed arguments ("command": ["./tools/bin/NAME"])',
]


# -- lint -------------------------------------------------------------------------------------


def test_lint_of_clean_manifests_exits_0_with_a_summary(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "lint", str(BUNDLED))
    assert code == 0
    assert out.splitlines() == ["5 tools in 3 manifests, no problems"]


def test_lint_prints_every_problem_like_compiler_output_and_exits_1(
    broken: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "lint", str(broken))
    assert code == 1
    assert out.splitlines() == [
        *(f"{broken}/{line}" for line in BROKEN_LINES),
        "1 tool in 2 manifests, 3 problems",
    ]


def test_lint_json_lists_every_problem_with_its_parts(
    broken: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "lint", str(broken), "--format", "json")
    assert code == 1
    report = json.loads(out)
    assert report["tools"] == 1
    rows = report["problems"]
    assert [r["locator"] for r in rows] == ['tool[0] "a"', "tool[1]", 'tool[2] "c"']
    for row in rows:
        assert set(row) == {"path", "line", "locator", "message", "code", "severity"}
        assert row["path"] == str(broken / "bad" / "tools.json")
        assert row["line"] is None  # a one-line file: every problem would be on line 1
        assert (row["code"], row["severity"]) == ("manifest.invalid", "error")
    assert rows[1]["message"] == "name is required"

    code, out, _ = _run(capsys, "lint", str(BUNDLED), "--format", "json")
    assert (code, json.loads(out)) == (0, {"tools": 5, "problems": []})


# -- list -------------------------------------------------------------------------------------


def test_list_prints_a_table_of_name_format_and_summary(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(capsys, "list", str(BUNDLED))
    assert code == 0
    rows = {line.split()[0]: line.split(maxsplit=2)[1:] for line in out.splitlines()}
    assert set(rows) == BUNDLED_NAMES
    assert rows["word_count"] == ["agentcli", "Count the words, lines and characters in a text."]
    assert rows["slugify"][0] == "agentpm" and rows["debug_echo"][0] == "runloop"


def test_list_json_gives_name_id_format_source_and_description(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(capsys, "list", str(BUNDLED), "--json")
    assert code == 0
    rows = {row["name"]: row for row in json.loads(out)}
    assert set(rows) == BUNDLED_NAMES
    assert rows["debug_echo"] == {
        "name": "debug_echo",
        "id": "debug.echo",
        "format": "runloop",
        "source": str(BUNDLED / "runloop-echo" / "tools.json"),
        "description": rows["debug_echo"]["description"],
    }
    assert rows["debug_echo"]["description"].startswith("Echo the call payload back")


def test_list_refuses_invalid_manifests_with_exit_2(
    broken: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "list", str(broken))
    assert (code, out) == (2, "")
    assert "3 problems found; nothing served" in err


# -- call -------------------------------------------------------------------------------------


def test_call_prints_the_result(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys, "call", "word_count", str(BUNDLED), "--args", '{"text": "one two three"}'
    )
    assert code == 0
    assert json.loads(out) == {"words": 3, "lines": 1, "characters": 13}


def test_a_failing_tool_exits_1_with_its_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = agentcli_manifest(tmp_path / "m", [echo_tool("fails", bin="fail")], {"fail": FAIL})
    code, out, _ = _run(capsys, "call", "fails", str(path), "--args", '{"text": "x"}')
    assert code == 1
    assert "the input was rejected" in json.loads(out)["error"]


def test_call_with_arguments_the_schema_refuses_exits_1_naming_the_path(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(capsys, "call", "word_count", str(BUNDLED), "--args", '{"text": 5}')
    assert code == 1
    error = json.loads(out)["error"]
    assert error == "invalid arguments: at /text: expected a string; got an integer (5)"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ('{"text": ', "mcp-toolbridge: --args is not valid JSON: Expecting value"),
        ("[1, 2]", "mcp-toolbridge: --args must be a JSON object"),
    ],
)
def test_bad_args_json_is_a_clear_error_before_anything_runs(
    args: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "call", "word_count", str(BUNDLED), "--args", args)
    assert (code, out) == (2, "")
    assert err.startswith(message)


def test_call_of_an_unknown_tool_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "call", "no_such_tool", str(BUNDLED))
    assert (code, out) == (2, "")
    assert "no served tool is named 'no_such_tool'" in err


# -- export -----------------------------------------------------------------------------------


def _manifest_tools() -> dict[str, dict[str, Any]]:
    doc = json.loads((BUNDLED / "text-tools" / "tools.json").read_text(encoding="utf-8"))
    return {tool["name"]: tool for tool in doc["tools"]}


def test_export_openai_gives_function_tools_with_the_schema_as_parameters(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(capsys, "export", str(BUNDLED), "--format", "openai")
    assert code == 0
    exported = json.loads(out)
    assert {t["function"]["name"] for t in exported} == BUNDLED_NAMES
    for tool in exported:
        assert set(tool) == {"type", "function"} and tool["type"] == "function"
        assert set(tool["function"]) == {"name", "description", "parameters"}
    by_name = {t["function"]["name"]: t["function"] for t in exported}
    for name, declared in _manifest_tools().items():  # agentcli: the schema as provided
        assert by_name[name] == {
            "name": name,
            "description": declared["description"],
            "parameters": declared["schema"],
        }


def test_export_openai_writes_a_runloop_schema_ref_in_place(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A Runloop tool's ``{"$ref": "schema:ID"}`` is exported as the schema it names, as
    tools/list gives it: OpenAI's function tools cannot follow a ref by ``$id``."""
    code, out, _ = _run(capsys, "export", str(BUNDLED / "runloop-echo"), "--format", "openai")
    assert code == 0
    (echo,) = [t["function"] for t in json.loads(out) if t["function"]["name"] == "debug_echo"]
    assert "$ref" not in json.dumps(echo) and "$defs" not in echo["parameters"]
    assert echo["parameters"]["required"] == ["message"]
    assert set(echo["parameters"]["properties"]) == {"message", "count"}


def test_export_mcp_gives_tool_json_with_schemas_annotations_and_meta(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(capsys, "export", str(BUNDLED), "--format", "mcp")
    assert code == 0
    tools = {t["name"]: t for t in json.loads(out)}
    assert set(tools) == BUNDLED_NAMES
    word_count = tools["word_count"]
    assert word_count["inputSchema"] == _manifest_tools()["word_count"]["schema"]
    assert word_count["annotations"]["openWorldHint"] is False  # declared in its manifest
    assert word_count["annotations"]["readOnlyHint"] is True
    assert word_count["annotations"]["destructiveHint"] is False
    assert word_count["_meta"]["toolbridge/format"] == "agentcli"
    echo = tools["debug_echo"]
    assert echo["_meta"]["toolbridge/id"] == "debug.echo"
    assert echo["outputSchema"]["type"] == "object"
    assert "outputSchema" not in word_count


# -- policy --show ----------------------------------------------------------------------------


def test_policy_show_prints_the_effective_default_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "policy", "--show", str(BUNDLED), "--workspace", str(tmp_path))
    assert code == 0
    shown = json.loads(out)
    assert shown["sources"] == ["default policy"]
    assert shown["default_action"] == "by-safety"
    assert shown["variables"]["workspace"] == [str(tmp_path.resolve())]
    assert str(tmp_path.resolve()) in shown["requires"]["fs.read"]
    assert shown["hidden_tools"] == []
    read = [r for r in shown["rules"] if r["permission"] == "read"]
    assert read and read[0]["action"] == "allow"


# -- serve ------------------------------------------------------------------------------------


def test_serve_refuses_invalid_manifests_with_every_problem_and_exit_2(
    broken: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "serve", str(broken))
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        *(f"{broken}/{line}" for line in BROKEN_LINES),
        "mcp-toolbridge: 3 problems found; nothing served "
        "(or serve the 1 valid tool with --skip-invalid)",
    ]


@pytest.mark.e2e
async def test_serve_skip_invalid_serves_the_valid_tools_over_real_stdio(broken: Path) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(broken)}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcp_toolbridge", "serve", str(broken), "--skip-invalid", "--locked", "none"],
        env=env,
    )
    with anyio.fail_after(30):
        async with Client(params) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            result = await client.call_tool("echo", {"text": "still served"})
    assert names == {"echo"}
    assert result.structured_content == {"echo": {"text": "still served"}}


def test_a_reader_that_goes_away_gets_no_traceback() -> None:
    """`mcp-toolbridge export ... | head -c 1`: the pipe closes early; the CLI ends quietly."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "mcp_toolbridge", "export", "--format", "mcp"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert b"Traceback" not in done.stderr, done.stderr.decode()
    assert b"BrokenPipeError" not in done.stderr


def test_the_eof_grace_is_bounded_and_applies_to_stdio_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    serving = ("serve", "--no-audit", "--workspace", str(tmp_path))
    for wrong in ("-1", "3601", "nan", "inf"):
        code, _, err = _run(capsys, *serving, "--eof-grace", wrong)
        assert code == 2
        assert "--eof-grace must be 0 to 3600 seconds" in err
    code, _, err = _run(capsys, *serving, "--http", ":0", "--eof-grace", "1")
    assert code == 2
    assert "--eof-grace applies to stdio only" in err
