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

The watchdog runs in an OS sandbox of its own that shows the system, its program, the
policy's fs.read roots and the ``[watchdog] read`` entries. A watchdog that fails while its
command names a file that sandbox hides (a script in the home folder, the usual first setup)
is refused saying so and how to show it (:func:`hidden_from_it`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.policy.file import WatchdogModel

PROTOCOL_VERSION = 1
DEFAULT_TIMEOUT_S = 10.0
MAX_REASON = 500

VerdictAction = Literal["allow", "deny", "ask"]


@dataclass(frozen=True, slots=True)
class WatchdogConfig:
    """The command to run (argv, no shell), its own deadline, what its sandbox shows besides
    the policy's fs.read roots (absolute), and the policy file that configures it."""

    argv: tuple[str, ...]
    timeout_s: float = DEFAULT_TIMEOUT_S
    read: tuple[Path, ...] = ()
    file: str | None = None

    @classmethod
    def of(cls, model: WatchdogModel, policy_file: str | None) -> WatchdogConfig:
        """The ``[watchdog]`` table of ``policy_file`` (its relative ``read`` entries are read
        from that file's folder)."""
        base = Path(policy_file).parent if policy_file is not None else Path.cwd()
        read = tuple(Path(os.path.abspath(base / Path(p).expanduser())) for p in model.read)
        return cls(tuple(model.command), model.timeout_s, read, policy_file)


@dataclass(frozen=True, slots=True)
class Verdict:
    action: VerdictAction
    reason: str = ""
    failed: bool = field(default=False, compare=False)
    """The watchdog gave no answer (it failed to start, crashed, printed no verdict): the
    deny is its failure's, not its judgement."""


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


def _failed(reason: str) -> Verdict:
    return Verdict("deny", reason, failed=True)


def parse_verdict(
    stdout: bytes, *, exit_code: int | None = 0, signal: int | None = None
) -> Verdict:
    """The watchdog's answer; anything but one well-formed verdict object, printed by a process
    that exited with status 0, is a deny (``exit_code`` None: killed by ``signal``)."""
    if exit_code is None:
        return _failed(f"the watchdog was killed by signal {signal}")
    if exit_code != 0:
        return _failed(f"the watchdog exited with status {exit_code}")
    try:
        text = stdout.decode("utf-8").strip()
        answer = _Answer.model_validate(json.loads(text))
    except UnicodeDecodeError:
        return _failed("the watchdog's output is not UTF-8")
    except json.JSONDecodeError:
        shown = "nothing" if not stdout.strip() else "something other than one JSON object"
        return _failed(f"the watchdog printed {shown}; it must print one verdict object")
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the document"
        return _failed(f"the watchdog's verdict is malformed at {where}: {first['msg']}")
    reason = " ".join(answer.reason.split())[:MAX_REASON]
    if answer.verdict == "deny" and not reason:
        reason = "the watchdog refused this call"
    return Verdict(answer.verdict, reason)


def failure(what: str) -> Verdict:
    """The verdict for a watchdog that could not answer (spawn failure, timeout, ...)."""
    return _failed(f"the watchdog failed ({what}), so the call is refused")


def named_files(config: WatchdogConfig, cwd: Path) -> list[Path]:
    """The files and folders the watchdog's arguments name that exist here (a script, a
    configuration file; ``--rules=FILE`` counts), absolute; relative ones from ``cwd``."""
    found: list[Path] = []
    for word in config.argv[1:]:
        if word.startswith("-"):
            word = word.partition("=")[2]
        if not word:
            continue
        path = Path(word).expanduser()
        path = path if path.is_absolute() else cwd / path
        if os.path.exists(path) and path not in found:
            found.append(path)
    return found


def hidden_from_it(verdict: Verdict, hidden: Sequence[Path], config: WatchdogConfig) -> Verdict:
    """The refusal of a watchdog that failed while its sandbox hid files its command names:
    its own reason, what was hidden, and the ``[watchdog] read`` entry that shows it."""
    grants = [str(_grant(path)) for path in hidden[:3]]
    shown = ", ".join(str(path) for path in hidden[:3])
    where = f"in {config.file}" if config.file is not None else "in the policy file"
    entry = "read = [" + ", ".join(json.dumps(g) for g in dict.fromkeys(grants)) + "]"
    return _failed(
        f"{verdict.reason}: its OS sandbox hides {shown}, which its command names (a watchdog "
        "sees the system folders, its program, the policy's fs.read roots and its [watchdog] "
        f"read entries); add {entry} under [watchdog] {where}, or move the file into a "
        "folder it sees"
    )


def _grant(path: Path) -> Path:
    """What to show for a hidden file: its folder (a script's modules and data are beside
    it), unless that is / or the home folder, which are never shown whole."""
    folder = path if path.is_dir() else path.parent
    if folder == Path(folder.anchor) or folder == Path.home():
        return path
    return folder
