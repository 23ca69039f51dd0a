"""Run manifest ``exec`` tools: build argv, environment and stdin, read the output.

The ToolSpec's :class:`~mcp_toolbridge.model.ExecTransport` says everything format-specific:
how the arguments travel (``args_via``), how stdout is read (``stdout``), whether
``{"ok": false}`` means failure (``ok_flag``) and which environment the child gets (``env``).

Environment rule: a child gets PATH and HOME from the server's environment, then
``env.values``, then the ``env.passthrough`` names that are set in the server's environment
(they win over values), then each resolved secret as a variable named by :func:`secret_env_name`,
then ``TOOLBRIDGE_PROGRESS_FD``. Nothing else of the server's environment reaches a tool.

While it runs: each stderr line goes to the client as a log line when it listens
(:mod:`~mcp_toolbridge.executors.tool_log`; stderr stays in the result as before), and the
progress channel, a descriptor named by ``TOOLBRIDGE_PROGRESS_FD``, carries the tool's own
progress reports and leveled log lines (:mod:`~mcp_toolbridge.executors.progress_channel`).
Until a tool reports its own, a long call reports its elapsed time and output bytes
(:mod:`~mcp_toolbridge.executors.progress`).

Failure: a non-zero exit gives ``ExecResult(ok=False)`` whose error is the ``error`` field of
a JSON line last on stderr, else the stderr tail, else ``tool exited with code N`` /
``tool was killed by signal SIGX`` (at most ~1000 characters; ``exit_code`` is ``-N`` for a
signal). With ``ok_flag``, a result ``{"ok": false, "error": ...}`` is a failure too.

Every resolved (non-empty) secret value is replaced by ``[redacted:<id>]`` in what goes back:
the result value, error texts, progress messages and argv. With the secret scan on, the ends of
stderr and the start of stdout an error text quotes are redacted with the output around the
cut first (:mod:`~mcp_toolbridge.executors.cuts`; once per failed call, on the event loop when
the output is small: a scan of about 16 KB).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread

from mcp_toolbridge.errors import ErrorCode, ExecError, ExecOutputError, ExecSpawnError
from mcp_toolbridge.executors.base import ExecRequest, ExecResult
from mcp_toolbridge.executors.cuts import redacted_head, redacted_tail
from mcp_toolbridge.executors.outcome import ProcessOutcome
from mcp_toolbridge.executors.progress import Companion, Heartbeat, run_beside
from mcp_toolbridge.executors.progress_channel import ProgressChannel
from mcp_toolbridge.executors.subprocess import run_process
from mcp_toolbridge.executors.tool_log import ToolLog
from mcp_toolbridge.host import CUT_MARGIN_CHARS, LOG_LEVELS, RedactCut
from mcp_toolbridge.model import EnvSpec, ExecTransport
from mcp_toolbridge.secrets import redact, redact_line, redact_value, secret_env_name

__all__ = ["ExecToolExecutor", "build_env", "secret_env_name"]

BASE_ENV_NAMES = ("PATH", "HOME")
INTERPRETER_FALLBACKS = {"python": "python3", "nodejs": "node"}
ERROR_TEXT_CHARS = 1000
QUOTE_BYTES = 200
INLINE_PARSE_BYTES = 256 * 1024
"""Output up to this size is parsed on the event loop (well under a millisecond); more is
parsed in a worker thread."""


def build_env(
    spec: EnvSpec, environ: Mapping[str, str], secrets: Mapping[str, str]
) -> dict[str, str]:
    env = {name: environ[name] for name in BASE_ENV_NAMES if name in environ}
    env.update(spec.values)
    env.update({name: environ[name] for name in spec.passthrough if name in environ})
    env.update({secret_env_name(sid): value for sid, value in secrets.items()})
    return env


class ExecToolExecutor:
    """Executes ToolSpecs whose transport is :class:`ExecTransport`."""

    def __init__(
        self, environ: Mapping[str, str] | None = None, *, kill_grace_s: float = 2.0
    ) -> None:
        self._environ = dict(os.environ if environ is None else environ)
        self._kill_grace_s = kill_grace_s

    async def run(self, request: ExecRequest) -> ExecResult:
        spec = request.spec
        transport = spec.transport
        if not isinstance(transport, ExecTransport):
            raise ExecError(
                f"tool {spec.name!r} has a {transport.kind} transport; it cannot run as a process",
                tool=spec.name,
                code=ErrorCode.EXEC_UNSUPPORTED,
            )
        redact = _Redactor(request.secrets, request.context.redact_cut)
        try:
            return await self._run(request, transport, redact)
        except ExecError as exc:
            if not exc.tool:
                exc.tool = spec.name
            raise

    async def _run(
        self, request: ExecRequest, transport: ExecTransport, redact: _Redactor
    ) -> ExecResult:
        cut = request.context.redact_cut
        beat = Heartbeat(request.progress, beats=not transport.reports_progress, redact_cut=cut)
        voice = ToolLog(
            request.context.log,
            request.spec.name,
            redact.line,
            redact_cut=cut,
        )
        listeners = _listened(request, beat, voice)
        channel = ProgressChannel(
            beat, voice, redact.line, listened=bool(listeners), redact_cut=cut
        )
        try:
            launch = _prepare(request, transport, self._environ, channel.env)
            sandbox = request.sandbox
            if sandbox is not None:  # the arguments file and the working directory, read-only
                sandbox = sandbox.with_read(launch.tmpdir, launch.cwd)
            try:
                outcome = await run_beside(
                    lambda: run_process(
                        launch.argv,
                        stdin=launch.stdin,
                        cwd=launch.cwd,
                        env=launch.env,
                        timeout_s=request.timeout_s,
                        sandbox=sandbox,
                        max_output_bytes=request.max_output_bytes,
                        on_stderr_line=voice.stderr_line if voice.wants("info") else None,
                        kill_grace_s=self._kill_grace_s,
                        on_output=beat.count,
                        pass_fds=(channel.fd,),
                    ),
                    *([channel, *listeners] if listeners else []),  # it feeds the others
                )
            finally:
                launch.cleanup()
        finally:
            channel.close()
        if len(outcome.stdout) + len(outcome.stderr_tail) > INLINE_PARSE_BYTES:
            # Parsing (and redacting) megabytes of JSON holds the GIL: off the event loop.
            ok, value, error = await anyio.to_thread.run_sync(
                _interpret, outcome, launch.transport, redact
            )
        else:
            ok, value, error = _interpret(outcome, launch.transport, redact)
        return ExecResult(
            ok=ok,
            value=value,
            error=error,
            exit_code=outcome.exit_code if outcome.signal is None else -outcome.signal,
            stdout_bytes=outcome.stdout_bytes,
            stderr_bytes=outcome.stderr_bytes,
            truncated=outcome.stdout_truncated,
            argv=tuple(redact.text(arg) for arg in launch.argv),
            cwd=launch.cwd,
            env_keys=tuple(sorted(launch.env)),
            sandboxed=outcome.sandboxed,
        )


def _listened(request: ExecRequest, beat: Heartbeat, voice: ToolLog) -> list[Companion]:
    """The heartbeat and the log lines, when someone listens: without a progress callback the
    heartbeat sends nothing, and without a client log no line is queued or counted as sent
    (the progress channel still reads, and ignores, what the tool writes). A client that
    wants no level at all (a 2026-07-28 request without ``io.modelcontextprotocol/logLevel``
    in its ``_meta``: fixed for the request) gets no log companion either: one task less a
    call, and nothing it would have sent. With neither, nothing the progress channel carries
    can reach anyone: it is /dev/null, and read by no task (:class:`ProgressChannel`)."""
    companions: list[Companion] = []
    if request.progress is not None:
        companions.append(beat)
    if voice.wants(LOG_LEVELS[-1]):  # the most severe level: wanted if any is
        companions.append(voice)
    return companions


@dataclass(frozen=True, slots=True)
class _Launch:
    transport: ExecTransport
    argv: tuple[str, ...]
    stdin: bytes | None
    cwd: str
    env: dict[str, str]
    tmpdir: str | None

    def cleanup(self) -> None:
        if self.tmpdir is not None:
            shutil.rmtree(self.tmpdir, ignore_errors=True)


def _prepare(
    request: ExecRequest,
    transport: ExecTransport,
    environ: Mapping[str, str],
    channel_env: Mapping[str, str],
) -> _Launch:
    """argv, stdin, cwd and environment for one call (a few cheap syscalls, done inline)."""
    env = build_env(transport.env, environ, request.secrets)
    env.update(channel_env)
    cwd = transport.cwd or os.path.dirname(os.path.abspath(request.spec.source.path))
    if not os.path.isdir(cwd):
        raise ExecSpawnError(
            f'working directory "{cwd}" does not exist; fix the tool\'s cwd in the manifest'
        )
    # On the server's PATH, as the sandbox looks a name up: never on the child's (a secret
    # named "path" sets that), which would choose the folder the sandbox shows the program in.
    program = _resolve_program(transport.argv[0], environ.get("PATH") or os.defpath)
    payload = json.dumps(dict(request.arguments)).encode()
    if transport.args_via == "stdin":
        argv = (program, *transport.argv[1:])
        return _Launch(transport, argv, payload, cwd, env, None)
    tmpdir, path = _write_payload(payload)
    return _Launch(transport, (program, path, *transport.argv[1:]), None, cwd, env, tmpdir)


def _resolve_program(command: str, path: str) -> str:
    if os.sep in command:
        return command
    for candidate in (command, INTERPRETER_FALLBACKS.get(command)):
        if candidate and (found := shutil.which(candidate, path=path)):
            return found
    raise ExecSpawnError(f'interpreter "{command}" not found on PATH (PATH={path})')


def _write_payload(payload: bytes) -> tuple[str, str]:
    """The payload in a 0600 file inside a fresh 0700 directory."""
    tmpdir = tempfile.mkdtemp(prefix="mcp-toolbridge-")
    path = os.path.join(tmpdir, "arguments.json")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as file:
            file.write(payload)
    except OSError as exc:
        shutil.rmtree(tmpdir, ignore_errors=True)
        raise ExecSpawnError(f"cannot write the arguments file {path}: {exc.strerror}") from exc
    return tmpdir, path


def _interpret(
    outcome: ProcessOutcome, transport: ExecTransport, redact: _Redactor
) -> tuple[bool, Any, str | None]:
    """(ok, value, error) from what the process did."""
    if outcome.exit_code != 0:
        error = _failure_text(outcome, redact)
        error += f"\n{outcome.limit_hint}" if outcome.limit_hint else ""
        # the paths it names come from the output: its secrets are replaced there too
        error += f"\n{redact.text(outcome.hidden_hint)}" if outcome.hidden_hint else ""
        return False, None, error
    if transport.stdout == "json":
        value = _parse_json(outcome, redact)
    else:
        value = _parse_first_object(outcome, redact)
    value = redact.value(value)
    if transport.ok_flag and isinstance(value, dict) and value.get("ok") is False:
        return False, value, _ok_false_text(value)
    return True, value, None


def _failure_text(outcome: ProcessOutcome, redact: _Redactor) -> str:
    """The error text of a failed run, its secrets replaced before it is cut (a cut through
    a secret would show the part of it that no exact match finds)."""
    text = redact.text(outcome.stderr_tail.decode("utf-8", "replace").strip())
    lines = [line for line in text.splitlines() if line.strip()]
    if lines:
        try:
            last = json.loads(lines[-1])
        except ValueError:
            last = None
        if isinstance(last, dict) and "error" in last:
            error = redact.value(last["error"])  # dumped below, with escapes no match finds
            text = error if isinstance(error, str) else json.dumps(error)
        if len(text) <= ERROR_TEXT_CHARS:
            return text
        return "…" + redacted_tail(text, ERROR_TEXT_CHARS, redact.cut)
    if outcome.signal is not None:
        return f"tool was killed by signal {_signal_name(outcome.signal)}"
    return f"tool exited with code {outcome.exit_code}"


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return str(signum)


def _ok_false_text(value: dict[str, Any]) -> str:
    error = value.get("error")
    if isinstance(error, dict):
        message = error.get("message")
        code = error.get("code")
        if isinstance(message, str):
            return f"{code}: {message}" if isinstance(code, str) else message
        return json.dumps(error)
    if isinstance(error, str):
        return error
    return "tool reported ok: false" if error is None else json.dumps(error)


def _parse_json(outcome: ProcessOutcome, redact: _Redactor) -> Any:
    text = outcome.stdout.decode("utf-8", "replace").strip()
    if not text:
        return {}
    try:
        return json.loads(text)
    except ValueError as exc:
        problem = _output_problem("tool printed output that is not JSON", outcome, redact)
        raise ExecOutputError(problem) from exc


def _parse_first_object(outcome: ProcessOutcome, redact: _Redactor) -> Any:
    text = outcome.stdout.decode("utf-8", "replace")
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start >= 0:
        try:
            value, _end = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        return value
    raise ExecOutputError(_output_problem("Failed to parse tool JSON output", outcome, redact))


def _output_problem(head: str, outcome: ProcessOutcome, redact: _Redactor) -> str:
    start = redact.text(outcome.stdout[: QUOTE_BYTES + CUT_MARGIN_CHARS].decode("utf-8", "replace"))
    message = f"{head}: {redacted_head(start, QUOTE_BYTES, redact.cut)!r}"
    if outcome.stdout_truncated:
        message += (
            f" (stdout exceeded the {len(outcome.stdout)}-byte limit and was cut;"
            " print less, or start the server with a larger --max-output BYTES)"
        )
    else:
        message += " (stdout is the result: print the JSON there and log lines on stderr)"
    stderr = outcome.stderr_tail.decode("utf-8", "replace").strip()
    if stderr:
        message += f"; stderr: {redacted_tail(redact.text(stderr), ERROR_TEXT_CHARS, redact.cut)}"
    return message


class _Redactor:
    """Replaces every secret value by ``[redacted:<id>]`` (see :mod:`mcp_toolbridge.secrets`)."""

    def __init__(self, secrets: Mapping[str, str], cut: RedactCut | None = None) -> None:
        self._secrets = {sid: value for sid, value in secrets.items() if value}
        self.cut = cut
        """The call's redaction of a cut (the secret scan's; None when it is off)."""

    def text(self, text: str) -> str:
        return redact(text, self._secrets) if self._secrets else text

    def value(self, value: Any) -> Any:
        return redact_value(value, self._secrets) if self._secrets else value

    def line(self, text: str) -> str:
        """One live log line or progress message (:func:`~mcp_toolbridge.secrets.redact_line`)."""
        return redact_line(text, self._secrets) if self._secrets else text
