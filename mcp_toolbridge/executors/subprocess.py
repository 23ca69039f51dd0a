"""Run one child process, bounded: every process is started here (spawned by spawn.py, the
only importer of :mod:`subprocess`, or in a warm sandbox).

:func:`run_process` is the primitive under every manifest ``exec`` tool and the ``bash``
built-in. Its guarantees:

- argv only, never a shell; ``close_fds``; the child starts its own session, so it leads a new
  process group that is signalled as a whole;
- stdin is a pipe carrying the given bytes and then closed, or ``/dev/null``; never the
  server's own stdin or stdout (they carry MCP);
- stdout and stderr are drained concurrently and never block the child; stdout keeps at most
  ``max_output_bytes``, stderr a bounded tail; the rest is counted and discarded, so a child
  printing gigabytes costs the server bounded memory;
- on the deadline or on cancellation the group gets SIGTERM, then SIGKILL after
  ``kill_grace_s``; after the direct child exits normally, whatever is left in its group gets
  SIGKILL, so backgrounded grandchildren never outlive the call;
- on the deadline the raised :class:`ProcessTimeout` (an ``ExecTimeoutError``) carries what
  was collected so far as a partial :class:`ProcessOutcome`, including what was still in the
  pipes once the group was killed (at most ``LEFTOVER_BYTES`` per pipe).

What cannot be done from here: a descendant that calls ``setsid()``/``setpgid()`` leaves the
group and cannot be found by group signals (only a cgroup or a sub-reaper could). Such a
process may hold the pipes open; the call then still finishes ``DRAIN_GRACE_S`` after the
direct child's exit, our pipe ends are closed, and the escapee gets EPIPE/SIGPIPE on its next
write. It is otherwise left running.

With a :class:`~mcp_toolbridge.sandbox.Confinement` (every caller passes one, or ``None`` to
say it runs a process unconfined on purpose) the command runs inside the OS sandbox built from
the tool's profile, and a profile granting specific hosts gets its allowlisting proxy served
for as long as the child runs. Inside a sandbox the direct child is ``bwrap``: a command killed
by signal N comes back as exit status 128 + N, which is reported as that signal (as a shell
does); and the sandbox's own PID namespace ends with the command, so ``setsid`` escapees do not
survive the call there. When the launch comes with a warm sandbox (set up before the call,
``sandbox/warm.py``) the command is started there instead (:class:`~.child.WarmChild`), with
the same pipes, status and guarantees; and the pool's warm sandboxes are spawned by
:func:`~.spawn.spawn_warm`, given to the pool here once the sandbox is probed. What a run gives
back is in outcome.py.
"""

from __future__ import annotations

import signal as signals
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, nullcontext
from dataclasses import replace
from functools import partial

import anyio
import anyio.lowlevel

from mcp_toolbridge.errors import ConfigError, ErrorCode, ExecError, ExecSpawnError
from mcp_toolbridge.executors.base import DEFAULT_MAX_OUTPUT_BYTES
from mcp_toolbridge.executors.child import REAP_LIMIT_S, Child, WarmChild
from mcp_toolbridge.executors.hidden import hidden_hint
from mcp_toolbridge.executors.outcome import ProcessOutcome, ProcessTimeout, outcome_of
from mcp_toolbridge.executors.reaper import end_now, follow_sandbox, wait_ended
from mcp_toolbridge.executors.spawn import PopenChild, spawn, spawn_message, spawn_warm
from mcp_toolbridge.executors.streams import (
    LineSplitter,
    OutputFn,
    Sink,
    StderrLineFn,
    drain,
)
from mcp_toolbridge.sandbox import (
    Confinement,
    Launch,
    RunningCall,
    Sandbox,
    Support,
    WarmLost,
    diagnose,
    limit_hint,
    unrunnable,
)

STDERR_TAIL_BYTES = 64 * 1024
DRAIN_GRACE_S = 0.2
"""How long pipes are still read after the group is gone (only an escaped process holds them)."""
PROBE_TIMEOUT_S = 10.0
END_LIMIT_S = 1.0
"""How long a reload waits for a call it ends to be gone (a process stuck in the kernel)."""
_probed: dict[str, Support] = {}


