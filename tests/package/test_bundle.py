"""The MCP bundle (.mcpb) scripts/bundle builds, validated by the official CLI: unpacked with
it (as a host unpacks it: file modes restored) into a folder named as Claude Desktop names its
extensions' (spaces in it), then started exactly as its manifest says, the way a host starts a
bundle's server: the command, arguments and environment from the bundle format's own
``getMcpConfigForManifest`` (the mcpb package's: ``${__dirname}`` and ``${user_config.*}``
substituted, a setting left blank taking its default, a ``multiple`` setting standing alone as
an argument becoming one argument per value), a minimal PATH holding only the system and the
host's own uv (the ``uv`` server type: the host provides uv and Python), in /. The bundle
carries uv.lock, and the environment the host's uv makes holds exactly the versions it pins."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tomllib
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from tests.package.conftest import GUI_PATH, ROOT

pytestmark = pytest.mark.package

MCPB = ROOT / ".ci" / "node" / "mcpb" / "node_modules" / ".bin" / "mcpb"


@pytest.fixture(scope="session")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not MCPB.exists():
        pytest.skip("the mcpb CLI is not installed: run scripts/install-mcpb (needs npm)")
    out = tmp_path_factory.mktemp("bundle")
    built = subprocess.run(
        [str(ROOT / "scripts" / "bundle"), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        stdin=subprocess.DEVNULL,
    )
    assert "Manifest schema validation passes!" in built.stderr
    path = Path(built.stdout.strip())
    assert path.parent == out and path.suffix == ".mcpb"
    return path


@pytest.fixture
def unpacked(bundle: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "Application Support" / "Claude" / "Claude Extensions" / "mcp-toolbridge"
    subprocess.run(
        [str(MCPB), "unpack", str(bundle), str(folder)],
        capture_output=True,
        timeout=120,
        check=True,
        stdin=subprocess.DEVNULL,
    )
    return folder


_HOST_CONFIG = """
import { getMcpConfigForManifest } from "@anthropic-ai/mcpb";
import { readFileSync } from "node:fs";
const [folder, given, home] = process.argv.slice(1);
const manifest = JSON.parse(readFileSync(folder + "/manifest.json", "utf8"));
const config = await getMcpConfigForManifest({
  manifest, extensionPath: folder, systemDirs: { HOME: home }, userConfig: JSON.parse(given),
  pathSeparator: "/",
});
process.stdout.write(JSON.stringify(config ?? null));
"""


def host_config(folder: Path, given: Mapping[str, Any], home: Path) -> dict[str, Any] | None:
    """The command, arguments and environment a host starts the bundle's server with: the
    bundle format's own ``getMcpConfigForManifest`` (the mcpb package's, which hosts share),
    run by node on the unpacked manifest; None when the host would not start it (a required
    setting missing)."""
    done = subprocess.run(
        [
            "node",
            "--input-type=module",
            "-e",
            _HOST_CONFIG,
            str(folder),
            json.dumps(given),
            str(home),
        ],
        cwd=MCPB.parents[2],  # where @anthropic-ai/mcpb is installed, for the import
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        stdin=subprocess.DEVNULL,
    )
    config: dict[str, Any] | None = json.loads(done.stdout)
    return config


def _host_path(uv: Path, tmp_path: Path) -> str:
    """The host's own uv, and the system's commands: nothing from the user's shell."""
    hostbin = tmp_path / "host-bin"
    hostbin.mkdir()
    (hostbin / "uv").symlink_to(uv)
    return f"{hostbin}:{GUI_PATH}"


