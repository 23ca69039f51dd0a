"""The sandbox as an ordinary user runs it, not only as root (CI runs as root): every escape and
kernel probe of this folder, fresh and warm, and a real call through ``serve`` over stdio, all
as an unprivileged user; and, where unprivileged user namespaces are restricted, the real
bubblewrap failure diagnosed: ``auto`` says what failed, why and how to fix it on stderr and in
``inspect``, ``required`` refuses to start.

Under root the user is ``nobody``, in a private mount namespace where the checkout and the
interpreter are reachable (``tests/support/as_user.py``); the restriction is real: a user
namespace of the server's own where ``user.max_user_namespaces`` is 0, so that bubblewrap's
``clone`` fails in there as it does on a machine that forbids them. Nothing of the host's
settings changes."""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.sandbox.test_kernel import KNOBS
from tests.support import as_user
from tests.support.manifests import agentcli_manifest, echo_tool
from tests.support.procs import alive_with, keeps_warm_sandbox

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox"),
    pytest.mark.usefixtures("sandbox_support"),
]
CHECKOUT = Path(__file__).resolve().parents[2]
PATH = "/usr/local/bin:/usr/bin:/bin"


def _no_user() -> bool:
    if os.geteuid() != 0:
        return False
    try:
        pwd.getpwnam(as_user.USER)
    except KeyError:
        return True
    return False


if _no_user():  # pragma: no cover - every Debian and Ubuntu machine has it
    pytestmark.append(pytest.mark.skip(reason=f"running as root, and no user {as_user.USER!r}"))


@pytest.fixture(scope="module")
def reachable() -> None:
    """The ordinary user can run this checkout's Python and import the package (it cannot
    where the checkout's files are readable by their owner only, as a clone made with umask
    077 is: nothing can make that work without changing the files)."""
    probe = [sys.executable, "-c", "import mcp_toolbridge"]
    ran = subprocess.run(run_as_user(probe), capture_output=True, check=False, cwd="/")
    if ran.returncode != 0:
        pytest.skip(
            f"the ordinary user ({as_user.USER}) cannot run this checkout's Python: "
            + ran.stderr.decode(errors="replace").strip()[-300:]
        )


@pytest.fixture
def place(reachable: None) -> Iterator[Path]:
    """A folder of the ordinary user's (pytest's own are root's), removed afterwards."""
    folder = as_user.private_folder("mcp-toolbridge-user-")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def run_as_user(argv: Sequence[str], *, restrict: bool = False) -> list[str]:
    return as_user.command(argv, reach=[CHECKOUT], restrict=restrict)


def user_env(place: Path) -> dict[str, str]:
    return {"PATH": PATH, "HOME": str(place / "home"), "PYTHONDONTWRITEBYTECODE": "1"}


def prepare(place: Path, marker: str) -> tuple[Path, Path]:
    """The workspace and a manifest with ``probe``: it prints its user, and the kernel's knobs
    as it found them (the probes of test_kernel.py, writing where that is harmless)."""
    workspace = place / "ws"
    workspace.mkdir()
    (place / "home").mkdir()
    probe = echo_tool("probe", bin="probe")
    script = (
        "import io, json, os, sys\n"
        "json.load(sys.stdin)\n"
        "sys.argv = ['knobs', 'write']\n"
        "sys.stdout, real = io.StringIO(), sys.stdout\n"
        f"exec(compile({KNOBS!r}, 'knobs', 'exec'))\n"
        "knobs = json.loads(sys.stdout.getvalue())\n"
        "sys.stdout = real\n"
        "print(json.dumps({'echo': {'text': json.dumps({'uid': os.getuid(), 'knobs': knobs})}}))\n"
    )
    manifest = agentcli_manifest(place / marker, [probe], {"probe": script})
    as_user.hand_over(place)
    return workspace, manifest


async def test_every_escape_and_kernel_probe_fails_for_an_ordinary_user_too(place: Path) -> None:
    """test_escapes.py and test_kernel.py, fresh and warm, run again by an ordinary user."""
    if os.geteuid() != 0:
        pytest.skip("the suite runs as an ordinary user: every sandbox test already runs as one")
    whoami = await anyio.run_process(
        run_as_user([sys.executable, "-c", "import os; print(os.geteuid())"])
    )
    assert int(whoami.stdout) == as_user.ordinary_ids()[0] != 0
    files = ["tests/sandbox/test_escapes.py", "tests/sandbox/test_kernel.py"]
    argv = [sys.executable, "-m", "pytest", "-q", f"--basetemp={place / 'pytest'}", *files]
    with anyio.fail_after(600):
        result = await anyio.run_process(
            run_as_user(argv), cwd=CHECKOUT, env=user_env(place), check=False
        )
    output = result.stdout.decode(errors="replace") + result.stderr.decode(errors="replace")
    assert result.returncode == 0, output[-4000:]
    summary = output.strip().splitlines()[-1]
    assert re.fullmatch(r"\d+ passed in [\d.]+s( \(.*\))?", summary), summary  # none skipped


