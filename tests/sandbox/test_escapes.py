"""Real escapes, each refused by the sandbox alone.

Every attack is a ``python3 -c`` script run through ``run_process`` with the confinement a
call would get: the capability check and the bash parser never see inside such a script, so
only the sandbox stands in the way. Each test runs the same script with ``--sandbox off`` too,
where it succeeds: the probe is real, and it is the sandbox that stops it.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from anyio.abc import SocketAttribute, SocketStream

from tests.sandbox.conftest import PRIVATE_KEY, Box, report

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")


@pytest.fixture(params=["fresh", "warm"])
def box(request: pytest.FixtureRequest, tmp_path: Path, sandbox_support: None) -> Iterator[Box]:
    """Each escape is tried in a sandbox made for the call and in a warm one (set up before
    the call, as a tool called again gets: sandbox/warm.py)."""
    box = Box(tmp_path, warm=request.param == "warm")
    yield box
    box.close()


INTERPRETER = (Path(sys.prefix), Path(sys.executable), Path(sys.executable).resolve())
"""Where the interpreter the tests run comes from (its venv, as named and as resolved)."""

TRY = """
import json, sys
def attempt(action):
    try:
        return {"ok": True, "value": action()}
    except OSError as exc:
        return {"ok": False, "error": type(exc).__name__}
"""


async def test_writing_outside_the_workspace_is_refused(box: Box) -> None:
    target = box.outside / "planted.txt"
    script = TRY + (
        f"print(json.dumps(attempt(lambda: open({str(target)!r}, 'w').write('owned'))))"
    )
    sandboxed = report(await box.python(script))
    assert not sandboxed["ok"] and not target.exists()
    unconfined = report(await box.python(script, mode="off"))
    assert unconfined["ok"] and target.read_text() == "owned"


async def test_a_read_only_grant_cannot_be_written(box: Box) -> None:
    target = box.outside / "notes.txt"
    target.write_text("original", encoding="utf-8")
    requires = {"read": [str(box.outside)]}
    script = TRY + (
        f"print(json.dumps([attempt(lambda: open({str(target)!r}).read()),"
        f" attempt(lambda: open({str(target)!r}, 'w').write('changed'))]))"
    )
    read, write = report(await box.python(script, requires=requires))
    assert read == {"ok": True, "value": "original"}
    assert write == {"ok": False, "error": "OSError"}  # EROFS
    assert target.read_text() == "original"


async def test_the_workspace_is_writable(box: Box) -> None:
    script = TRY + "print(json.dumps(attempt(lambda: open('made.txt', 'w').write('x'))))"
    assert report(await box.python(script))["ok"]
    assert (box.ws / "made.txt").read_text() == "x"


@pytest.mark.parametrize("grant_home", [False, True], ids=["home-hidden", "home-granted"])
async def test_the_private_key_in_the_home_folder_cannot_be_read(
    box: Box, grant_home: bool
) -> None:
    """Hidden with the rest of the home folder; masked when a grant covers the home folder."""
    key = box.home / ".ssh" / "id_ed25519"
    requires = {"read": [str(box.root)]} if grant_home else {}
    script = TRY + f"print(json.dumps(attempt(lambda: open({str(key)!r}).read())))"
    sandboxed = report(await box.python(script, requires=requires))
    assert sandboxed["ok"] is False
    unconfined = report(await box.python(script, mode="off", requires=requires))
    assert unconfined == {"ok": True, "value": PRIVATE_KEY}


async def test_a_granted_secret_path_is_not_masked(box: Box) -> None:
    key = box.home / ".ssh" / "id_ed25519"
    requires = {"read": [str(box.home / ".ssh")]}
    script = TRY + f"print(json.dumps(attempt(lambda: open({str(key)!r}).read())))"
    assert report(await box.python(script, requires=requires)) == {"ok": True, "value": PRIVATE_KEY}


async def test_a_root_granted_inside_a_masked_folder_shows_only_itself(box: Box) -> None:
    ssh = box.home / ".ssh"
    (ssh / "known_hosts").write_text("github.com ssh-ed25519 AAAA\n", encoding="utf-8")
    requires = {"read": [str(box.root), str(ssh / "known_hosts")]}
    script = TRY + (
        f"print(json.dumps([attempt(lambda: open({str(ssh / 'known_hosts')!r}).read()),"
        f" attempt(lambda: open({str(ssh / 'id_ed25519')!r}).read()),"
        f" attempt(lambda: open({str(ssh / 'new')!r}, 'w').write('x'))]))"
    )
    shown, key, write = report(await box.python(script, requires=requires))
    assert shown == {"ok": True, "value": "github.com ssh-ed25519 AAAA\n"}
    assert key["ok"] is False and write["ok"] is False
    assert not (ssh / "new").exists()


async def _loopback_listener(tg: anyio.abc.TaskGroup) -> tuple[int, list[bytes]]:
    received: list[bytes] = []
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")

    async def handle(stream: SocketStream) -> None:
        async with stream:
            received.append(await stream.receive())

    async def serve() -> None:
        async with listener:
            await listener.serve(handle)

    tg.start_soon(serve)
    return listener.extra(SocketAttribute.local_port), received


CONNECT = (
    TRY
    + """
import socket
def connect():
    with socket.create_connection(("127.0.0.1", PORT), timeout=5) as s:
        s.sendall(b"hello")
    return "connected"
