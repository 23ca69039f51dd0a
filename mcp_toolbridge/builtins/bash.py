"""bash: run one command with ``bash -c`` in the workspace, bounded, in a scrubbed environment.

A single command, not a session: every call is a fresh ``bash -c`` whose working directory is
the workspace, whose stdin is ``/dev/null`` and whose environment holds only ``PATH``, ``HOME``,
``LANG``, ``LC_ALL``, ``LC_CTYPE``, ``TERM``, ``TMPDIR``, ``USER`` (those that are set) plus
the names the operator passes through. It runs under the subprocess executor: its own process
group, killed as a whole on timeout and after the command exits, so background jobs never
outlive the call.

Which commands may run is decided before this tool is called: the bridge's capability check
and permission rules see every simple command of the line
(:mod:`mcp_toolbridge.policy.shell.parse`).

The value is ``{exit_code, stdout, stderr, timed_out, signal}``; the model reads the text,
stdout and stderr as printed with the exit code last. A non-zero exit is still a successful
call. stdout and stderr together are capped at 200 KB: past it each stream keeps its head and
its tail (errors come last) around a marker, and everything captured goes to a session
sidecar file named by ``output_path`` and, by its path, in the note. With the secret scan on
(the call's ``redact_cut``), each part shown is redacted with up to 16 KB of the output on
either side of its cut first, so a secret the cut splits is not shown in part.

While it runs, a client that asked for progress gets the elapsed time and the output bytes
so far, twice a second after the first second (:mod:`~mcp_toolbridge.executors.progress`),
and a client that listens to log messages at ``info`` gets each stderr line as it is written
(:class:`~mcp_toolbridge.executors.ToolLog`); the result keeps stderr as well.

A timeout is an error (``timed_out: true``) that still carries what the command printed until
it was killed, under the same caps and sidecar rules: in ``stdout``/``stderr`` and, because the
model sees only the error text of a failed call, in the error text too.
"""

from __future__ import annotations

import os
import shutil
import signal as signals
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from mcp_toolbridge.builtins.bash_spec import MAX_TIMEOUT_MS
from mcp_toolbridge.builtins.bash_spec import SPEC as SPEC  # the tool's own, as before
from mcp_toolbridge.builtins.session import Sessions
from mcp_toolbridge.errors import ArgumentsError, ErrorCode, ExecSpawnError
from mcp_toolbridge.executors import (
    ExecRequest,
    ExecResult,
    Heartbeat,
    ProcessOutcome,
    ProcessTimeout,
    ToolLog,
    run_beside,
    run_process,
    shown_bytes,
)
from mcp_toolbridge.host import RedactCut

MAX_OUTPUT_BYTES = 200 * 1024
"""stdout + stderr shown inline; the rest goes to the sidecar."""
CAPTURE_STDOUT_BYTES = 8 * 1024 * 1024
"""The head of stdout kept for the sidecar; beyond it bytes are counted, not kept."""
CAPTURE_STDERR_BYTES = 1024 * 1024
"""The tail of stderr kept for the sidecar."""
ENV_ALLOWLIST = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR", "USER")
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
_BASH_CANDIDATES = ("/bin/bash", "/usr/bin/bash")


def find_bash(environ: Mapping[str, str]) -> str | None:
    for candidate in _BASH_CANDIDATES:
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("bash", path=environ.get("PATH", DEFAULT_PATH))


