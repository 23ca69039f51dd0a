"""The bash built-in: real bash children in a tmp workspace, real /proc scans for leaks."""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_toolbridge.builtins.bash import MAX_OUTPUT_BYTES, SPEC, BashTool, clip
from mcp_toolbridge.builtins.session import Sessions
from mcp_toolbridge.errors import ArgumentsError
from mcp_toolbridge.executors.base import CallContext, ExecRequest, ExecResult
from mcp_toolbridge.schemas import compile_schema

WAIT_S = 20.0


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root.resolve()


def _environ(**extra: str) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/nonexistent", **extra}


async def _run(tool: BashTool, arguments: Mapping[str, Any]) -> ExecResult:
    assert compile_schema(SPEC.input_schema).validate(dict(arguments)) == []
    request = ExecRequest(
        spec=tool.spec,
        arguments=arguments,
        timeout_s=120.0,
        context=CallContext(session_id="s1"),
    )
    with anyio.fail_after(WAIT_S):
        return await tool.run(request)


def _survivors(token: str) -> list[int]:
    """Live (non-zombie) processes whose command line contains ``token``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state = stat.rsplit(")", 1)[-1].split()[0]
        if token.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


async def _wait_gone(token: str) -> None:
    with anyio.fail_after(20):  # a guard: the sleeps, if not killed, would last 30-49 s
        # Polling /proc: no event tells us that an unrelated process has exited.
        while _survivors(token):  # noqa: ASYNC110
            await anyio.sleep(0.02)


def _sidecar(path: str) -> tuple[bytes, int]:
    return Path(path).read_bytes(), Path(path).stat().st_mode & 0o777


async def test_a_command_returns_its_exit_code_and_stdout(workspace: Path, sessions: Sessions):
    result = await _run(BashTool(workspace, sessions, _environ()), {"command": "echo hello"})
    assert result.ok
    assert result.value == {
        "exit_code": 0,
        "stdout": "hello\n",
        "stderr": "",
        "timed_out": False,
        "signal": None,
    }
    assert result.truncated is False and result.output_path is None


async def test_a_non_zero_exit_is_a_successful_call_with_stderr(
    workspace: Path, sessions: Sessions
):
    tool = BashTool(workspace, sessions, _environ())
    result = await _run(tool, {"command": "echo out; echo broken >&2; exit 3"})
    assert result.ok
    assert result.value["exit_code"] == 3
    assert result.value["stdout"] == "out\n"
    assert result.value["stderr"] == "broken\n"
    assert result.exit_code == 3


async def test_the_command_runs_in_the_workspace(workspace: Path, sessions: Sessions):
    tool = BashTool(workspace, sessions, _environ())
    result = await _run(tool, {"command": "pwd; echo made > made.txt", "description": "where"})
    assert result.value["stdout"] == f"{workspace}\n"
    assert (workspace / "made.txt").read_text() == "made\n"
    assert result.cwd == str(workspace)


async def test_the_environment_is_scrubbed_to_the_allowlist_and_passthrough(
    workspace: Path, sessions: Sessions
):
    sentinel = "sentinel-" + secrets.token_hex(8)
    environ = _environ(API_TOKEN=sentinel, LANG="C.UTF-8", KEEP_ME="kept", OTHER=sentinel)
    tool = BashTool(workspace, sessions, environ, passthrough=("KEEP_ME", "MISSING"))
    result = await _run(tool, {"command": "env"})
    stdout = result.value["stdout"]
    assert sentinel not in stdout
    assert "KEEP_ME=kept" in stdout and "LANG=C.UTF-8" in stdout
    names = {line.split("=", 1)[0] for line in stdout.splitlines() if "=" in line}
    bash_own = {"PWD", "SHLVL", "_", "OLDPWD"}
    assert names - bash_own == {"PATH", "HOME", "LANG", "KEEP_ME"}
    assert set(result.env_keys) == {"PATH", "HOME", "LANG", "KEEP_ME"}


async def test_stdin_is_empty(workspace: Path, sessions: Sessions):
    result = await _run(BashTool(workspace, sessions, _environ()), {"command": "cat; echo done"})
    assert result.value["stdout"] == "done\n"


async def test_output_that_is_not_utf8_is_decoded_with_replacement(
    workspace: Path, sessions: Sessions
):
    tool = BashTool(workspace, sessions, _environ())
    result = await _run(tool, {"command": r"printf 'a\377b'"})
    assert result.value["stdout"] == "a\ufffdb"


async def test_a_command_killed_by_a_signal_reports_the_signal_name(
    workspace: Path, sessions: Sessions
):
    result = await _run(BashTool(workspace, sessions, _environ()), {"command": "kill -TERM $$"})
    assert result.ok
    assert result.value["exit_code"] is None
    assert result.value["signal"] == "SIGTERM"


async def test_a_timeout_kills_the_command_and_everything_it_started(
    workspace: Path, sessions: Sessions
):
    token = f"{30 + secrets.randbelow(9)}.{secrets.randbelow(10**9):09d}"
    command = f"sleep {token} & (sleep {token}; true) & sleep {token}; echo never"
    tool = BashTool(workspace, sessions, _environ())
    result = await _run(tool, {"command": command, "timeout": 700})
    assert not result.ok
    assert result.value["timed_out"] is True
    assert result.error is not None and "killed after 0.7 s" in result.error
    assert "printed nothing" in result.error
    await _wait_gone(token)
    assert _survivors(token) == []


async def test_a_timeout_returns_what_the_command_printed_and_still_kills_its_children(
    workspace: Path, sessions: Sessions
):
    token = f"{30 + secrets.randbelow(9)}.{secrets.randbelow(10**9):09d}"
    command = f"echo step one; echo warning >&2; sleep {token} & sleep {token}; echo never"
    tool = BashTool(workspace, sessions, _environ())
    result = await _run(tool, {"command": command, "timeout": 700})
    assert not result.ok and result.value["timed_out"] is True
    assert result.value["stdout"] == "step one\n" and result.value["stderr"] == "warning\n"
    assert result.error is not None and "killed after 0.7 s" in result.error
    assert result.error.endswith(
        "What it printed before it was killed:\n--- stdout ---\nstep one\n\n"
        "--- stderr ---\nwarning\n"
    )
    assert result.stdout_bytes == 9 and not result.truncated
    await _wait_gone(token)
    assert _survivors(token) == []


async def test_a_timed_out_flood_keeps_head_and_tail_and_the_rest_goes_to_a_sidecar(
    workspace: Path, sessions: Sessions
):
    command = (
        "echo FIRST-LINE; yes 0123456789abcdef | head -c 400000; echo LAST-LINE; exec sleep 30"
    )
    result = await _run(
        BashTool(workspace, sessions, _environ()), {"command": command, "timeout": 1500}
    )
    assert not result.ok and result.truncated and result.value["timed_out"] is True
    stdout = result.value["stdout"]
    assert stdout.startswith("FIRST-LINE\n") and stdout.rstrip().endswith("LAST-LINE")
    assert len(stdout.encode()) < MAX_OUTPUT_BYTES + 500
    assert result.error is not None and stdout in result.error
    assert result.output_path is not None and result.output_path in result.error
    saved, _ = _sidecar(result.output_path)
    assert saved.count(b"0123456789abcdef") == 400000 // 17 and b"LAST-LINE" in saved


async def test_background_jobs_do_not_outlive_a_command_that_finished(
    workspace: Path, sessions: Sessions
):
    token = f"{40 + secrets.randbelow(9)}.{secrets.randbelow(10**9):09d}"
    tool = BashTool(workspace, sessions, _environ())
    result = await _run(tool, {"command": f"sleep {token} > /dev/null 2>&1 & echo started"})
    assert result.value["stdout"] == "started\n"
    await _wait_gone(token)


async def test_large_output_keeps_head_and_tail_and_the_rest_goes_to_a_sidecar(
    workspace: Path, sessions: Sessions
):
    command = (
        "echo FIRST-LINE; yes 0123456789abcdef | head -c 400000; echo LAST-LINE; "
        "echo ERROR-AT-THE-END >&2"
    )
    result = await _run(BashTool(workspace, sessions, _environ()), {"command": command})
    assert result.ok and result.truncated
    stdout = result.value["stdout"]
    assert stdout.startswith("FIRST-LINE\n")
    assert stdout.rstrip().endswith("LAST-LINE")
    assert "bytes omitted, full output in" in stdout
    assert len(stdout.encode()) + len(result.value["stderr"]) < MAX_OUTPUT_BYTES + 500
    assert result.value["stderr"] == "ERROR-AT-THE-END\n"
    assert result.output_path is not None and result.output_path in result.value["note"]
    saved, mode = _sidecar(result.output_path)
    assert saved.count(b"0123456789abcdef") == 400000 // 17
    assert b"LAST-LINE" in saved and b"ERROR-AT-THE-END" in saved
    assert mode == 0o600
    assert result.stdout_bytes == len("FIRST-LINE\n") + 400000 + len("LAST-LINE\n")


async def test_a_flood_on_stderr_keeps_its_tail(workspace: Path, sessions: Sessions):
    command = "yes e | head -c 300000 >&2; echo FINAL-ERROR >&2; echo ok"
    result = await _run(BashTool(workspace, sessions, _environ()), {"command": command})
    assert result.truncated
    assert result.value["stdout"] == "ok\n"
    assert result.value["stderr"].endswith("FINAL-ERROR\n")
    assert "bytes omitted" in result.value["stderr"]
    assert len(result.value["stderr"]) < MAX_OUTPUT_BYTES + 500


def test_clipping_never_splits_a_utf8_character():
    data = "é".encode() * 1000  # 2000 bytes of two-byte characters
    text = clip(data, 301, len(data), "/x")
    assert "\ufffd" not in text
    head, _, tail = text.partition("\n… ")
    assert set(head) == {"é"} and tail.endswith("é" * len(tail.rsplit("\n", 1)[-1]))


async def test_a_nul_in_the_command_is_refused(workspace: Path, sessions: Sessions):
    tool = BashTool(workspace, sessions, _environ())
    with pytest.raises(ArgumentsError, match="NUL"):
        await _run(tool, {"command": "echo a\x00b"})


def test_the_schema_takes_milliseconds_up_to_ten_minutes_and_nothing_else():
    schema = compile_schema(SPEC.input_schema)
    assert schema.validate({"command": "ls", "timeout": 600000}) == []
    assert schema.validate({"command": "ls", "timeout": 600001}) != []
    assert schema.validate({"command": "ls", "cwd": "/"}) != []
    assert schema.validate({"timeout": 5}) != []
    assert "milliseconds" in SPEC.input_schema["properties"]["timeout"]["description"]


def test_the_spec_declares_shell_run_and_a_destructive_open_world_tool():
    assert SPEC.name == SPEC.id == "bash"
    assert SPEC.requires.capabilities == ("shell.run",)
    assert SPEC.argument_roles == {"command": ("shell.run",)}
    assert SPEC.safety.destructive and SPEC.safety.open_world and not SPEC.safety.read_only
    assert SPEC.safety.inferred == frozenset()
