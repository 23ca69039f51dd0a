"""Loading a big catalog with a forked worker (loaders/parallel.py).

The worker is only used in a process with no other thread, which a pytest process may not be,
so the real fork runs in a child Python started by the test; it prints what it found as JSON.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_toolbridge.loaders import load_paths
from mcp_toolbridge.loaders.parallel import CHUNKS, MIN_BYTES, chunk
from tests.support.fresh_python import ROOT, run_json_script


def _catalog(folder: Path) -> Path:
    """Twelve agentcli manifests of ten tools, a broken manifest and an AgentPM package."""
    for m in range(12):
        tools = [
            {
                "name": f"tool_{m}_{t}",
                "description": f"Tool {t} of manifest {m}: does one thing well.",
                "schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
                "command": [f"./tools/bin/tool_{m}_{t}"],
            }
            for t in range(10)
        ]
        (folder / f"m{m:02d}").mkdir()
        (folder / f"m{m:02d}" / "tools.json").write_text(json.dumps({"tools": tools}))
    (folder / "m05b").mkdir()
    (folder / "m05b" / "tools.json").write_text('{"tools": [{"name": "broken"}]}')
    pkg = folder / "zz-agentpm"
    pkg.mkdir()
    shutil.copy(ROOT / "tests/fixtures/shapes/agentpm/tools/chat-post/agent.json", pkg)
    return folder


SCRIPT = """
import json, os, sys, threading
from pathlib import Path
from mcp_toolbridge import loaders
from mcp_toolbridge.loaders import discovery
from mcp_toolbridge.loaders import parallel as shares

shares.MIN_BYTES = 1  # this small catalog is worth a worker
PARENT = os.getpid()
in_parent = []
mode = sys.argv[2]

def load_one(path, shown):
    if os.getpid() == PARENT:
        in_parent.append(shown)
    elif mode == "worker-dies":
        os._exit(3)
    return inner(path, shown)  # the loader with the environment given to load_paths

if mode == "with-thread":
    gate = threading.Event()
    threading.Thread(target=gate.wait, daemon=True).start()
original = shares.load_in_shares

def load_in_shares(files, load):
    global inner
    inner = load  # set before the fork, so the worker has it too
    return original(files, load_one)

discovery.load_in_shares = load_in_shares  # where load_paths looks it up
report = loaders.load_paths([Path(sys.argv[1])], environ={"HOME": "/nowhere", "CHAT_TOKEN": "t"})
if mode == "with-thread":
    gate.set()
print(json.dumps({
    "tools": [t.model_dump(mode="json") for t in report.tools],
    "problems": [str(p) for p in report.problems],
    "in_parent": len(in_parent),
}))
"""


def _run(folder: Path, mode: str) -> dict[str, Any]:
    result: dict[str, Any] = run_json_script(SCRIPT, str(folder), mode)
    return result


def _in_process(folder: Path) -> Any:
    report = load_paths([folder], environ={"HOME": "/nowhere", "CHAT_TOKEN": "t"})
    result = {
        "tools": [t.model_dump(mode="json") for t in report.tools],
        "problems": [str(p) for p in report.problems],
    }
    return json.loads(json.dumps(result))  # as the child's result arrives


@pytest.mark.skipif(sys.platform != "linux", reason="the worker is forked on Linux only")
@pytest.mark.parametrize("mode", ["worker", "worker-dies", "with-thread"])
def test_a_forked_worker_changes_nothing_in_the_result(tmp_path: Path, mode: str) -> None:
    folder = _catalog(tmp_path)
    expected = _in_process(folder)
    assert len(expected["tools"]) == 121 and expected["problems"]
    got = _run(folder, mode)
    assert got["tools"] == expected["tools"]  # dumped by two processes: another hash seed
    assert got["problems"] == expected["problems"]
    files = 14
    if mode == "worker":  # the worker loaded part of the catalog
        assert 0 < got["in_parent"] < files
    else:  # a dead worker's chunks, or a process with a thread: all loaded here
        assert got["in_parent"] == files


def test_chunks_cover_every_file_in_order_with_about_equal_cost() -> None:
    costs = [MIN_BYTES // 100] * 500 + [MIN_BYTES // 2] + [MIN_BYTES // 100] * 500
    ranges = chunk(costs)
    assert [i for r in ranges for i in r] == list(range(len(costs)))
    assert 2 <= len(ranges) <= CHUNKS
    biggest = max(sum(costs[i] for i in r) for r in ranges)
    assert biggest <= MIN_BYTES // 2 + 2 * sum(costs) // CHUNKS


def test_a_small_catalog_is_one_chunk() -> None:
    assert chunk([MIN_BYTES // 10] * 5) == [range(5)]
    assert chunk([MIN_BYTES * 5]) == [range(1)]
    assert chunk([]) == [range(0)]
