"""ExecToolExecutor against real child processes: arguments, environment, output, failures."""

from __future__ import annotations

import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_toolbridge.errors import ErrorCode, ExecOutputError, ExecSpawnError, ExecTimeoutError
from mcp_toolbridge.executors.base import ExecRequest, ExecResult
from mcp_toolbridge.executors.exec_tool import ExecToolExecutor, secret_env_name
from mcp_toolbridge.model import EnvSpec, ExecTransport, Format, Source, ToolSpec
from tests.support.paths import TOOLS

SCRIPTED = [sys.executable, "-S", str(TOOLS / "scripted.py")]
SENTINEL = "TOOLBRIDGE_TEST_SENTINEL_SECRET"
SECRET_ID = "runloop/mail/smtp_api_key"
SECRET = "hunter2-smtp-key-value"


def make_spec(tmp_path: Path, argv: list[str], **transport: Any) -> ToolSpec:
    schema = {"type": "object"}
    return ToolSpec(
        name="scripted",
        id="scripted",
        input_schema=schema,
        runtime_input_schema=schema,
        transport=ExecTransport(argv=tuple(argv), **transport),
        source=Source(path=str(tmp_path / "tools.json"), index=0, format=Format.AGENTCLI),
    )


def server_environ(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(tmp_path),
        SENTINEL: "must-never-reach-a-tool",
        "LANG": "C.UTF-8",
        **extra,
    }


async def call(
    tmp_path: Path,
    arguments: dict[str, Any],
    *,
    argv: list[str] | None = None,
    environ: dict[str, str] | None = None,
    secrets: dict[str, str] | None = None,
    progress: Any = None,
    timeout_s: float = 10,
    max_output_bytes: int = 10 * 1024 * 1024,
    **transport: Any,
) -> ExecResult:
    executor = ExecToolExecutor(
        server_environ(tmp_path) if environ is None else environ, kill_grace_s=0.2
    )
    request = ExecRequest(
        spec=make_spec(tmp_path, SCRIPTED if argv is None else argv, **transport),
        arguments=arguments,
        timeout_s=timeout_s,
        secrets=secrets or {},
        progress=progress,
        max_output_bytes=max_output_bytes,
    )
    with anyio.fail_after(10):
        return await executor.run(request)


async def test_arguments_arrive_on_stdin_and_the_json_result_comes_back(tmp_path: Path) -> None:
    result = await call(tmp_path, {"text": "héllo", "n": 2})
    assert result.ok and result.error is None and result.exit_code == 0
    assert result.value["args"] == {"text": "héllo", "n": 2}
    assert result.value["payload_file"] is None
    assert result.value["cwd"] == str(tmp_path)
    assert result.cwd == str(tmp_path)
    assert result.argv == tuple(SCRIPTED)
    assert result.stdout_bytes > 0 and not result.truncated


async def test_empty_arguments_are_sent_as_an_empty_object(tmp_path: Path) -> None:
    result = await call(tmp_path, {})
    assert result.value["stdin"] == "{}"


async def test_arguments_via_file_come_as_argv1_in_a_private_file_removed_afterwards(
    tmp_path: Path,
) -> None:
    tool = tmp_path / "tool"
    tool.write_text(f"#!{sys.executable} -S\nexec(open({str(TOOLS / 'scripted.py')!r}).read())\n")
    tool.chmod(0o755)
    result = await call(
        tmp_path, {"to": "a@b.c"}, argv=[str(tool), "--fixed", "arg"], args_via="file"
    )
    assert result.ok, result.error
    payload = result.value["payload_file"]
    assert result.value["args"] == {"to": "a@b.c"}
    assert result.value["argv"] == [payload["path"], "--fixed", "arg"]
    assert result.argv == (str(tool), payload["path"], "--fixed", "arg")
    assert (payload["mode"], payload["dir_mode"]) == (0o600, 0o700)
    assert result.value["stdin"] == ""
    assert not Path(payload["path"]).parent.exists()


