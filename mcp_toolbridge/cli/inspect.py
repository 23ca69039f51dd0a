"""The Tool Interface record of one tool (``mcp-toolbridge inspect``), and the effective policy
as JSON (``mcp-toolbridge policy show``; with ``--as SUBJECT``, ``--as-client``,
``--as-group``, ``--as-scope``: as that caller gets it over HTTP with an authorization server).

Every partition of spec/tool-interface-partitions.txt, filled from the ToolSpec, the policy
and the server settings. A fact the manifest did not declare, which therefore took a
fail-closed default (the safety facts in ``spec.safety.inferred``, the server's default
deadline, strict validation), is listed under ``inferred`` as ``Partition.field``; a field the
three manifest formats cannot express is ``null``.

Two facts of the spec's fail-closed table no manifest format can declare:

- ``Safety.is_concurrency_safe``: known for the built-in tools (the read-only ones are; the
  others change files, processes or session state), inferred ``false`` for manifest tools.
  The server itself runs calls in parallel (up to ``--max-concurrency``) whatever this says:
  it tells a client whether to send a tool's calls in parallel.
- ``Execution.interrupt_behavior``: always known, ``cancel``. Every executor stops a call
  the client cancels (``notifications/cancelled``, or the closed response stream of a
  request outside an HTTP session): the process group is killed, the HTTP request
  abandoned, the built-in's task cancelled. Nothing runs on after an interrupt, so the
  spec's default ``block`` would be untrue.
"""

from __future__ import annotations

import argparse
from typing import Any

import anyio

from mcp_toolbridge.bridge import PolicyGate
from mcp_toolbridge.catalog import semantic_status
from mcp_toolbridge.cli.console import EXIT_LOAD, EXIT_OK, err, json_text, out
from mcp_toolbridge.cli.unknown import no_such_tool
from mcp_toolbridge.executors import PROGRESS_FD_ENV, probe_sandbox
from mcp_toolbridge.host import Caller
from mcp_toolbridge.model import BuiltinTransport, ExecTransport, HttpTransport, ToolSpec
from mcp_toolbridge.policy import Policy, render_policy
from mcp_toolbridge.runtime import Loaded, Settings

RECORD_VERSION = 1
SAFETY_FIELDS = {
    "read_only": "is_read_only",
    "destructive": "is_destructive",
    "open_world": "is_open_world",
    "requires_confirmation": "requires_user_interaction",
    "idempotent": "is_idempotent",
}
INTERRUPT_BEHAVIOR = "cancel"
SCHEDULING = (
    "calls run as they arrive, in parallel up to --max-concurrency; the server never "
    "serializes calls of one tool (is_concurrency_safe tells the client whether to)"
)
ABORT = {
    "exec": "the process group gets SIGTERM, then SIGKILL; on deadline, cancel or shutdown",
    "http": "the request is abandoned and its connection closed",
    "builtin": "the built-in's task is cancelled",
}


def _internal_fields(spec: ToolSpec) -> list[str]:
    runtime = spec.runtime_input_schema.get("properties") or {}
    model = spec.input_schema.get("properties") or {}
    return sorted(name for name in runtime if name not in model)


def _execution_profile(spec: ToolSpec) -> dict[str, Any]:
    transport = spec.transport
    if isinstance(transport, ExecTransport):
        return {
            "kind": "exec",
            "argv": list(transport.argv),
            "cwd": transport.cwd,
            "args_via": transport.args_via,
            "env_names": sorted({*transport.env.values, *transport.env.passthrough}),
        }
    if isinstance(transport, HttpTransport):
        return {
            "kind": "http",
            "method": transport.method,
            "url": transport.url,
            "header_names": sorted(transport.headers),
        }
    assert isinstance(transport, BuiltinTransport)
    if transport.name == "tool_search":
        return {"kind": "builtin", "name": transport.name, "search": _search_profile()}
    return {"kind": "builtin", "name": transport.name}


def _search_profile() -> dict[str, str]:
    """How tool_search ranks in this install (docs/search.md)."""
    return {
        "lexical": "BM25F over name, title, tags, description, namespace and parameters",
        "semantic": semantic_status(),
        "no_match": "a tool needs a word in common with the request (or, with the semantic "
        "leg, a cosine above noise); otherwise the result says no tool matches",
    }


