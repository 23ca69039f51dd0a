"""The per-file cache of loaded manifests: reused while nothing the load read has changed,
and never otherwise."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from blake3 import blake3

from mcp_toolbridge.cache import CacheFolder
from mcp_toolbridge.loaders import Manifests, load_manifests, load_paths
from tests.support import paths
from tests.support.fresh_python import run_json_script

SHAPES = paths.FIXTURES / "shapes"
ENV = {"HOME": "/nowhere", "CHAT_TOKEN": "t"}


def _agentcli(folder: Path, *names: str, description: str = "Does a thing") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    tools = [
        {
            "name": name,
            "description": f"{description} ({name})",
            "schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
            "command": [f"./tools/bin/{name}"],
        }
        for name in names
    ]
    path = folder / "tools.json"
    path.write_text(json.dumps({"tools": tools}), encoding="utf-8")
    return path


def _runloop_bundle(folder: Path, schema: dict[str, object]) -> None:
    """A bundle whose tool's input schema is a ``schema:`` ref to schemas/args.json."""
    folder.mkdir(parents=True, exist_ok=True)
    tools = {
        "version": 1,
        "tools": [
            {
                "id": "r.convert",
                "description": "Convert a document",
                "transport": {"kind": "exec", "command": "/bin/true"},
                "input_schema": {"$ref": "schema:args"},
                "result_schema": {"type": "object"},
            }
        ],
    }
    data = json.dumps(tools).encode()
    (folder / "tools.json").write_bytes(data)
    (folder / "manifest.toml").write_text(
        f'[artifacts.tools]\npath = "tools.json"\nblake3 = "{blake3(data).hexdigest()}"\n'
        "version = 1\n",
        encoding="utf-8",
    )
    (folder / "schemas").mkdir(exist_ok=True)
    (folder / "schemas" / "args.json").write_text(json.dumps(schema), encoding="utf-8")


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    root = tmp_path / "catalog"
    _agentcli(root / "a", "alpha", "beta")
    _agentcli(root / "b", "gamma")
    shutil.copytree(SHAPES / "agentpm" / "tools" / "chat-post", root / "pm" / "chat-post")
    _runloop_bundle(root / "rl", {"type": "object", "properties": {"doc": {"type": "string"}}})
    return root


@pytest.fixture
def cache(tmp_path: Path) -> CacheFolder:
    return CacheFolder(tmp_path / "cache")


def _load(root: Path, cache: CacheFolder | None, env: dict[str, str] = ENV) -> Manifests:
    found = load_manifests([root], environ=env, cache=cache)
    if cache is not None:
        found.store(cache)
    return found


def _same_as_fresh(found: Manifests, root: Path, env: dict[str, str] = ENV) -> None:
    fresh = load_paths([root], environ=env)
    report = found.report()
    assert report.tools == fresh.tools
    assert report.problems == fresh.problems
    assert report.manifests == fresh.manifests


def test_a_second_load_comes_from_the_cache_and_equals_a_fresh_load(
    catalog: Path, cache: CacheFolder
) -> None:
    first = _load(catalog, cache)
    assert first.reused == 0 and first.dirty
    second = _load(catalog, CacheFolder(cache.folder))
    assert second.reused == len(second.files()) == 4
    assert not second.dirty
    assert second.fingerprint() == first.fingerprint() is not None
    _same_as_fresh(second, catalog)


def test_cached_tools_are_unpickled_only_when_asked_for(catalog: Path, cache: CacheFolder) -> None:
    _load(catalog, cache)
    second = _load(catalog, CacheFolder(cache.folder))
    assert all(f._tools is None for f in second.files())
    assert second.tool_count == 5
    assert [t.name for t in second.files()[0].tools()] == ["alpha", "beta"]


def test_a_changed_manifest_is_loaded_again_alone(catalog: Path, cache: CacheFolder) -> None:
    _load(catalog, cache)
    _agentcli(catalog / "b", "gamma", description="Does something else now")
    second = _load(catalog, CacheFolder(cache.folder))
    assert second.reused == 3
    _same_as_fresh(second, catalog)
    assert "something else" in second.report().tools[2].description


def test_a_change_that_keeps_size_and_time_is_still_seen(catalog: Path, cache: CacheFolder) -> None:
    _load(catalog, cache)
    path = catalog / "a" / "tools.json"
    before = path.stat()
    text = path.read_text(encoding="utf-8").replace("alpha", "ALPHA")
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    second = _load(catalog, CacheFolder(cache.folder))
    assert [t.id for t in second.report().tools[:2]] == ["ALPHA", "beta"]


def test_added_and_removed_manifests_are_never_served_stale(
    catalog: Path, cache: CacheFolder
) -> None:
    _load(catalog, cache)
    shutil.rmtree(catalog / "b")
    _agentcli(catalog / "c", "delta")
    second = _load(catalog, CacheFolder(cache.folder))
    assert second.reused == 3
    names = [t.name for t in second.report().tools]
    assert "gamma" not in names and "delta" in names
    _same_as_fresh(second, catalog)
    third = _load(catalog, CacheFolder(cache.folder))
    assert third.reused == 4 and not third.dirty


