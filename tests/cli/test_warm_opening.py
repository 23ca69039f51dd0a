"""A warm stdio start answers the client's opening from the start-up cache before the MCP SDK
is imported (cache/opening.py, cache/front.py), and the real server takes over: the same
answers as a cold start, in both protocol eras, through the SDK client over real stdio; calls
in the same session still run sandboxed and audited; any changed input (a manifest, the
policy, the environment, the client's request) is a miss; the end of stdin, a malformed line
and a cancellation behave as they do without it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from mcp_toolbridge.executors import probe_sandbox
from mcp_toolbridge.sandbox import Sandbox
from tests.support.manifests import ECHO, NOT_DESTRUCTIVE, agentcli_manifest, echo_tool
from tests.support.rawstdio import RawServer, raw_server, request

ANSWERED = "from the start-up cache"
"""What the server's stderr says when its front answered the opening."""

# The real entry point (__main__.run) in a child that writes the modules imported when its
# front has written the first tools/list answer; the server's imports begin only then, so
# what the list is answered with is the front's alone.
AT_FRONT_LIST = (
    "import json, sys, threading\n"
    "out = sys.argv.pop(1)\n"
    "sys.argv[0] = 'mcp-toolbridge'\n"
    "import mcp_toolbridge.__main__ as entry\n"
    "import mcp_toolbridge.cache.front as front\n"
    "listed = threading.Event()\n"
    "write = front._write\n"
    "def spy(data):\n"
    "    if b'\"tools\"' in data and not listed.is_set():\n"
    "        open(out, 'w').write(json.dumps(sorted(sys.modules)))\n"
    "        listed.set()\n"
    "    write(data)\n"
    "front._write = spy\n"
    "load = entry._import_cli\n"
    "def held():\n"
    "    listed.wait(20)\n"
    "    load()\n"
    "entry._import_cli = held\n"
    "entry.run()\n"
)
NOT_AT_FIRST_LIST = {"mcp", "mcp_types", "pydantic", "anyio", "mcp_toolbridge.policy"}
"""The SDK, its wire models, pydantic, the event loop's library, the policy: none of them."""


def _catalog(root: Path, description: str = "Echo the arguments back") -> Path:
    tool = echo_tool("echo", description=description, annotations=NOT_DESTRUCTIVE)
    return agentcli_manifest(root / "m", [tool], {"echo": ECHO}).parent


async def _session(
    params: StdioServerParameters, mode: Literal["auto", "legacy"], err: Any
) -> dict[str, Any]:
    """What a client learns at the opening, and a call's outcome, in one session."""
    async with Client(stdio_client(params, errlog=err), mode=mode) as client:
        listed = await client.list_tools()
        called = await client.call_tool("echo", {"text": "hi"})
        return {
            "protocol": client.protocol_version,
            "server": client.server_info.model_dump(mode="json") if client.server_info else None,
            "capabilities": client.server_capabilities.model_dump(mode="json")
            if client.server_capabilities
            else None,
            "tools": listed.model_dump(mode="json"),
            "call": (called.is_error, called.structured_content),
        }


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_warm_start_answers_as_a_cold_one_before_importing_the_sdk(
    tmp_path: Path, mode: Literal["auto", "legacy"]
) -> None:
    support = await probe_sandbox(Sandbox("auto", home=None))
    if not support.ok:
        pytest.skip(f"this machine cannot run the OS sandbox: {support.reason}")
    catalog, workspace, audit = _catalog(tmp_path), tmp_path / "ws", tmp_path / "audit.nd"
    workspace.mkdir()
    modules = tmp_path / "modules.json"
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path / "home")}
    env["TOOLBRIDGE_CACHE_DIR"] = str(tmp_path / "cache")
    argv = ["serve", str(catalog), "--workspace", str(workspace), "--audit", str(audit)]
    child = ["-c", AT_FRONT_LIST, str(modules), *argv]
    params = StdioServerParameters(command=sys.executable, args=child, env=env, cwd=tmp_path)
    seen = []
    with anyio.fail_after(90):
        for start in ("cold", "warm"):
            with (tmp_path / f"{start}.txt").open("w", encoding="utf-8") as err:
                seen.append(await _session(params, mode, err))
    cold, warm = seen
    assert ANSWERED not in (tmp_path / "cold.txt").read_text(encoding="utf-8")
    assert ANSWERED in (tmp_path / "warm.txt").read_text(encoding="utf-8")
    assert warm == cold
    assert "echo" in {t["name"] for t in warm["tools"]["tools"]}
    assert warm["call"] == (False, {"echo": {"text": "hi"}})
    at_list = set(json.loads(modules.read_text(encoding="utf-8")))
    assert sorted(NOT_AT_FIRST_LIST & at_list) == []
    lines = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
    assert [(r["tool"], r["sandboxed"]) for r in lines] == [("echo", True), ("echo", True)]


