"""The first hour of a person who installed the package (a wheel in a fresh virtualenv) and
wires it into a client: the slips of a config entry copied between clients, a manifest path
mistyped, a verb guessed from other tools; each is named with the fix, through the real
command line (a process per verb, a home folder of its own)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from tests.support.cli import run_cli

EXAMPLES = Path(__file__).resolve().parents[2] / "manifests" / "text-tools"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


@pytest.fixture
def project(home: Path) -> Path:
    folder = home / "code" / "project"
    folder.mkdir(parents=True)
    return folder


def cli(home: Path, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")}
    return run_cli(argv, env=env, cwd=cwd or home)


def _entry(*args: str) -> dict[str, object]:
    return {"command": sys.executable, "args": ["-m", "mcp_toolbridge", *args]}


def test_a_mistyped_manifest_path_is_not_answered_with_skip_invalid(home, project):
    """``serve ~/mytool`` (for ``~/mytools``) said to serve the valid tools with
    --skip-invalid: there were none, and the server that flag starts serves none of the
    user's tools. The hint stays where some tools are valid."""
    (home / "mytools").symlink_to(EXAMPLES)
    missing = str(home / "mytool")

    for verb in ("serve", "list"):
        done = cli(home, verb, "--workspace", str(project), missing)
        assert done.returncode == 2, done.stderr
        assert "--skip-invalid" not in done.stderr, done.stderr
        assert done.stderr.splitlines()[-1] == "mcp-toolbridge: 1 problem found; nothing served"

    done = cli(home, "doctor", "--workspace", str(project), missing, "--sandbox", "off")
    assert done.returncode == 1
    (line,) = [line for line in done.stdout.splitlines() if "manifests" in line]
    assert f"{missing}: no such file or folder" in line
    assert "--skip-invalid" not in done.stdout, done.stdout

    broken = home / "broken"
    broken.mkdir()
    (broken / "tools.json").write_text('{"tools": [{"name": "x"}]}', encoding="utf-8")
    done = cli(home, "serve", "--workspace", str(project), str(home / "mytools"), str(broken))
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "mcp-toolbridge: 1 problem found; nothing served (or serve the 3 valid tools with "
        "--skip-invalid)"
    )