async def test_arguments_file_is_removed_even_when_the_tool_times_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    tool = tmp_path / "slow"
    tool.write_text('#!/bin/sh\ntest -f "$1" && exec sleep 30\n')
    tool.chmod(0o755)
    with pytest.raises(ExecTimeoutError):
        await call(tmp_path, {}, argv=[str(tool)], args_via="file", timeout_s=0.5)
    assert list(scratch.iterdir()) == []


async def test_environment_is_scrubbed_to_path_home_declared_values_passthrough_and_secrets(
    tmp_path: Path,
) -> None:
    environ = server_environ(tmp_path, TZ="Europe/Helsinki", OAI_HTTP_TIMEOUT="7")
    env_spec = EnvSpec(passthrough=("TZ", "NOT_SET_ANYWHERE"), values={"TZ": "UTC", "MODE": "x"})
    result = await call(tmp_path, {}, environ=environ, secrets={SECRET_ID: SECRET}, env=env_spec)
    env = result.value["env"]
    channel = "TOOLBRIDGE_PROGRESS_FD"
    assert set(env) == {"PATH", "HOME", "TZ", "MODE", "RUNLOOP_MAIL_SMTP_API_KEY", channel}
    assert env["TZ"] == "Europe/Helsinki"  # passthrough wins over a declared value
    assert env["HOME"] == str(tmp_path) and env["MODE"] == "x"
    assert env["RUNLOOP_MAIL_SMTP_API_KEY"] == f"[redacted:{SECRET_ID}]"
    assert env[channel].isdigit()
    assert result.env_keys == (
        "HOME",
        "MODE",
        "PATH",
        "RUNLOOP_MAIL_SMTP_API_KEY",
        channel,
        "TZ",
    )
    assert SENTINEL not in repr(result)


def test_secret_ids_become_upper_case_variable_names() -> None:
    assert secret_env_name("runloop/mail/smtp_api_key") == "RUNLOOP_MAIL_SMTP_API_KEY"
    assert secret_env_name("mail.smtp.key") == "MAIL_SMTP_KEY"
    assert secret_env_name("a--b//c") == "A_B_C"


async def test_secret_values_are_redacted_from_result_error_and_progress(tmp_path: Path) -> None:
    events: list[tuple[float, float | None, str | None]] = []

    async def progress(n: float, total: float | None, message: str | None) -> None:
        events.append((n, total, message))

    secrets = {SECRET_ID: SECRET}
    ok = await call(
        tmp_path,
        {"stdout": f'{{"echo": ["{SECRET}", {{"{SECRET}": "x{SECRET}y"}}]}}'},
        secrets=secrets,
    )
    mark = f"[redacted:{SECRET_ID}]"
    assert ok.value == {"echo": [mark, {mark: f"x{mark}y"}]}
    failed = await call(
        tmp_path,
        {"stderr": f"login failed with {SECRET}\n", "exit": 1, "progress": [[1, 2, SECRET]]},
        secrets=secrets,
        progress=progress,
    )
    assert failed.error == f"login failed with {mark}"
    assert events == [(1.0, 2.0, mark)]


async def test_json_stdout_mode_reads_one_value_and_empty_output_as_empty_object(
    tmp_path: Path,
) -> None:
    assert (await call(tmp_path, {"stdout": '\n  [1, "two"]  \n'})).value == [1, "two"]
    assert (await call(tmp_path, {"stdout": ""})).value == {}


async def test_json_stdout_mode_rejects_non_json_quoting_stdout_and_stderr(tmp_path: Path) -> None:
    with pytest.raises(ExecOutputError) as info:
        await call(tmp_path, {"stdout": "hello\tworld", "stderr": "warming up\n"})
    message = str(info.value)
    assert message.startswith("tool printed output that is not JSON: 'hello\\tworld'")
    assert message.endswith("stderr: warming up")
    assert info.value.code is ErrorCode.EXEC_OUTPUT and info.value.tool == "scripted"


