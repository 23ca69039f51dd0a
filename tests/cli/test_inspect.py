"""mcp-toolbridge inspect: the full Tool Interface record of a tool, as JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_toolbridge.bridge import Bridge
from mcp_toolbridge.catalog import Catalog
from mcp_toolbridge.cli.inspect import tool_interface
from mcp_toolbridge.cli.main import main
from mcp_toolbridge.errors import ErrorCode
from mcp_toolbridge.executors import ExecToolExecutor
from mcp_toolbridge.runtime import Settings, load_catalog
from tests.support.discovery import write_catalog as write_discovery_catalog
from tests.support.manifests import ECHO, SLEEP, agentcli_manifest, echo_tool

PARTITIONS = {
    "Identity": {"tool_id", "name", "aliases", "namespace", "native_ids", "user_facing_name"},
    "Discovery": {
        "search_hint",
        "description",
        "capability_refs",
        "schema_visibility",
        "should_defer",
        "always_load",
    },
    "Schemas": {"model_input_schema", "runtime_input_schema", "output_schema", "strict"},
    "Availability": {
        "is_enabled",
        "requires_setup",
        "required_credentials",
        "model_requirements",
        "feature_gate_refs",
    },
    "Validation": {
        "schema_validation",
        "value_validation",
        "io_preflight_validation",
        "deny_before_io",
    },
    "Safety": {
        "is_read_only",
        "is_destructive",
        "is_open_world",
        "requires_user_interaction",
        "sandbox_profile",
        "classifier_input",
    },
    "Permission": {
        "permission_profile_ref",
        "permission_matcher",
        "permission_channel",
        "decision_ref",
    },
    "Execution": {
        "execution_profile_ref",
        "timeout_ms",
        "abort_semantics",
        "progress_schema",
        "context_modifier_policy",
    },
    "Result": {
        "result_mapper",
        "max_inline_chars",
        "persistence_policy_ref",
        "empty_result_policy",
        "redaction_policy_refs",
    },
    "Rendering": {
        "ui_summary",
        "activity_description",
        "progress_render_hint",
        "rejected_render_hint",
        "error_render_hint",
        "transcript_search_text",
    },
}


def _inspect(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert main(["inspect", *argv]) == 0
    record = json.loads(capsys.readouterr().out)
    return record


def test_inspect_prints_every_partition_of_the_tool_interface(
    capsys: pytest.CaptureFixture[str],
) -> None:
    record = _inspect(capsys, "word_count")
    for partition, fields in PARTITIONS.items():
        assert fields <= set(record[partition]), partition
    assert record["Identity"]["name"] == "word_count"
    assert record["Execution"]["execution_profile_ref"]["kind"] == "exec"


def test_inspect_marks_the_facts_the_fail_closed_defaults_filled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agentcli_manifest(tmp_path / "t", [echo_tool("echo")], {"echo": ECHO})
    record = _inspect(capsys, "echo", str(tmp_path / "t"), "--timeout", "7")
    inferred = set(record["inferred"])
    assert {"Safety.is_read_only", "Safety.is_open_world", "Execution.timeout_ms"} <= inferred
    safety = record["Safety"]
    assert safety["is_read_only"] is False and safety["is_open_world"] is True
    assert record["Execution"]["timeout_ms"] == 7000


def test_a_declared_timeout_is_not_marked_inferred(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agentcli_manifest(tmp_path / "t", [echo_tool("echo", timeoutSec=3)], {"echo": ECHO})
    record = _inspect(capsys, "echo", str(tmp_path / "t"))
    assert record["Execution"]["timeout_ms"] == 3000
    assert "Execution.timeout_ms" not in record["inferred"]


def test_inspecting_an_unknown_tool_says_how_to_find_the_names(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["inspect", "no_such_tool"]) == 2
    assert "mcp-toolbridge list" in capsys.readouterr().err


def test_concurrency_safety_is_inferred_false_for_manifest_tools_and_known_for_built_ins(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agentcli_manifest(tmp_path / "t", [echo_tool("echo")], {"echo": ECHO})
    manifest = _inspect(capsys, "echo", str(tmp_path / "t"))
    assert manifest["Safety"]["is_concurrency_safe"] is False
    assert "Safety.is_concurrency_safe" in manifest["inferred"]
    for tool, safe in (("read", True), ("grep", True), ("write", False), ("bash", False)):
        record = _inspect(capsys, tool, str(tmp_path / "t"))
        assert record["Safety"]["is_concurrency_safe"] is safe, tool
        assert "Safety.is_concurrency_safe" not in record["inferred"], tool


def test_interrupt_behavior_is_the_known_cancel_of_every_executor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agentcli_manifest(tmp_path / "t", [echo_tool("echo")], {"echo": ECHO})
    for tool in ("echo", "word_count", "bash", "web_fetch"):
        paths = [str(tmp_path / "t")] if tool == "echo" else []
        record = _inspect(capsys, tool, *paths)
        execution = record["Execution"]
        assert execution["interrupt_behavior"] == "cancel", tool
        assert "Execution.interrupt_behavior" not in record["inferred"], tool
        assert "never serializes" in execution["scheduling"]


@pytest.mark.parametrize("own_s", [None, 0.0, -1.0, 0.4])
async def test_inspect_and_a_real_call_agree_on_the_deadline(
    tmp_path: Path, own_s: float | None
) -> None:
    """Zero or less is no deadline of the tool's own: the server default applies, in a call as
    in the record (a spec built in code can hold it; the loaders read it as unset)."""
    agentcli_manifest(tmp_path / "t", [echo_tool("sleepy", bin="sleepy")], {"sleepy": SLEEP})
    settings = Settings(paths=[tmp_path / "t"], timeout_s=0.3, audit=False, workspace=tmp_path)
    loaded = load_catalog(settings)
    entry = loaded.catalog.get("sleepy")
    assert entry is not None
    spec = entry.spec.model_copy(update={"timeout_s": own_s})
    record = tool_interface(
        spec, loaded.policy, default_timeout_s=0.3, max_output_bytes=1024, deferred=False
    )
    catalog, problems = Catalog.build([spec])
    assert problems == []
    bridge = Bridge(catalog, {"exec": ExecToolExecutor(environ={})}, default_timeout_s=0.3)
    with anyio.fail_after(10):
        outcome = await bridge.call("sleepy", {"text": "zzz"})
    expected_s = own_s if own_s is not None and own_s > 0 else 0.3
    assert record["Execution"]["timeout_ms"] == round(expected_s * 1000)
    assert outcome.code is ErrorCode.EXEC_TIMEOUT
    assert f"timed out after {expected_s:g}s" in (outcome.error or "")
    assert ("Execution.timeout_ms" in record["inferred"]) is (expected_s == 0.3)


def test_a_pinned_tool_is_always_loaded_and_never_deferred(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tools = [echo_tool(f"tool_{i}") for i in range(3)]
    agentcli_manifest(tmp_path / "t", tools, {"echo": ECHO})
    where = str(tmp_path / "t")
    pinned = _inspect(capsys, "tool_1", where, "--expose", "search", "--pin", "tool_1")
    assert pinned["Discovery"]["always_load"] is True
    assert pinned["Discovery"]["should_defer"] is False
    other = _inspect(capsys, "tool_2", where, "--expose", "search", "--pin", "tool_1")
    assert other["Discovery"]["always_load"] is False
    assert other["Discovery"]["should_defer"] is True
    listed = _inspect(capsys, "tool_2", where, "--expose", "all")
    assert listed["Discovery"]["should_defer"] is False


def test_the_search_hint_is_the_manifests_keywords(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths, _ = write_discovery_catalog(tmp_path)
    record = _inspect(capsys, "post_note", *map(str, paths))
    assert record["Discovery"]["search_hint"] == "notes team"
    assert _inspect(capsys, "send_email", *map(str, paths))["Discovery"]["search_hint"] is None


def test_inspect_lists_the_paths_every_sandbox_holds_read_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """inspect built its gate without the guard serve gives (sandbox/guard.py), so the served
    folder, the policy, secrets and audit files were missing from its sandbox_profile."""
    agentcli_manifest(tmp_path / "t", [echo_tool("echo")], {"echo": ECHO})
    ws = tmp_path / "ws"
    ws.mkdir()
    policy = tmp_path / "policy.toml"
    policy.write_text('allow = ["echo"]\n', encoding="utf-8")
    secrets = tmp_path / "secrets.toml"
    secrets.write_text("", encoding="utf-8")
    secrets.chmod(0o600)
    audit = tmp_path / "audit.ndjson"
    argv = ["--workspace", str(ws), "--policy", str(policy), "--secrets", str(secrets)]
    record = _inspect(capsys, "echo", str(tmp_path / "t"), *argv, "--audit", str(audit))
    guarded = record["Safety"]["sandbox_profile"]["guarded_read_only"]
    real = tmp_path.resolve()
    assert {str(real / "t"), str(real / "policy.toml"), str(real / "secrets.toml")} <= set(guarded)
    assert str(real / "ws" / ".toolbridge") in guarded
    assert str(real / "audit.ndjson") in guarded
