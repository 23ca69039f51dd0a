"""The package as users install it, from the built wheel and sdist, never from this checkout:
installed into a clean virtualenv, run by ``uvx --from WHEEL``, and started from the config
that ``config --client`` writes there (the way Claude Desktop starts servers: working
directory /, launchd's minimal PATH), each listing the bundled examples and calling one.
The registry's entry (server.json) is started the way a registry client would start it."""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from tests.package.conftest import GUI_PATH, ROOT, Artifacts

pytestmark = pytest.mark.package

EXAMPLES = {"word_count", "slugify", "get_time", "hash_text", "debug_echo"}


def _run(
    argv: list[str], *, env: dict[str, str], cwd: Path, check: bool = True
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=check,
        stdin=subprocess.DEVNULL,
    )


def _venv(uv: Path, uv_env: dict[str, str], tmp_path: Path, artifact: Path) -> Path:
    """A fresh virtualenv with ``artifact`` (and its dependencies) installed; its folder."""
    venv = tmp_path / "venv"
    env = {**os.environ, **uv_env}
    _run([str(uv), "venv", "--quiet", str(venv)], env=env, cwd=tmp_path)
    python = str(venv / "bin" / "python")
    _run(
        [str(uv), "pip", "install", "--quiet", "--python", python, str(artifact)],
        env=env,
        cwd=tmp_path,
    )
    return venv


async def _list_and_call(params: StdioServerParameters) -> tuple[set[str], Any, str]:
    """Tool names, word_count's structured result and read's text, over real stdio."""
    with anyio.fail_after(120):
        async with Client(params) as session:
            listed = await session.list_tools()
            counted = await session.call_tool("word_count", {"text": "one two three"})
            read = await session.call_tool("read", {"file_path": "notes.txt"})
    assert not counted.is_error and not read.is_error
    block = read.content[0]
    assert isinstance(block, types.TextContent)
    return {t.name for t in listed.tools}, counted.structured_content, block.text


def _params(entry: dict[str, Any], env: dict[str, str], cwd: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=entry["command"], args=entry["args"], env={**env, **entry.get("env", {})}, cwd=cwd
    )


@pytest.mark.parametrize("kind", ["wheel", "sdist"])
async def test_the_built_artifact_installs_into_a_clean_venv_and_serves_the_examples(
    kind: str,
    artifacts: Artifacts,
    uv: Path,
    uv_env: dict[str, str],
    tmp_path: Path,
    project: Path,
    home: Path,
) -> None:
    venv = _venv(uv, uv_env, tmp_path, getattr(artifacts, kind))
    where = _run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import mcp_toolbridge; print(mcp_toolbridge.__file__)",
        ],
        env={"PATH": GUI_PATH, "HOME": str(home)},
        cwd=tmp_path,
    )
    assert Path(where.stdout.strip()).is_relative_to(venv)  # the install, not this checkout
    server = [str(venv / "bin" / "mcp-toolbridge"), "serve", "--workspace", str(project)]
    params = StdioServerParameters(
        command=server[0], args=server[1:], env={"PATH": GUI_PATH, "HOME": str(home)}, cwd="/"
    )
    names, counted, text = await _list_and_call(params)
    assert EXAMPLES <= names
    assert counted == {"words": 3, "lines": 1, "characters": 13}
    assert "the folder meant" in text


async def test_config_from_the_installed_package_launches_that_install(
    artifacts: Artifacts,
    uv: Path,
    uv_env: dict[str, str],
    tmp_path: Path,
    project: Path,
    home: Path,
) -> None:
    venv = _venv(uv, uv_env, tmp_path, artifacts.wheel)
    script = venv / "bin" / "mcp-toolbridge"
    shell = {"PATH": f"{venv / 'bin'}:{os.environ['PATH']}", "HOME": str(home)}
    written = _run([str(script), "config", "--client", "claude-desktop"], env=shell, cwd=project)
    entry = json.loads(written.stdout)["mcpServers"]["toolbridge"]
    assert entry["command"] == str(script)
    assert entry["args"] == ["serve", "--workspace", str(project)]
    names, _, text = await _list_and_call(
        _params(entry, {"PATH": GUI_PATH, "HOME": str(home)}, "/")
    )
    assert EXAMPLES <= names and "the folder meant" in text
    # doctor, from the same install, finds that entry sound as Claude Desktop starts it.
    config = tmp_path / "claude_desktop_config.json"
    config.write_text(written.stdout, encoding="utf-8")
    argv = ["doctor", "--client", "claude-desktop", "--config", str(config), "--sandbox", "off"]
    doctor = _run([str(script), *argv], env=shell, cwd=tmp_path, check=False)
    # The command resolves under Claude Desktop's PATH; this venv lies in a temporary folder
    # (the test's), which doctor says will not last.
    assert f"problem  command      {script} is in a temporary folder" in doctor.stdout
    assert "ENOENT" not in doctor.stdout
    assert f"ok       workspace    {project}" in doctor.stdout, doctor.stdout
    assert "ok       manifests    5 tools from 3 manifests, and 13 locked tools" in doctor.stdout, (
        doctor.stdout
    )
    assert doctor.returncode == 1


