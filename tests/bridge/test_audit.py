from __future__ import annotations

import base64
import json
import stat
from pathlib import Path
from urllib.parse import quote, quote_plus

import anyio
import pytest

from mcp_toolbridge.bridge.audit import AuditLog, AuditRecord
from mcp_toolbridge.bridge.audit_file import default_audit_path
from mcp_toolbridge.bridge.redaction import REDACTED, redact_argv, redact_url
from mcp_toolbridge.errors import ErrorCode, ExecError, ExecTimeoutError, PermissionDeniedError
from mcp_toolbridge.executors.base import ExecResult
from mcp_toolbridge.policy.compiled import Decision
from tests.support.policy_fixtures import exec_tool

ALLOW = Decision("allow", "policy.toml rules[0] (git_log, any argument, allow)", "manifest")
SPEC = exec_tool("git_log", tags=("external", "mail"))


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


async def test_a_call_is_one_ndjson_line_with_camel_case_fields(tmp_path):
    result = ExecResult(
        ok=True,
        exit_code=0,
        stdout_bytes=120,
        stderr_bytes=3,
        argv=("/usr/bin/git", "log", "--token=abc123456"),
        cwd="/repo",
        env_keys=("PATH", "HOME", "GIT_TOKEN"),
    )
    record = AuditRecord.build(SPEC, session="s1", decision=ALLOW, ms=12.3456, result=result)
    path = tmp_path / "audit.ndjson"
    async with AuditLog.open(path) as log:
        await log.write(record)
    [entry] = lines(path)
    assert entry["tool"] == "git_log" and entry["toolId"] == "git.log"
    assert entry["source"] == "/manifests/tools.json"
    assert entry["decision"] == "allow" and entry["decisionScope"] == "manifest"
    assert entry["decidedBy"] == ALLOW.rule
    assert entry["argv"] == ["/usr/bin/git", "log", f"--token={REDACTED}"]
    assert entry["cwd"] == "/repo" and entry["exitCode"] == 0 and entry["httpStatus"] is None
    assert entry["stdoutBytes"] == 120 and entry["stderrBytes"] == 3
    assert entry["envKeys"] == ["GIT_TOKEN", "HOME", "PATH"]
    assert entry["tags"] == ["external", "mail"]
    assert entry["outcome"] == "ok" and entry["isError"] is False
    assert entry["ms"] == 12.346 and entry["truncated"] is False
    assert str(entry["ts"]).endswith("Z")


async def test_denied_and_asked_calls_are_audited_too(tmp_path):
    path = tmp_path / "audit.ndjson"
    denied = Decision("deny", "capability check: '/etc/passwd' is outside", "capability")
    asked = Decision("ask", "default policy: the tool is destructive", "default")
    async with AuditLog.open(path) as log:
        await log.write(AuditRecord.build(SPEC, session="s", decision=denied, ms=0.1))
        await log.write(
            AuditRecord.build(SPEC, session="s", decision=asked, ms=0.2, answer="headless")
        )
        await log.write(
            AuditRecord.build(
                SPEC,
                session="s",
                decision=asked,
                ms=0.3,
                answer="reject",
                error=PermissionDeniedError("the person declined", tool="git_log"),
            )
        )
    entries = lines(path)
    assert [e["outcome"] for e in entries] == ["denied", "denied", "denied"]
    assert all(e["isError"] for e in entries)
    assert entries[1]["answer"] == "headless" and entries[1]["decision"] == "ask"
    assert entries[2]["errorCode"] == "permission.denied"


def test_failures_and_timeouts_are_outcomes_with_is_error():
    timeout = AuditRecord.build(
        SPEC, session="s", decision=ALLOW, ms=5000, error=ExecTimeoutError("timed out after 5s")
    )
    assert timeout.outcome == "timeout" and timeout.is_error
    assert timeout.error_code == "exec.timeout"
    failed = AuditRecord.build(
        SPEC, session="s", decision=ALLOW, ms=1, result=ExecResult(ok=False, http_status=503)
    )
    assert failed.outcome == "error" and failed.http_status == 503


def test_an_error_coded_exec_cancelled_is_audited_as_cancelled_not_as_an_error():
    # The audit's label for exec.cancelled (tests/bridge/test_audit_endings.py: real calls).
    error = ExecError("the client cancelled the call", code=ErrorCode.EXEC_CANCELLED)
    cancelled = AuditRecord.build(SPEC, session="s", decision=ALLOW, ms=3, error=error)
    assert cancelled.outcome == "cancelled" and cancelled.is_error
    assert cancelled.error_code == "exec.cancelled"


