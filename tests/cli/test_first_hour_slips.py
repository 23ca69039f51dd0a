"""More of a newcomer's first hour, through the real command line (a process per verb, as a
user types it): the slips of a first command line are usage errors that name the option, a
tool is called by the name its manifest gives it, and a name that misses is answered with the
one meant; what `config` writes is checked against what is there."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from tests.cli.test_first_hour import cli


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def _runloop(folder: Path) -> Path:
    """A Runloop tools.json v1 with one exec tool, ``text.wc`` (served as ``text_wc``)."""
    folder.mkdir(parents=True)
    script = folder / "wc"
    script.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        "text = json.load(open(sys.argv[1]))['text']\n"
        "print(json.dumps({'words': len(text.split())}))\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    entry = {
        "id": "text.wc",
        "description": "Count the words of a text",
        "transport": {"kind": "exec", "command": str(script)},
        "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}},
        "result_schema": {},
        "annotations": {"readOnlyHint": True},
    }
    (folder / "tools.json").write_text(json.dumps({"version": 1, "tools": [entry]}), "utf-8")
    return folder


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--timeout", "nan"),  # was a traceback (ValueError: deadline must not be NaN)
        ("--timeout", "0"),  # was every call "tool timed out after 0s"
        ("--timeout", "-5"),
        ("--max-concurrency", "-1"),  # was a traceback (total_tokens must be >= 0)
        ("--max-output", "0"),  # was every result {}
    ],
)
def test_a_number_option_out_of_range_is_a_usage_error_naming_it(tmp_path, home, option, value):
    folder = _runloop(tmp_path / "rl")

    done = cli(home, "call", "text_wc", str(folder), "--args", '{"text": "a b"}', option, value)

    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1].startswith(f"mcp-toolbridge call: error: argument {option}")
    assert repr(value) in done.stderr.splitlines()[-1]


@pytest.mark.parametrize(
    ("argv", "required"),
    [(["call"], "TOOL"), (["search"], "QUERY"), (["replay"], "DIR")],
)
def test_a_missing_argument_is_named_without_the_optional_paths(home, argv, required):
    """`mcp-toolbridge call` said "the following arguments are required: TOOL, PATH", and
    PATH is optional (none: the bundled examples)."""
    done = cli(home, *argv)

    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].endswith(
        f"error: the following arguments are required: {required}"
    ), done.stderr


def test_call_takes_the_manifest_id_as_inspect_does(tmp_path, home):
    """`call text.wc` said "unknown tool: text.wc" while `inspect text.wc` (and its help: "the
    MCP name or the manifest id") found it."""
    folder = _runloop(tmp_path / "rl")

    done = cli(home, "call", "text.wc", str(folder), "--args", '{"text": "one two three"}')

    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout) == {"words": 3}


def test_an_unknown_tool_is_answered_with_the_name_meant(tmp_path, home):
    """ "unknown tool: text_w", and nothing more."""
    folder = _runloop(tmp_path / "rl")

    for verb in ("call", "inspect"):
        done = cli(home, verb, "text_w", str(folder))

        assert done.returncode == 2
        assert done.stderr.strip() == (
            "mcp-toolbridge: no served tool is named 'text_w' (by MCP name or manifest id); "
            "did you mean 'text_wc'? `mcp-toolbridge list PATH...` shows the names, "
            "`lint PATH...` the tools left out"
        ), done.stderr


def test_a_tool_called_without_its_manifest_is_told_the_examples_were_searched(home):
    """`mcp-toolbridge call wc_words` (the manifest's path forgotten) searched the bundled
    examples and said only "unknown tool: wc_words"."""
    done = cli(home, "call", "wc_words", "--args", "{}")

    assert done.returncode == 2
    assert done.stderr.strip() == (
        "mcp-toolbridge: no served tool is named 'wc_words' (by MCP name or manifest id). No "
        "manifest was named, so the tools are the bundled examples: put your manifest files or "
        "folders after the tool (`mcp-toolbridge call wc_words ./tools.json`; `mcp-toolbridge "
        "list ./tools.json` shows its names)"
    ), done.stderr


def test_config_says_what_it_names_that_is_not_there(tmp_path, home):
    """A mistyped manifest folder or policy file went into the client's config without a
    word; the client then showed only "server failed to start"."""
    project = tmp_path / "project"
    project.mkdir()
    folder = _runloop(project / "tools")

    done = cli(
        home,
        *("config", "--client", "claude-code", "./tols", "./tools", "--policy", "policy.tml"),
        *("--workspace", "./nowhere"),
        cwd=project,
    )

    assert done.returncode == 0, done.stderr
    args = json.loads(done.stdout)["mcpServers"]["toolbridge"]["args"]
    assert str(folder) in args and str(project / "tols") in args
    check = "; correct it, then check the entry with `mcp-toolbridge doctor --client claude-code`"
    lines = [line for line in done.stderr.splitlines() if line.endswith(check)]
    assert lines == [
        f"mcp-toolbridge: tols does not exist: the server this entry starts would refuse to "
        f"start{check}",
        f"mcp-toolbridge: the policy file policy.tml does not exist: the server this entry "
        f"starts would refuse to start{check}",
        "mcp-toolbridge: the workspace nowhere is not a folder: the file tools and bash of the "
        f"server this entry starts would fail every call{check}",
    ], done.stderr