def _doctor_lines(done: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """Each check's line (and its fix) by the check's name."""
    lines: dict[str, str] = {}
    last = ""
    for line in done.stdout.splitlines()[1:-1]:
        if line.startswith(("ok ", "problem ")):
            last = line.split()[1]
            lines[last] = line
        else:
            lines[last] += "\n" + line
    return lines


@pytest.mark.parametrize(
    ("client", "written", "read"),
    [("claude-desktop", "servers", "mcpServers"), ("vscode", "mcpServers", "servers")],
)
def test_an_entry_under_another_clients_key_is_a_problem(home, project, client, written, read):
    """VS Code's ``.vscode/mcp.json`` (``"servers"``) pasted into Claude Desktop's file, or the
    other way round: the client reads its own key only and starts nothing, and doctor found
    the entry under either key and said all was well."""
    config = home / "config.json"
    entry = _entry("serve", "--workspace", str(project), "--sandbox", "off")
    config.write_text(json.dumps({written: {"toolbridge": entry}}), encoding="utf-8")

    done = cli(home, "doctor", "--client", client, "--config", str(config))

    assert done.returncode == 1, done.stdout
    title = {"claude-desktop": "Claude Desktop", "vscode": "VS Code"}[client]
    assert _doctor_lines(done)["config"] == (
        f'problem  config       {config} has the entry under "{written}", which {title} does '
        f"not read: it starts no server from it\n"
        f'                      fix: rename "{written}" to "{read}"'
    )


@pytest.mark.parametrize("client", ["claude-desktop", "claude-code"])
def test_a_folder_variable_the_client_does_not_fill_in_is_a_problem(home, project, client):
    """``--workspace ${workspaceFolder}``, copied from a VS Code or Cursor entry into Claude
    Desktop's: doctor said "the folder Claude Desktop has open", but Claude Desktop has none
    and passes the words as written, so the file tools and bash fail on every call."""
    config = home / "config.json"
    entry = _entry("serve", "--workspace", "${workspaceFolder}", "--sandbox", "off")
    config.write_text(json.dumps({"mcpServers": {"toolbridge": entry}}), encoding="utf-8")

    done = cli(home, "doctor", "--client", client, "--config", str(config))

    assert done.returncode == 1, done.stdout
    title = {"claude-desktop": "Claude Desktop", "claude-code": "Claude Code"}[client]
    assert _doctor_lines(done)["workspace"] == (
        f"problem  workspace    ${{workspaceFolder}} is VS Code's and Cursor's variable: {title} "
        "does not fill it in, so the server gets it as written and the file tools and bash "
        "fail on every call\n"
        "                      fix: write the project folder's absolute path in the entry "
        "(`mcp-toolbridge config --client "
        f"{client}` run in the project writes it)"
    )

    done = cli(home, "serve", "--workspace", "${workspaceFolder}", "--locked", "none", cwd=project)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == (
        "mcp-toolbridge: workspace ${workspaceFolder} (--workspace) is a variable no one filled "
        "in: this client does not replace it (VS Code and Cursor do); read, write, edit, glob, "
        "grep and bash fail until the client's config names the project folder by its path"
    )


@pytest.mark.parametrize(
    ("verb", "said"),
    [
        (
            "init",
            "there is none: copy a bundled example (list --json names their files), check yours "
            "with lint PATH, and config --client NAME PATH prints the client's entry",
        ),
        ("validate", "to check manifests: lint PATH; a client's setup: doctor --client NAME"),
        ("run", "to run one tool: call TOOL PATH --args JSON; to serve them: serve PATH"),
    ],
)
def test_a_verb_from_another_tool_is_answered_with_the_verb_that_does_it(home, verb, said):
    """``mcp-toolbridge init`` (agentpm init, npm init) was answered "did you mean 'lint'?",
    a verb that checks the bundled examples; ``validate`` and ``run`` listed the twelve verbs
    and left the reader to guess. An installed wheel has no docs/ to point at: the examples
    it carries are where a manifest starts."""
    done = cli(home, verb)

    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == f"mcp-toolbridge: error: unknown verb {verb!r}; {said}"


def test_a_list_given_to_allow_shows_the_repetition(home, project):
    """``--allow upper,char-count`` (as ``--locked read,glob`` takes a list) was refused as
    'unknown permission "upper,char-count": not a tool served here', which reads as if the
    tools were not served. A path with a comma that exists is still a manifest's folder."""
    done = cli(home, "serve", "--workspace", str(project), "--allow", "upper,char-count")

    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "mcp-toolbridge serve: error: argument --allow: one tool or capability per --allow, "
        "not the list 'upper,char-count': repeat it (--allow upper --allow char-count)"
    )

    (home / "a,b").symlink_to(EXAMPLES)
    done = cli(home, "call", "word_count", "a,b", "--allow", "./a,b", "--args", '{"text": "x y"}')
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["words"] == 2


def test_a_relative_manifest_path_in_a_clients_entry_names_its_absolute_path(home, project):
    """An entry written by hand with ``mytools`` (as typed at a shell in the home folder):
    Claude Desktop starts servers in /, so the server looks for /mytools. doctor said only
    "/mytools: no such file or folder" with "fix them (lint ...)"; it names the path as the
    client reads it and the absolute path to write."""
    (home / "mytools").symlink_to(EXAMPLES)
    config = home / "config.json"
    entry = _entry("serve", "--workspace", str(project), "--sandbox", "off", "mytools")
    config.write_text(json.dumps({"mcpServers": {"toolbridge": entry}}), encoding="utf-8")

    done = cli(home, "doctor", "--client", "claude-desktop", "--config", str(config))

    assert done.returncode == 1, done.stdout
    assert _doctor_lines(done)["arguments"] == (
        "problem  arguments    mytools is relative, and Claude Desktop starts servers in /, "
        "where it is /mytools, which is not there\n"
        f'                      fix: write its absolute path in the entry: "{home / "mytools"}"'
    )