def test_a_changed_schema_file_reloads_the_manifest_that_refers_to_it(
    catalog: Path, cache: CacheFolder
) -> None:
    _load(catalog, cache)
    schema = {"type": "object", "properties": {"pages": {"type": "integer"}}}
    (catalog / "rl" / "schemas" / "args.json").write_text(json.dumps(schema), encoding="utf-8")
    second = _load(catalog, CacheFolder(cache.folder))
    assert second.reused == 3
    _same_as_fresh(second, catalog)
    (converted,) = [t for t in second.report().tools if t.id == "r.convert"]
    assert "pages" in json.dumps(converted.input_schema)


def test_a_changed_environment_reloads_what_read_it(catalog: Path, cache: CacheFolder) -> None:
    _load(catalog, cache)
    without = {"HOME": "/nowhere"}  # chat-post requires CHAT_TOKEN
    second = _load(catalog, CacheFolder(cache.folder), without)
    assert second.reused == 3
    assert any("CHAT_TOKEN" in p.message for p in second.problems)
    _same_as_fresh(second, catalog, without)
    unrelated = {**ENV, "UNRELATED": "1"}
    third = _load(catalog, CacheFolder(cache.folder), unrelated)
    assert third.reused == 3  # the AgentPM tool is loaded again: its variable is set again
    fourth = _load(catalog, CacheFolder(cache.folder), unrelated)
    assert fourth.reused == 4  # and a variable nothing reads changes nothing


def test_problems_are_cached_with_their_file(tmp_path: Path, cache: CacheFolder) -> None:
    root = tmp_path / "catalog"
    _agentcli(root / "ok", "fine")
    (root / "bad").mkdir()
    (root / "bad" / "tools.json").write_text('{"tools": [{"name": "broken"}]}')
    first = _load(root, cache)
    second = _load(root, CacheFolder(cache.folder))
    assert second.reused == 2
    assert second.problems == first.problems != []
    _same_as_fresh(second, root)


def test_without_a_cache_nothing_is_recorded_or_written(catalog: Path, tmp_path: Path) -> None:
    found = _load(catalog, None)
    assert found.fingerprint() is None
    _same_as_fresh(found, catalog)
    assert not (tmp_path / "cache").exists()


def test_the_same_files_named_differently_are_kept_apart(
    catalog: Path, cache: CacheFolder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Problems name a file as it was given, so a relative and an absolute path are
    different entries."""
    _load(catalog, cache)
    monkeypatch.chdir(catalog.parent)
    relative = load_manifests([Path("catalog")], environ=ENV, cache=CacheFolder(cache.folder))
    assert relative.reused == 0
    assert relative.report().problems == load_paths([Path("catalog")], environ=ENV).problems


def test_settled_files_are_checked_by_signature_and_a_write_still_shows(
    catalog: Path, cache: CacheFolder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_toolbridge.cache import files

    monkeypatch.setattr(files, "SETTLED_NS", -1)  # every file counts as settled
    _load(catalog, cache)
    hashed: list[str] = []
    real_open = open

    def counting_open(path: str, *args: object, **kwargs: object) -> object:
        hashed.append(str(path))
        return real_open(path, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(files, "open", counting_open, raising=False)
    second = _load(catalog, CacheFolder(cache.folder))
    assert second.reused == 4 and hashed == []  # nothing read again
    path = catalog / "a" / "tools.json"
    before = path.stat()
    path.write_text(path.read_text(encoding="utf-8").replace("alpha", "ALPHA"), encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # same size, same mtime
    third = _load(catalog, CacheFolder(cache.folder))
    assert third.reused == 3 and hashed == [str(path)]  # the change time gave it away
    assert [t.id for t in third.report().tools[:2]] == ["ALPHA", "beta"]


PARALLEL = """
import json, os, sys
from pathlib import Path
from mcp_toolbridge.cache import CacheFolder
from mcp_toolbridge.loaders import load_manifests, load_paths
from mcp_toolbridge.loaders import parallel as shares

shares.MIN_BYTES = 1  # this small catalog is worth a worker
root, env = Path(sys.argv[1]), {"HOME": "/nowhere", "CHAT_TOKEN": "t"}
cache = CacheFolder(Path(sys.argv[2]))
first = load_manifests([root], environ=env, cache=cache)
first.store(cache)
second = load_manifests([root], environ=env, cache=CacheFolder(cache.folder))
fresh = load_paths([root], environ=env)
print(json.dumps({
    "cacheable": first.fingerprint() is not None,
    "same_key": first.fingerprint() == second.fingerprint(),
    "reused": second.reused,
    "files": len(second.files()),
    "equal": second.report().tools == fresh.tools and first.report().tools == fresh.tools,
    "problems": second.report().problems == fresh.problems,
}))
"""


def test_files_a_forked_worker_loaded_are_cached_like_the_others(
    catalog: Path, tmp_path: Path
) -> None:
    for n in range(12):  # enough files for the worker to take some
        _agentcli(catalog / f"more-{n:02d}", *(f"tool_{n}_{t}" for t in range(5)))
    found = run_json_script(PARALLEL, str(catalog), str(tmp_path / "cache"))
    assert found == {
        "cacheable": True,
        "same_key": True,
        "reused": 16,
        "files": 16,
        "equal": True,
        "problems": True,
    }