async def _opening(server: RawServer, version: str = "2025-11-25") -> tuple[Any, Any]:
    params = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "raw-test-client", "version": "0"},
    }
    init = await server.call(request(0, "initialize", params))
    await server.send_json({"jsonrpc": "2.0", "method": "notifications/initialized"})
    listed = await server.call(request(1, "tools/list"))
    return init, listed


async def _start(
    home: Path, *args: str, env: dict[str, str] | None = None, version: str = "2025-11-25"
) -> tuple[Any, Any, bool]:
    """A start whose client opens, lists, and leaves: the answers, and whether the front
    gave them."""
    async with raw_server(home, *args, env=env) as server:
        init, listed = await _opening(server, version)
        await server.close_stdin()
        assert await server.wait_exit(60) == 0
        return init["result"], listed["result"], ANSWERED in server.stderr()


def _descriptions(listed: Any) -> dict[str, str]:
    return {t["name"]: t.get("description", "") for t in listed["tools"]}


async def test_a_changed_manifest_policy_environment_or_request_is_never_answered_from_it(
    tmp_path: Path,
) -> None:
    catalog = _catalog(tmp_path)
    policy = tmp_path / "policy.toml"
    policy.write_text("", encoding="utf-8")
    args = (str(catalog), "--workspace", str(tmp_path), "--policy", str(policy))
    first = await _start(tmp_path, *args)
    assert first[2] is False
    assert await _start(tmp_path, *args) == (first[0], first[1], True)

    _catalog(tmp_path, "Echo, described anew")
    changed = await _start(tmp_path, *args)
    assert changed[2] is False
    assert _descriptions(changed[1])["echo"] == "Echo, described anew"
    assert (await _start(tmp_path, *args))[1] == changed[1]

    policy.write_text('[[rules]]\npermission = "echo"\naction = "deny"\n', encoding="utf-8")
    denied = await _start(tmp_path, *args)
    assert denied[2] is False
    assert "echo" not in _descriptions(denied[1])
    # The server tells a 2025 client what was left out (a log message after initialize): the
    # opening is kept up to it, initialize alone; the list is the server's again.
    again = await _start(tmp_path, *args)
    assert again == (denied[0], denied[1], True)

    other_env = await _start(tmp_path, *args, env={"SOME_SETTING": "1"})
    assert other_env[2] is False
    assert other_env[1] == denied[1]

    older = await _start(tmp_path, *args, version="2025-06-18")
    assert older[2] is False
    assert older[0]["protocolVersion"] == "2025-06-18"


async def test_a_new_skill_or_project_policy_in_the_workspace_is_never_answered_from_it(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    args = (str(_catalog(tmp_path)), "--workspace", str(workspace))
    await _start(tmp_path, *args)
    assert (await _start(tmp_path, *args))[2] is True

    skill = workspace / ".toolbridge" / "skills" / "tidy"
    skill.mkdir(parents=True)
    text = "---\nname: tidy\ndescription: Tidy the imports of a module\n---\nSort them.\n"
    (skill / "SKILL.md").write_text(text, encoding="utf-8")
    with_skill = await _start(tmp_path, *args)
    assert with_skill[2] is False
    assert "Tidy the imports" in _descriptions(with_skill[1])["skill"]
    assert (await _start(tmp_path, *args))[2] is True

    project = workspace / ".toolbridge" / "policy.toml"
    project.write_text('[[rules]]\npermission = "echo"\naction = "deny"\n', encoding="utf-8")
    denied = await _start(tmp_path, *args)
    assert denied[2] is False
    assert "echo" not in _descriptions(denied[1])


async def test_a_client_that_leaves_after_its_first_list_leaves_the_cache_usable(
    tmp_path: Path,
) -> None:
    args = (str(_catalog(tmp_path)), "--workspace", str(tmp_path))
    await _start(tmp_path, *args)
    for _ in range(2):  # answered by the front, then the server starts and ends as usual
        async with raw_server(tmp_path, *args) as server:
            await server.send(
                b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":'
                b'"2025-11-25","capabilities":{},"clientInfo":{"name":"raw-test-client",'
                b'"version":"0"}}}\n{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
                b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n'
            )
            await server.close_stdin()
            assert (await server.answer_to(1))["result"]["tools"]
            assert await server.wait_exit(60) == 0
            assert ANSWERED in server.stderr()
            assert [m.get("id") for m in server.seen] == [0, 1]


async def test_a_malformed_line_and_a_cancellation_on_a_warm_start_are_answered_as_ever(
    tmp_path: Path,
) -> None:
    args = (str(_catalog(tmp_path)), "--workspace", str(tmp_path))
    expected = await _start(tmp_path, *args)
    async with raw_server(tmp_path, *args) as server:
        await server.send(b"not json\n")
        refused = await server.read_message()
        assert refused["id"] is None and refused["error"]["code"] == -32700
        init, listed = await _opening(server)
        assert (init["result"], listed["result"]) == expected[:2]
        assert ANSWERED not in server.stderr()
    async with raw_server(tmp_path, *args) as server:
        init, listed = await _opening(server)
        assert (init["result"], listed["result"]) == expected[:2]
        await server.send(b'{"jsonrpc": "2.0", "method": \n')
        assert (await server.read_message())["error"]["code"] == -32700
        cancel = {"requestId": 1, "reason": "the client gave up"}
        await server.send_json(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}
        )
        called = await server.call(
            request(2, "tools/call", {"name": "echo", "arguments": {"text": "x"}})
        )
        assert called["result"]["structuredContent"] == {"echo": {"text": "x"}}
        assert [m.get("id") for m in server.seen] == [0, 1, None, 2]
        assert ANSWERED in server.stderr()