def test_a_verb_run_beside_a_manifest_without_naming_it_says_the_examples_were_used(home):
    """``lint`` in the folder of the tools.json just written said "5 tools in 3 manifests, no
    problems": the bundled examples', not the user's, whose mistakes went unseen."""
    folder = home / "mine"
    folder.mkdir()
    (folder / "tools.json").write_text('{"tools": [{"name": "x"}]}', encoding="utf-8")

    done = cli(home, "lint", cwd=folder)
    assert done.stdout == "5 tools in 3 manifests, no problems\n"
    assert done.stderr.splitlines() == [
        "mcp-toolbridge: no manifest named, so the tools are the bundled examples; ./tools.json "
        "here was not read: name it on the command line (`mcp-toolbridge lint ./tools.json`, or "
        ". for this folder)"
    ]
    done = cli(home, "config", "--client", "claude-desktop", "--workspace", str(home), cwd=folder)
    assert done.stderr.splitlines()[0].endswith(
        "(`mcp-toolbridge config --client NAME ./tools.json`, or . for this folder)"
    )

    done = cli(home, "lint")
    assert done.stderr.splitlines() == [
        "mcp-toolbridge: no manifest named, so the bundled examples were checked: name yours "
        "(`mcp-toolbridge lint PATH`)"
    ]
    done = cli(home, "lint", "./mine", cwd=home)
    assert done.returncode == 1 and done.stderr == ""


def _needs_a_key(folder: Path) -> Path:
    """An AgentPM tool whose manifest requires MY_API_KEY (environment.vars)."""
    folder.mkdir()
    (folder / "count.py").write_text("print('{}')\n", encoding="utf-8")
    manifest = {
        "kind": "tool",
        "name": "char-count",
        "version": "0.1.0",
        "description": "Count characters",
        "files": ["count.py"],
        "entrypoint": {"command": "python3", "args": ["count.py"]},
        "environment": {"vars": {"MY_API_KEY": {"required": True, "description": "a key"}}},
        "inputs": {"type": "object"},
        "outputs": {},
    }
    (folder / "agent.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


def test_doctor_starts_claude_desktops_server_with_the_environment_it_gives(home, project):
    """A variable exported in the shell doctor runs in is not in the environment Claude
    Desktop (a GUI app) starts servers with: doctor said "no problems" while the client's
    server refused the manifest (exit 2, nothing served). And a variable the entry's "env"
    gives was not read. doctor now starts it with the SDK's default variables and the
    entry's env."""
    tools = _needs_a_key(home / "tools")
    argv = ["doctor", "--client", "claude-desktop", "--workspace", str(project), str(tools)]
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")}

    done = run_cli([*argv, "--sandbox", "off"], env={**env, "MY_API_KEY": "k"}, cwd=home)

    assert done.returncode == 1, done.stdout
    assert _doctor_lines(done)["manifests"] == (
        f"problem  manifests    1 problem: {tools / 'agent.json'}: Missing environment variable: "
        "MY_API_KEY. MY_API_KEY is required and has no default value.\n"
        '                      fix: give the server the variable in the client\'s entry: "env": '
        '{"MY_API_KEY": "..."} (a client passes the server only its own environment and the '
        "entry's env); fix them (`mcp-toolbridge lint PATH` lists every one)"
    )

    config = home / "config.json"
    entry = _entry("serve", "--workspace", str(project), "--sandbox", "off", str(tools))
    entry["env"] = {"MY_API_KEY": "k"}
    config.write_text(json.dumps({"mcpServers": {"toolbridge": entry}}), encoding="utf-8")
    done = run_cli(
        ["doctor", "--client", "claude-desktop", "--config", str(config)], env=env, cwd=home
    )
    assert _doctor_lines(done)["manifests"].startswith(
        "ok       manifests    1 tool from 1 manifest"
    )


async def test_serve_typed_at_a_terminal_says_it_waits_for_a_client(home, project):
    """``mcp-toolbridge serve`` typed at a terminal printed its banner and then seemed to
    hang; it now says it is waiting for a client's messages and what to run instead. Over a
    pipe (a client) the line is not printed."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home)}
    argv = [sys.executable, "-m", "mcp_toolbridge", "serve", "--no-audit", "--locked", "none"]
    argv += ["--workspace", str(project)]
    terminal, ours = os.openpty()
    try:
        async with await anyio.open_process(
            argv, env=env, cwd=project, stdin=ours, stderr=subprocess.PIPE
        ) as process:
            try:
                assert process.stderr is not None
                said = BufferedByteReceiveStream(process.stderr)
                with anyio.fail_after(30):
                    while b"stdin is a terminal" not in (
                        line := await said.receive_until(b"\n", 1 << 16)
                    ):
                        assert b"Traceback" not in line
                os.write(terminal, b"\x04")  # Ctrl-D: the end of stdin, as typed
                with anyio.fail_after(30):
                    await process.wait()
            finally:
                if process.returncode is None:
                    process.kill()
    finally:
        os.close(terminal)
        os.close(ours)
    assert line.decode() == (
        "mcp-toolbridge: stdin is a terminal: this is an MCP server, which waits there for a "
        "client's JSON-RPC messages; a client starts it itself (`mcp-toolbridge config --client "
        "NAME` writes its entry), `mcp-toolbridge call TOOL --args JSON` runs one tool here; "
        "Ctrl-C stops it"
    )

    done = cli(home, "serve", "--no-audit", "--locked", "none", "--workspace", str(project))
    assert done.returncode == 0 and "stdin is a terminal" not in done.stderr


def test_arguments_written_as_a_javascript_object_are_shown_as_json(home):
    """``--args "{text: 'a'}"`` (a JavaScript object, as a first try often is) was answered
    with the JSON parser's words alone."""
    done = cli(home, "call", "word_count", "--args", "{text: 'a'}")

    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "mcp-toolbridge: --args is not valid JSON: Expecting property name enclosed in double "
        "quotes: line 1 column 2 (char 1); write a JSON object, its names and strings in double "
        """quotes, the whole in single quotes at a shell: --args '{"text": "a b"}'"""
    ]


