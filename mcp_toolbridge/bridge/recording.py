"""Record tool calls as trace frames (``serve --record DIR``) and replay them (``replay DIR``).

Recording is a Bridge observer. Every finished call appends two JSON lines to one file per
run in DIR (``calls-<UTC time>-<pid>.jsonl``, mode 0600): a ``CT_TOOL_CALL`` frame (call id,
who called as the audit line names them (``subject``, ``client_id``: the access token's
subject and OAuth client, null for the local caller; never the token), tool name and declared
id, the schema references, the validated arguments) and a
``CT_TOOL_RESULT`` frame (decision, outcome, timing, and what the transport returned).
Nothing secret is written on purpose: result values and error texts come from the executors,
which already replace every resolved secret with ``[redacted:<id>]``, and the secret scan
(bridge/screen.py) replaces every secret nobody declared with ``[REDACTED:<rule-id>]`` in them
and in the arguments the Bridge hands its observers; argument values under secret-looking
names (token, password, api_key, ...) are written as ``***``; argv and URLs are redacted as
in the audit log; environment variables appear by name only. Calls are matched on replay by
tool name and the SHA-256 of their canonical arguments as recorded (``match``): never a
digest of a secret, and the same for every call that differs only in its secrets; who called
is not part of it (a recording replays for any caller the replaying policy lets call).

Replay is an Executor standing in for every transport: validation and the policy run as
usual, and a call the policy lets through gets the recorded transport result (or error) of the
same tool with the same canonical arguments, redacted as they were recorded (with
:attr:`ReplayExecutor.secret_scan`, the replaying policy's scan). Several recordings of one
call are served in order, the last one again once they run out. A call with no recording gets
an error result ``no recording for this call: nothing was run ...`` (what a replay serves, and
how to record the call) and a warning on stderr.

A recording is read as data a stranger may have written: each ``*.jsonl`` in DIR must be a
regular file of this user, opened without following a link or waiting for a FIFO's writer,
of at most :data:`MAX_RECORDING_BYTES` in all; a line that is not a JSON frame (not UTF-8, nested
past the parser's depth, another shape) is a load error naming the file and the line, and a
recorded result's fields are taken only with the types a result has.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import stat
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from mcp_toolbridge.bridge.outcome import CallOutcome, outcome_of
from mcp_toolbridge.bridge.redaction import redact_argv, redact_url
from mcp_toolbridge.bridge.screen import kept_arguments
from mcp_toolbridge.errors import ConfigError, ErrorCode, ExecError
from mcp_toolbridge.executors import ExecRequest, ExecResult
from mcp_toolbridge.host import CallContext
from mcp_toolbridge.leaks import OFF, SecretScan, SecretScanSettings
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.policy import Policy, canonical_root, is_within

log = logging.getLogger("mcp_toolbridge")

CALL = "CT_TOOL_CALL"
RESULT = "CT_TOOL_RESULT"
FRAME_VERSION = 1
NO_RECORDING = (
    "no recording for this call: nothing was run (a replay serves only the calls recorded with "
    "the same arguments; record this one with serve --record DIR)"
)
REDACTED = "***"
MAX_RECORDING_BYTES = 256 * 1024 * 1024
"""What replay reads of a folder's recordings in all (it keeps every recorded result in
memory)."""
_SECRET_KEY = re.compile(
    r"(token|secret|passw(or)?d|pwd|api[-_]?key|apikey|access[-_]?key|auth|credential|"
    r"private[-_]?key)",
    re.IGNORECASE,
)


def canonical(arguments: Mapping[str, Any]) -> str:
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def match_key(tool: str, arguments: Mapping[str, Any]) -> str:
    """What a replayed call is matched on: the tool name and its canonical arguments as
    recorded (:func:`redact_arguments` of what the observers were given)."""
    digest = hashlib.sha256(canonical(arguments).encode("utf-8")).hexdigest()
    return f"{tool}:{digest}"


def redact_arguments(value: Any) -> Any:
    """Arguments with the values of secret-looking keys replaced by ``***``."""
    if isinstance(value, Mapping):
        return {
            k: REDACTED if isinstance(k, str) and _SECRET_KEY.search(k) else redact_arguments(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_arguments(v) for v in value]
    return value


def _iso(ns: float) -> str:
    stamp = datetime.fromtimestamp(ns, UTC).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


def _executed(outcome: CallOutcome) -> bool:
    """Whether the transport was asked: the policy allowed the call (and it was not pending)."""
    decision = outcome.decision
    return decision is not None and decision.action == "allow" and outcome.answer != "pending"


def frames(
    spec: ToolSpec, arguments: Mapping[str, Any], ctx: CallContext, outcome: CallOutcome
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The CT_TOOL_CALL and CT_TOOL_RESULT frames of one finished call (``arguments`` as the
    Bridge hands them to observers: secrets nobody declared already redacted)."""
    call_id = uuid.uuid4().hex
    ended = datetime.now(UTC).timestamp()
    recorded = redact_arguments(dict(arguments))
    call = {
        "frame": CALL,
        "v": FRAME_VERSION,
        "call_id": call_id,
        "ts": _iso(ended - outcome.duration_ms / 1000),
        "session": ctx.session_id,
        "subject": ctx.caller.subject,
        "client_id": ctx.caller.client_id,
        "tool": spec.name,
        "tool_id": spec.id,
        "input_schema_ref": spec.input_schema_ref,
        "output_schema_ref": spec.output_schema_ref,
        "arguments": recorded,
        "match": match_key(spec.name, recorded),
    }
    decision = outcome.decision
    result = outcome.result
    frame: dict[str, Any] = {
        "frame": RESULT,
        "v": FRAME_VERSION,
        "call_id": call_id,
        "ts": _iso(ended),
        "tool": spec.name,
        "tool_id": spec.id,
        "duration_ms": outcome.duration_ms,
        "decision": (
            {"action": decision.action, "rule": decision.rule, "scope": decision.scope}
            if decision
            else None
        ),
        "answer": outcome.answer,
        "outcome": outcome_of(outcome).value,
        "executed": _executed(outcome),
        "result": None,
        "error": None,
    }
    if result is not None:
        frame["result"] = {
            "ok": result.ok,
            "value": result.value,
            "text": result.text,
            "error": result.error,
            "truncated": result.truncated,
            "output_path": result.output_path,
            "exit_code": result.exit_code,
            "http_status": result.http_status,
            "argv": redact_argv(result.argv) if result.argv else None,
            "url": redact_url(result.url) if result.url else None,
            "env_keys": sorted(result.env_keys),
        }
    elif not outcome.ok:
        code = outcome.code.value if outcome.code else None
        frame["error"] = {"message": outcome.error, "code": code}
    return call, frame