@pytest.mark.e2e
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_call_over_stdio_as_an_ordinary_user_runs_sandboxed_fresh_and_warm(
    place: Path, mode: str
) -> None:
    marker = f"user-{uuid.uuid4().hex}"
    workspace, manifest = prepare(place, marker)
    audit = place / "audit.ndjson"
    serve = [sys.executable, "-m", "mcp_toolbridge", "serve", "--workspace", str(workspace)]
    serve += ["--audit", str(audit), "--allow", "probe", str(manifest)]
    command = run_as_user(serve)
    server = StdioServerParameters(
        command=command[0], args=command[1:], env=user_env(place), cwd=str(place)
    )
    uid = as_user.ordinary_ids()[0]
    with anyio.fail_after(60):
        async with Client(server, mode=mode) as client:
            (served,) = alive_with(marker)
            for _ in range(4):  # the first runs fresh; from the third, a warm sandbox is ready
                result = await client.call_tool("probe", {"text": "x"})
                seen = json.loads(result.structured_content["echo"]["text"])
                assert seen["uid"] == uid
                knobs = {path: probe for path, probe in seen["knobs"].items() if probe}
                assert "/proc/sys/kernel/core_pattern" in knobs
                assert {probe["open"] for probe in knobs.values()} <= {"EROFS", "EACCES"}
            warm = await keeps_warm_sandbox(served)
    assert warm, "no warm sandbox was set up for the ordinary user's server"
    lines = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
    calls = [line for line in lines if line.get("tool") == "probe"]
    assert [(c["outcome"], c["sandboxed"]) for c in calls] == [("ok", True)] * 4


BWRAP_SAYS = "bwrap: Creating new namespace failed"
LIMIT = "user.max_user_namespaces is 0"
FIX = "sysctl -w user.max_user_namespaces=16384"


async def _restricted(place: Path, *argv: str) -> tuple[int, str, str]:
    """``mcp-toolbridge ARGV`` as the ordinary user where no user namespace may be made."""
    command = run_as_user([sys.executable, "-m", "mcp_toolbridge", *argv], restrict=True)
    with anyio.fail_after(60):
        result = await anyio.run_process(
            command, cwd=place, env=user_env(place), stdin=None, check=False
        )
    return result.returncode, result.stdout.decode(), result.stderr.decode()


@pytest.mark.parametrize("sandbox", ["auto", "required"])
async def test_inspect_says_what_failed_why_and_how_to_fix_it_where_user_namespaces_are_restricted(
    place: Path, sandbox: str
) -> None:
    workspace, manifest = prepare(place, "restricted")
    code, out, err = await _restricted(
        place,
        "inspect",
        "probe",
        str(manifest),
        "--workspace",
        str(workspace),
        "--sandbox",
        sandbox,
    )
    assert code == 0, err
    profile: dict[str, Any] = json.loads(out)["Safety"]["sandbox_profile"]
    unavailable = profile["unavailable"]
    assert profile["mechanism"].startswith("none: bubblewrap (")
    assert BWRAP_SAYS in unavailable["what"] and "(ENOSPC)" in unavailable["what"]
    assert LIMIT in unavailable["why"]
    assert any(FIX in command for fix in unavailable["fix"] for command in fix["commands"])
    if sandbox == "required":
        assert unavailable["effect"] == "the server refuses to start (--sandbox required)"
        assert "ERROR: the OS sandbox is required" in err
    else:
        assert unavailable["effect"].startswith("tools run unsandboxed (--sandbox auto)")
        assert "WARNING: tools run WITHOUT the OS sandbox" in err
    assert BWRAP_SAYS in err and LIMIT in err and FIX in err


async def test_required_refuses_to_start_where_user_namespaces_are_restricted(place: Path) -> None:
    workspace, manifest = prepare(place, "restricted")
    code, out, err = await _restricted(
        place, "serve", str(manifest), "--workspace", str(workspace), "--sandbox", "required"
    )
    assert code == 2 and out == ""
    assert "nothing was started" in err and "serving" not in err
    assert BWRAP_SAYS in err and LIMIT in err and FIX in err


@pytest.mark.e2e
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_auto_serves_unsandboxed_and_says_why_where_user_namespaces_are_restricted(
    place: Path, mode: str
) -> None:
    workspace, manifest = prepare(place, "restricted")
    audit = place / "audit.ndjson"
    serve = [sys.executable, "-m", "mcp_toolbridge", "serve", "--workspace", str(workspace)]
    serve += ["--audit", str(audit), "--allow", "probe", str(manifest)]
    command = run_as_user(serve, restrict=True)
    server = StdioServerParameters(
        command=command[0], args=command[1:], env=user_env(place), cwd=str(place)
    )
    errlog = place / "stderr.txt"
    with anyio.fail_after(60), errlog.open("w", encoding="utf-8") as log:
        async with Client(stdio_client(server, errlog=log), mode=mode) as client:
            result = await client.call_tool("probe", {"text": "x"})
    assert json.loads(result.structured_content["echo"]["text"])["uid"] == as_user.ordinary_ids()[0]
    said = errlog.read_text(encoding="utf-8")
    assert said.count("WARNING: tools run WITHOUT the OS sandbox") == 1
    assert BWRAP_SAYS in said and LIMIT in said and FIX in said
    (call,) = [
        json.loads(line)
        for line in audit.read_text(encoding="utf-8").splitlines()
        if '"probe"' in line
    ]
    assert (call["outcome"], call["sandboxed"]) == ("ok", False)


async def test_doctor_says_what_failed_why_and_how_to_fix_it_where_user_namespaces_are_restricted(
    place: Path,
) -> None:
    workspace, _ = prepare(place, "restricted")
    code, out, err = await _restricted(place, "doctor", "--workspace", str(workspace))
    assert code == 1 and err == ""  # doctor says it on stdout, and nothing on stderr
    (line,) = [line for line in out.splitlines() if line.startswith("problem  sandbox")]
    assert BWRAP_SAYS in line and line.endswith("; tools run WITHOUT it")
    fix = out.split(line, 1)[1]
    assert LIMIT in fix and FIX in fix and "or start with --sandbox off" in fix