def test_secrets_are_redacted_from_argv_and_urls():
    secret = "sk-live-0123456789"
    argv = redact_argv(
        ["tool", "--password", "hunter22", f"--key-file=/x/{secret}", "-q"], [secret]
    )
    assert argv == ["tool", "--password", REDACTED, f"--key-file=/x/{REDACTED}", "-q"]
    url = redact_url(
        f"https://bob:pw@api.example/send?to=a&api_key=k1&q={secret}&access_token=t", [secret]
    )
    assert "pw" not in url and "k1" not in url and secret not in url and "=t" not in url
    assert url.startswith(f"https://bob:{REDACTED}@api.example/send?to=a&api_key={REDACTED}")
    assert redact_url("https://api.example/x?page=2") == "https://api.example/x?page=2"


def test_a_record_from_a_call_with_secrets_never_contains_them(tmp_path):
    secret = "ghp_abcdefghijklmnop"
    result = ExecResult(ok=True, url=f"https://api.example/x?sig={secret}", argv=("a", secret))
    record = AuditRecord.build(
        SPEC, session="s", decision=ALLOW, ms=1, result=result, secrets=[secret]
    )
    assert secret not in record.to_line().decode()


async def test_the_log_file_is_created_private(tmp_path):
    path = tmp_path / "nested" / "dir" / "audit.ndjson"
    log = AuditLog.open(path)
    log.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) & 0o077 == 0


async def test_writing_after_close_is_an_error(tmp_path):
    log = AuditLog.open(tmp_path / "a.ndjson")
    log.close()
    with pytest.raises(OSError, match="closed"):
        await log.write(AuditRecord.build(SPEC, session="s", decision=ALLOW, ms=1))


async def test_concurrent_writers_never_interleave_lines(tmp_path):
    path = tmp_path / "audit.ndjson"
    chunk = "x" * 1999  # 40 of them: lines of ~80 KB, far past PIPE_BUF

    async def one_call(log: AuditLog, index: int) -> None:
        result = ExecResult(ok=True, argv=("tool", f"call-{index}", *[chunk] * (index % 40)))
        record = AuditRecord.build(SPEC, session=f"s{index}", decision=ALLOW, ms=1, result=result)
        await log.write(record)

    first, second = AuditLog.open(path), AuditLog.open(path)  # two fds, as two servers would
    try:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                for index in range(200):
                    tg.start_soon(one_call, first if index % 2 else second, index)
    finally:
        first.close()
        second.close()
    entries = lines(path)
    assert len(entries) == 200
    assert max(len(e["argv"]) for e in entries) == 41  # type: ignore[arg-type]
    assert sorted(str(e["session"]) for e in entries) == sorted(f"s{i}" for i in range(200))


def test_the_default_path_is_under_the_user_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_audit_path() == tmp_path / "mcp-toolbridge" / "audit.ndjson"


async def test_the_audit_line_shows_no_encoded_form_of_a_resolved_secret(tmp_path):
    """A tool's argv and URL carrying its secret base64-encoded (after ``user:``, as in a Basic
    credential), hex-encoded or percent-encoded: written as is until after the red-team pass
    of 2026-11-29 (only the value as written was replaced)."""
    secret = "pa ss/wörd+0123456789"
    basic = base64.b64encode(f"user:{secret}".encode()).decode()
    result = ExecResult(
        ok=True,
        argv=("/usr/bin/curl", "-H", f"X-Basic: {basic}", secret.encode().hex()),
        url=f"https://api.example/v1?q={quote(secret, safe='')}&p={quote_plus(secret)}",
    )
    record = AuditRecord.build(
        SPEC, session="s", decision=ALLOW, ms=1, result=result, secrets=[secret]
    )
    path = tmp_path / "audit.ndjson"
    async with AuditLog.open(path) as log:
        await log.write(record)
    [entry] = lines(path)
    assert entry["argv"] == ["/usr/bin/curl", "-H", f"X-Basic: {basic[:7]}{REDACTED}", REDACTED]
    assert entry["url"] == f"https://api.example/v1?q={REDACTED}&p={REDACTED}"