def test_the_manifest_kept_in_the_repository_is_the_one_the_bundle_carries(
    unpacked: Path,
) -> None:
    manifest = json.loads((unpacked / "manifest.json").read_text(encoding="utf-8"))
    assert manifest == json.loads((ROOT / "bundle" / "manifest.json").read_text(encoding="utf-8"))
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert manifest["version"] == project["version"]
    assert manifest["server"]["type"] == "uv"
    assert manifest["tools_generated"] is True
    assert set(manifest["user_config"]) >= {"workspace", "manifests", "policy", "secrets"}
    assert manifest["user_config"]["secrets"]["sensitive"] is True
    assert set(manifest["compatibility"]["platforms"]) == {"darwin", "linux"}
    assert (unpacked / "pyproject.toml").is_file()  # what the uv type installs from
    # ...at the versions the package tests ran: the lock scripts/bundle wrote, which uv run
    # --frozen installs as it is
    assert (unpacked / "uv.lock").read_bytes() == (ROOT / "uv.lock").read_bytes()
    assert "--frozen" in manifest["server"]["mcp_config"]["args"]
    assert not (unpacked / "server" / "lib").exists() and not (unpacked / ".venv").exists()
    word_count = unpacked / "manifests" / "text-tools" / "tools" / "bin" / "word_count"
    assert os.access(word_count, os.X_OK)
    # the licence the manifest names, whose terms ask its text to go with every copy
    assert manifest["license"] == "MIT"
    assert (unpacked / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked_versions(lock: Path) -> dict[str, str]:
    packages = tomllib.loads(lock.read_text(encoding="utf-8"))["package"]
    return {_canonical(p["name"]): p["version"] for p in packages}


def installed_versions(venv: Path) -> dict[str, str]:
    (site,) = venv.glob("lib/python3.*/site-packages")
    return {
        _canonical(d.metadata["Name"]): d.version for d in metadata.distributions(path=[str(site)])
    }


async def _served(config: dict[str, Any], env: dict[str, str]) -> tuple[set[str], str, str]:
    params = StdioServerParameters(
        command=config["command"],
        args=config["args"],
        env={**env, **config.get("env", {})},
        cwd="/",
    )
    with anyio.fail_after(300):  # the first start installs the package and its dependencies
        async with Client(params) as session:
            listed = await session.list_tools()
            names = {t.name for t in listed.tools}
            tool = "word_count" if "word_count" in names else "echo_back"
            called = await session.call_tool(tool, {"text": "from the bundle"})
            read = await session.call_tool("read", {"file_path": "notes.txt"})
    assert not called.is_error and not read.is_error, [
        c.text for c in called.content if isinstance(c, types.TextContent)
    ]
    texts = []
    for result in (called, read):
        block = result.content[0]
        assert isinstance(block, types.TextContent)
        texts.append(block.text)
    return names, texts[0], texts[1]


def test_a_host_starts_no_server_without_the_workspace(unpacked: Path, home: Path) -> None:
    """The workspace is required: a host does not start the bundle's server without it."""
    assert host_config(unpacked, {}, home) is None
    assert host_config(unpacked, {"workspace": ""}, home) is None


async def test_the_bundle_starts_as_its_manifest_says_with_only_the_workspace_set(
    unpacked: Path,
    uv: Path,
    uv_env: dict[str, str],
    tmp_path: Path,
    project: Path,
    home: Path,
) -> None:
    config = host_config(unpacked, {"workspace": str(project)}, home)
    assert config is not None and config["command"] == "uv"
    env = {"PATH": _host_path(uv, tmp_path), "HOME": str(home), **uv_env}
    names, counted, notes = await _served(config, env)
    assert {"word_count", "slugify", "read", "bash"} <= names  # the bundled examples
    assert '"words": 3' in counted
    assert "the folder meant" in notes
    # the host's uv made the bundle's environment from its uv.lock, version for version
    installed = installed_versions(unpacked / ".venv")
    locked = locked_versions(unpacked / "uv.lock")
    assert {"mcp-toolbridge", "mcp", "pydantic-core", "anyio"} <= set(installed)
    assert {name: locked.get(name) for name in installed} == installed


async def test_the_bundle_serves_the_manifests_policy_and_secrets_its_settings_name(
    unpacked: Path,
    uv: Path,
    uv_env: dict[str, str],
    tmp_path: Path,
    project: Path,
    home: Path,
) -> None:
    tools = tmp_path / "my-tools"
    (tools / "tools" / "bin").mkdir(parents=True)
    script = tools / "tools" / "bin" / "echo_back"
    script.write_text("#!/bin/sh\ncat\n", encoding="utf-8")
    script.chmod(0o755)
    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    entry = {
        "command": ["./tools/bin/echo_back"],
        "schema": schema,
        "description": "Echo.",
        "annotations": {"readOnlyHint": True},
    }
    manifest_tools = [{"name": "echo_back", **entry}, {"name": "echo_denied", **entry}]
    (tools / "tools.json").write_text(json.dumps({"tools": manifest_tools}), encoding="utf-8")
    policy = tmp_path / "policy.toml"
    policy.write_text('[[rules]]\npermission = "echo_denied"\naction = "deny"\n', encoding="utf-8")
    secrets = tmp_path / "secrets.toml"
    secrets.write_text('"some/key" = "s3cret"\n', encoding="utf-8")
    secrets.chmod(0o600)
    settings = {
        "workspace": str(project),
        "manifests": [str(tools)],
        "policy": str(policy),
        "secrets": str(secrets),
    }
    config = host_config(unpacked, settings, home)
    assert config is not None
    assert str(tools) in config["args"]  # one argument per folder
    env = {"PATH": _host_path(uv, tmp_path), "HOME": str(home), **uv_env}
    names, echoed, notes = await _served(config, env)
    assert "echo_back" in names and "word_count" not in names
    assert "echo_denied" not in names  # the policy's deny rule leaves it out
    assert "from the bundle" in echoed
    assert "the folder meant" in notes
