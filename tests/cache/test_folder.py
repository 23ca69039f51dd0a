"""The cache folder: what is written is read back, and nothing else is ever unpickled."""

from __future__ import annotations

import logging
import os
import pickle
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mcp_toolbridge.cache import CacheFolder, default_cache_dir, fingerprint
from mcp_toolbridge.cache import folder as cachefile
from tests.support.fresh_python import ROOT


@pytest.fixture
def folder(tmp_path: Path) -> CacheFolder:
    return CacheFolder(tmp_path / "cache")


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_what_is_written_is_read_back(folder: CacheFolder) -> None:
    value = {"tools": [1, 2.5, "three", (4, None)], "nested": {"x": b"\x00\xff"}}
    assert folder.write("thing.bin", "test/1", value)
    assert folder.read("thing.bin", "test/1") == value
    assert folder.read("missing.bin", "test/1") is None


def test_the_folder_and_its_key_are_private(folder: CacheFolder) -> None:
    folder.write("thing.bin", "test/1", 1)
    assert stat.S_IMODE(folder.folder.stat().st_mode) == 0o700
    key = folder.folder / "key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert len(key.read_bytes()) == cachefile.KEY_BYTES
    assert stat.S_IMODE(folder.path("thing.bin").stat().st_mode) == 0o600


def test_blobs_are_read_on_demand_and_checked_one_by_one(folder: CacheFolder) -> None:
    blobs = [b"first blob", b"", b"third" * 1000]
    places = folder.blob_places(blobs)
    assert places is not None
    assert folder.write("packed.bin", "test/1", {"places": places}, blobs)
    found = CacheFolder(folder.folder).read_with_blobs("packed.bin", "test/1")
    assert found is not None
    meta, area = found
    assert [area.get(place) for place in meta["places"]] == blobs


def test_a_blob_changed_in_place_is_refused(
    folder: CacheFolder, caplog: pytest.LogCaptureFixture
) -> None:
    blobs = [b"tool records " * 50]
    places = folder.blob_places(blobs)
    assert places is not None
    folder.write("packed.bin", "test/1", places, blobs)
    path = folder.path("packed.bin")
    data = bytearray(path.read_bytes())
    data[-10] ^= 0x01  # inside the blob: the object's own MAC still holds
    path.write_bytes(bytes(data))
    found = CacheFolder(folder.folder).read_with_blobs("packed.bin", "test/1")
    assert found is not None
    assert found[1].get(found[0][0]) is None
    assert any("integrity" in m for m in _warnings(caplog))


def _damaged(folder: CacheFolder, how: str) -> None:
    path = folder.path("thing.bin")
    data = path.read_bytes()
    if how == "flipped":
        middle = len(data) - 20
        path.write_bytes(data[:middle] + bytes([data[middle] ^ 0x40]) + data[middle + 1 :])
    elif how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "not ours":
        path.write_bytes(pickle.dumps({"planted": True}))
    elif how == "other version":
        path.write_bytes(data.replace(b"|0.1.0|", b"|9.9.9|", 1))
    elif how == "other kind":
        path.write_bytes(data.replace(b"test/1", b"test/2", 1))
    elif how == "other key":
        (folder.folder / "key").write_bytes(os.urandom(cachefile.KEY_BYTES))
    else:
        raise AssertionError(how)


@pytest.mark.parametrize(
    "how",
    ["flipped", "truncated", "empty", "not ours", "other version", "other kind", "other key"],
)
def test_a_damaged_or_foreign_file_is_ignored_with_one_warning(
    folder: CacheFolder, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    folder.write("thing.bin", "test/1", {"value": 1})
    _damaged(folder, how)
    unpickled: list[object] = []
    real_loads = pickle.loads

    def loads(data: bytes) -> object:
        unpickled.append(data)
        return real_loads(data)

    monkeypatch.setattr(pickle, "loads", loads)
    fresh = CacheFolder(folder.folder)
    assert fresh.read("thing.bin", "test/1") is None
    assert fresh.read("thing.bin", "test/1") is None  # asked twice, warned once
    assert unpickled == []  # never unpickled
    warnings = _warnings(caplog)
    assert len(warnings) == 1, warnings
    assert folder.path("thing.bin").name in warnings[0]


def test_a_key_others_can_read_is_replaced(
    folder: CacheFolder, caplog: pytest.LogCaptureFixture
) -> None:
    folder.write("thing.bin", "test/1", 1)
    key = folder.folder / "key"
    key.chmod(0o644)
    fresh = CacheFolder(folder.folder)
    assert fresh.read("thing.bin", "test/1") is None  # signed with a key that is not trusted
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert any("private" in m for m in _warnings(caplog))
    assert fresh.write("thing.bin", "test/1", 2)
    assert CacheFolder(folder.folder).read("thing.bin", "test/1") == 2


def test_an_unusable_folder_means_no_cache_and_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    folder = CacheFolder(blocker / "cache")
    assert not folder.write("a.bin", "test/1", 1)
    assert folder.read("a.bin", "test/1") is None
    assert folder.disabled
    assert len(_warnings(caplog)) == 1


def test_the_default_folder_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if sys.platform == "linux":
        assert default_cache_dir() == tmp_path / "xdg" / "mcp-toolbridge"
    monkeypatch.setenv(cachefile.CACHE_DIR_ENV, str(tmp_path / "given"))
    assert default_cache_dir() == tmp_path / "given"


WRITER = """
import os, sys, time
from pathlib import Path
from mcp_toolbridge.cache import folder as cachefile

folder = cachefile.CacheFolder(Path(sys.argv[1]))
folder.write("thing.bin", "test/1", "the old value")
real_open = os.open

def slow_open(path, flags, mode=0o777):
    fd = real_open(path, flags, mode)
    if str(path).endswith(".tmp") and "key" not in str(path):
        os.write(fd, b"half of a file")
        print("writing", flush=True)
        time.sleep(60)  # killed here, mid-write
    return fd

cachefile.os.open = slow_open
folder.write("thing.bin", "test/1", "the new value " * 100_000)
"""


def test_a_crash_mid_write_leaves_the_old_file_and_no_broken_one(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(WRITER), str(cache)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    ) as writer:
        assert writer.stdout is not None
        assert writer.stdout.readline() == "writing\n"
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=10)
    temps = list(cache.glob("*.tmp"))
    assert len(temps) == 1  # the crash left its temporary file behind...
    assert CacheFolder(cache).read("thing.bin", "test/1") == "the old value"  # ...unread
    old = time.time() - 2 * 3600
    os.utime(temps[0], (old, old))
    CacheFolder(cache).prune("none-", keep=[], most=1)
    assert list(cache.glob("*.tmp")) == []  # removed once it is old


