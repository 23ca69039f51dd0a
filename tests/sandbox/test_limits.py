"""The sandbox's resource limits (``sandbox/limits.py``) against real attacks: a fork bomb, a
memory bomb, descriptor exhaustion and a huge file, each run by real bash through the served
``bash`` tool and by a real manifest exec tool, in a fresh sandbox and in a warm one, by a real
``serve`` over stdio. Each call ends with an error naming the limit it hit, a call made
meanwhile answers, the server goes on serving, and nothing of the attack is left.

The server runs as an ordinary user: the kernel does not enforce the process limit for uid 0,
so under root (CI) it runs as ``nobody`` (``tests/support/as_user.py``). The tests bound their
own danger: the policy's limits are small (48 processes, 128 files, 256 MiB, 8 MiB files), and
the server itself runs under an outer process limit (the user's tasks now, plus 300), which
the sandbox's own limit must meet first: a bomb that got past it would stop there."""

from __future__ import annotations

import dataclasses
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from mcp_toolbridge.sandbox import Limits, Sandbox, SandboxProfile, limit_hint
from mcp_toolbridge.sandbox.bwrap import plan_launch
from tests.support import as_user
from tests.support.manifests import NOT_DESTRUCTIVE, agentcli_manifest
from tests.support.procs import keeps_warm_sandbox
from tests.support.results import text_of

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox"),
    pytest.mark.usefixtures("sandbox_support"),
    pytest.mark.e2e,
]
CHECKOUT = Path(__file__).resolve().parents[2]
PATH = "/usr/local/bin:/usr/bin:/bin"
PROCESSES, OPEN_FILES, MEMORY_MIB, FILE_MIB = 48, 128, 256, 8
BOMB = ":(){ :|:& };:; sleep 3"
"""The fork bomb, and a shell that waits: the bomb goes on after its first shell returns."""
POLICY = (
    'default_action = "allow"\n'
    "allow = ALLOWED\n"
    "[sandbox]\n"
    'mode = "required"\n'
    "warm = WARM\n"
    f"processes = {PROCESSES}\n"
    f"open_files = {OPEN_FILES}\n"
    f"memory_mib = {MEMORY_MIB}\n"
    f"file_size_mib = {FILE_MIB}\n"
)
ATTACK = """\
import json, os, sys, time
args = json.load(sys.stdin)
what = args["what"]
if what == "echo":
    print(json.dumps({"done": "echo"}))
elif what == "fork":
    started = 0
    try:
        while started < 10_000:
            if os.fork() == 0:
                time.sleep(60)
                os._exit(0)
            started += 1
    finally:
        print(f"forked {started}", file=sys.stderr)
elif what == "memory":
    held = []
    try:
        while len(held) < 4096:  # 16 GiB at most
            held.append(bytearray(4 * 1024 * 1024))
    finally:
        print(f"held {len(held) * 4} MiB", file=sys.stderr)
elif what == "files":
    opened = []
    try:
        while len(opened) < 100_000:
            opened.append(open("/dev/null"))
    finally:
        print(f"opened {len(opened)}", file=sys.stderr)
elif what == "file":
    with open(args["path"], "wb") as out:
        for _ in range(64):
            out.write(bytes(1024 * 1024))
"""
TOOL = {
    "name": "attack",
    "description": "Run one resource attack",
    "schema": {
        "type": "object",
        "properties": {"what": {"type": "string"}, "path": {"type": "string"}},
        "required": ["what"],
        "additionalProperties": False,
    },
    "command": ["./tools/bin/attack"],
    "annotations": NOT_DESTRUCTIVE,
}
BASH = {
    "fork": BOMB,
    "memory": 'x=$(head -c 400M /dev/zero | tr "\\0" a); echo ${#x}',
    "files": "for i in $(seq 1000); do exec {fd}</dev/null || exit 9; done",
    "file": "head -c 64M /dev/zero > big.bin",
}
SAYS = {
    "fork": "limit on processes (processes = 48)",
    "memory": f"limit on memory (memory_mib = {MEMORY_MIB})",
    "files": f"limit on open files (open_files = {OPEN_FILES})",
    "file": f"limit on file size (file_size_mib = {FILE_MIB})",
}


def _allowed() -> str:
    """Each attack's bash line, allowed exactly: they are lines the sub-policy cannot check
    (a function definition, a command substitution, ``exec``), which ask otherwise."""
    exact = [
        f"bash=bash -c '{line}'".replace("{", "{{").replace("}", "}}") for line in BASH.values()
    ]
    return json.dumps(exact)