def test_doctor_says_a_secret_the_client_does_not_give_fails_every_call(home, project):
    """A Runloop tool's secret exported in the shell as TOOLBRIDGE_SECRET_*: doctor said "no
    problems", and under Claude Desktop, whose environment has none of the shell's exports,
    every call of the tool failed with secret.unresolved. The entry's env gives it."""
    tools = home / "tools"
    tools.mkdir()
    entry = {
        "id": "mail.send",
        "description": "Send a mail",
        "transport": {"kind": "exec", "command": "/bin/cat"},
        "input_schema": {"type": "object"},
        "result_schema": {},
        "secrets": ["mail.key"],
    }
    (tools / "tools.json").write_text(json.dumps({"version": 1, "tools": [entry]}), "utf-8")
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")}
    env["TOOLBRIDGE_SECRET_MAIL_KEY"] = "s3cr3t-value"
    argv = ["doctor", "--client", "claude-desktop", "--workspace", str(project), str(tools)]

    done = run_cli([*argv, "--sandbox", "off"], env=env, cwd=home)

    assert done.returncode == 1, done.stdout
    assert _doctor_lines(done)["secrets"] == (
        'problem  secrets      tool "mail_send": secret "mail.key" is not set: looked in '
        "environment variable TOOLBRIDGE_SECRET_MAIL_KEY and in no secrets file (none given; "
        "pass --secrets FILE): every call of it fails\n"
        "                      fix: put the variable in the client's entry "
        '("env": {"TOOLBRIDGE_SECRET_...": "..."}) or give the entry --secrets FILE, an absolute '
        "path (a client passes the server only its own environment and the entry's env)"
    )
    assert "s3cr3t-value" not in done.stdout

    config = home / "config.json"
    served = _entry("serve", "--workspace", str(project), "--sandbox", "off", str(tools))
    served["env"] = {"TOOLBRIDGE_SECRET_MAIL_KEY": "k"}
    config.write_text(json.dumps({"mcpServers": {"toolbridge": served}}), encoding="utf-8")
    done = run_cli(
        ["doctor", "--client", "claude-desktop", "--config", str(config)], env=env, cwd=home
    )
    assert done.returncode == 0, done.stdout
    assert _doctor_lines(done)["secrets"] == ("ok       secrets      1 secret of 1 tool, all set")
