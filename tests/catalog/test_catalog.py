"""Catalog: unique names, reserved locked ids, lookups, validators compiled on first use."""

from __future__ import annotations

from typing import Any

from mcp_toolbridge.catalog.catalog import Catalog
from mcp_toolbridge.errors import ErrorCode
from mcp_toolbridge.model import BuiltinTransport, ExecTransport, Format, Source, ToolSpec

ARGS = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}}


def spec(
    name: str,
    *,
    tool_id: str | None = None,
    index: int = 0,
    path: str = "tools.json",
    output: dict[str, Any] | None = None,
    builtin: bool = False,
) -> ToolSpec:
    return ToolSpec(
        name=name,
        id=tool_id or name,
        input_schema=ARGS,
        runtime_input_schema=ARGS,
        output_schema=output,
        transport=BuiltinTransport(name=name) if builtin else ExecTransport(argv=("/bin/true",)),
        source=Source(
            path=path, index=index, format=Format.BUILTIN if builtin else Format.AGENTCLI
        ),
    )


def test_a_second_tool_with_a_taken_name_is_a_problem_naming_the_first() -> None:
    catalog, problems = Catalog.build([spec("echo"), spec("echo", index=1, path="b/tools.json")])
    assert len(catalog) == 1
    assert catalog.get("echo") is not None
    assert [(p.path, p.message, p.code) for p in problems] == [
        (
            "b/tools.json",
            'tool name "echo" is already used by tools.json: tool[0] "echo"',
            ErrorCode.MANIFEST_DUPLICATE,
        )
    ]


def test_locked_ids_are_reserved_for_built_in_tools() -> None:
    catalog, problems = Catalog.build([spec("bash"), spec("tool_search", builtin=True)])
    assert catalog.names == ["tool_search"]
    assert [p.message for p in problems] == [
        'tool name "bash" is reserved for the locked built-in tool; rename the tool'
    ]


def test_a_locked_name_in_other_case_is_reserved_too() -> None:
    """``Read`` beside the locked ``read`` is the same tool to a model reading the list (and
    the name Claude Code gives its own); found by the red-team pass of 2026-11-29 (4th)."""
    catalog, problems = Catalog.build([spec("Read"), spec("TOOL_SEARCH", index=1), spec("Reader")])
    assert catalog.names == ["Reader"]
    assert [p.message for p in problems] == [
        'tool name "Read" is reserved for the locked built-in tool "read" (names that differ '
        "only in case are one to a model); rename the tool",
        'tool name "TOOL_SEARCH" is reserved for the locked built-in tool "tool_search" (names '
        "that differ only in case are one to a model); rename the tool",
    ]


def test_a_malformed_name_is_a_problem_and_the_tool_is_left_out() -> None:
    catalog, problems = Catalog.build([spec("bad name")])
    assert len(catalog) == 0
    assert [p.message for p in problems] == ['tool name "bad name" must match [A-Za-z0-9_-]{1,64}']


def test_resolve_finds_a_tool_by_mcp_name_or_by_manifest_id() -> None:
    catalog, _ = Catalog.build([spec("mail_send", tool_id="mail.send")])
    by_name, by_id = catalog.resolve("mail_send"), catalog.resolve("mail.send")
    assert by_name is not None and by_name is by_id
    assert catalog.resolve("mail.receive") is None
    assert "mail_send" in catalog and [e.spec.name for e in catalog] == ["mail_send"]


def test_the_argument_validator_is_compiled_once_and_then_reused() -> None:
    catalog, _ = Catalog.build([spec("count")])
    entry = catalog.get("count")
    assert entry is not None
    first = entry.arguments
    assert first is entry.arguments
    assert first.validate({"n": 0}) == ["at /n: expected at least 1; got 0"]
    assert entry.arguments.validate({"n": 3}) == []


def test_the_output_validator_exists_only_for_tools_that_declare_an_output_schema() -> None:
    output = {"type": "object", "required": ["ok"]}
    catalog, _ = Catalog.build([spec("plain"), spec("typed", output=output)])
    plain, typed = catalog.get("plain"), catalog.get("typed")
    assert plain is not None and typed is not None
    assert plain.output is None
    assert typed.output is not None and typed.output is typed.output
    assert typed.output.validate({}) == ['at /: missing the required property "ok"']


def test_a_broken_schema_fails_at_validation_time_not_at_build_time() -> None:
    broken = {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}
    tool = spec("broken").model_copy(update={"input_schema": broken})
    catalog, problems = Catalog.build([tool])
    entry = catalog.get("broken")
    assert problems == [] and entry is not None
    errors = entry.arguments.validate({"a": 1})
    assert len(errors) == 1 and errors[0].startswith("at /: the schema's $ref")


def test_the_catalog_splits_manifest_and_locked_tools_keeping_its_order() -> None:
    tools = [spec("a"), spec("read", builtin=True), spec("b", index=1), spec("grep", builtin=True)]
    catalog, problems = Catalog.build(tools)
    assert problems == []
    assert [s.name for s in catalog.manifest_specs()] == ["a", "b"]
    assert [s.name for s in catalog.locked_specs()] == ["read", "grep"]
    assert [s.is_locked for s in catalog.specs()] == [False, True, False, True]