async def test_a_workspace_link_pointed_elsewhere_is_never_answered_from_it(
    tmp_path: Path,
) -> None:
    """``--workspace LINK`` is the folder the link names at each start: a link moved to another
    project (whose policy denies a tool) is a miss, though the command line and the files
    recorded for the first project are unchanged."""
    first, second = tmp_path / "first", tmp_path / "second"
    (second / ".toolbridge").mkdir(parents=True)
    first.mkdir()
    (second / ".toolbridge" / "policy.toml").write_text(
        '[[rules]]\npermission = "echo"\naction = "deny"\n', encoding="utf-8"
    )
    link = tmp_path / "current"
    link.symlink_to(first, target_is_directory=True)
    args = (str(_catalog(tmp_path)), "--workspace", str(link))
    await _start(tmp_path, *args)
    assert (await _start(tmp_path, *args))[2] is True

    _repoint(link, second)
    moved = await _start(tmp_path, *args)
    assert moved[2] is False
    assert "echo" not in _descriptions(moved[1])


async def test_a_manifest_link_pointed_elsewhere_is_never_answered_from_it(
    tmp_path: Path,
) -> None:
    """Two manifest links to one file are loaded once (by their real path): the second is
    never read, so only the folder's listing can tell that it now names another manifest."""
    sources = {}
    for name in ("echo", "shout"):
        sources[name] = tmp_path / f"{name}.json"
        sources[name].write_text(json.dumps({"tools": [echo_tool(name)]}), encoding="utf-8")
    catalog = tmp_path / "catalog"
    for sub in ("one", "two"):
        agentcli_manifest(catalog / sub, [], {"echo": ECHO, "shout": ECHO}).unlink()
        (catalog / sub / "tools.json").symlink_to(sources["echo"])
    args = (str(catalog), "--workspace", str(tmp_path))
    await _start(tmp_path, *args)
    assert (await _start(tmp_path, *args))[2] is True

    _repoint(catalog / "two" / "tools.json", sources["shout"])
    moved = await _start(tmp_path, *args)
    assert moved[2] is False
    assert {"echo", "shout"} <= set(_descriptions(moved[1]))


