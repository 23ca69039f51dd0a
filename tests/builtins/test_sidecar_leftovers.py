"""The sidecar folder of a server that was killed (SIGKILL, OOM, a power cut) is never removed
by it: the red-team pass of 2026-11-29 (5th) found 220 such folders, 104 MB of tool output, in
this machine's /tmp. The next server that makes a sidecar folder removes those of servers
that are gone. Real processes, a real SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from mcp_toolbridge.builtins import session as sessionmod

MAKER = """
import sys
from pathlib import Path
from mcp_toolbridge.builtins.session import Sessions
sessions = Sessions(Path(sys.argv[1]))
path = sessions.get("s").write_sidecar("bash", b"output" * 100)
print(path, flush=True)
sys.stdin.read()  # until killed
"""

SWEEPER = """
import sys
from pathlib import Path
from mcp_toolbridge.builtins import session
sessions = session.Sessions(Path(sys.argv[1]))
sessions.get("s").write_sidecar("bash", b"mine")
assert session.SWEEPER is not None
session.SWEEPER.join(30)
assert not session.SWEEPER.is_alive()
sessions.close_all()
"""


def _start(root: Path) -> tuple[subprocess.Popen[str], Path]:
    proc = subprocess.Popen(
        [sys.executable, "-c", MAKER, str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, "the maker wrote no sidecar"
    return proc, Path(line.strip()).parent


def test_the_sidecar_folder_of_a_killed_server_is_removed_by_the_next(tmp_path: Path) -> None:
    root = tmp_path / "tmp"
    killed, gone = _start(root)
    killed.send_signal(signal.SIGKILL)
    killed.communicate(timeout=30)
    alive, live = _start(root)
    old = time.time() - sessionmod.STALE_SIDECARS_S - 60
    for folder in (gone, live):
        os.utime(folder, (old, old))
    other = root / "toolbridge-not-a-sidecar"
    other.symlink_to(tmp_path)  # a link of that name is never followed nor removed
    try:
        assert gone.is_dir()  # nothing removed it: SIGKILL
        subprocess.run([sys.executable, "-c", SWEEPER, str(root)], check=True, timeout=60)
        assert not gone.exists()
        assert live.is_dir()  # its server runs: its folder is locked
        assert other.is_symlink() and tmp_path.is_dir()
    finally:
        alive.kill()
        alive.communicate(timeout=30)
