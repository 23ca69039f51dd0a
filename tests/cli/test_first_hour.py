"""The first hour of a person plugging in their own tool, through the real command line (a
process per verb, as a user types it): the slips a first manifest makes are named with the
file, the tool, the field and the fix, and once fixed the tool runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.http_fixture import running_server

TIMEOUT_S = 60.0


def cli(home: Path, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``mcp-toolbridge ARGV...`` as its own process, with a home folder of its own."""
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")}
    return subprocess.run(
        [sys.executable, "-m", "mcp_toolbridge", *argv],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=env,
        cwd=cwd,
        check=False,
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def test_a_misspelt_field_is_named_with_the_field_it_was_meant_to_be(tmp_path, home):
    """``inputSchema`` for ``schema`` left the model without a schema and ``timeout`` for
    ``timeoutSec`` left the server's deadline, and lint said nothing: agentcli ignores fields
    it does not know. The tool still loads (as in agentcli), and lint says which field."""
    folder = tmp_path / "mine"
    (folder / "tools" / "bin").mkdir(parents=True)
    (folder / "tools" / "bin" / "wc_file").write_text("#!/bin/sh\n", encoding="utf-8")
    (folder / "tools" / "bin" / "wc_file").chmod(0o755)
    entry = {
        "name": "wc_file",
        "description": "Count the words of a file",
        "command": ["./tools/bin/wc_file"],
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
        "timeout": 5,
    }
    (folder / "tools.json").write_text(json.dumps({"tools": [entry]}), encoding="utf-8")
    shown = str(folder / "tools.json")

    done = cli(home, "lint", "--no-index-cache", str(folder))

    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        f'notice: {shown}: tool[0] "wc_file": inputSchema: unknown field, ignored; '
        'did you mean "schema"?',
        f'notice: {shown}: tool[0] "wc_file": timeout: unknown field, ignored; '
        'did you mean "timeoutSec"?',
        "1 tool in 1 manifest, no problems",
    ]


def _runloop(folder: Path, capability: str, url: str) -> None:
    folder.mkdir(exist_ok=True)
    tool = {
        "id": "kv.get",
        "description": "Read a key from the local service",
        "transport": {"kind": "http", "method": "GET", "url": url},
        "input_schema": {"type": "object", "properties": {"key": {"type": "string"}}},
        "result_schema": {"type": "object"},
        "capabilities": [capability],
    }
    (folder / "tools.json").write_text(
        json.dumps({"version": 1, "tools": [tool]}), encoding="utf-8"
    )


def test_a_net_capability_with_a_port_is_an_error_that_gives_the_host_to_write(tmp_path, home):
    """``net:127.0.0.1:PORT`` matched no URL's host (127.0.0.1), so the tool was left out with
    a notice telling the user to declare the host the manifest already declared, and lint
    exited 0. Now lint names the capability and what to write; written so, the tool runs
    against the local service."""
    folder = tmp_path / "kv"
    with running_server() as server:
        url = f"{server.base_url}/echo/{{key}}"
        _runloop(folder, f"net:127.0.0.1:{server.port}", url)
        shown = str(folder / "tools.json")

        refused = cli(home, "lint", "--no-index-cache", str(folder))

        assert refused.returncode == 1
        assert refused.stdout.splitlines()[0] == (
            f'{shown}: tool[0] "kv.get": capabilities[0] "net:127.0.0.1:{server.port}": '
            "net:HOST names a host without a port (a host is granted on every port); "
            'write "net:127.0.0.1"'
        )

        _runloop(folder, "net:127.0.0.1", url)
        args = json.dumps({"key": "abc"})
        done = cli(home, "call", "kv_get", "--no-index-cache", str(folder), "--args", args)

        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["path"] == "/echo/abc"


def test_a_policy_host_with_a_port_is_refused_with_the_host_to_write(tmp_path, home):
    """``net.hosts = ["127.0.0.1:8931"]`` parsed, granted nothing (hosts are matched without
    their port) and web_fetch was then refused for a host the file seemed to grant."""
    policy = tmp_path / "policy.toml"
    policy.write_text('[requires]\nnet.hosts = ["127.0.0.1:8931"]\n', encoding="utf-8")

    done = cli(home, "policy", "show", "--policy", str(policy))

    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"mcp-toolbridge: {policy}: line 2: requires.net.hosts[0]: invalid host pattern "
        "'127.0.0.1:8931': a host is granted without a port (on every port); write '127.0.0.1'"
    )