def _result_mapper(spec: ToolSpec) -> str:
    transport = spec.transport
    if isinstance(transport, ExecTransport):
        read = "all of stdout is one JSON value"
        if transport.stdout == "first_json_object":
            read = "the first JSON object in stdout"
        flag = '; {"ok": false} is a failure' if transport.ok_flag else ""
        return f"{read}; a non-zero exit is a failure{flag}"
    if isinstance(transport, HttpTransport):
        return "the JSON response body (text when not JSON); status >= 400 is a failure"
    return "the built-in's value"


def _first_line(text: str) -> str | None:
    lines = text.strip().splitlines()
    return lines[0] if lines else None


def tool_interface(
    spec: ToolSpec,
    policy: Policy,
    *,
    default_timeout_s: float,
    max_output_bytes: int,
    deferred: bool,
    served: bool = True,
    sandbox_profile: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The record for ``spec``; ``deferred`` says whether tools/list defers tools to
    tool_search (``--expose``), ``served`` whether the policy exposes it. A locked or pinned
    tool is always listed, never deferred."""
    builtin = spec.is_locked
    always_load = builtin or spec.pinned
    safety = spec.safety
    inferred = [f"Safety.{SAFETY_FIELDS[f]}" for f in sorted(safety.inferred) if f in SAFETY_FIELDS]
    inferred += ["Schemas.strict", "Safety.classifier_input"]
    if not builtin:
        inferred.append("Safety.is_concurrency_safe")
    timeout_s = spec.effective_timeout_s(default_timeout_s)
    if timeout_s != spec.timeout_s:  # the tool set none of its own: the server default applies
        inferred.append("Execution.timeout_ms")
    decision = policy.decide(spec, policy.targets(spec, {}))
    output_checked = "result checked against output_schema" if spec.output_schema else None
    return {
        "tool_interface": RECORD_VERSION,
        "Identity": {
            "tool_id": spec.id,
            "name": spec.name,
            "aliases": [],
            "namespace": spec.namespace,
            "native_ids": [
                {
                    "format": spec.source.format.value,
                    "id": spec.id,
                    "source": spec.source.path,
                    "index": spec.source.index,
                }
            ],
            "user_facing_name": spec.title or spec.name,
            "version": spec.version,
        },
        "Discovery": {
            "search_hint": spec.search_hint,
            "description": spec.description,
            "capability_refs": list(spec.requires.capabilities),
            "schema_visibility": {"model": "input_schema", "internal": _internal_fields(spec)},
            "should_defer": deferred and not always_load,
            "always_load": always_load,
        },
        "Schemas": {
            "model_input_schema": spec.input_schema,
            "runtime_input_schema": spec.runtime_input_schema,
            "output_schema": spec.output_schema,
            "input_schema_ref": spec.input_schema_ref,
            "output_schema_ref": spec.output_schema_ref,
            "strict": True,
        },
        "Availability": {
            "is_enabled": served,
            "requires_setup": bool(spec.secrets),
            "required_credentials": list(spec.secrets),
            "model_requirements": None,
            "feature_gate_refs": [],
        },
        "Validation": {
            "schema_validation": "JSON Schema 2020-12 on the arguments, before the policy",
            "value_validation": output_checked,
            "io_preflight_validation": {
                "argument_roles": {k: list(v) for k, v in spec.argument_roles.items()},
                "requires": spec.requires.model_dump(mode="json", exclude_defaults=True),
            },
            "deny_before_io": True,
        },
        "Safety": {
            "is_read_only": safety.read_only,
            "is_destructive": safety.destructive,
            "is_open_world": safety.open_world,
            "is_idempotent": safety.idempotent,
            "requires_user_interaction": safety.requires_confirmation,
            "is_concurrency_safe": builtin and safety.read_only,
            "sandbox_profile": sandbox_profile,
            "classifier_input": "",
        },
        "Permission": {
            "permission_profile_ref": list(policy.sources) or ["built-in default policy"],
            "permission_matcher": "rules match the tool name, its id and tags, and the paths, "
            "hosts and commands its arguments name",
            "permission_channel": "MCP elicitation when the client supports it; headless: "
            "ask = deny",
            "decision_ref": {
                "action": decision.action,
                "rule": decision.rule,
                "scope": decision.scope,
                "for": "a call whose arguments name no path, host or command",
            },
        },
        "Execution": {
            "execution_profile_ref": _execution_profile(spec),
            "timeout_ms": round(timeout_s * 1000),
            "abort_semantics": ABORT[spec.transport.kind],
            "interrupt_behavior": INTERRUPT_BEHAVIOR,
            "scheduling": SCHEDULING,
            "progress_schema": _progress_schema(spec),
            "context_modifier_policy": "none: a call never changes later calls' context",
        },
        "Result": {
            "result_mapper": _result_mapper(spec),
            "max_inline_chars": None,
            "max_output_bytes": max_output_bytes,
            "persistence_policy_ref": "audit log (metadata only); --record frames when set",
            "empty_result_policy": None,
            "redaction_policy_refs": (
                ["resolved secret values are replaced by [redacted:<id>]"] if spec.secrets else []
            ),
        },
        "Rendering": {
            "ui_summary": spec.title or _first_line(spec.description),
            "activity_description": None,
            "progress_render_hint": None,
            "rejected_render_hint": None,
            "error_render_hint": None,
            "transcript_search_text": " ".join([spec.name, spec.description, *spec.tags]).strip(),
        },
        "inferred": inferred,
    }


def _progress_schema(spec: ToolSpec) -> dict[str, Any] | None:
    """How the tool reports progress, when its manifest says it does (exec tools only)."""
    if not (isinstance(spec.transport, ExecTransport) and spec.transport.reports_progress):
        return None
    return {
        "channel": f"JSON lines on the file descriptor named by ${PROGRESS_FD_ENV}",
        "progress_line": {"progress": "number", "total": "number?", "message": "string?"},
        "log_line": {"log": "string", "level": "debug|info|notice|warning|error?"},
    }


def print_interface(args: argparse.Namespace, settings: Settings, loaded: Loaded) -> int:
    """Print the Tool Interface record of one served tool as JSON."""
    from mcp_toolbridge.server import SEARCH_THRESHOLD

    entry = loaded.catalog.resolve(args.tool)
    if entry is None:
        err(f"mcp-toolbridge: {no_such_tool(args, loaded)}")
        return EXIT_LOAD
    expose = getattr(args, "expose", "auto")
    searchable = "tool_search" in loaded.catalog
    many = len(loaded.catalog.manifest_names()) > SEARCH_THRESHOLD
    record = tool_interface(
        entry.spec,
        loaded.policy,
        default_timeout_s=settings.timeout_s,
        max_output_bytes=settings.max_output_bytes,
        deferred=searchable and (expose == "search" or (expose == "auto" and many)),
        sandbox_profile=_sandbox_of(settings, loaded, entry.spec),
    )
    out(json_text(record))
    return EXIT_OK


def _sandbox_of(settings: Settings, loaded: Loaded, spec: ToolSpec) -> dict[str, Any]:
    """The sandbox a call of ``spec`` runs in, as ``serve`` would build it (probed as ``serve``
    probes it: where it cannot be used, what failed, why and how to fix it), with the paths
    it holds read-only (the guard ``runtime/composition.py`` gives the server's gate)."""
    gate = PolicyGate.configured(
        loaded.policy,
        settings.sandbox,
        environ=settings.environ,
        guard=settings.guard_inputs(loaded.programs),
    )
    confinement = gate.confinement(spec)
    assert gate.sandbox is not None and confinement is not None
    if gate.sandbox.mode != "off":
        anyio.run(probe_sandbox, gate.sandbox)
    return gate.sandbox.describe(confinement.profile)


def show_policy(args: argparse.Namespace, loaded: Loaded) -> str:
    """``policy show``: every rule and setting, where it came from, what is hidden."""
    caller = None
    if args.as_subject or args.as_client or args.as_group or args.as_scope:
        caller = Caller(
            subject=args.as_subject,
            client_id=args.as_client,
            groups=frozenset(args.as_group),
            scopes=frozenset(args.as_scope),
        )
    return render_policy(loaded.policy, [*loaded.catalog.specs(), *loaded.hidden], caller)