async def run_process(
    argv: Sequence[str],
    *,
    stdin: bytes | None,
    cwd: str | None,
    env: Mapping[str, str],
    timeout_s: float,
    sandbox: Confinement | None,
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
    on_stderr_line: StderrLineFn | None = None,
    kill_grace_s: float = 2.0,
    stderr_tail_bytes: int = STDERR_TAIL_BYTES,
    on_output: OutputFn | None = None,
    pass_fds: Sequence[int] = (),
) -> ProcessOutcome:
    """Run ``argv`` to completion within ``timeout_s`` seconds, inside ``sandbox``.

    Raises :class:`ExecSpawnError` when the program cannot be started (or the sandbox is
    required and unavailable) and :class:`ProcessTimeout` (an :class:`ExecTimeoutError` with
    the partial outcome) when the deadline passes (the group is killed first).
    Cancellation kills the group, then propagates. ``on_output`` is told the size of each
    chunk read from stdout or stderr (progress reports count output with it). ``pass_fds``
    are inherited by the child under the same numbers (a progress channel); the caller keeps
    and closes them.
    """
    await anyio.lowlevel.checkpoint_if_cancelled()  # never spawn for an already-cancelled call
    if sandbox is not None and sandbox.sandbox.support is None and sandbox.sandbox.mode != "off":
        await probe_sandbox(sandbox.sandbox)
    call = None if sandbox is None else sandbox.sandbox.running.add(sandbox.profile.write)
    async with AsyncExitStack() as stack:
        if sandbox is not None and call is not None:  # a reload may end it (guard.py, Running)
            stack.callback(sandbox.sandbox.running.discard, call)
        try:
            launch = await stack.enter_async_context(_launch(argv, cwd, env, sandbox))
        except OSError as exc:  # the program or cwd, checked before the sandbox is built
            raise ExecSpawnError(spawn_message(argv[0] if argv else "", cwd, exc)) from exc
        outcome = await _run(
            launch,
            argv,
            stdin,
            cwd,
            timeout_s,
            max_output_bytes,
            on_stderr_line,
            kill_grace_s,
            stderr_tail_bytes,
            on_output,
            pass_fds,
            call,
        )
    if sandbox is not None and launch.sandboxed and outcome.exit_code not in (0, None):
        found = hidden_hint(sandbox, argv, cwd, outcome.stderr_tail, outcome.stdout)
        outcome = replace(outcome, hidden_hint=found) if found else outcome
    return outcome


async def probe_sandbox(sandbox: Sandbox, *, say: bool = True) -> Support:
    """Find out whether ``sandbox`` can run here and record it on the sandbox, which says so,
    loudly, in ``auto`` mode when it cannot. One real bubblewrap run per bwrap binary and
    process (about 10 ms): the flags every launch uses, around ``sh -c 'echo ok'``."""
    if sandbox.support is not None:
        return sandbox.support
    support = sandbox.unsupported()
    if support is None:
        assert sandbox.bwrap is not None
        support = _probed.get(sandbox.bwrap)
        if support is None:
            support = await _probe(sandbox.probe_argv())
            _probed[sandbox.bwrap] = support
    sandbox.record(support, say=say)
    if support.ok:
        sandbox.warm.spawn = spawn_warm
    return support


async def probe_sandbox_at_start(sandbox: Sandbox) -> None:
    """Probe as a server or CLI verb starts: where the sandbox cannot be used, ``auto`` says so
    (what failed, why, how to fix it) and goes on; ``required`` says so and raises ConfigError:
    nothing is started."""
    support = await probe_sandbox(sandbox)
    if sandbox.mode == "required" and not support.ok:  # what to do was logged
        raise ConfigError(
            "the OS sandbox is required (--sandbox required) but cannot be used here: "
            f"{support.reason}; nothing was started (why, and how to fix it, is above)",
            code=ErrorCode.CONFIG_INVALID,
        )


async def _probe(argv: list[str]) -> Support:
    try:
        outcome = await run_process(
            argv,
            stdin=None,
            cwd=None,
            env={"PATH": "/usr/bin:/bin"},
            timeout_s=PROBE_TIMEOUT_S,
            sandbox=None,  # this is the check of whether there can be one
            max_output_bytes=4096,
        )
    except ExecError as exc:
        return unrunnable(argv[0], exc.message)
    if outcome.exit_code == 0 and outcome.stdout.strip() == b"ok":
        return Support(True)
    lines = outcome.stderr_tail.decode("utf-8", "replace").strip().splitlines()
    return diagnose(argv[0], lines[-1] if lines else f"exit status {outcome.exit_code}")


def _launch(
    argv: Sequence[str], cwd: str | None, env: Mapping[str, str], sandbox: Confinement | None
) -> AbstractAsyncContextManager[Launch]:
    if not argv:
        raise ExecSpawnError("cannot start a tool with an empty command")
    if sandbox is None:
        return nullcontext(Launch(list(argv), dict(env), sandboxed=False))
    return sandbox.launch(argv, cwd=cwd, env=env)