def test_doctor_names_an_agentpm_script_that_is_not_there(tmp_path, home):
    """An AgentPM entrypoint's interpreter was found, so doctor said ok, and every call failed
    with python's "can't open file" for the script its args name."""
    folder = tmp_path / "shout"
    folder.mkdir()
    manifest = {
        "kind": "tool",
        "name": "shout",
        "version": "0.1.0",
        "description": "Upper-case a text",
        "files": ["dist/**"],
        "entrypoint": {"command": "python3", "args": ["dist/shout.py"]},
        "inputs": {},
        "outputs": {},
    }
    (folder / "agent.json").write_text(json.dumps(manifest), encoding="utf-8")
    project = tmp_path / "project"
    project.mkdir()

    done = cli(home, "doctor", "--workspace", str(project), str(folder), cwd=project)

    assert done.returncode == 1
    manifests = [line for line in done.stdout.splitlines() if " manifests " in line]
    assert manifests == [
        f'problem  manifests    1 tool cannot start: tool "shout": {folder}/dist/shout.py '
        "does not exist (python3 is to run it: the manifest's entrypoint.args)"
    ], done.stdout
    (folder / "dist").mkdir()
    (folder / "dist" / "shout.py").write_text("print('{}')\n", encoding="utf-8")
    done = cli(home, "doctor", "--workspace", str(project), str(folder), cwd=project)
    assert "ok       manifests    1 tool from 1 manifest" in done.stdout, done.stdout


def test_console_url_for_a_process_serving_none_says_so(home):
    """ "process 1 running as this user on this machine serves a console ..." read as if it
    did."""
    done = cli(home, "console-url", "--pid", str(os.getpid()))

    assert done.returncode == 1
    assert done.stderr.startswith(
        f"mcp-toolbridge: process {os.getpid()} is no server running as this user on this "
        "machine with a console"
    ), done.stderr


def test_audit_and_no_audit_exclude_each_other(tmp_path, home):
    """`--audit FILE --no-audit` served with no audit, the FILE silently unused."""
    done = cli(home, "serve", "--audit", str(tmp_path / "a.log"), "--no-audit")

    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "mcp-toolbridge serve: error: --audit FILE and --no-audit exclude each other: drop one"
    )
    assert not (tmp_path / "a.log").exists()


def test_every_verbs_arguments_have_help(home):
    """`call --help` showed TOOL, `search --help` QUERY, `lint --help` and `export --help`
    --format, with no word of what they are."""
    for verb, usage in [
        ("call", "TOOL"),
        ("search", "QUERY"),
        ("lint", "--format {text,json}"),
        ("export", "--format {openai,mcp}"),
    ]:
        done = cli(home, verb, "--help")
        # the help of an argument follows its usage, on its line or (a long usage) the next
        described = re.search(rf"^  {re.escape(usage)}\s+(\S[^\n]*)$", done.stdout, re.M)
        assert described is not None, f"{verb} --help: nothing says what {usage} is"
        assert not described[1].startswith("-"), described[1]


def test_a_call_refused_for_want_of_a_terminal_says_how_to_run_it(tmp_path, home):
    """`mcp-toolbridge call` in a script or a pipe got the refusal written for a model ("this
    client cannot ask one (it does not support elicitation) ... start the server with
    --allow ..."): the command line now says what it can do."""
    folder = _runloop(tmp_path / "rl")
    doc = json.loads((folder / "tools.json").read_text(encoding="utf-8"))
    del doc["tools"][0]["annotations"]  # undeclared: treated as destructive, so asked
    (folder / "tools.json").write_text(json.dumps(doc), encoding="utf-8")

    done = cli(home, "call", "text_wc", str(folder), "--args", '{"text": "a b"}')

    assert done.returncode == 1
    assert "Denied, nothing was run" in json.loads(done.stdout)["error"]
    assert done.stderr.splitlines()[-1] == (
        "mcp-toolbridge call: nobody was asked, as stdin or stderr is not a terminal: run it on "
        "a terminal to be asked, or add --allow text_wc to this command line"
    ), done.stderr
    done = cli(home, "call", "text_wc", str(folder), "--args", '{"text": "a b"}', "--allow=text_wc")
    assert json.loads(done.stdout) == {"words": 2}, done.stderr


def test_doctor_says_the_manifests_went_unchecked_when_the_policy_does_not_load(tmp_path, home):
    """With a policy that did not parse, doctor printed no manifests line at all: a missing
    manifest folder went unmentioned, as if there were nothing to check."""
    project = tmp_path / "project"
    project.mkdir()

    done = cli(
        home, "doctor", "--workspace", str(project), "--policy", "nope.toml", "./gone", cwd=project
    )

    assert done.returncode == 1
    lines = done.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("problem  manifests "))
    assert lines[at : at + 2] == [
        "problem  manifests    not checked: they load under the policy, which does not",
        "                      fix: correct the policy, then run doctor again",
    ], done.stdout


