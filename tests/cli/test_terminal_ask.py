"""``mcp-toolbridge call`` on a real terminal (a pty) asks the person where the policy says
ask; without a terminal it stays headless and refuses."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from mcp_toolbridge.cli.ask import CONFIRM_PROMPT

ASK_WORD_COUNT = '[[rules]]\npermission = "word_count"\naction = "ask"\n'


@pytest.fixture
def argv(tmp_path: Path) -> list[str]:
    policy = tmp_path / "policy.toml"
    policy.write_text(ASK_WORD_COUNT, encoding="utf-8")
    return [
        "call",
        "word_count",
        "--args",
        '{"text": "one two three"}',
        "--policy",
        str(policy),
        "--workspace",
        str(tmp_path),
        "--no-audit",
    ]


def _env(tmp_path: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "TERM": "dumb"}


async def _read_until(fd: int, wanted: bytes, seen: bytearray) -> None:
    """Read the terminal into ``seen`` until ``wanted`` shows (or the terminal closes)."""
    while wanted not in seen:
        await anyio.wait_readable(fd)
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: every process holding the terminal has closed it
            return
        if not chunk:
            return
        seen += chunk


async def _on_terminal(argv: list[str], typed: bytes, env: dict[str, str]) -> tuple[int, str]:
    """Run the CLI with stdin, stdout and stderr on a new pty; type ``typed`` at the prompt;
    return the exit status and everything the terminal showed."""
    master, slave = pty.openpty()
    os.set_blocking(master, False)
    seen = bytearray()
    try:
        process = await anyio.open_process(
            [sys.executable, "-m", "mcp_toolbridge", *argv],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
        )
        os.close(slave)
        slave = -1
        async with process:
            with anyio.fail_after(60):
                await _read_until(master, CONFIRM_PROMPT.encode(), seen)
                os.write(master, typed)
                await _read_until(master, b"\x00never", seen)  # to the end of output
                status = await process.wait()
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)
    return status, seen.decode(errors="replace").replace("\r\n", "\n")


@pytest.mark.parametrize("typed", [b"y\n", b"a\n", b"Always\n"])
async def test_yes_or_always_at_the_terminal_runs_the_call(
    typed: bytes, argv: list[str], tmp_path: Path
) -> None:
    status, shown = await _on_terminal(argv, typed, _env(tmp_path))
    # The person asked is the one who typed `call`: the question was worded for someone
    # working with a model ("The assistant wants...").
    assert "You asked to run the tool 'word_count'" in shown
    assert "assistant" not in shown
    assert CONFIRM_PROMPT in shown
    assert status == 0, shown
    assert '"words": 3' in shown


async def test_enter_alone_at_the_terminal_is_no(argv: list[str], tmp_path: Path) -> None:
    status, shown = await _on_terminal(argv, b"\n", _env(tmp_path))
    assert status == 1, shown
    assert "rejected this call" in shown
    assert "mcp-toolbridge call: you answered no; nothing was run" in shown
    assert '"words"' not in shown


def test_without_a_terminal_the_call_is_refused_without_asking(
    argv: list[str], tmp_path: Path
) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mcp_toolbridge", *argv],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1
    assert CONFIRM_PROMPT not in proc.stderr
    assert "this client cannot ask one" in proc.stdout


async def test_a_calls_escapes_reach_the_terminals_question_as_escapes(
    argv: list[str], tmp_path: Path
) -> None:
    hostile = "one \x1b]0;owned\x07\x9b2J\u202eowt\U000e0041 three"
    at = argv.index("--args") + 1
    argv = [*argv[:at], json.dumps({"text": hostile}), *argv[at + 1 :]]
    status, shown = await _on_terminal(argv, b"y\n", _env(tmp_path))
    assert status == 0, shown
    for raw in ("\x1b", "\x07", "\x9b", "\u202e", "\U000e0041"):
        assert raw not in shown, repr(raw)
    assert "\\u202eowt" in shown and "\\x9b2J" in shown  # the question shows them escaped