async def test_a_truncated_or_foreign_snapshot_is_a_miss_and_written_anew(tmp_path: Path) -> None:
    """The snapshot is a cache file as any other: MAC'd under the user's key, so a file cut
    short, or written by someone without the key, is never answered from."""
    args = (str(_catalog(tmp_path)), "--workspace", str(tmp_path))
    cold = await _start(tmp_path, *args)
    (snapshot,) = (tmp_path / ".cache" / "mcp-toolbridge").glob("opening-*.bin")
    whole = snapshot.read_bytes()
    snapshot.write_bytes(whole[: len(whole) // 2])
    assert await _start(tmp_path, *args) == (cold[0], cold[1], False)
    assert (await _start(tmp_path, *args))[2] is True  # the miss wrote it anew
    forged = bytearray(snapshot.read_bytes())
    forged[-8] ^= 1  # a byte of the recorded answers changed, the MAC not remade
    snapshot.write_bytes(bytes(forged))
    assert await _start(tmp_path, *args) == (cold[0], cold[1], False)


# The real entry point in a child whose server imports wait, once the front has answered,
# until the test opens the FIFO named first: what changes meanwhile is seen by the server's
# load alone, after the front's check (the race a warm start can lose).
HELD_AFTER_FRONT = (
    "import sys\n"
    "fifo = sys.argv.pop(1)\n"
    "sys.argv[0] = 'mcp-toolbridge'\n"
    "import mcp_toolbridge.__main__ as entry\n"
    "load = entry._import_cli\n"
    "def held():\n"
    "    open(fifo).close()\n"
    "    load()\n"
    "entry._import_cli = held\n"
    "entry.run()\n"
)


async def test_a_2026_client_sent_a_list_the_server_would_not_send_is_told_to_list_again(
    tmp_path: Path,
) -> None:
    """A manifest changed between the front's check and the load: the server finds the list
    the front sent differs from its own; a 2026-07-28 client, which hears of a change only on
    a listen stream, is told on the first one it opens after, and lists the server's own."""
    catalog = _catalog(tmp_path)
    fifo = tmp_path / "go"
    os.mkfifo(fifo)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path / "home")}
    env["TOOLBRIDGE_CACHE_DIR"] = str(tmp_path / "cache")
    argv = ["serve", str(catalog), "--workspace", str(tmp_path), "--no-audit"]
    plain = StdioServerParameters(command=sys.executable, args=["-m", "mcp_toolbridge", *argv])
    plain.env, plain.cwd = env, tmp_path
    held = ["-c", HELD_AFTER_FRONT, str(fifo), *argv]
    params = StdioServerParameters(command=sys.executable, args=held, env=env, cwd=tmp_path)
    with anyio.fail_after(90):
        with (tmp_path / "cold.txt").open("w", encoding="utf-8") as err:
            async with Client(stdio_client(plain, errlog=err), mode="auto") as client:
                await client.list_tools()
        with (tmp_path / "warm.txt").open("w", encoding="utf-8") as err:
            async with Client(stdio_client(params, errlog=err), mode="auto") as client:
                first = await client.list_tools()  # the front's answer: the imports wait
                assert {t.name: t.description for t in first.tools}["echo"] == (
                    "Echo the arguments back"
                )
                _catalog(tmp_path, "Echo, described anew")
                await anyio.to_thread.run_sync(lambda: open(fifo, "w").close())
                async with client.listen(tools_list_changed=True) as sub:
                    async for _ in sub:
                        break
                again = await client.list_tools()
    assert ANSWERED in (tmp_path / "warm.txt").read_text(encoding="utf-8")
    assert {t.name: t.description for t in again.tools}["echo"] == "Echo, described anew"


async def test_a_required_path_through_a_link_pointed_elsewhere_is_never_answered_from_it(
    tmp_path: Path,
) -> None:
    """A tool's ``fs.read`` requirement is compared with the policy's grant where it resolves
    (``grant = "policy"``): a link on the way moved to a folder the policy does not grant hides
    the tool, though the manifest, the policy and the command line are unchanged."""
    granted, elsewhere = tmp_path / "granted", tmp_path / "elsewhere"
    (granted / "data").mkdir(parents=True)
    (elsewhere / "data").mkdir(parents=True)
    link = tmp_path / "current"
    link.symlink_to(granted, target_is_directory=True)
    tool = {
        "id": "notes.read",
        "description": "Read the notes.",
        "transport": {"kind": "exec", "command": "/bin/true"},
        "input_schema": {"type": "object"},
        "result_schema": {"type": "object"},
        "annotations": {"readOnlyHint": True},
        "capabilities": [f"fs.read:{link}/data/*.md"],
    }
    manifest = tmp_path / "m" / "tools.json"
    manifest.parent.mkdir()
    manifest.write_text(json.dumps({"version": 1, "tools": [tool]}), encoding="utf-8")
    policy = tmp_path / "policy.toml"
    policy.write_text(f'grant = "policy"\n[requires]\nfs.read = ["{granted}"]\n', "utf-8")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    args = (str(manifest.parent), "--workspace", str(workspace), "--policy", str(policy))
    first = await _start(tmp_path, *args)
    assert "notes_read" in _descriptions(first[1])
    assert (await _start(tmp_path, *args))[2] is True

    _repoint(link, elsewhere)
    moved = await _start(tmp_path, *args)
    assert moved[2] is False
    assert "notes_read" not in _descriptions(moved[1])


def _repoint(link: Path, target: Path) -> None:
    """``link`` made to lead to ``target`` instead (a folder or a file)."""
    link.unlink()
    link.symlink_to(target, target_is_directory=target.is_dir())
