"""``mcp-toolbridge console-url`` reads only what a running server of this user kept for it
(cli/console_url.py): a file another user could have written or read (wider permissions), or
one of a process that is gone, gives nothing, and the latter is removed."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest

from mcp_toolbridge.cli.console_url import UrlFile, running

pytestmark = pytest.mark.anyio

URL = "http://127.0.0.1:8800/?token=abc"


async def test_a_running_servers_file_is_read_and_others_are_not(tmp_path: Path) -> None:
    folder = tmp_path / "console"
    kept = UrlFile(folder, os.getpid())  # this process plays the running server
    await kept.keep("console", URL)
    assert folder.stat().st_mode & 0o777 == 0o700
    assert kept.path.stat().st_mode & 0o777 == 0o600
    assert running(folder) == [{"pid": os.getpid(), "urls": {"console": URL}}]

    kept.path.chmod(0o644)  # readable by others: not this server's own any more
    assert running(folder) == []
    kept.path.chmod(0o600)

    ended = await anyio.run_process([sys.executable, "-c", "import os; print(os.getpid())"])
    gone = int(ended.stdout)
    (folder / f"{gone}.json").write_text(json.dumps({"pid": gone, "urls": {"console": URL}}))
    (folder / f"{gone}.json").chmod(0o600)
    assert running(folder) == [{"pid": os.getpid(), "urls": {"console": URL}}]
    assert not (folder / f"{gone}.json").exists()  # the server is gone: so is its file

    folder.chmod(0o755)  # a folder others may read is not trusted
    assert running(folder) == []
    folder.chmod(0o700)
    kept.remove()
    assert running(folder) == []


async def test_console_url_says_when_no_server_runs(tmp_path: Path) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    env["XDG_RUNTIME_DIR"] = str(runtime)
    done = await anyio.run_process(
        [sys.executable, "-m", "mcp_toolbridge", "console-url"], env=env, check=False
    )
    assert done.returncode == 1 and done.stdout == b""
    assert b"no server running as this user" in done.stderr
