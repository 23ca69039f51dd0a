"""The start-up cache as a start sees it (runtime.load_catalog and search_index): a second
start restores what a fresh start builds, and any change to what it depends on is seen."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from benchmarks.catalog_gen import generate
from mcp_toolbridge.catalog import SearchIndex, index_cache
from mcp_toolbridge.catalog.embedding import Embedder
from mcp_toolbridge.runtime import Loaded, Settings, load_catalog, search_index
from tests.support.fresh_python import run_json_script

QUERIES = [
    "create an issue",
    "send a message to the channel",
    "weather forecast for tomorrow",
    "Find the invoice in stripe, then refund the payment; also notify the customer.",
    "select:nothing_by_that_name",
]


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 tools in the three formats; the default policy hides the http tools."""
    root = tmp_path_factory.mktemp("synthetic")
    generate(300, root)
    return root


@pytest.fixture
def catalog(synthetic: Path, tmp_path: Path) -> Path:
    root = tmp_path / "catalog"
    shutil.copytree(synthetic, root)
    return root


def _settings(root: Path, **extra: Any) -> Settings:
    return Settings(**{"paths": [root], "audit": False, "cache": True, "workspace": root, **extra})


def _state(loaded: Loaded) -> dict[str, Any]:
    """Everything a start serves, spelled out (reading every cached record)."""
    return {
        "names": list(loaded.catalog.names),
        "specs": [s.model_dump(mode="json") for s in loaded.catalog.specs()],
        "ids": loaded.catalog.ids(),
        "problems": [(p.render(), p.code, p.severity) for p in loaded.problems],
        "hidden": [s.name for s in loaded.hidden],
        "skipped": [(s.name, s.reason, s.detail, s.spec.name) for s in loaded.skipped],
        "left_out": loaded.left_out,
        "pinned": loaded.catalog.pinned_names(),
        "unmatched_pins": loaded.unmatched_pins,
        "served_sources": dict(loaded.served_sources),
        "declared_sources": dict(loaded.manifests.declared_sources()),
        "report": [t.name for t in loaded.report.tools],
        "manifests": loaded.report.manifests,
    }


def _hits(index: SearchIndex) -> list[list[tuple[str, float]]]:
    return [[(h.name, round(h.score, 6)) for h in index.search(q, 10)] for q in QUERIES]


def _fresh(root: Path, **extra: Any) -> Loaded:
    return load_catalog(_settings(root, cache=False, **extra), locked=True)


def test_a_second_start_restores_exactly_what_a_fresh_start_builds(catalog: Path) -> None:
    first = load_catalog(_settings(catalog), locked=True)
    second = load_catalog(_settings(catalog), locked=True)
    assert second.manifests.reused == len(second.manifests.files())
    assert second.key == first.key is not None
    fresh = _fresh(catalog)
    assert _state(second) == _state(fresh)
    assert second.hidden and any(p.severity == "notice" for p in second.problems)
    built = SearchIndex.build(fresh.catalog.specs()[len(fresh.catalog.builtin_names()) :])
    search_index(_settings(catalog), first)  # builds and stores
    restored = search_index(_settings(catalog), second)
    assert _hits(restored) == _hits(built)


def test_a_restored_catalog_reads_no_tool_record_until_one_is_used(catalog: Path) -> None:
    load_catalog(_settings(catalog), locked=True)
    second = load_catalog(_settings(catalog), locked=True)
    assert all(f._tools is None for f in second.manifests.files())
    name = second.catalog.manifest_names()[0]
    entry = second.catalog.get(name)
    assert entry is not None and entry.spec.name == name
    assert sum(f._tools is not None for f in second.manifests.files()) == 1
    by_id = second.catalog.resolve(entry.spec.id)  # a lookup by manifest id works too
    assert by_id is not None and by_id.name == name
    assert second.catalog.resolve("no-such-tool") is None


def _edit(path: Path, change: Any) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    change(doc)
    path.write_text(json.dumps(doc), encoding="utf-8")