def test_prune_keeps_the_newest_files_of_a_kind(folder: CacheFolder) -> None:
    for i in range(5):
        folder.write(f"index-{i}.bin", "test/1", i)
        os.utime(folder.path(f"index-{i}.bin"), (1000 + i, 1000 + i))
    folder.write("specs-0.bin", "test/1", 0)
    folder.prune("index-", keep=["index-0.bin"], most=3)
    left = sorted(p.name for p in folder.folder.glob("*.bin"))
    names = ["index-0.bin", "index-3.bin", "index-4.bin", "specs-0.bin"]
    assert left == [folder.path(name).name for name in names]


def test_files_written_by_other_code_are_foreign(
    folder: CacheFolder, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same version number with edited source (a development checkout, a patched
    install) must not read what the other code cached, even found under its own name."""
    folder.write("thing.bin", "test/1", 1)
    written = folder.path("thing.bin")
    monkeypatch.setattr(cachefile, "code_fingerprint", lambda: "edited")
    os.replace(written, folder.path("thing.bin"))
    assert CacheFolder(folder.folder).read("thing.bin", "test/1") is None
    assert any("another version" in m for m in _warnings(caplog))


def test_two_installs_sharing_the_folder_keep_their_own_files(
    folder: CacheFolder, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two installs of different code using one cache folder (a Claude Desktop bundle and a
    pip install, two checkouts) starting in turn each find what they wrote last: neither
    discards the other's file, and neither warns."""
    folder.write("index-1.bin", "test/1", "the first install's")
    with monkeypatch.context() as other_code:
        other_code.setattr(cachefile, "code_fingerprint", lambda: "another install")
        other = CacheFolder(folder.folder)
        assert other.read("index-1.bin", "test/1") is None  # not written yet by this code
        assert other.write("index-1.bin", "test/1", "the second install's")
        other.prune("index-", keep=["index-1.bin"], most=8)
        assert CacheFolder(folder.folder).read("index-1.bin", "test/1") == "the second install's"
    assert CacheFolder(folder.folder).read("index-1.bin", "test/1") == "the first install's"
    assert len(list(folder.folder.glob("index-1.*.bin"))) == 2
    assert _warnings(caplog) == []


def test_fingerprints_are_the_same_in_every_process() -> None:
    script = (
        "import re\nfrom pathlib import Path\nfrom mcp_toolbridge.cache import fingerprint\n"
        "print(fingerprint([{'b', 'a', 'c'}, frozenset({'x', 'y'}), Path('/p'), "
        "re.compile('a+', re.I)]).hex())"
    )
    seen = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True
        )
        seen.add(done.stdout.strip())
    assert len(seen) == 1
    assert fingerprint([1, "1"]) != fingerprint(["1", 1])
    assert fingerprint({"a": 1}) != fingerprint({"a": 2})


@pytest.mark.parametrize(
    "value",
    [
        ["a", "", "b c", "é"],
        {"x", "y"},
        frozenset({"x"}),
        {"a": 1, "b": -(2**40)},
        {"a": "b", "c": ""},
        {"get_time": (0,), "send": (1, 5, 9), "": ()},
        [1, "mixed"],
        {"a\x00b": 1},
        [],
        {},
    ],
)
def test_compacted_tables_expand_to_what_they_were(value: object) -> None:
    from mcp_toolbridge.cache import compact, expand

    back: object = expand(pickle.loads(pickle.dumps(compact(value))))
    assert back == value and type(back) is type(value)
    if isinstance(value, dict) and isinstance(back, dict):
        assert list(back) == list(value)  # in order
