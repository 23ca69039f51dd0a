"""Each client's generated config, started the way that client starts servers, over real
stdio with the SDK client: the workspace is the folder the user meant, and reading outside
it is refused. Without a workspace (a config written before configs named one, started in
``/``) the file tools refuse with the hint; the client's MCP roots move the workspace, in
both protocol eras.

How each client starts a stdio server (what the launchers below copy):

- Claude Desktop: working directory ``/``, a minimal environment, no variables expanded.
- Claude Code: the project folder, ``${VAR}`` and ``${VAR:-default}`` expanded from its
  environment.
- VS Code and Cursor: ``${workspaceFolder}`` replaced by the open folder; their working
  directory is not documented, so the worst case, ``/``, is used.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import anyio
import mcp_types as types
import pytest
from mcp import Client, MCPDeprecationWarning, StdioServerParameters
from mcp.client.session import ClientRequestContext

from mcp_toolbridge.cli.main import main
from mcp_toolbridge.workspace import no_workspace_hint

pytestmark = pytest.mark.e2e

Expand = Callable[[str, Path, Mapping[str, str]], str]


def _no_variables(text: str, project: Path, env: Mapping[str, str]) -> str:
    return text


def _env_variables(text: str, project: Path, env: Mapping[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        return env.get(name, default if default is not None else match.group(0))

    return re.sub(r"\$\{(\w+)(?::-([^}]*))?\}", one, text)


def _folder_variable(text: str, project: Path, env: Mapping[str, str]) -> str:
    return text.replace("${workspaceFolder}", str(project))


@dataclass(frozen=True)
class Launcher:
    key: str
    in_project: bool
    """Started in the project folder (else in ``/``)."""
    expand: Expand

    def params(self, entry: dict[str, Any], project: Path, home: Path) -> StdioServerParameters:
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), **entry.get("env", {})}
        return StdioServerParameters(
            command=self.expand(entry["command"], project, env),
            args=[self.expand(a, project, env) for a in entry["args"]],
            env=env,
            cwd=str(project) if self.in_project else "/",
        )


LAUNCHERS = {
    "claude-desktop": Launcher("mcpServers", False, _no_variables),
    "claude-code": Launcher("mcpServers", True, _env_variables),
    "vscode": Launcher("servers", False, _folder_variable),
    "cursor": Launcher("mcpServers", False, _folder_variable),
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("the folder meant\n", encoding="utf-8")
    return folder


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.mark.parametrize("client", sorted(LAUNCHERS))
async def test_each_generated_config_started_as_its_client_does_works_in_the_folder_meant(
    client: str,
    project: Path,
    home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(project)  # the user writes the config from the project folder
    assert main(["config", "--client", client]) == 0
    launcher = LAUNCHERS[client]
    entry = json.loads(capsys.readouterr().out)[launcher.key]["toolbridge"]
    with anyio.fail_after(30):
        async with Client(launcher.params(entry, project, home)) as session:
            inside = await session.call_tool("read", {"file_path": "notes.txt"})
            outside = await session.call_tool("read", {"file_path": "/etc/passwd"})
            listed = await session.call_tool("glob", {"pattern": "*"})
    assert not inside.is_error
    assert "the folder meant" in _text(inside)
    assert outside.is_error
    assert f"'/etc/passwd' is outside the granted fs.read scope ({project})" in _text(outside)
    assert _text(listed) == "notes.txt"


EXAMPLES = Path(__file__).resolve().parents[2] / "manifests"


def _checkout(project: Path) -> None:
    """A project with its own manifests and a policy denying get_time."""
    shutil.copytree(EXAMPLES / "text-tools", project / "tools" / "text-tools")
    policy = '[[rules]]\npermission = "get_time"\naction = "deny"\n'
    (project / "policy.toml").write_text(policy, encoding="utf-8")


def _move(source: Path, target: Path) -> None:
    shutil.copytree(source, target)
    shutil.rmtree(source)


@pytest.mark.parametrize("client", ["vscode", "cursor"])
async def test_a_project_config_works_in_a_teammates_clone_of_the_project(
    client: str,
    tmp_path: Path,
    home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """.vscode/mcp.json (.cursor/mcp.json) written in one checkout and committed: started in
    another, with ${workspaceFolder} the other, it serves that checkout's manifests under its
    policy, no path of the first one left."""
    mine, theirs = tmp_path / "mine" / "project", tmp_path / "theirs" / "project"
    _checkout(mine)
    monkeypatch.chdir(mine)
    given = ["tools/text-tools", "--policy", "policy.toml", "--expose", "all"]
    assert main(["config", "--client", client, *given]) == 0
    launcher = LAUNCHERS[client]
    written = capsys.readouterr().out
    assert str(mine) not in written
    _move(mine, theirs)
    entry = json.loads(written)[launcher.key]["toolbridge"]
    with anyio.fail_after(30):
        async with Client(launcher.params(entry, theirs, home)) as session:
            names = {t.name for t in (await session.list_tools()).tools}
            counted = await session.call_tool("word_count", {"text": "a teammate's clone"})
    assert "word_count" in names and "get_time" not in names  # their policy denies it
    assert '"words": 3' in _text(counted)


async def test_a_config_without_a_workspace_started_in_root_refuses_file_tools_with_the_hint(
    home: Path,
) -> None:
    """What ``config --client claude-desktop`` wrote before configs named the workspace."""
    entry = {"command": sys.executable, "args": ["-m", "mcp_toolbridge", "serve"]}
    params = LAUNCHERS["claude-desktop"].params(entry, Path("/"), home)
    with anyio.fail_after(30):
        async with Client(params) as session:
            secret = await session.call_tool("read", {"file_path": "/etc/passwd"})
            relative = await session.call_tool("glob", {"pattern": "etc/*"})
            other = await session.call_tool("word_count", {"text": "still served"})
    for refused in (secret, relative):
        assert refused.is_error
        assert no_workspace_hint() in _text(refused)
    assert other.structured_content == {"words": 2, "lines": 1, "characters": 12}


def test_serve_started_in_root_says_it_has_no_workspace_and_never_suggests_root(
    home: Path,
) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home)}
    proc = subprocess.run(
        [sys.executable, "-m", "mcp_toolbridge", "serve"],
        cwd="/",
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert proc.returncode == 0
    banner, *rest = proc.stderr.splitlines()
    hint = json.loads(banner.split("connect a client with ", 1)[1])
    assert "--workspace" not in hint["args"]
    assert any(
        line.startswith(
            "mcp-toolbridge: no workspace: started in the file system root (/) without --workspace"
        )
        for line in rest
    )


def _roots(*folders: Path) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root(uri=f.as_uri()) for f in folders])


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_clients_roots_move_the_workspace(mode: str, tmp_path: Path, home: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
        (folder / "notes.txt").write_text(f"in {folder.name}\n", encoding="utf-8")
    current = [first]
    changed = anyio.Event()

    async def list_roots(context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
        return _roots(*current)

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    entry = {"command": sys.executable, "args": ["-m", "mcp_toolbridge", "serve"]}
    params = LAUNCHERS["claude-desktop"].params(entry, Path("/"), home)
    with anyio.fail_after(30):
        async with Client(
            params, mode=mode, list_roots_callback=list_roots, message_handler=on_message
        ) as session:
            before = await session.call_tool("read", {"file_path": "notes.txt"})
            current[:] = [second]
            if mode == "legacy":  # 2025: the client announces it; the swap is announced back
                changed = anyio.Event()
                with pytest.warns(MCPDeprecationWarning):
                    await session.send_roots_list_changed()
                await changed.wait()
            after = await session.call_tool("read", {"file_path": "notes.txt"})
            outside = await session.call_tool("read", {"file_path": str(first / "notes.txt")})
            current[:] = [Path("/")]  # a root that is never a workspace: none is left
            if mode == "legacy":
                changed = anyio.Event()
                with pytest.warns(MCPDeprecationWarning):
                    await session.send_roots_list_changed()
                await changed.wait()
            refused = await session.call_tool("read", {"file_path": "notes.txt"})
    assert "in first" in _text(before)
    assert "in second" in _text(after)
    assert outside.is_error
    assert f"outside the granted fs.read scope ({second})" in _text(outside)
    assert refused.is_error
    assert no_workspace_hint() in _text(refused)


def _decode_links(stderr: str) -> dict[str, dict[str, Any]]:
    """Each install link config printed, decoded into the server entry it installs."""
    lines = stderr.splitlines()
    links = {
        lines[i].rstrip(":"): lines[i + 1].strip()
        for i, line in enumerate(lines)
        if line.endswith(":") and i + 1 < len(lines) and lines[i + 1].startswith("  ")
    }
    decoded: dict[str, dict[str, Any]] = {}
    for what, text in links.items():
        if text.startswith("code --add-mcp "):
            argv = shlex.split(text)
            assert argv[:2] == ["code", "--add-mcp"] and len(argv) == 3
            decoded[what] = json.loads(argv[2])
        elif text.startswith("vscode:mcp/install?"):
            decoded[what] = json.loads(unquote(text.removeprefix("vscode:mcp/install?")))
        elif text.startswith("cursor://anysphere.cursor-deeplink/mcp/install?"):
            query = parse_qs(urlsplit(text).query, strict_parsing=True)
            assert query["name"] == ["toolbridge"]
            config = json.loads(base64.b64decode(query["config"][0], validate=True))
            decoded[what] = {"name": query["name"][0], **config}
    return decoded


@pytest.mark.parametrize(
    ("client", "expected"),
    [
        ("vscode", {"VS Code, from a terminal", "VS Code, as a link"}),
        ("cursor", {"Cursor, as a link"}),
    ],
)
async def test_each_install_link_decodes_to_a_server_that_starts_and_lists_its_tools(
    client: str,
    expected: set[str],
    project: Path,
    home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(project)
    assert main(["config", "--client", client]) == 0
    captured = capsys.readouterr()
    written = json.loads(captured.out)[LAUNCHERS[client].key]["toolbridge"]
    links = _decode_links(captured.err)
    assert set(links) == expected
    for what, named in links.items():
        entry = {k: v for k, v in named.items() if k != "name"}
        assert named["name"] == "toolbridge", what
        assert entry == written, what  # the same server config writes
        with anyio.fail_after(30):
            async with Client(LAUNCHERS[client].params(entry, project, home)) as session:
                listed = await session.list_tools()
                inside = await session.call_tool("read", {"file_path": "notes.txt"})
        assert "read" in {t.name for t in listed.tools}, what
        assert "the folder meant" in _text(inside), what


def test_clients_without_install_links_print_none(capsys: pytest.CaptureFixture[str]) -> None:
    for client in ("claude-desktop", "claude-code"):
        assert main(["config", "--client", client, "--workspace", "/tmp"]) == 0
        assert _decode_links(capsys.readouterr().err) == {}