async def test_uvx_from_the_wheel_serves_and_its_config_names_uvx_and_the_wheel(
    artifacts: Artifacts,
    uv: Path,
    uv_env: dict[str, str],
    tmp_path: Path,
    project: Path,
    home: Path,
) -> None:
    uvx = uv.with_name("uvx")
    env = {"PATH": GUI_PATH, "HOME": str(home), **uv_env}
    served = [
        "--from",
        str(artifacts.wheel),
        "mcp-toolbridge",
        "serve",
        "--workspace",
        str(project),
    ]
    names, counted, _ = await _list_and_call(
        StdioServerParameters(command=str(uvx), args=served, env=env, cwd="/")
    )
    assert EXAMPLES <= names and counted == {"words": 3, "lines": 1, "characters": 13}
    written = _run(
        [
            str(uvx),
            "--from",
            str(artifacts.wheel),
            "mcp-toolbridge",
            "config",
            "--client",
            "claude-desktop",
        ],
        env=env,
        cwd=project,
    )
    entry = json.loads(written.stdout)["mcpServers"]["toolbridge"]
    # uvx by its absolute path (a GUI app's PATH has no ~/.local/bin), the wheel it ran from;
    # nothing in uv's cache, which uv prunes.
    assert entry["command"] == str(uvx)
    assert entry["args"] == [
        "--from",
        str(artifacts.wheel),
        "mcp-toolbridge",
        "serve",
        "--workspace",
        str(project),
    ]
    assert uv_env["UV_CACHE_DIR"] not in json.dumps(entry)
    names, _, text = await _list_and_call(_params(entry, env, "/"))
    assert EXAMPLES <= names and "the folder meant" in text


async def test_the_registry_entry_starts_as_a_registry_client_starts_it(
    artifacts: Artifacts,
    uv: Path,
    uv_env: dict[str, str],
    tmp_path: Path,
    project: Path,
    home: Path,
) -> None:
    """server.json's package: its runtime hint, transport, identifier and every argument it
    declares, each given a value (the workspace, a policy, two manifest folders). The version
    is not on PyPI from this checkout, so uvx takes that package from the built wheel."""
    (package,) = json.loads((ROOT / "server.json").read_text(encoding="utf-8"))["packages"]
    assert package["runtimeHint"] == "uvx"
    assert package["transport"] == {"type": "stdio"}
    assert artifacts.wheel.name.startswith(f"mcp_toolbridge-{package['version']}-")
    policy = tmp_path / "policy.toml"
    policy.write_text('[[rules]]\npermission = "hash_text"\naction = "deny"\n', encoding="utf-8")
    # What a user fills in for each argument the entry declares, as a registry client asks.
    values = {"--workspace": [str(project)], "--policy": [str(policy)]}
    values["manifests"] = [
        str(ROOT / "manifests" / "text-tools"),
        str(ROOT / "manifests" / "slugify"),
    ]
    args = ["--from", str(artifacts.wheel), package["identifier"]]
    for argument in package["packageArguments"]:
        if "value" in argument:
            args.append(argument["value"])
        elif argument["type"] == "named":
            (value,) = values.pop(argument["name"])
            args += [argument["name"], value]
        else:
            given = values.pop(argument["valueHint"])
            assert argument.get("isRepeated") or len(given) == 1
            args += given
    assert values == {}, "every argument the test fills in is one server.json declares"
    env = {"PATH": GUI_PATH, "HOME": str(home), **uv_env}
    names, _, text = await _list_and_call(
        StdioServerParameters(command=str(uv.with_name("uvx")), args=args, env=env, cwd="/")
    )
    assert {"word_count", "slugify"} <= names and "the folder meant" in text
    assert "hash_text" not in names and "debug_echo" not in names  # the policy; not named


def test_the_wheel_carries_the_consoles_templates_and_assets(artifacts: Artifacts) -> None:
    """The console loads nothing from the network: its pages and assets are in the wheel."""
    shipped = set(zipfile.ZipFile(artifacts.wheel).namelist())
    folder = ROOT / "mcp_toolbridge" / "console"
    files = [p for p in folder.rglob("*") if p.suffix in (".html", ".css", ".js")]
    assert files
    for path in files:
        assert path.relative_to(folder.parents[1]).as_posix() in shipped


def test_the_wheel_and_the_sdist_carry_the_licence_they_declare(artifacts: Artifacts) -> None:
    """pyproject.toml says MIT, whose terms ask that its text go with every copy: there was
    no LICENSE in the repository, so neither artifact carried it."""
    wheel = zipfile.ZipFile(artifacts.wheel).namelist()
    assert [n for n in wheel if n.endswith(".dist-info/licenses/LICENSE")], wheel
    with tarfile.open(artifacts.sdist) as sdist:
        names = sdist.getnames()
    assert [n for n in names if n.endswith("/LICENSE") and n.count("/") == 1], names
    assert "Permission is hereby granted" in (ROOT / "LICENSE").read_text(encoding="utf-8")
