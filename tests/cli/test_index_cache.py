"""The start-up cache through the command line, in real processes: what a second run serves,
what it says on stderr, and --no-index-cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from benchmarks.catalog_gen import generate
from mcp_toolbridge.runtime.cache import WRITE_BEHIND_FROM
from tests.support.fresh_python import ROOT
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool


def _env(home: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / "cache"),
        "XDG_DATA_HOME": str(home / "data"),
    }


def _search(home: Path, catalog: Path, query: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_toolbridge", "search", query, str(catalog), "--json", *extra],
        env=_env(home),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    root = tmp_path / "catalog"
    tools = [
        echo_tool("send_message", description="Send a chat message to a channel"),
        echo_tool("create_issue", description="Create an issue in the tracker"),
        echo_tool("forecast", description="Weather forecast for a city"),
    ]
    agentcli_manifest(root / "main", tools, {"echo": ECHO})
    return root


def _cache_files(home: Path) -> list[str]:
    folder = home / "cache" / "mcp-toolbridge"
    return sorted(p.name.split("-")[0] for p in folder.glob("*")) if folder.exists() else []


def test_a_second_run_answers_the_same_from_the_cache(tmp_path: Path, catalog: Path) -> None:
    first = _search(tmp_path, catalog, "post a message to the channel")
    assert first.returncode == 0, first.stderr
    assert _cache_files(tmp_path) == ["index", "key", "served", "specs", "vectors"]
    second = _search(tmp_path, catalog, "post a message to the channel")
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout
    assert json.loads(second.stdout)[0]["name"] == "send_message"
    assert second.stderr == first.stderr == ""


def test_a_changed_manifest_is_searched_as_it_is_now(tmp_path: Path, catalog: Path) -> None:
    assert _search(tmp_path, catalog, "weather").returncode == 0
    tools = [echo_tool("forecast", description="Tide tables for a harbour")]
    agentcli_manifest(catalog / "main", tools, {"echo": ECHO})
    hits = json.loads(_search(tmp_path, catalog, "tide tables").stdout)
    assert [h["name"] for h in hits] == ["forecast"]
    assert hits[0]["description"] == "Tide tables for a harbour"
    assert json.loads(_search(tmp_path, catalog, "create an issue").stdout) == []


def test_a_corrupt_cache_file_is_ignored_with_one_warning(tmp_path: Path, catalog: Path) -> None:
    clean = _search(tmp_path, catalog, "create an issue")
    folder = tmp_path / "cache" / "mcp-toolbridge"
    files = sorted(folder.glob("*.bin"))
    for path in files:  # the middle of the specs file is a stored tool record
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
    damaged = _search(tmp_path, catalog, "create an issue")
    assert damaged.returncode == 0
    assert damaged.stdout == clean.stdout
    warnings = damaged.stderr.splitlines()
    assert len(warnings) == len(files) == 4  # one per damaged file
    assert all("cache:" in w and "ignored" in w for w in warnings)
    again = _search(tmp_path, catalog, "create an issue")  # rewritten: quiet again
    assert (again.stdout, again.stderr) == (clean.stdout, "")


def test_no_index_cache_reads_and_writes_nothing(tmp_path: Path, catalog: Path) -> None:
    done = _search(tmp_path, catalog, "weather", "--no-index-cache")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[0]["name"] == "forecast"
    assert _cache_files(tmp_path) == []


@pytest.mark.e2e
async def test_serve_from_a_warm_cache_lists_and_calls_over_real_stdio(
    tmp_path: Path, catalog: Path
) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcp_toolbridge", "serve", str(catalog), "--no-audit", "--locked", "none"],
        env=_env(tmp_path),
    )
    for _ in range(2):  # cold, then warm
        with anyio.fail_after(30):
            async with Client(params) as client:
                names = {t.name for t in (await client.list_tools()).tools}
                result = await client.call_tool("forecast", {"text": "Oslo"})
        assert names == {"send_message", "create_issue", "forecast"}
        assert result.structured_content == {"echo": {"text": "Oslo"}}
    assert _cache_files(tmp_path) == ["index", "key", "opening", "served", "specs"]


async def _list_and_leave(
    home: Path, catalog: Path, errlog: Path, *, after: str | None = None
) -> str:
    """Start ``serve`` with a real SDK client over stdio, list once, and leave at once (the
    SDK's client then ends the server's whole process group); the server's stderr. With
    ``after``, leave once the server has written that on its stderr: a warm start answers its
    list from the start-up cache before it writes anything, and says where its catalog came
    from only once it has loaded it."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcp_toolbridge", "serve", str(catalog), "--no-audit"],
        env=_env(home),
        cwd=str(ROOT),
    )
    with anyio.fail_after(300), errlog.open("w", encoding="utf-8") as err:
        async with Client(stdio_client(params, errlog=err)) as client:
            assert (await client.list_tools()).tools
            if after is not None:
                await _wrote(errlog, after)
    return await anyio.Path(errlog).read_text(encoding="utf-8")


async def _wrote(errlog: Path, text: str) -> None:
    """Wait until the server's stderr holds ``text``."""
    while True:
        if text in await anyio.Path(errlog).read_text(encoding="utf-8"):
            return
        await anyio.sleep(0.05)  # a file the server appends to: look again


def _cache_state(home: Path) -> dict[str, tuple[int, int]]:
    """Each cache file's kind: its (inode, mtime); ``tmp`` while a writer is at work."""
    folder = home / "cache" / "mcp-toolbridge"
    found = {}
    for path in folder.glob("*") if folder.exists() else ():
        info = path.stat()
        found["tmp" if path.name.endswith(".tmp") else path.name.split("-")[0]] = (
            info.st_ino,
            info.st_mtime_ns,
        )
    return found


async def _written(home: Path, kinds: set[str]) -> dict[str, tuple[int, int]]:
    """Wait until the cache holds a file of each kind and no writer is at work."""
    with anyio.fail_after(300):
        while True:
            state = await anyio.to_thread.run_sync(_cache_state, home)
            if kinds <= set(state) and "tmp" not in state:
                return state
            await anyio.sleep(0.1)  # a file system without notifications: look again


@pytest.mark.e2e
async def test_a_client_that_leaves_after_its_first_list_leaves_the_cache_the_next_start_needs(
    tmp_path: Path,
) -> None:
    """A client that starts the server, lists and exits (``claude -p``, an agent framework that
    starts a server per call) ends the server, and the SDK's client kills its process group:
    the caches of a big catalog, written behind by a forked writer, are still completed, so
    the next start restores the catalog and reads the index instead of building them."""
    catalog = tmp_path / "big"
    generate(WRITE_BEHIND_FROM + 100, catalog)  # big enough to be written behind
    first = await _list_and_leave(tmp_path, catalog, tmp_path / "first.txt")
    assert "none from the cache" in first
    written = await _written(tmp_path, {"index", "served", "specs"})
    second = await _list_and_leave(
        tmp_path, catalog, tmp_path / "second.txt", after="from the cache"
    )
    assert "all from the cache" in second, second
    assert await _written(tmp_path, {"index", "served", "specs"}) == written  # nothing rebuilt
