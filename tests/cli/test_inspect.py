"""mcp-toolbridge inspect: the full Tool Interface record of a tool, as JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcp_toolbridge.cli.main import main
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool

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
