"""A sandboxed tool that may write the cache folder (``TOOLBRIDGE_CACHE_DIR`` or
``XDG_CACHE_HOME`` inside its workspace) writes a key of its own and a cache file signed with
it: the next start unpickled the tool's bytes, outside the sandbox (red-team pass of
2026-11-29, 5th: a marker file was made by the server). The sandbox now shows the server's own
folders to no tool. Real ``mcp-toolbridge call`` processes, the served bash tool in a real
sandbox."""

from __future__ import annotations

import base64
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from blake3 import blake3

from mcp_toolbridge.cache import folder as cachefile
from tests.support.cli import run_cli

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

TIMEOUT_S = 90.0


class _Planted:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (Path.write_text, (Path(self.marker), "ran outside the sandbox"))  # type: ignore[return-value]


def _call(
    tmp_path: Path, command: str, *, cache: Path | None = None, cached: bool = True
) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "home"
    workspace = tmp_path / "ws"
    home.mkdir(exist_ok=True)
    workspace.mkdir(exist_ok=True)
    folder = cache if cache is not None else workspace / ".cache"
    env = {**os.environ, "HOME": str(home), "TOOLBRIDGE_CACHE_DIR": str(folder)}
    argv = ["call", "--no-audit", "--sandbox", "required", "--locked", "bash", "--allow", "bash"]
    argv += [] if cached else ["--no-index-cache"]
    argv += ["--workspace", str(workspace), "bash", "--args", json.dumps({"command": command})]
    return run_cli(argv, env=env, cwd=workspace, timeout_s=TIMEOUT_S)


def _forged(original: bytes, key: bytes, marker: Path) -> bytes:
    """``original`` (a cache file) with a pickle of the tool's own, signed with ``key``."""
    size = int.from_bytes(original[len(cachefile.MAGIC) : len(cachefile.MAGIC) + 2], "little")
    head = original[: len(cachefile.MAGIC) + 2 + size]
    meta = pickle.dumps(_Planted(str(marker)))
    length = len(meta).to_bytes(8, "little")
    mac = blake3(head, key=key).update(length).update(meta).digest()
    return head + mac + length + meta


@pytest.mark.parametrize("made", ["by-the-server", "by-the-tool"])
def test_a_tool_cannot_plant_a_cache_file_the_next_start_unpickles(
    tmp_path: Path, made: str
) -> None:
    """``by-the-tool``: the folder did not exist yet (the server had run with
    ``--no-index-cache``), so the tool made it, with a key of its own."""
    if made == "by-the-server":
        first = _call(tmp_path, "true")  # the server writes its caches, in the workspace
    else:  # learn the file's name and head elsewhere; the workspace has no cache folder
        first = _call(tmp_path, "true", cache=tmp_path / "elsewhere")
        assert _call(tmp_path, "true", cached=False).returncode == 0
    assert first.returncode == 0, first.stderr
    written = tmp_path / ("ws/.cache" if made == "by-the-server" else "elsewhere")
    index = next(p for p in written.iterdir() if p.name.startswith("index-"))
    key = b"k" * cachefile.KEY_BYTES
    marker = tmp_path / "marker"
    forged = base64.b64encode(_forged(index.read_bytes(), key, marker)).decode()
    planting = (
        "mkdir -p -m 700 .cache && "
        f"printf %s {base64.b64encode(key).decode()} | base64 -d > .cache/key.new && "
        "chmod 600 .cache/key.new && mv .cache/key.new .cache/key && "
        f"printf %s {forged} | base64 -d > .cache/{index.name} && echo planted"
    )

    # Named in the command, the cache folder's paths are asked about by the server before
    # anything runs (Settings.own_folders): nobody can be asked here, so nothing runs.
    asked = _call(tmp_path, planting, cached=False)
    assert asked.returncode != 0 and "nobody was asked" in asked.stderr, asked.stderr
    # Named only inside a script the check cannot read, the sandbox is what stops it.
    (tmp_path / "ws" / "plant.sh").write_text(planting + "\n", encoding="utf-8")
    planted = _call(tmp_path, "sh plant.sh", cached=False)
    assert planted.returncode == 0, planted.stderr
    said = json.loads(planted.stdout)
    assert "planted" not in said["stdout"], said
    assert "Read-only file system" in said["stderr"], said  # the folder is not writable

    again = _call(tmp_path, "true")
    assert again.returncode == 0, again.stderr
    assert not marker.exists()