def _tasks_of(uid: int) -> int:
    """How many tasks (processes and threads: what RLIMIT_NPROC counts) ``uid`` has."""
    count = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}").st_uid == uid:
                count += len(os.listdir(f"/proc/{pid}/task"))
        except OSError:
            continue
    return count


def _descendants(root: int) -> list[tuple[int, str]]:
    """Every process under ``root``: (pid, name)."""
    parents: dict[int, tuple[int, str]] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        parents[int(pid)] = (int(stat[stat.rindex(")") + 2 :].split()[1]), name)
    found: list[tuple[int, str]] = []
    frontier = {root}
    while frontier:
        children = {pid for pid, (ppid, _) in parents.items() if ppid in frontier}
        found += [(pid, parents[pid][1]) for pid in children]
        frontier = children
    return found


@pytest.fixture
def place() -> Iterator[Path]:
    if os.geteuid() == 0:
        try:
            as_user.ordinary_ids()
        except KeyError:
            pytest.skip(f"running as root, and no user {as_user.USER!r} to serve as")
    folder = as_user.private_folder("mcp-toolbridge-limits-")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@asynccontextmanager
async def _served(place: Path, *, warm: bool) -> AsyncIterator[tuple[Client, int, Path]]:
    """``serve`` as the ordinary user with the small limits, the bash tool allowed (every line)
    and the attack tool; the client, the server's pid and the workspace."""
    marker = f"limits-{uuid.uuid4().hex}"
    workspace = place / "ws"
    workspace.mkdir()
    (place / "home").mkdir()
    manifest = agentcli_manifest(place / marker, [TOOL], {"attack": ATTACK})
    policy = place / "policy.toml"
    policy.write_text(
        POLICY.replace("WARM", str(warm).lower()).replace("ALLOWED", _allowed()), encoding="utf-8"
    )
    as_user.hand_over(place)
    uid = as_user.ordinary_ids()[0]
    outer = _tasks_of(uid) + 300  # the net under the sandbox's own limit
    serve = [sys.executable, "-m", "mcp_toolbridge", "serve", "--workspace", str(workspace)]
    serve += ["--policy", str(policy), "--locked", "bash", "--allow", "bash=*"]
    serve += ["--allow", "attack", str(manifest)]
    argv = ["prlimit", f"--nproc={outer}:{outer}", "--", *serve]
    command = as_user.command(argv, reach=[CHECKOUT]) if os.geteuid() == 0 else argv
    env = {"PATH": PATH, "HOME": str(place / "home"), "PYTHONDONTWRITEBYTECODE": "1"}
    server = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(place))
    async with Client(server) as client:
        served = next(pid for pid, _ in _descendants(os.getpid()) if _cmdline_has(pid, marker))
        yield client, served, workspace


def _cmdline_has(pid: int, text: str) -> bool:
    try:
        return text.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


async def _attack(client: Client, tool: str, what: str, workspace: Path) -> Any:
    if tool == "bash":
        command = BASH[what]
        return await client.call_tool("bash", {"command": command, "timeout": 4000})
    return await client.call_tool("attack", {"what": what, "path": str(workspace / "big.bin")})


@pytest.mark.parametrize("warm", [False, True], ids=["fresh", "warm"])
async def test_every_attack_ends_its_call_naming_the_limit_and_hurts_nothing(
    place: Path, warm: bool
) -> None:
    with anyio.fail_after(240):
        async with _served(place, warm=warm) as (client, server, workspace):
            if warm:  # a warm sandbox for each tool's options, ready before the attacks
                for _ in range(3):
                    await client.call_tool("bash", {"command": "true"})
                    await client.call_tool("attack", {"what": "echo"})
                assert await keeps_warm_sandbox(server)
            for tool in ("bash", "attack"):
                for what in ("fork", "memory", "files", "file"):
                    beside: list[Any] = []

                    async def meanwhile(beside: list[Any] = beside) -> None:
                        await anyio.sleep(0.5)  # the attack has started
                        beside.append(await client.call_tool("attack", {"what": "echo"}))

                    async with anyio.create_task_group() as group:
                        group.start_soon(meanwhile)
                        result = await _attack(client, tool, what, workspace)
                    said = text_of(result)
                    assert SAYS[what] in said, (tool, what, said)
                    assert "ask the user to raise the setting under [sandbox]" in said
                    assert not beside[0].is_error, (tool, what, text_of(beside[0]))
                    if what == "file":  # written up to the limit, not past it
                        assert (workspace / "big.bin").stat().st_size <= FILE_MIB * 1024 * 1024
                        (workspace / "big.bin").unlink()
                    left = [p for p in _descendants(server) if p[1] not in ("bwrap", "python3")]
                    left = [p for p in left if not p[1].startswith("python")]
                    assert left == [], (tool, what, left)  # nothing of the attack is left
            after = await client.call_tool("bash", {"command": "echo still serving"})
            assert text_of(after).startswith("still serving"), text_of(after)


