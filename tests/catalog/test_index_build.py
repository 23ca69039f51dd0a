"""The search index's postings built with a forked child (catalog/index_build.py) are the very same
as those built in one process; a child that dies changes nothing.

The child is only forked in a process with no other thread, which a pytest process may not be,
so the comparison runs in a child Python started by the test and prints what it found.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.fresh_python import run_json_script
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool

SCRIPT = """
import json, os, sys
from pathlib import Path
from mcp_toolbridge.catalog import index_build as search_build
from mcp_toolbridge.loaders import load_paths
from mcp_toolbridge.catalog.text import default_analyzer

specs = sorted(load_paths([Path(sys.argv[1])]).tools, key=lambda s: s.name)
PARENT = os.getpid()
analyzer = default_analyzer()

def terms_of(text):
    if os.getpid() != PARENT and sys.argv[2] == "child-dies":
        os._exit(3)
    return analyzer.terms(text)

def dump(postings):
    return {
        "terms": list(postings.term_ids.items()),
        "docs": [list(d) for d in postings.docs],
        "weights": [list(w) for w in postings.weights],
        "idf": postings.idf,
    }

used = []
original = search_build._build_with_child
def spy(*args):
    used.append(True)
    return original(*args)
search_build._build_with_child = spy

calls = []
search_build.PARALLEL_FROM = 10
two = dump(search_build.build_postings(specs, terms_of, alongside=lambda: calls.append(1)))
search_build.PARALLEL_FROM = 10**9
one = dump(search_build.build_postings(specs, analyzer.terms, alongside=lambda: calls.append(1)))
print(json.dumps({"same": two == one, "child": bool(used), "alongside": len(calls),
                  "terms": len(one["terms"])}))
"""


def _run(folder: Path, mode: str) -> dict[str, Any]:
    result: dict[str, Any] = run_json_script(SCRIPT, str(folder), mode)
    return result


def _catalog(folder: Path) -> Path:
    words = ["invoice", "calendar", "weather", "ticket", "playlist", "backup", "route"]
    tools = []
    for i in range(120):
        tool = echo_tool(f"tool_{i}_{words[i % 7]}")
        tool["description"] = f"Handle the {words[i % 7]} number {i} and {words[(i * 3) % 7]}s."
        tools.append(tool)
    agentcli_manifest(folder / "many", tools, {"echo": ECHO})
    return folder


@pytest.mark.skipif(sys.platform != "linux", reason="the child is forked on Linux only")
@pytest.mark.parametrize("mode", ["child", "child-dies"])
def test_postings_built_with_a_child_equal_those_built_in_process(
    tmp_path: Path, mode: str
) -> None:
    got = _run(_catalog(tmp_path), mode)
    assert got["child"] is True
    assert got["same"] is True
    assert got["terms"] > 100
    assert got["alongside"] == 2  # once per build, in this process, even after a failure