def test_output_over_the_cap_names_the_flag_that_raises_it(tmp_path, home):
    """A tool that prints more than the cap was told to "raise the output limit", a setting
    no doc or --help calls by that name: the message names --max-output."""
    folder = tmp_path / "big"
    (folder / "tools" / "bin").mkdir(parents=True)
    script = folder / "tools" / "bin" / "big"
    script.write_text(
        f"#!{sys.executable}\nimport json\nprint(json.dumps({{'data': 'x' * 5000}}))\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    entry = {
        "name": "big",
        "command": ["./tools/bin/big"],
        "annotations": {"readOnlyHint": True},
    }
    (folder / "tools.json").write_text(json.dumps({"tools": [entry]}), encoding="utf-8")

    done = cli(home, "call", "big", str(folder), "--max-output", "1024", "--args", "{}", cwd=home)

    assert done.returncode == 1, done.stderr
    error = json.loads(done.stdout)["error"]
    assert error.endswith(
        "(stdout exceeded the 1024-byte limit and was cut; print less, or start the server with "
        "a larger --max-output BYTES)"
    ), error


def test_doctor_names_the_tools_whose_program_cannot_start(tmp_path, home):
    """A command that is not there, or a script without its executable bit, loaded and linted
    clean and failed only at the first call ("cannot start ..."): doctor, which says it
    checks that the tools can run as the client starts them, said ok. It now names them."""
    folder = tmp_path / "mine"
    (folder / "tools" / "bin").mkdir(parents=True)
    (folder / "tools" / "bin" / "noexec").write_text("#!/bin/sh\necho '{}'\n", encoding="utf-8")
    tools = [
        {"name": "gone", "command": [str(tmp_path / "no-such-tool")]},
        {"name": "noexec", "command": ["./tools/bin/noexec"]},
    ]
    (folder / "tools.json").write_text(json.dumps({"tools": tools}), encoding="utf-8")
    project = tmp_path / "project"
    project.mkdir()

    done = cli(home, "doctor", "--workspace", str(project), str(folder), cwd=project)

    assert done.returncode == 1
    manifests = [line for line in done.stdout.splitlines() if " manifests " in line]
    assert manifests == [
        f'problem  manifests    2 tools cannot start: tool "gone": {tmp_path}/no-such-tool '
        f'does not exist; tool "noexec": {folder}/tools/bin/noexec is not executable'
    ], done.stdout
    assert (
        "fix: install the program, or correct the command in the manifest (chmod +x a script)"
        in (done.stdout)
    )


def test_serve_counts_the_manifests_tools_apart_from_the_locked_ones(tmp_path, home):
    """ "serving 18 tools from 3 manifests" for four manifest tools: the locked tools were
    counted as the manifests'. The start-up line counts them apart."""
    folder = tmp_path / "mine"
    (folder / "tools" / "bin").mkdir(parents=True)
    entry = {"name": "one", "command": ["./tools/bin/one"]}
    (folder / "tools.json").write_text(json.dumps({"tools": [entry]}), encoding="utf-8")
    project = tmp_path / "project"
    project.mkdir()

    done = cli(home, "serve", "--workspace", str(project), "--locked", "read,glob", str(folder))

    assert done.returncode == 0, done.stderr
    head = done.stderr.splitlines()[0]
    assert f": serving 1 tool from 1 manifest ({folder}) and 2 locked tools, " in head, head
    # the proxy beside tool_search (call_tool) is not a locked tool: 13, not 14
    done = cli(home, "serve", "--workspace", str(project), str(folder))
    assert " and 13 locked tools, " in done.stderr.splitlines()[0], done.stderr
    done = cli(home, "serve", "--workspace", str(project), "--locked", "tool_search", str(folder))
    assert " and 1 locked tool, " in done.stderr.splitlines()[0], done.stderr


def test_a_tool_that_logs_on_stdout_is_told_where_log_lines_go(tmp_path, home):
    """ "loading..." before the JSON result made the call fail with "tool printed output that
    is not JSON: ...", which quoted the output and said nothing of the fix."""
    folder = tmp_path / "chatty"
    (folder / "tools" / "bin").mkdir(parents=True)
    script = folder / "tools" / "bin" / "chatty"
    script.write_text(
        f"#!{sys.executable}\nimport json\nprint('loading...')\nprint(json.dumps({{'ok': 1}}))\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    entry = {
        "name": "chatty",
        "command": ["./tools/bin/chatty"],
        "annotations": {"readOnlyHint": True},
    }
    (folder / "tools.json").write_text(json.dumps({"tools": [entry]}), encoding="utf-8")

    done = cli(home, "call", "chatty", str(folder), "--args", "{}", cwd=home)

    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout) == {
        "error": "tool printed output that is not JSON: 'loading...\\n{\"ok\": 1}\\n' (stdout is "
        "the result: print the JSON there and log lines on stderr)"
    }