async def _run(
    launch: Launch,
    argv: Sequence[str],
    stdin: bytes | None,
    cwd: str | None,
    timeout_s: float,
    max_output_bytes: int,
    on_stderr_line: StderrLineFn | None,
    kill_grace_s: float,
    stderr_tail_bytes: int,
    on_output: OutputFn | None,
    pass_fds: Sequence[int],
    call: RunningCall | None,
) -> ProcessOutcome:
    started = time.perf_counter()
    child = await _start(launch, argv[0], stdin, cwd, pass_fds)
    if call is not None and launch.sandboxed:
        call.started(partial(_end_sandbox, child))
    stdout = Sink(max_output_bytes, keep_tail=False, on_output=on_output)
    stderr = Sink(stderr_tail_bytes, keep_tail=True, on_output=on_output)
    timed_out = cut = False
    try:
        rest = child.write_stdin_now(stdin) if stdin is not None else b""
        with anyio.move_on_after(timeout_s) as deadline:
            if launch.info is not None and isinstance(child, PopenChild):
                child.sandbox_init = await follow_sandbox(launch.info.read)
            await _communicate(
                child, rest, stdout, stderr, max_output_bytes, on_stderr_line, launch.serve
            )
        timed_out = not child.reaped
        # The child ended in time but the deadline cut the reading of its pipes short (a
        # loaded machine runs the child before its reader): the rest is in the pipes.
        cut = deadline.cancelled_caught and child.reaped
    except BaseExceptionGroup as group:  # a failing on_stderr_line: surface the one error
        raise _first_leaf(group) from None
    finally:
        if not child.reaped:
            with anyio.CancelScope(shield=True):
                await child.terminate_group(kill_grace_s)
        if child.sandbox_init is not None:  # nothing of the sandbox outlives the call
            with anyio.CancelScope(shield=True):
                await wait_ended(child.sandbox_init, REAP_LIMIT_S)
        if timed_out or cut:
            child.read_leftovers(stdout, stderr)
        child.close()
    if call is not None and call.ended is not None and launch.sandboxed:  # by a reload
        raise ExecError(call.ended)
    if isinstance(child, WarmChild) and child.start_error is not None:
        raise ExecSpawnError(spawn_message(argv[0], cwd, child.start_error))
    outcome = outcome_of(child.returncode, stdout, stderr, started, launch.sandboxed)
    if launch.limits is not None:  # which of the sandbox's limits it hit, if it says so
        tail = bytes(stderr.data[-8192:]) + b"\n" + bytes(stdout.data[-4096:])
        failed = timed_out or outcome.exit_code != 0
        found = limit_hint(launch.limits, outcome.signal, tail, failed=failed)
        outcome = replace(outcome, limit_hint=found) if found else outcome
    if timed_out:
        said = f"tool timed out after {timeout_s:g}s"
        said += f". {outcome.limit_hint}" if outcome.limit_hint else ""
        raise ProcessTimeout(said, outcome=outcome)
    return outcome


async def _start(
    launch: Launch, program: str, stdin: bytes | None, cwd: str | None, pass_fds: Sequence[int]
) -> Child:
    """The command started: in the launch's warm sandbox when it has one that still works,
    else spawned (in a fresh sandbox when sandboxed)."""
    if launch.warm is not None and launch.plan is not None:
        if not await launch.warm.settled():  # its last call left something: it ended
            launch.warm.end()
        else:
            try:
                return WarmChild.start(launch.warm, launch.plan, stdin, pass_fds)
            except WarmLost as exc:
                launch.warm.end()
                if exc.sent:  # it may have started: never run a call twice
                    raise ExecSpawnError(f'cannot start "{program}": {exc}') from exc
        # nothing was sent: the call goes on in a fresh sandbox
    info = launch.info
    argv = launch.fresh_argv()
    passed = (*pass_fds, *info.passed) if info is not None else tuple(pass_fds)
    proc = spawn(argv, stdin is not None, cwd, launch.env, program=program, fds=passed)
    if info is not None:
        info.close_write()
    return PopenChild(proc)


def _end_sandbox(child: Child) -> None:
    """End ``child``'s sandbox now and wait (bounded) until nothing in it runs (a reload:
    guard.py, Running): a warm sandbox whole, a fresh one with its command."""
    if isinstance(child, WarmChild):
        end_now(child.warm.proc.pid, END_LIMIT_S)
    elif isinstance(child, PopenChild) and not child.reaped:  # else its PID may be another's
        end_now(child.proc.pid, END_LIMIT_S)


def _first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    first = group.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first


async def _communicate(
    child: Child,
    stdin_rest: bytes,
    stdout: Sink,
    stderr: Sink,
    max_output_bytes: int,
    on_stderr_line: StderrLineFn | None,
    serve: Callable[[], Awaitable[None]] | None,
) -> None:
    assert child.stdout is not None and child.stderr is not None
    proxy = anyio.CancelScope() if serve is not None else None
    async with anyio.create_task_group() as tg:
        if serve is not None and proxy is not None:
            tg.start_soon(_serve, proxy, serve)
        tg.start_soon(drain, child.stdout.fileno(), stdout)
        lines = None
        if on_stderr_line is not None:
            lines = LineSplitter(stderr, on_stderr_line, max_output_bytes)
        tg.start_soon(drain, child.stderr.fileno(), stderr, lines)
        if stdin_rest:
            tg.start_soon(child.feed_stdin, stdin_rest)
        await child.wait_exited()
        if proxy is not None:
            proxy.cancel()  # the sandbox is gone: nobody is left to use its proxy
        # The direct child is a zombie: its id is still reserved, so the group id is safe.
        child.signal_group(signals.SIGKILL)
        child.reap()
        tg.cancel_scope.deadline = min(
            tg.cancel_scope.deadline, anyio.current_time() + DRAIN_GRACE_S
        )


async def _serve(scope: anyio.CancelScope, serve: Callable[[], Awaitable[None]]) -> None:
    with scope:
        await serve()