async def test_the_limits_bound_the_call_not_the_user(place: Path) -> None:
    """The process limit is counted per sandbox (per user namespace since Linux 5.14): two
    calls at once each get all of it, and the user's other processes count for neither."""
    with anyio.fail_after(120):
        async with _served(place, warm=False) as (client, _, _):
            results: list[Any] = []

            async def fork() -> None:
                results.append(await client.call_tool("attack", {"what": "fork"}))

            async with anyio.create_task_group() as group:
                group.start_soon(fork)
                group.start_soon(fork)
    forked = [int(text_of(r).split("forked ")[1].split()[0]) for r in results]
    # each call: its command, bubblewrap's init, prlimit's exec: 48 less 2 or 3
    assert all(PROCESSES - 4 <= n < PROCESSES for n in forked), forked


@pytest.mark.parametrize("prlimit", [True, False], ids=["prlimit", "interpreter"])
def test_a_fresh_sandbox_sets_the_limits_inside_with_or_without_prlimit(
    tmp_path: Path, prlimit: bool
) -> None:
    """``prlimit`` sets them where util-linux has it; ``rlimit.py`` with the server's
    interpreter where not. Either way the command keeps its name (``argv[0]``) and cannot
    raise a limit again."""
    limits = Limits(PROCESSES, OPEN_FILES, MEMORY_MIB, FILE_MIB)
    sandbox = Sandbox("required", home=tmp_path, limits=limits, path=PATH)  # the server's PATH
    view = sandbox._view()
    assert view.prlimit is not None, "util-linux's prlimit is on every machine the suite runs on"
    if not prlimit:
        view = dataclasses.replace(view, prlimit=None)
    profile = SandboxProfile(tool="probe", read=(tmp_path,))
    line = "echo $0 $(ulimit -u) $(ulimit -n) $(ulimit -d) $(ulimit -f) $(ulimit -c); ulimit -n 200"
    env = {"PATH": PATH, "HOME": str(tmp_path)}
    plan = plan_launch(
        view, profile, ["bash", "-c", line], cwd=str(tmp_path), env=env, limits=limits
    )
    assert (plan.run[0] == view.prlimit) is prlimit
    ran = subprocess.run(plan.command(), env=plan.env, capture_output=True, check=False, timeout=30)
    assert ran.stdout.decode().split() == ["bash", "48", "128", "262144", "8192", "0"]
    assert b"cannot modify limit: Operation not permitted" in ran.stderr
    assert ran.returncode == 1


def test_limits_never_ask_more_than_the_servers_hard_limits() -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    asked = Limits(open_files=hard + 1 if hard != resource.RLIM_INFINITY else 1 << 20)
    assert asked.within_hard().open_files == min(asked.open_files, hard)
    assert Limits(processes=0).within_hard().processes == 0  # none: the server's own


@pytest.mark.parametrize(
    ("signum", "said", "limit"),
    [
        (None, b"bash: fork: retry: Resource temporarily unavailable", "processes"),
        (None, b"BlockingIOError: [Errno 11] Resource temporarily unavailable", "processes"),
        (None, b"OSError: [Errno 24] Too many open files: '/dev/null'", "open files"),
        (None, b"bash: xrealloc: cannot allocate 268066816 bytes", "memory"),
        (None, b"MemoryError", "memory"),
        (signal.SIGXFSZ, b"", "file size"),
        (None, b"OSError: [Errno 27] File too large", "file size"),
    ],
)
def test_the_hint_names_the_limit_the_output_shows(
    signum: int | None, said: bytes, limit: str
) -> None:
    hint = limit_hint(Limits(), signum, said, failed=True)
    assert hint is not None and f"limit on {limit} (" in hint


def test_no_hint_without_a_sign_of_a_limit() -> None:
    assert limit_hint(Limits(), None, b"error: no such file", failed=True) is None
    assert limit_hint(Limits(), None, b"out of memory", failed=False) is None  # it succeeded
    assert limit_hint(None, signal.SIGXFSZ, b"", failed=True) is None  # not sandboxed
