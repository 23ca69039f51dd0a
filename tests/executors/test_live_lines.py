"""A running tool's voice at the executor seam, with real children: stderr lines and the
progress channel become log lines and progress reports (cut, redacted, bounded, counted), and
the result is what it always was."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from mcp_toolbridge.builtins.bash import BashTool
from mcp_toolbridge.builtins.session import Sessions
from mcp_toolbridge.executors.base import ExecRequest, ExecResult
from mcp_toolbridge.executors.cuts import MAX_LINE_CHARS
from mcp_toolbridge.executors.exec_tool import ExecToolExecutor
from mcp_toolbridge.executors.progress import Heartbeat
from mcp_toolbridge.executors.tool_log import LINE_BURST
from mcp_toolbridge.host import CallContext, LogLevel, at_least
from mcp_toolbridge.model import ExecTransport, Format, Source, ToolSpec
from tests.support.paths import TOOLS

SCRIPTED = (sys.executable, "-S", str(TOOLS / "scripted.py"))
SECRET_ID = "demo/key"
SECRET = "hunter2-live-value"


class Recorded:
    """A CallLog that keeps what it is sent, from ``threshold`` up."""

    def __init__(self, threshold: LogLevel = "debug") -> None:
        self.threshold = threshold
        self.lines: list[tuple[LogLevel, str, str]] = []

    def wants(self, level: LogLevel) -> bool:
        return at_least(level, self.threshold)

    async def send(self, level: LogLevel, text: str, *, logger: str) -> None:
        self.lines.append((level, logger, text))


def _spec(tmp_path: Path) -> ToolSpec:
    schema = {"type": "object"}
    return ToolSpec(
        name="scripted",
        id="scripted",
        input_schema=schema,
        runtime_input_schema=schema,
        transport=ExecTransport(argv=SCRIPTED),
        source=Source(path=str(tmp_path / "tools.json"), index=0, format=Format.AGENTCLI),
    )


async def _run(
    tmp_path: Path,
    arguments: dict[str, Any],
    log: Recorded | None,
    progress: Any = None,
) -> ExecResult:
    request = ExecRequest(
        spec=_spec(tmp_path),
        arguments=arguments,
        timeout_s=10,
        secrets={SECRET_ID: SECRET},
        progress=progress,
        context=CallContext(log=log),
    )
    environ = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    with anyio.fail_after(10):
        return await ExecToolExecutor(environ).run(request)


async def test_stderr_lines_are_sent_redacted_and_cut_and_stay_in_the_result(
    tmp_path: Path,
) -> None:
    log = Recorded()
    long = "x" * (MAX_LINE_CHARS + 50)
    stderr = f"first\n\n   \nkey is {SECRET}\n{long}\nlast words"
    result = await _run(tmp_path, {"stderr": stderr, "exit": 1}, log)
    assert [(level, logger) for level, logger, _ in log.lines] == [("info", "scripted")] * 4
    texts = [text for _, _, text in log.lines]
    assert texts[:2] == ["first", "key is [redacted:demo/key]"]
    assert texts[2] == "x" * MAX_LINE_CHARS + "… [50 more characters]"
    assert texts[3] == "last words"  # the last line, without its newline
    assert result.error is not None and result.error.endswith("last words")  # stderr as always
    assert SECRET not in repr(log.lines) + repr(result)


async def test_nothing_is_sent_below_the_clients_level_or_without_a_listener(
    tmp_path: Path,
) -> None:
    warned = Recorded("warning")
    channel = '{"log": "careful", "level": "warning"}\n{"log": "detail", "level": "debug"}\n'
    arguments = {"stderr": "an info line\n", "channel": channel}
    await _run(tmp_path, arguments, warned)
    assert warned.lines == [("warning", "scripted", "careful")]
    result = await _run(tmp_path, arguments, None)
    assert result.ok


class Deaf(Recorded):
    """A CallLog that wants no level (a 2026-07-28 request that did not opt in)."""

    def wants(self, level: LogLevel) -> bool:
        return False


async def test_a_call_whose_client_wants_no_level_runs_without_a_log_companion(
    tmp_path: Path,
) -> None:
    deaf = Deaf()
    channel = '{"log": "careful", "level": "error"}\nnot json\n'
    result = await _run(tmp_path, {"stderr": "a line\n", "channel": channel, "exit": 1}, deaf)
    assert deaf.lines == []  # no line, and no count of ignored channel lines
    assert result.error is not None and result.error.endswith("a line")  # stderr as always
    listening = Recorded("error")  # the severe levels only: the companion runs
    await _run(tmp_path, {"channel": channel}, listening)
    assert [line[:2] for line in listening.lines] == [("error", "scripted")]


async def test_lines_over_the_rate_are_counted_and_the_count_is_sent_once(
    tmp_path: Path,
) -> None:
    log = Recorded()
    total = LINE_BURST + 50
    stderr = "".join(f"line {n}\n" for n in range(total))
    result = await _run(tmp_path, {"stderr": stderr}, log)
    assert result.ok
    lines = [text for level, _, text in log.lines if level == "info"]
    warnings = [text for level, _, text in log.lines if level == "warning"]
    assert LINE_BURST <= len(lines) < total
    assert lines[:3] == ["line 0", "line 1", "line 2"]
    assert warnings == [
        f"{total - len(lines)} more log line(s) of this call were not sent (more than 20 a "
        "second); the result keeps the end of stderr"
    ]


async def test_the_progress_channel_carries_reports_and_leveled_lines_and_counts_the_rest(
    tmp_path: Path,
) -> None:
    log = Recorded()
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(current: float, total: float | None, message: str | None) -> None:
        seen.append((current, total, message))

    channel = "\n".join(
        [
            '{"progress": 1, "total": 4, "message": "using ' + SECRET + '"}',
            "not json at all",
            '{"progress": "two"}',
            '{"progress": 0.5}',  # backwards: skipped, not malformed
            "[1, 2]",
            '{"log": "from the channel", "level": "notice"}',
            '{"log": "no such level", "level": "loud"}',
            "",
            '{"progress": 3, "total": 4}',
            '{"progress": 4, "total": 4}',  # the last line may lack its newline
        ]
    )
    result = await _run(tmp_path, {"channel": channel}, log, progress)
    assert result.ok
    assert seen == [(1, 4, "using [redacted:demo/key]"), (3, 4, None), (4, 4, None)]
    assert ("notice", "scripted", "from the channel") in log.lines
    (count,) = [text for level, _, text in log.lines if level == "warning"]
    assert count.startswith("4 line(s) on the progress channel (TOOLBRIDGE_PROGRESS_FD)")


@pytest.mark.parametrize("beats", [True, False])
async def test_a_tool_that_says_it_reports_progress_gets_no_heartbeat(beats: bool) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(current: float, total: float | None, message: str | None) -> None:
        seen.append((current, total, message))

    beat = Heartbeat(progress, first_s=0, every_s=0, beats=beats)

    async def work() -> None:
        for _ in range(5):  # the heartbeat's turn, were it to beat
            await anyio.lowlevel.checkpoint()
        beat.report(1, 2, "half")

    await beat.run(work)
    assert seen[-1] == (1, 2, "half")
    assert (len(seen) > 1) is beats  # heartbeats (0.0 s) came first only with beats


async def test_an_unobserved_progress_channel_costs_the_tool_nothing(tmp_path: Path) -> None:
    result = await _run(tmp_path, {"progress": [[n, 100, None] for n in range(500)]}, None)
    assert result.ok and result.value["env"]["TOOLBRIDGE_PROGRESS_FD"].isdigit()


async def test_unobserved_calls_one_after_another_and_together_each_get_a_channel(
    tmp_path: Path,
) -> None:
    """The /dev/null behind an unobserved channel is the server's one descriptor: a call that
    ends does not close it under the next call, nor under calls running beside it."""
    lines = [[n, 100, None] for n in range(50)]
    for name in ("row", "beside-0", "beside-1", "beside-2"):
        (tmp_path / name).mkdir()
    results = [await _run(tmp_path / "row", {"progress": lines}, None) for _ in range(3)]
    together: list[ExecResult] = []

    async def one(folder: Path) -> None:
        together.append(await _run(folder, {"progress": lines}, None))

    async with anyio.create_task_group() as group:
        for n in range(3):
            group.start_soon(one, tmp_path / f"beside-{n}")
    for result in results + together:
        assert result.ok and result.value["args"]["progress"] == lines


@pytest.mark.parametrize("listens", [False, True])
async def test_more_than_a_pipe_holds_on_the_channel_never_blocks_the_tool(
    tmp_path: Path, listens: bool
) -> None:
    """Whether anyone listens or not (then the descriptor is /dev/null and nothing reads it),
    a tool may write as much as it likes on its progress channel and finishes as usual."""
    seen: list[float] = []

    async def progress(current: float, total: float | None, message: str | None) -> None:
        seen.append(current)

    lines = [[n, None, "x" * 200] for n in range(2_000)]  # about 0.5 MB
    result = await _run(tmp_path, {"progress": lines}, None, progress if listens else None)
    assert result.ok and result.value["args"]["progress"] == lines
    assert bool(seen) is listens and seen == sorted(seen)


@pytest.mark.parametrize("threshold", ["info", "warning"])
async def test_bash_stderr_lines_are_sent_when_the_client_listens(
    tmp_path: Path, threshold: LogLevel
) -> None:
    log = Recorded(threshold)
    sessions = Sessions()
    try:
        tool = BashTool(tmp_path, sessions, {"PATH": "/usr/bin:/bin"})
        request = ExecRequest(
            spec=tool.spec,
            arguments={"command": "echo out; echo err one >&2; printf 'err two' >&2"},
            timeout_s=10,
            context=CallContext(log=log),
        )
        with anyio.fail_after(10):
            result = await tool.run(request)
    finally:
        sessions.close_all()
    assert result.value["stderr"] == "err one\nerr two"
    expected = [("info", "bash", "err one"), ("info", "bash", "err two")]
    assert log.lines == (expected if threshold == "info" else [])


async def test_bash_keeps_a_partial_stderr_line_when_its_deadline_stops_it(
    tmp_path: Path,
) -> None:
    log = Recorded()
    sessions = Sessions()
    try:
        tool = BashTool(tmp_path, sessions, {"PATH": "/usr/bin:/bin"})
        request = ExecRequest(
            spec=tool.spec,
            arguments={"command": "printf 'half a line' >&2; exec sleep 30", "timeout": 500},
            timeout_s=10,
            context=CallContext(log=log),
        )
        with anyio.fail_after(10):
            result = await tool.run(request)
    finally:
        sessions.close_all()
    assert result.value["timed_out"] is True
    assert result.value["stderr"] == "half a line"