def test_a_changed_manifest_changes_the_catalog_and_its_index(catalog: Path) -> None:
    first = load_catalog(_settings(catalog), locked=True)
    search_index(_settings(catalog), first)
    manifest = sorted((catalog / "agentcli").glob("*/tools.json"))[0]

    def rename(doc: dict[str, Any]) -> None:
        doc["tools"][0]["name"] = "zz_quantum_flux_capacitor"
        doc["tools"][0]["description"] = "Calibrate the quantum flux capacitor"

    _edit(manifest, rename)
    second = load_catalog(_settings(catalog), locked=True)
    assert second.key != first.key
    assert second.manifests.reused == len(second.manifests.files()) - 1
    assert _state(second) == _state(_fresh(catalog))
    hits = search_index(_settings(catalog), second).search("quantum flux capacitor", 1)
    assert [h.name for h in hits] == ["zz_quantum_flux_capacitor"]


def test_removed_and_added_manifests_are_never_served_stale(catalog: Path) -> None:
    first = load_catalog(_settings(catalog), locked=True)
    gone = sorted((catalog / "agentpm").rglob("agent.json"))[0]
    gone_name = json.loads(gone.read_text(encoding="utf-8"))["name"]
    assert any(gone_name in n for n in first.catalog.names)
    shutil.rmtree(gone.parent)
    second = load_catalog(_settings(catalog), locked=True)
    assert not any(gone_name in n for n in second.catalog.names)
    assert _state(second) == _state(_fresh(catalog))
    shutil.copytree(catalog / "agentcli", catalog / "more")
    third = load_catalog(_settings(catalog), locked=True)
    assert _state(third) == _state(_fresh(catalog))
    assert any("already used" in p.message for p in third.problems)  # the copies collide


def test_a_policy_change_is_never_served_from_the_cache(catalog: Path, tmp_path: Path) -> None:
    default = load_catalog(_settings(catalog), locked=True)
    load_catalog(_settings(catalog), locked=True)
    victim = default.catalog.manifest_names()[0]
    policy = tmp_path / "policy.toml"
    policy.write_text(f'[[rules]]\npermission = "{victim}"\naction = "deny"\n', encoding="utf-8")
    denied = load_catalog(_settings(catalog, policy_file=policy), locked=True)
    assert victim not in denied.catalog
    assert _state(denied) == _state(_fresh(catalog, policy_file=policy))
    project = catalog / ".toolbridge" / "policy.toml"  # the workspace's rules count too
    project.parent.mkdir()
    project.write_text(f'[[rules]]\npermission = "{victim}"\naction = "deny"\n', encoding="utf-8")
    by_project = load_catalog(_settings(catalog), locked=True)
    assert victim not in by_project.catalog
    assert _state(by_project) == _state(_fresh(catalog))


def test_keep_names_and_the_locked_set_are_part_of_the_key(catalog: Path) -> None:
    plain = load_catalog(_settings(catalog), locked=True)
    kept = load_catalog(_settings(catalog, keep_names=True), locked=True)
    assert kept.key != plain.key
    assert _state(kept) == _state(_fresh(catalog, keep_names=True))
    assert _state(load_catalog(_settings(catalog, keep_names=True), locked=True)) == _state(kept)
    few = load_catalog(_settings(catalog, locked=("read", "tool_search")), locked=True)
    assert few.catalog.builtin_names() == ["read", "tool_search", "call_tool"]
    assert _state(few) == _state(_fresh(catalog, locked=("read", "tool_search")))


def test_pins_are_part_of_the_key_and_restored(catalog: Path) -> None:
    plain = load_catalog(_settings(catalog), locked=True)
    victim = plain.catalog.manifest_names()[3]
    pinned = _settings(catalog, pins=(victim, "no_such_tool_*"))
    first = load_catalog(pinned, locked=True)
    assert first.key != plain.key
    second = load_catalog(pinned, locked=True)
    assert second.catalog.pinned_names() == [victim]
    entry = second.catalog.get(victim)
    assert entry is not None and entry.pinned and entry.spec.pinned
    assert [p.message for p in second.unmatched_pins] == [
        p.message for p in _fresh(catalog, pins=(victim, "no_such_tool_*")).unmatched_pins
    ]
    assert _state(second) == _state(_fresh(catalog, pins=(victim, "no_such_tool_*")))