class Recorder:
    """A Bridge observer appending the frames of every finished call to one JSONL file."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd
        self._lock = anyio.Lock()

    @classmethod
    def open(cls, folder: Path) -> Recorder:
        """A new file in ``folder`` (created 0700). Raises ConfigError when it cannot."""
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        path = folder / f"calls-{stamp}-{os.getpid()}.jsonl"
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
            fd = os.open(path, flags, 0o600)
        except OSError as exc:
            raise ConfigError(
                f"--record {folder}: cannot create a recording there: {exc}",
                code=ErrorCode.CONFIG_INVALID,
            ) from exc
        return cls(path, fd)

    def granted(self, policy: Policy) -> Path | None:
        """The workspace or policy grant (fs.read, fs.write) the recording's folder lies in,
        or None. The sandbox hides and holds the folder (``Settings.record_dir``), and glob and
        grep leave it out (builtins/fs/walk.py, ``HiddenPaths``), but a process started
        without the sandbox sees it (red-team pass of 2026-11-29, 8th): the start warns."""
        scope = policy.scope
        roots = [policy.workspace, *(p.root for p in (*scope.fs_read, *scope.fs_write))]
        real = canonical_root(self.path.parent)
        return next(
            (r for r in roots if r is not None and is_within(real, canonical_root(r))), None
        )

    async def __call__(
        self, spec: ToolSpec, arguments: Mapping[str, Any], ctx: CallContext, outcome: CallOutcome
    ) -> None:
        if outcome.answer == "pending":  # the call is retried with the answer; record that one
            return
        lines = "".join(
            json.dumps(frame, ensure_ascii=False, default=str) + "\n"
            for frame in frames(spec, arguments, ctx, outcome)
        ).encode("utf-8")
        async with self._lock:
            await anyio.to_thread.run_sync(self._write, lines)

    def _write(self, data: bytes) -> None:
        if self._fd is None:
            raise OSError(f"the recording {self.path} is closed")
        written = os.write(self._fd, data)
        while written < len(data):
            written += os.write(self._fd, data[written:])

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)


@dataclass(frozen=True, slots=True)
class Recorded:
    """What the transport returned for one recorded call: a result, or an error."""

    result: ExecResult | None
    error: str | None = None
    code: ErrorCode | None = None


def _text(raw: Mapping[str, Any], key: str) -> str | None:
    value = raw.get(key)
    return value if isinstance(value, str) else None


def _number(raw: Mapping[str, Any], key: str) -> int | None:
    value = raw.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _recorded(frame: dict[str, Any]) -> Recorded:
    """The result or error a RESULT frame holds, each field taken only with its own type."""
    raw = frame.get("result")
    if isinstance(raw, dict):
        return Recorded(
            ExecResult(
                ok=raw.get("ok") is True,
                value=raw.get("value"),
                text=_text(raw, "text"),
                error=_text(raw, "error"),
                truncated=raw.get("truncated") is True,
                output_path=_text(raw, "output_path"),
                exit_code=_number(raw, "exit_code"),
                http_status=_number(raw, "http_status"),
            )
        )
    error = frame.get("error")
    error = error if isinstance(error, dict) else {}
    code = error.get("code")
    known = {c.value: c for c in ErrorCode}
    message = _text(error, "message") or "tool failed"
    return Recorded(None, message, known.get(code) if isinstance(code, str) else None)


def _read_recording(path: Path, room: int) -> bytes:
    """The bytes of one recording file: a regular file of this user, not a link, of at most
    ``room`` bytes (a FIFO or a device planted in DIR neither holds nor floods the start).
    Raises ConfigError saying which file and why."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise ConfigError(
            f"replay: {path}: cannot be read as a recording ({exc.strerror or exc}; a link "
            "is not followed)",
            code=ErrorCode.CONFIG_INVALID,
        ) from exc
    try:
        info = os.fstat(fd)
        why = None
        if not stat.S_ISREG(info.st_mode):
            why = "is not a regular file"
        elif info.st_uid != os.getuid():
            why = "belongs to another user"
        elif info.st_size > room:
            why = f"has {info.st_size} bytes, more than the {room} left of {MAX_RECORDING_BYTES}"
        chunks: list[bytes] = []
        size = 0
        while why is None and (chunk := os.read(fd, 1 << 20)):
            chunks.append(chunk)
            size += len(chunk)
            if size > room:  # it grew after the check
                why = f"has more than the {room} bytes left of {MAX_RECORDING_BYTES}"
    finally:
        os.close(fd)
    if why is not None:
        raise ConfigError(
            f"replay: {path} {why} (all recordings together); a recording is a file serve "
            "--record wrote",
            code=ErrorCode.CONFIG_INVALID,
        )
    return b"".join(chunks)


