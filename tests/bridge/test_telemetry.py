"""One span per call through opentelemetry-api: a no-op by default, recorded with a tracer."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, NonRecordingSpan, Span, SpanContext, SpanKind, Status
from opentelemetry.util.types import Attributes

from mcp_toolbridge.bridge.telemetry import span_observer
from mcp_toolbridge.host import CallContext, Caller
from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog, open_bridge
from tests.support.manifests import ECHO, FAIL, agentcli_manifest, echo_tool

# An in-memory exporter exists only with the SDK, which is not a dependency.
HAVE_SDK = importlib.util.find_spec("opentelemetry.sdk") is not None


class KeptSpan(NonRecordingSpan):
    """A span that keeps what the observer tells it (the API has no recording span)."""

    def __init__(self, name: str, attributes: Mapping[str, Any], start_time: int | None) -> None:
        super().__init__(SpanContext(1, 1, is_remote=False))
        self.name = name
        self.attributes = dict(attributes)
        self.start_time = start_time
        self.end_time: int | None = None
        self.status: Status | None = None

    def set_status(self, status: Status | Any, description: str | None = None) -> None:
        self.status = status

    def end(self, end_time: int | None = None) -> None:
        self.end_time = end_time


class KeepingTracer(trace.Tracer):
    def __init__(self) -> None:
        self.spans: list[KeptSpan] = []

    def start_span(
        self,
        name: str,
        context: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
    ) -> Span:
        span = KeptSpan(name, attributes or {}, start_time)
        self.spans.append(span)
        return span

    @contextmanager  # not used by the observer; the API's own decorator is private
    def start_as_current_span(  # type: ignore[override]
        self, name: str, *args: Any, **kwargs: Any
    ) -> Iterator[Span]:
        yield self.start_span(name)


def _settings(tmp_path: Path) -> Settings:
    agentcli_manifest(
        tmp_path / "t",
        [echo_tool("echo"), echo_tool("fails", bin="fail")],
        {"echo": ECHO, "fail": FAIL},
    )
    return Settings(paths=[tmp_path / "t"], audit=False)


async def test_calls_work_with_the_default_no_op_tracer(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    async with open_bridge(settings, load_catalog(settings, BUILTIN_SPECS)) as bridge:
        outcome = await bridge.call("echo", {"text": "hi"})
    assert outcome.ok
    if not HAVE_SDK:  # no provider configured: the global tracer makes non-recording spans
        assert not trace.get_tracer("probe").start_span("x").is_recording()


async def test_every_call_becomes_a_span_with_tool_decision_outcome_and_duration(
    tmp_path: Path,
) -> None:
    tracer = KeepingTracer()
    settings = _settings(tmp_path)
    loaded = load_catalog(settings, BUILTIN_SPECS)
    async with open_bridge(settings, loaded, observers=(span_observer(tracer),)) as bridge:
        await bridge.call("echo", {"text": "hi"})
        await bridge.call("fails", {"text": "x"})
        await bridge.call("echo", {"text": 3})
    ok, failed, invalid = tracer.spans
    assert ok.name == "execute_tool echo"
    assert ok.attributes["gen_ai.tool.name"] == "echo"
    assert ok.attributes["toolbridge.decision"] == "allow"
    assert ok.attributes["toolbridge.outcome"] == "ok"
    assert ok.status is None
    assert ok.start_time is not None and ok.end_time is not None
    assert ok.end_time - ok.start_time == ok.attributes["toolbridge.duration_ms"] * 1_000_000
    assert failed.attributes["toolbridge.outcome"] == "error"
    assert failed.attributes["error.type"] == "exec.failed"
    assert failed.status is not None
    assert invalid.attributes["toolbridge.decision"] == "none"
    assert invalid.attributes["error.type"] == "args.invalid"


async def test_a_call_through_call_tool_is_the_real_tools_span_marked_with_the_proxy(
    tmp_path: Path,
) -> None:
    tracer = KeepingTracer()
    settings = _settings(tmp_path)
    loaded = load_catalog(settings, BUILTIN_SPECS)
    async with open_bridge(settings, loaded, observers=(span_observer(tracer),)) as bridge:
        await bridge.call("call_tool", {"name": "echo", "arguments": {"text": "hi"}})
        await bridge.call("echo", {"text": "hi"})
    proxied, direct = tracer.spans
    assert proxied.name == direct.name == "execute_tool echo"
    assert proxied.attributes["toolbridge.via"] == "call_tool"
    assert "toolbridge.via" not in direct.attributes


async def test_an_identified_callers_span_names_its_subject_and_client_never_its_token(
    tmp_path: Path,
) -> None:
    tracer = KeepingTracer()
    settings = _settings(tmp_path)
    loaded = load_catalog(settings, BUILTIN_SPECS)
    alice = Caller(subject="alice", client_id="ide-1", issuer="https://id.example")
    async with open_bridge(settings, loaded, observers=(span_observer(tracer),)) as bridge:
        await bridge.call("echo", {"text": "hi"}, CallContext(caller=alice))
        await bridge.call("echo", {"text": "hi"})
    theirs, local = tracer.spans
    assert theirs.attributes["enduser.id"] == "alice"
    assert theirs.attributes["toolbridge.client_id"] == "ide-1"
    assert "enduser.id" not in local.attributes and "toolbridge.client_id" not in local.attributes


@pytest.mark.skipif(not HAVE_SDK, reason="opentelemetry-sdk is not installed (not a dependency)")
async def test_spans_reach_an_in_memory_exporter_when_the_sdk_is_installed(tmp_path: Path) -> None:
    sdk: Any = importlib.import_module("opentelemetry.sdk.trace")
    export: Any = importlib.import_module("opentelemetry.sdk.trace.export")
    memory: Any = importlib.import_module("opentelemetry.sdk.trace.export.in_memory_span_exporter")
    exporter = memory.InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(export.SimpleSpanProcessor(exporter))
    settings = _settings(tmp_path)
    loaded = load_catalog(settings, BUILTIN_SPECS)
    observer = span_observer(provider.get_tracer("test"))
    async with open_bridge(settings, loaded, observers=(observer,)) as bridge:
        await bridge.call("echo", {"text": "hi"})
    (span,) = exporter.get_finished_spans()
    assert span.name == "execute_tool echo"
