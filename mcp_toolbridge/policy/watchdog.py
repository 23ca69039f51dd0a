"""The watchdog: an external pre-execute hook that answers allow, deny(reason) or ask.

The protocol (docs/permissions.md, "The watchdog"): the bridge runs the command named in the
policy's ``[watchdog]`` table through the subprocess executor, writes :func:`watchdog_payload`
to its stdin and reads one JSON object from its stdout::

    {"verdict": "allow"}
    {"verdict": "deny", "reason": "looks like exfiltration"}
    {"verdict": "ask", "reason": "touches production"}

Any failure is a deny: the command cannot start, times out, exits non-zero, prints nothing,
prints something other than exactly one such object, or names an unknown verdict.
:func:`parse_verdict` never raises. The watchdog runs after the capability check and the rules
and can only tighten their decision (``policy.combine``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mcp_toolbridge.model import ToolSpec

PROTOCOL_VERSION = 1
DEFAULT_TIMEOUT_S = 10.0
MAX_REASON = 500

VerdictAction = Literal["allow", "deny", "ask"]


@dataclass(frozen=True, slots=True)
class WatchdogConfig:
    """The command to run (argv, no shell) and its own deadline."""

    argv: tuple[str, ...]
    timeout_s: float = DEFAULT_TIMEOUT_S


@dataclass(frozen=True, slots=True)
class Verdict:
    action: VerdictAction
    reason: str = ""


@dataclass(frozen=True, slots=True)
class WatchdogRequest:
    """What the watchdog sees: the tool, the validated arguments, its manifest, the session."""

    tool: str
    tool_id: str
    arguments: Mapping[str, Any]
    session: str
    manifest: str
    format: str
    safety: Mapping[str, bool] = field(default_factory=dict)

    @classmethod
    def for_call(
        cls, spec: ToolSpec, arguments: Mapping[str, Any], *, session: str
    ) -> WatchdogRequest:
        safety = spec.safety
        return cls(
            tool=spec.name,
            tool_id=spec.id,
            arguments=arguments,
            session=session,
            manifest=spec.source.path,
            format=spec.source.format.value,
            safety={
                "read_only": safety.read_only,
                "destructive": safety.destructive,
                "idempotent": safety.idempotent,
                "open_world": safety.open_world,
                "requires_confirmation": safety.requires_confirmation,
            },
        )


def watchdog_payload(request: WatchdogRequest) -> bytes:
    """The JSON document written to the watchdog's stdin (UTF-8, one line, newline-ended)."""
    document = {
        "version": PROTOCOL_VERSION,
        "tool": request.tool,
        "id": request.tool_id,
        "arguments": dict(request.arguments),
        "session": request.session,
        "manifest": {"path": request.manifest, "format": request.format},
        "safety": dict(request.safety),
    }
    return (json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    verdict: VerdictAction
    reason: str = Field(default="", max_length=10_000)


def deny(reason: str) -> Verdict:
    return Verdict("deny", reason)


def parse_verdict(
    stdout: bytes, *, exit_code: int | None = 0, signal: int | None = None
) -> Verdict:
    """The watchdog's answer; anything but one well-formed verdict object, printed by a process
    that exited with status 0, is a deny (``exit_code`` None: killed by ``signal``)."""
    if exit_code is None:
        return deny(f"the watchdog was killed by signal {signal}")
    if exit_code != 0:
        return deny(f"the watchdog exited with status {exit_code}")
    try:
        text = stdout.decode("utf-8").strip()
        answer = _Answer.model_validate(json.loads(text))
    except UnicodeDecodeError:
        return deny("the watchdog's output is not UTF-8")
    except json.JSONDecodeError:
        shown = "nothing" if not stdout.strip() else "something other than one JSON object"
        return deny(f"the watchdog printed {shown}; it must print one verdict object")
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the document"
        return deny(f"the watchdog's verdict is malformed at {where}: {first['msg']}")
    reason = " ".join(answer.reason.split())[:MAX_REASON]
    if answer.verdict == "deny" and not reason:
        reason = "the watchdog refused this call"
    return Verdict(answer.verdict, reason)


def failure(what: str) -> Verdict:
    """The verdict for a watchdog that could not answer (spawn failure, timeout, ...)."""
    return deny(f"the watchdog failed ({what}), so the call is refused")