async def test_stdout_over_the_limit_is_reported_as_cut(tmp_path: Path) -> None:
    with pytest.raises(ExecOutputError, match="exceeded the 64-byte limit"):
        await call(tmp_path, {"stdout": '{"big": "' + "z" * 500 + '"}'}, max_output_bytes=64)


async def test_first_json_object_mode_skips_noise_before_the_object(tmp_path: Path) -> None:
    noise = 'loading {model}\nWARN: {"unterminated\n{"ok": true, "n": 1} trailing {"x": 2}'
    result = await call(tmp_path, {"stdout": noise}, stdout="first_json_object")
    assert result.ok and result.value == {"ok": True, "n": 1}


async def test_first_json_object_mode_without_an_object_is_an_output_error(
    tmp_path: Path,
) -> None:
    with pytest.raises(ExecOutputError, match=r"^Failed to parse tool JSON output: 'no json"):
        await call(tmp_path, {"stdout": "no json [1, 2]"}, stdout="first_json_object")


async def test_ok_false_result_is_a_failure_with_the_error_message(tmp_path: Path) -> None:
    stdout = '{"ok": false, "error": {"code": "E_INPUT", "message": "text is empty"}}'
    result = await call(tmp_path, {"stdout": stdout}, stdout="first_json_object", ok_flag=True)
    assert not result.ok and result.exit_code == 0
    assert result.error == "E_INPUT: text is empty"
    plain = await call(tmp_path, {"stdout": '{"ok": false, "error": "quota"}'}, ok_flag=True)
    assert plain.error == "quota"
    ignored = await call(tmp_path, {"stdout": '{"ok": false}'})
    assert ignored.ok, "without ok_flag an ok:false object is an ordinary result"


async def test_non_zero_exit_reports_the_error_field_of_json_on_stderr(tmp_path: Path) -> None:
    text = await call(tmp_path, {"stderr": '{"error": "bad timezone"}\n', "exit": 2})
    assert (text.ok, text.error, text.exit_code) == (False, "bad timezone", 2)
    obj = await call(tmp_path, {"stderr": '{"error": {"code": 42}}', "exit": 2})
    assert obj.error == '{"code": 42}'


async def test_non_zero_exit_reports_plain_stderr_tail_bounded(tmp_path: Path) -> None:
    result = await call(tmp_path, {"stderr": "  something broke\n", "exit": 1})
    assert result.error == "something broke"
    long = await call(tmp_path, {"stderr": "a" * 3000 + "THE END", "exit": 1})
    assert long.error is not None and long.error.endswith("THE END")
    assert len(long.error) <= 1001


async def test_non_zero_exit_without_stderr_names_the_code_or_signal(tmp_path: Path) -> None:
    result = await call(tmp_path, {"stdout": "", "exit": 4})
    assert result.error == "tool exited with code 4"
    killed = await call(tmp_path, {"kill_self": True})
    assert killed.error == "tool was killed by signal SIGKILL"
    assert killed.exit_code == -9


async def test_progress_lines_are_forwarded_and_kept_out_of_the_error(tmp_path: Path) -> None:
    events: list[tuple[float, float | None, str | None]] = []

    async def progress(n: float, total: float | None, message: str | None) -> None:
        events.append((n, total, message))

    arguments = {"progress": [[1, 3, "one"], [2.5, None, None]], "stderr": "boom\n", "exit": 1}
    result = await call(tmp_path, arguments, progress=progress)
    assert events == [(1.0, 3.0, "one"), (2.5, None, None)]
    assert result.error == "boom"
    unobserved = await call(tmp_path, arguments)
    assert unobserved.error == "boom"


async def test_timeout_is_an_exec_timeout_error_naming_the_seconds(tmp_path: Path) -> None:
    with pytest.raises(ExecTimeoutError, match=r"^tool timed out after 0\.5s$") as info:
        await call(tmp_path, {}, argv=["/bin/sleep", "30"], timeout_s=0.5)
    assert info.value.tool == "scripted"