def test_a_ranking_change_rebuilds_the_index(
    catalog: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded = load_catalog(_settings(catalog))
    search_index(_settings(catalog), loaded)
    stored = index_cache.index_key(loaded.key or b"")
    monkeypatch.setattr(index_cache, "RANKING_CONFIG", "another ranking")
    index_cache.ranking.cache_clear()
    try:
        assert index_cache.index_key(loaded.key or b"") != stored
        built: list[int] = []
        real_build = SearchIndex.build

        def counting(*args: Any, **kwargs: Any) -> SearchIndex:
            built.append(1)
            return real_build(*args, **kwargs)

        monkeypatch.setattr(SearchIndex, "build", counting)
        search_index(_settings(catalog), loaded)
        assert built == [1]
        search_index(_settings(catalog), loaded)
        assert built == [1]  # and stored under the new ranking
    finally:
        index_cache.ranking.cache_clear()


def test_the_semantic_vectors_are_made_once_and_then_read_from_the_cache(
    catalog: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedded: list[int | None] = []  # how many texts each embedding was of (None: a query's)
    real_embed = Embedder.embed

    def counting(self: Embedder, texts: Any, count: int | None = None) -> Any:
        embedded.append(count)
        return real_embed(self, texts, count)

    monkeypatch.setattr(Embedder, "embed", counting)
    first = load_catalog(_settings(catalog), locked=True)
    built = search_index(_settings(catalog), first)
    expected = _hits(built)
    tools = len(built)
    assert embedded.count(tools) == 1
    cache_home = Path(os.environ["XDG_CACHE_HOME"]) / "mcp-toolbridge"
    assert len(list(cache_home.glob("vectors-*"))) == 1
    second = load_catalog(_settings(catalog), locked=True)
    restored = search_index(_settings(catalog), second)
    assert _hits(restored) == expected
    assert embedded.count(tools) == 1  # the restart read them: nothing embedded again
    stored = next(cache_home.glob("vectors-*"))
    stored.write_bytes(stored.read_bytes()[:-8])  # damaged: ignored, made again, never trusted
    third = search_index(_settings(catalog), load_catalog(_settings(catalog), locked=True))
    assert _hits(third) == expected
    assert embedded.count(tools) == 2


def test_without_the_cache_nothing_is_written(catalog: Path, tmp_path: Path) -> None:
    loaded = load_catalog(_settings(catalog, cache=False), locked=True)
    search_index(_settings(catalog, cache=False), loaded)
    assert loaded.key is None
    cache_home = Path(os.environ["XDG_CACHE_HOME"])
    assert not (cache_home / "mcp-toolbridge").exists()


WRITE_BEHIND = """
import json, os, sys, time
from pathlib import Path
from mcp_toolbridge import runtime

from mcp_toolbridge.runtime import cache as runtime_cache
runtime_cache.WRITE_BEHIND_FROM = 1  # this small catalog writes behind too
settings = runtime.Settings(paths=[Path(sys.argv[1])], audit=False, cache=True)
began = time.monotonic()
loaded = runtime.load_catalog(settings, locked=True)
runtime.search_index(settings, loaded)
print(json.dumps({"parent": os.getpid(), "names": list(loaded.catalog.names)}))
"""

RESTORE = """
import json, sys
from pathlib import Path
from mcp_toolbridge import runtime

settings = runtime.Settings(paths=[Path(sys.argv[1])], audit=False, cache=True)
loaded = runtime.load_catalog(settings, locked=True)
index = runtime.search_index(settings, loaded)
print(json.dumps({
    "reused": loaded.manifests.reused,
    "unread": all(f._tools is None for f in loaded.manifests.files()),
    "names": list(loaded.catalog.names),
    "hits": [h.name for h in index.search("send a message", 5)],
}))
"""


def test_a_big_catalog_writes_its_caches_behind_in_a_forked_child(
    catalog: Path, tmp_path: Path
) -> None:
    import os
    import time

    cache = Path(os.environ["XDG_CACHE_HOME"]) / "mcp-toolbridge"
    first = run_json_script(WRITE_BEHIND, str(catalog))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        names = {p.name.split("-")[0] for p in cache.glob("*.bin")}
        if names >= {"specs", "served", "index"} and not list(cache.glob("*.tmp")):
            break
        time.sleep(0.1)
    second = run_json_script(RESTORE, str(catalog))
    assert second["names"] == first["names"]
    assert second["unread"] and second["reused"] > 0
    fresh = _fresh(catalog)
    manifest = fresh.catalog.specs()[len(fresh.catalog.builtin_names()) :]
    expected = SearchIndex.build(manifest).search("send a message", 5)
    assert second["hits"] == [h.name for h in expected]


def test_requirements_are_compiled_again_on_every_start(tmp_path: Path) -> None:
    """A path requirement compiles through the file system: the same declaration with a
    symlink moved is another scope, so a cached composition must not be reused."""
    from mcp_toolbridge.model import RequirementSet
    from mcp_toolbridge.runtime import load_policy

    workspace = tmp_path / "ws"
    (workspace / "a").mkdir(parents=True)
    (workspace / "b").mkdir()
    (workspace / "link").symlink_to(workspace / "a")
    requires = RequirementSet(fs_read=("{workspace}/link/data",))
    before = load_policy(Settings(workspace=workspace)).requirements_fingerprint(requires)
    same = load_policy(Settings(workspace=workspace)).requirements_fingerprint(requires)
    (workspace / "link").unlink()
    (workspace / "link").symlink_to(workspace / "b")
    after = load_policy(Settings(workspace=workspace)).requirements_fingerprint(requires)
    assert before == same != after


async def test_a_server_reads_a_big_cached_index_in_the_background(
    catalog: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_toolbridge.catalog import DeferredIndex
    from mcp_toolbridge.runtime import cache as runtime_cache
    from mcp_toolbridge.runtime import open_runtime, serving_index

    monkeypatch.setattr(runtime_cache, "DEFER_FROM", 1)
    settings = _settings(catalog)
    first = load_catalog(settings, locked=True)
    assert isinstance(serving_index(settings, first), SearchIndex)  # built and stored
    second = load_catalog(settings, locked=True)
    deferred = serving_index(settings, second)
    assert isinstance(deferred, DeferredIndex)
    assert _hits(await deferred.ready()) == _hits(search_index(settings, first))
    async with open_runtime(settings, second) as served:
        outcome = await served.bridge.call("tool_search", {"query": "send a message"})
    assert outcome.ok and isinstance(outcome.value, dict)
    found = [tool["name"] for tool in outcome.value["tools"]]
    fresh = _fresh(catalog)
    built = SearchIndex.build(fresh.catalog.specs()[len(fresh.catalog.builtin_names()) :])
    assert found == [h.name for h in built.search("send a message", len(found))]


async def test_a_failed_background_index_fails_the_search_not_the_server() -> None:
    from mcp_toolbridge.catalog import DeferredIndex

    def broken() -> SearchIndex:
        raise OSError("disk gone")

    index = DeferredIndex(broken)
    with pytest.raises(OSError, match="disk gone"):
        await index.ready()


async def test_serving_a_restored_catalog_reads_no_tool_record(catalog: Path) -> None:
    """What a server does before its first tools/list in search mode (the runtime, the
    server, the start-up report) must not read the records of a restored catalog: at 100,000
    tools that is seconds (it was, twice: the banner, and the pinned tools' lookup)."""
    from mcp import Client

    from mcp_toolbridge.cli.startup import loaded_lines
    from mcp_toolbridge.runtime import open_runtime
    from mcp_toolbridge.server import ToolbridgeServer

    settings = _settings(catalog)
    search_index(settings, load_catalog(settings, locked=True))  # a first start: all cached
    loaded = load_catalog(settings, locked=True)
    assert all(f._tools is None for f in loaded.manifests.files())
    lines = loaded_lines(loaded)
    async with open_runtime(settings, loaded) as served:
        server = ToolbridgeServer(served.bridge, expose="auto")
        assert server.expose == "search"
        async with Client(server.server) as client:
            listed = [t.name for t in (await client.list_tools()).tools]
    assert all(f._tools is None for f in loaded.manifests.files())
    assert "tool_search" in listed
    assert lines == loaded_lines(_fresh(catalog))