print(json.dumps(attempt(connect)))
"""
)


async def test_a_loopback_listener_cannot_be_reached_without_a_network_grant(box: Box) -> None:
    async with anyio.create_task_group() as tg:
        port, received = await _loopback_listener(tg)
        script = CONNECT.replace("PORT", str(port))
        sandboxed = report(await box.python(script))
        assert sandboxed == {"ok": False, "error": "ConnectionRefusedError"}
        unconfined = report(await box.python(script, mode="off"))
        assert unconfined == {"ok": True, "value": "connected"}
        with anyio.fail_after(5):
            while not received:
                await anyio.wait_all_tasks_blocked()
        tg.cancel_scope.cancel()
    assert received == [b"hello"]  # from the unconfined run only


LEAVE_BEHIND = """
import json, os, subprocess, sys
child = subprocess.Popen(
    [sys.executable, "-I", "-c",
     "import fcntl, sys, time\\n"
     "f = open(sys.argv[1], 'w'); fcntl.flock(f, fcntl.LOCK_EX)\\n"
     "print('locked', flush=True); time.sleep(60)",
     "@LOCK@"],
    start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
)
assert child.stdout.readline() == b"locked\\n"  # it holds the lock now
print(json.dumps({"escapee": child.pid}))
"""


def _lock_is_free(path: Path) -> bool:
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
        return True


async def test_a_setsid_process_does_not_survive_the_call(box: Box) -> None:
    """The escapee leaves the process group (group kills miss it) and holds a lock: once
    the call has returned, a free lock means it is gone."""
    lock = box.ws / "escapee.lock"
    script = LEAVE_BEHIND.replace("@LOCK@", str(lock))
    report(await box.python(script))
    assert _lock_is_free(lock)
    escapee = report(await box.python(script, mode="off"))["escapee"]
    try:
        assert not _lock_is_free(lock)  # unconfined, it outlives the call
    finally:
        os.kill(escapee, signal.SIGKILL)


async def test_other_processes_cannot_be_read_through_proc(box: Box, tmp_path: Path) -> None:
    marker = f"marker-{os.getpid()}-{tmp_path.name}"
    neighbour = await anyio.open_process(
        [sys.executable, "-c", "import time; time.sleep(60)", marker], env={"TOKEN": "s3cret"}
    )
    script = (
        "import json, os\n"
        "found = []\n"
        "for pid in filter(str.isdigit, os.listdir('/proc')):\n"
        "    try:\n"
        "        if MARKER[::-1] in open(f'/proc/{pid}/cmdline', 'rb').read():\n"
        "            found.append(open(f'/proc/{pid}/environ', 'rb').read().decode())\n"
        "    except OSError:\n"
        "        pass\n"
        "print(json.dumps(found))\n"
    ).replace("MARKER", repr(marker.encode()[::-1]))  # not in the script's own command line
    try:
        assert report(await box.python(script)) == []
        assert report(await box.python(script, mode="off")) == ["TOKEN=s3cret\x00"]
    finally:
        neighbour.kill()
        await neighbour.aclose()


def _no_new_privs_here() -> str:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("NoNewPrivs:"):
            return line.split()[1]
    return "?"


async def test_no_capabilities_and_no_new_privileges(box: Box) -> None:
    script = (
        "import json\n"
        "status = dict(l.split(':\\t', 1) for l in open('/proc/self/status').read().splitlines()"
        " if ':\\t' in l)\n"
        "print(json.dumps({k: status[k].strip() for k in ('CapEff', 'NoNewPrivs')}))\n"
    )
    assert report(await box.python(script)) == {"CapEff": "0000000000000000", "NoNewPrivs": "1"}
    if _no_new_privs_here() == "0":  # the probe means something only where the server lacks it
        assert report(await box.python(script, mode="off"))["NoNewPrivs"] == "0"


async def test_the_environment_is_passed_and_tmp_is_private(box: Box) -> None:
    script = (
        "import json, os, tempfile\n"
        "path = os.path.join(tempfile.gettempdir(), 'scratch')\n"
        "open(path, 'w').write('x')\n"
        "print(json.dumps({'tmp': tempfile.gettempdir(), 'listed': os.listdir('/tmp'),"
        " 'home': os.listdir(os.environ['HOME'])}))\n"
    )
    marker = Path("/tmp") / f"toolbridge-host-tmp-{os.getpid()}-{box.root.name}"
    marker.touch()
    try:
        result = report(await box.python(script, env={"TMPDIR": str(box.outside)}))
    finally:
        marker.unlink()
    # What the sandbox shows under /tmp besides its own files: the mount points of what the
    # call is given when that lives under the host's /tmp (the workspace; the interpreter and
    # its virtual environment when the checkout is there).
    given = (box.ws, *INTERPRETER)
    tops = {p.parts[2] for p in given if len(p.parts) > 2 and p.parts[1] == "tmp"}
    assert result["tmp"] == "/tmp" and result["home"] == []
    assert "scratch" in result["listed"] and marker.name not in result["listed"]
    assert set(result["listed"]) - tops == {"scratch"}
    assert not (box.outside / "scratch").exists()


async def test_a_command_killed_by_a_signal_reports_the_signal(box: Box) -> None:
    outcome = await box.python("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert (outcome.exit_code, outcome.signal, outcome.sandboxed) == (None, 9, True)


def test_scripts_here_are_json_clean() -> None:
    assert json.loads(json.dumps(PRIVATE_KEY)) == PRIVATE_KEY