async def test_interpreter_names_are_looked_up_on_the_child_path_with_fallbacks(
    tmp_path: Path,
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("python3", "node"):
        fake = bin_dir / name
        fake.write_text(f'#!/bin/sh\necho "{{\\"ran\\": \\"{name}\\", \\"script\\": \\"$1\\"}}"\n')
        fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    environ = {"PATH": str(bin_dir), "HOME": str(tmp_path)}
    python = await call(tmp_path, {}, argv=["python", "main.py"], environ=environ)
    assert python.value == {"ran": "python3", "script": "main.py"}
    assert python.argv == (str(bin_dir / "python3"), "main.py")
    node = await call(tmp_path, {}, argv=["nodejs", "index.js"], environ=environ)
    assert node.value == {"ran": "node", "script": "index.js"}


async def test_missing_interpreter_is_a_spawn_error_showing_path(tmp_path: Path) -> None:
    environ = {"PATH": str(tmp_path), "HOME": str(tmp_path)}
    with pytest.raises(ExecSpawnError) as info:
        await call(tmp_path, {}, argv=["node", "index.js"], environ=environ)
    assert str(info.value) == f'interpreter "node" not found on PATH (PATH={tmp_path})'
    assert info.value.tool == "scripted"


async def test_missing_program_and_missing_cwd_are_spawn_errors(tmp_path: Path) -> None:
    with pytest.raises(ExecSpawnError, match="no-such-tool"):
        await call(tmp_path, {}, argv=[str(tmp_path / "no-such-tool")])
    with pytest.raises(ExecSpawnError, match=r'working directory ".*/gone" does not exist'):
        await call(tmp_path, {}, cwd=str(tmp_path / "gone"))


async def test_declared_cwd_is_where_the_tool_runs(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    result = await call(tmp_path, {}, cwd=str(work))
    assert result.value["cwd"] == str(work) and result.cwd == str(work)


@pytest.mark.parametrize(
    ("passthrough", "values"),
    [
        (("TOOLBRIDGE_TOKEN",), {}),
        (("MCP_TOOLBRIDGE_STATE_KEYS",), {}),
        ((), {"TOOLBRIDGE_SECRET_DB": "x"}),
        ((), {"PATH": "/anywhere/bin"}),
    ],
)
def test_no_spec_hands_a_tool_the_servers_variables_or_its_own_path(
    passthrough: tuple[str, ...], values: dict[str, str]
) -> None:
    """The loaders refuse these with the manifest's line; the model refuses them again, so no
    other way of making a tool (a cached catalog, a future format) hands a tool the server's
    token or chooses the folders its sandbox shows (red-team pass of 2026-11-29, 4th)."""
    with pytest.raises(ValueError, match="server's"):
        EnvSpec(passthrough=passthrough, values=values)


async def test_an_interpreter_name_is_looked_up_on_the_servers_path_not_the_childs(
    tmp_path: Path,
) -> None:
    """A secret named ``path`` becomes the child's PATH (secret_env_name): the interpreter
    is still the one on the server's PATH, and the sandbox (which shows the program's folder
    and its prefix) is never pointed at a folder the child's environment names."""
    elsewhere = tmp_path / "elsewhere" / "bin"
    elsewhere.mkdir(parents=True)
    fake = elsewhere / "python3"
    fake.write_text('#!/bin/sh\necho "{\\"ran\\": \\"elsewhere\\"}"\n')
    fake.chmod(0o755)
    script = "import json, sys; print(json.dumps({'ran': 'server'}))"
    result = await call(
        tmp_path,
        {},
        argv=["python3", "-c", script],
        environ=server_environ(tmp_path),
        secrets={"path": str(elsewhere)},
    )
    server_python = shutil.which("python3", path=server_environ(tmp_path)["PATH"])
    assert result.argv[0] == server_python != str(fake)
    assert result.value != {"ran": "elsewhere"}  # (a shim of the server's may need its PATH)