def _read_frames(path: Path, room: int) -> tuple[list[dict[str, Any]], int]:
    """The frames of one recording, and the bytes read (at most ``room``)."""
    found: list[dict[str, Any]] = []
    data = _read_recording(path, room)
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            frame = json.loads(line.decode("utf-8"))
        except (ValueError, RecursionError) as exc:  # bad JSON, not UTF-8, nested too deep
            why = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
            raise ConfigError(
                f"{path}:{number}: not a JSON frame ({why}); is this a --record file?",
                code=ErrorCode.CONFIG_INVALID,
            ) from exc
        if isinstance(frame, dict) and frame.get("frame") in (CALL, RESULT):
            found.append(frame)
    return found, len(data)


class ReplayExecutor:
    """Serves recorded transport results by tool and canonical arguments."""

    def __init__(
        self, recordings: Mapping[str, list[Recorded]], secret_scan: SecretScan = OFF
    ) -> None:
        self._recordings = dict(recordings)
        self._served: dict[str, int] = {}
        self.secret_scan = secret_scan
        """What redacts a call's arguments as the recording did (the replaying policy's)."""

    @classmethod
    def load(cls, folder: Path) -> ReplayExecutor:
        """Every ``*.jsonl`` recording in ``folder``, in file-name order."""
        if not folder.is_dir():
            raise ConfigError(
                f"replay: {folder} is not a folder; give the DIR passed to serve --record",
                code=ErrorCode.CONFIG_INVALID,
            )
        recordings: dict[str, list[Recorded]] = {}
        room = MAX_RECORDING_BYTES
        for path in sorted(folder.glob("*.jsonl")):
            calls: dict[str, str] = {}
            frames, size = _read_frames(path, room)
            room -= size
            for frame in frames:
                if frame["frame"] == CALL:
                    calls[str(frame.get("call_id"))] = str(frame.get("match"))
                elif frame.get("executed") and str(frame.get("call_id")) in calls:
                    key = calls.pop(str(frame.get("call_id")))
                    recordings.setdefault(key, []).append(_recorded(frame))
        return cls(recordings)

    def redact_as(self, settings: SecretScanSettings) -> None:
        """Redact the arguments of calls as a policy with this ``[secret_scan]`` table does."""
        self.secret_scan = SecretScan(settings)

    def __len__(self) -> int:
        return sum(len(v) for v in self._recordings.values())

    async def run(self, request: ExecRequest) -> ExecResult:
        name = request.spec.name
        kept = redact_arguments(await kept_arguments(self.secret_scan, request.arguments, name))
        key = match_key(name, kept)
        served = self._recordings.get(key)
        if not served:
            shown = canonical(kept)
            shown = shown if len(shown) <= 200 else shown[:200] + "..."
            log.warning("replay: %s for %s %s", NO_RECORDING, name, shown)
            return ExecResult(ok=False, error=NO_RECORDING)
        index = self._served.get(key, 0)
        self._served[key] = index + 1
        recorded = served[min(index, len(served) - 1)]
        if recorded.result is None:
            raise ExecError(recorded.error or "tool failed", tool=name, code=recorded.code)
        return recorded.result