def test_lint_names_a_program_that_is_not_there(tmp_path, home):
    """`lint` said "0 problem(s)" for a tools/bin program misspelt, and every call of it then
    failed to start; only doctor looked. lint now says so too (a notice: agentcli loads such a
    manifest, and lint's status stays that of the manifests)."""
    folder = tmp_path / "mine"
    (folder / "tools" / "bin").mkdir(parents=True)
    entry = {"name": "greet", "command": ["./tools/bin/greeet"]}
    (folder / "tools.json").write_text(json.dumps({"tools": [entry]}), encoding="utf-8")

    done = cli(home, "lint", str(folder))

    assert done.returncode == 0, done.stdout
    assert done.stdout.splitlines() == [
        f'notice: tool "greet": {folder}/tools/bin/greeet does not exist: its calls cannot '
        "start (`doctor` checks the programs as a client starts them)",
        "1 tool in 1 manifest, no problems",
    ]

    as_json = cli(home, "lint", "--format", "json", str(folder))

    assert as_json.returncode == 0, as_json.stdout
    assert json.loads(as_json.stdout) == {
        "tools": 1,
        "problems": [
            {
                "path": f"{folder}/tools.json",
                "line": None,
                "locator": 'tool[0] "greet"',
                "message": f"{folder}/tools/bin/greeet does not exist: its calls cannot start "
                "(`doctor` checks the programs as a client starts them)",
                "code": "manifest.program",
                "severity": "notice",
            }
        ],
    }


HAND_WRITTEN = """{
  "tools": [
    {
      "name": "greet",
      "description": "Say hello",
      "command": "./tools/bin/greet"
    },
    {
      "name": "shout",
      "command": ["shout", "--loud"]
    }
  ]
}
"""

HAND_WRITTEN_PM = """{
  "kind": "tool",
  "name": "hello",
  "version": "0.1.0",
  "description": "Say hello",
  "files": ["hello.py"],
  "entrypoint": "python3 hello.py",
  "inputs": {},
  "outputs": {}
}
"""


def test_lint_of_a_first_hand_written_manifest_says_how_to_write_it_and_where(tmp_path, home):
    """The first-hour walkthrough's manifests: "command": "./x" and a missing command both said
    only "command must have at least program name", an entrypoint string "entrypoint is
    required", a relative program nothing of absolute paths, a package.json was read as a
    Runloop tools.json of version "1.0.0", and no problem gave its line."""
    mine, pkg = tmp_path / "mine", tmp_path / "pkg"
    mine.mkdir()
    pkg.mkdir()
    (mine / "tools.json").write_text(HAND_WRITTEN, encoding="utf-8")
    (pkg / "agent.json").write_text(HAND_WRITTEN_PM, encoding="utf-8")
    (pkg / "package.json").write_text('{"name": "hello", "version": "1.0.0"}', encoding="utf-8")

    done = cli(home, "lint", str(mine), str(pkg / "agent.json"), str(pkg / "package.json"))

    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines() == [
        f'{mine}/tools.json:6: tool[0] "greet": command must have at least program name; '
        'command is a list, not a string: "command": ["./tools/bin/greet"]',
        f'{mine}/tools.json:10: tool[1] "shout": relative command[0] must start with '
        './tools/bin/ (got "shout"; put the program in tools/bin/ beside this tools.json, or '
        "give its absolute path)",
        f"{pkg}/agent.json:7: entrypoint must be an object {{command, args, cwd, timeout_ms, "
        'env}, not a string: write "entrypoint": {"command": "python3", "args": ["hello.py"]}',
        f"{pkg}/package.json: an npm package.json, not a manifest: mcp-toolbridge reads "
        "tools.json (agentcli or Runloop), agent.json (AgentPM) and a Runloop bundle's "
        "manifest.toml; name the manifest, or the folder that holds it",
        "0 tools in 3 manifests, 4 problems",
    ]
    rows = json.loads(cli(home, "lint", "--format", "json", str(mine)).stdout)["problems"]
    assert [(row["line"], row["locator"]) for row in rows] == [
        (6, 'tool[0] "greet"'),
        (10, 'tool[1] "shout"'),
    ]


def test_a_misspelt_verb_is_answered_with_the_verb_meant(home):
    """`mcp-toolbridge serv` listed the twelve verbs and left the reader to spot 'serve'."""
    done = cli(home, "serv", "--workspace", str(home))

    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "mcp-toolbridge: error: unknown verb 'serv'; did you mean 'serve'?"
    )
    done = cli(home, "frobnicate")
    assert done.returncode == 2
    assert "invalid choice: 'frobnicate' (choose from 'serve', " in done.stderr