class BashTool:
    """The bash built-in."""

    spec = SPEC

    def __init__(
        self,
        workspace: Path,
        sessions: Sessions,
        environ: Mapping[str, str],
        passthrough: Sequence[str] = (),
    ) -> None:
        self._workspace = workspace
        self._sessions = sessions
        names = dict.fromkeys((*ENV_ALLOWLIST, *passthrough))
        self._env = {name: environ[name] for name in names if name in environ}
        self._env.setdefault("PATH", DEFAULT_PATH)
        self._bash = find_bash(self._env)

    @property
    def env(self) -> Mapping[str, str]:
        """The child environment (the same for every call)."""
        return dict(self._env)

    async def run(self, request: ExecRequest) -> ExecResult:
        command = str(request.arguments["command"])
        if "\x00" in command:
            raise ArgumentsError("the command contains a NUL character; remove it", tool="bash")
        if not command.strip():
            raise ArgumentsError("the command is empty; give a command to run", tool="bash")
        given = request.arguments.get("timeout")
        default_ms = min(request.timeout_s * 1000, MAX_TIMEOUT_MS)
        timeout_ms = min(int(given), MAX_TIMEOUT_MS) if given is not None else default_ms
        if not self._workspace.is_dir():
            raise ExecSpawnError(
                f"the workspace {self._workspace} is not a directory; start the server with "
                "an existing --workspace",
                tool="bash",
            )
        if self._bash is None:
            raise ExecSpawnError(
                "bash was not found (/bin/bash, /usr/bin/bash or PATH); install bash",
                tool="bash",
            )
        argv = (self._bash, "-c", command)
        common: dict[str, Any] = {
            "argv": argv,
            "cwd": str(self._workspace),
            "env_keys": tuple(sorted(self._env)),
        }
        beat = Heartbeat(request.progress)
        voice = ToolLog(request.context.log, SPEC.name, redact_cut=request.context.redact_cut)
        try:
            outcome = await run_beside(
                lambda: run_process(
                    argv,
                    stdin=None,
                    cwd=str(self._workspace),
                    env=self._env,
                    timeout_s=timeout_ms / 1000,
                    sandbox=request.sandbox,
                    max_output_bytes=CAPTURE_STDOUT_BYTES,
                    on_stderr_line=voice.stderr_line if voice.wants("info") else None,
                    stderr_tail_bytes=CAPTURE_STDERR_BYTES,
                    on_output=beat.count,
                ),
                beat,
                voice,
            )
        except ProcessTimeout as timeout:
            # Clipping up to 9 MB of output and writing the sidecar: off the event loop.
            return await anyio.to_thread.run_sync(
                self._timed_out, request, timeout.outcome, timeout_ms, common
            )
        return await anyio.to_thread.run_sync(self._result, request, outcome, common)

    def _timed_out(
        self,
        request: ExecRequest,
        outcome: ProcessOutcome,
        timeout_ms: float,
        common: dict[str, Any],
    ) -> ExecResult:
        shown = self._shown(request, outcome)
        value: dict[str, Any] = {
            "exit_code": None,
            "stdout": shown.stdout,
            "stderr": shown.stderr,
            "timed_out": True,
            "signal": None,
        }
        if shown.note:
            value["note"] = shown.note
        error = (
            f"the command was killed after {timeout_ms / 1000:g} s (timeout {timeout_ms:g} ms), "
            "together with the processes it started in its process group. Give a larger "
            f"`timeout` (at most {MAX_TIMEOUT_MS} ms) or make the command finish sooner (e.g. "
            "limit the work, or redirect long output to a file and read it afterwards)."
        )
        if outcome.stdout_bytes or outcome.stderr_bytes:
            error += (
                "\nWhat it printed before it was killed:\n"
                f"--- stdout ---\n{shown.stdout}\n--- stderr ---\n{shown.stderr}"
            )
            error += f"\n{shown.note}" if shown.note else ""
        else:
            error += "\nIt printed nothing before it was killed."
        if outcome.limit_hint:
            error += f"\n{outcome.limit_hint}"
        return ExecResult(
            ok=False,
            value=value,
            error=error,
            code=ErrorCode.EXEC_TIMEOUT,
            stdout_bytes=outcome.stdout_bytes,
            stderr_bytes=outcome.stderr_bytes,
            truncated=shown.truncated,
            output_path=shown.output_path,
            sandboxed=outcome.sandboxed,
            **common,
        )

    def _result(
        self, request: ExecRequest, outcome: ProcessOutcome, common: dict[str, Any]
    ) -> ExecResult:
        shown = self._shown(request, outcome)
        value: dict[str, Any] = {
            "exit_code": outcome.exit_code,
            "stdout": shown.stdout,
            "stderr": shown.stderr,
            "timed_out": False,
            "signal": _signal_name(outcome.signal),
        }
        if shown.note:
            value["note"] = shown.note
        if outcome.limit_hint:
            value["limit"] = outcome.limit_hint
        if outcome.hidden_hint:
            value["hidden"] = outcome.hidden_hint
        return ExecResult(
            ok=True,
            value=value,
            text=_text(value),
            exit_code=outcome.exit_code,
            stdout_bytes=outcome.stdout_bytes,
            stderr_bytes=outcome.stderr_bytes,
            truncated=shown.truncated,
            output_path=shown.output_path,
            sandboxed=outcome.sandboxed,
            **common,
        )

    def _shown(self, request: ExecRequest, outcome: ProcessOutcome) -> _Shown:
        """The output as shown: whole up to MAX_OUTPUT_BYTES, else head and tail of each
        stream, with everything captured in a sidecar file."""
        total = outcome.stdout_bytes + outcome.stderr_bytes
        if total <= MAX_OUTPUT_BYTES:
            return _Shown(_decode(outcome.stdout), _decode(outcome.stderr_tail))
        state = self._sessions.get(request.context.session_id)
        saved = state.write_sidecar("bash", _sidecar(outcome))
        output_path = str(saved) if saved is not None else None
        where = output_path or "no file (the session's sidecar space is used up)"
        err_share = min(len(outcome.stderr_tail), MAX_OUTPUT_BYTES // 4)
        out_share = min(len(outcome.stdout), MAX_OUTPUT_BYTES - err_share)
        err_share = min(len(outcome.stderr_tail), MAX_OUTPUT_BYTES - out_share)
        redact = request.context.redact_cut
        return _Shown(
            clip(outcome.stdout, out_share, outcome.stdout_bytes, where, redact=redact),
            clip(
                outcome.stderr_tail,
                err_share,
                outcome.stderr_bytes,
                where,
                is_tail=True,
                redact=redact,
            ),
            note=(
                f"The output ({outcome.stdout_bytes} bytes of stdout, {outcome.stderr_bytes} "
                f"of stderr) was cut to {MAX_OUTPUT_BYTES // 1024} KB: the head and the tail "
                f"are shown. The full output is in {where}; use read (with an offset) or grep "
                "on it."
            ),
            truncated=True,
            output_path=output_path,
        )


@dataclass(frozen=True, slots=True)
class _Shown:
    stdout: str
    stderr: str
    note: str | None = None
    truncated: bool = False
    output_path: str | None = None


def _text(value: dict[str, Any]) -> str:
    """What the model reads: stdout as printed, stderr after a marker, then how it ended."""
    parts: list[str] = []
    for label, stream in (("", value["stdout"]), ("--- stderr ---\n", value["stderr"])):
        if stream:
            parts.append(label + (stream if stream.endswith("\n") else stream + "\n"))
    if not parts:
        parts.append("(no output)\n")
    if value["signal"] is not None:
        parts.append(f"bash was killed by {value['signal']}")
    else:
        parts.append(f"exit code {value['exit_code']}")
    for hint in ("limit", "hidden"):
        if value.get(hint):
            parts.append(f"\n\n{value[hint]}")
    if value.get("note"):
        parts.append(f"\n\n({value['note']})")
    return "".join(parts)


def _signal_name(number: int | None) -> str | None:
    if number is None:
        return None
    try:
        return signals.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _sidecar(outcome: ProcessOutcome) -> bytes:
    parts = [b"--- stdout ---\n", outcome.stdout]
    if outcome.stdout_truncated:
        parts.append(
            f"\n[only the first {len(outcome.stdout)} of {outcome.stdout_bytes} bytes of stdout "
            "were kept]".encode()
        )
    parts.append(b"\n--- stderr ---\n")
    if outcome.stderr_truncated:
        parts.append(
            f"[only the last {len(outcome.stderr_tail)} of {outcome.stderr_bytes} bytes of "
            "stderr were kept]\n".encode()
        )
    parts.append(outcome.stderr_tail)
    return b"".join(parts)


def _head(data: bytes, size: int) -> bytes:
    """The first ``size`` bytes at most, cut back to a UTF-8 character boundary."""
    end = min(size, len(data))
    while 0 < end < len(data) and end > size - 4 and data[end] & 0xC0 == 0x80:
        end -= 1
    return data[:end]


def _tail(data: bytes, size: int) -> bytes:
    """The last ``size`` bytes at most, moved forward to a UTF-8 character boundary."""
    start = max(len(data) - size, 0)
    limit = start + 4
    while start < min(len(data), limit) and data[start] & 0xC0 == 0x80:
        start += 1
    return data[start:]


def clip(
    data: bytes,
    share: int,
    total: int,
    where: str,
    *,
    is_tail: bool = False,
    redact: RedactCut | None = None,
) -> str:
    """At most ``share`` bytes of one stream as text: the head (3/4) and the tail (1/4) around
    a marker. ``data`` is what was captured of ``total`` bytes: its head, or its tail when
    ``is_tail``; a part that was not captured cannot be shown and the marker says so. Each
    part shown is redacted by ``redact`` with the text around its cut (blocking)."""
    complete = len(data) == total
    if complete and total <= share:
        return _decode(data)
    if complete:
        head = _head(data, share * 3 // 4)
        tail = _tail(data, share - len(head))
        omitted = total - len(head) - len(tail)
        marker = f"\n… {omitted} bytes omitted, full output in {where} …\n"
        shown_tail = shown_bytes(data, len(data) - len(tail), len(data), redact)
        return shown_bytes(data, 0, len(head), redact) + marker + shown_tail
    if is_tail:
        tail = _tail(data, share)
        return f"… {total - len(tail)} earlier bytes omitted, see {where} …\n" + shown_bytes(
            data, len(data) - len(tail), len(data), redact
        )
    head = _head(data, share)
    return shown_bytes(data, 0, len(head), redact) + (
        f"\n… {total - len(head)} more bytes omitted (only the first {len(data)} were kept), "
        f"see {where} …\n"
    )
