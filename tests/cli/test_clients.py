"""mcp-toolbridge config --client NAME: each client's file shape, absolute paths, the workspace
(the client's folder variable or a path) and uvx. tests/e2e/test_clients.py starts each config
the way its client does."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mcp_toolbridge.cli.installed import installed_extras, server_command
from mcp_toolbridge.cli.main import main
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool

EXPECTED = {
    "claude-desktop": ("mcpServers", False),
    "claude-code": ("mcpServers", True),
    "vscode": ("servers", True),
    "cursor": ("mcpServers", False),
}


def _config(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[Any, str]:
    assert main(["config", *argv]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


FOLDER_VARIABLE = {"vscode": "${workspaceFolder}", "cursor": "${workspaceFolder}"}
EXPOSE = {"claude-code": "all", "cursor": "search"}
"""The --expose mode config writes per client (docs/clients.md); the others keep auto."""


@pytest.mark.parametrize("client", sorted(EXPECTED))
def test_each_client_gets_its_own_file_shape_with_absolute_paths_and_the_workspace(
    client: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "p.toml").write_text("", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    config, hint = _config(capsys, "--client", client, "m", "--policy", "p.toml")
    key, typed = EXPECTED[client]
    assert list(config) == [key]
    entry = config[key]["toolbridge"]
    assert ("type" in entry) is typed
    if typed:
        assert entry["type"] == "stdio"
    assert Path(entry["command"]).is_absolute() and Path(entry["command"]).exists()
    policy, manifests = str((tmp_path / "p.toml").resolve()), str((tmp_path / "m").resolve())
    workspace = FOLDER_VARIABLE.get(client, str(tmp_path.resolve()))
    if client in FOLDER_VARIABLE:  # inside the project the file is for: from its variable
        policy, manifests = f"{workspace}/p.toml", f"{workspace}/m"
    expose = EXPOSE.get(client)
    assert entry["args"][-8 if expose else -6 :] == [
        "serve",
        "--policy",
        policy,
        "--workspace",
        workspace,
        *(["--expose", expose] if expose else []),
        manifests,
    ]
    assert "put this in" in hint
    assert (f"--expose {expose}:" in hint) is bool(expose)


@pytest.mark.parametrize("client", sorted(EXPECTED))
def test_a_workspace_given_to_config_is_the_one_every_client_gets(
    client: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config, _ = _config(capsys, "--client", client, "--workspace", str(tmp_path))
    key, _typed = EXPECTED[client]
    args = config[key]["toolbridge"]["args"]
    assert args[args.index("--workspace") + 1] == str(tmp_path.resolve())


@pytest.mark.parametrize("client", ["claude-desktop", "claude-code"])
def test_config_in_the_home_folder_without_a_workspace_says_to_name_one(
    client: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert main(["config", "--client", client]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "the working directory is the home folder" in captured.err
    assert "--workspace DIR" in captured.err


def test_clients_with_a_folder_variable_need_no_workspace_from_the_home_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    config, _ = _config(capsys, "--client", "vscode")
    args = config["servers"]["toolbridge"]["args"]
    assert args[args.index("--workspace") + 1] == "${workspaceFolder}"


@pytest.mark.parametrize("client", sorted(FOLDER_VARIABLE))
def test_a_project_config_names_the_paths_inside_the_project_from_its_folder_variable(
    client: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """.vscode/mcp.json and .cursor/mcp.json are committed with the project: a path inside it
    is written from ${workspaceFolder}, so the file works in a teammate's clone; a path
    outside it stays absolute."""
    project, elsewhere = tmp_path / "project", tmp_path / "tools"
    for folder in (project / "manifests" / "git", project / "skills"):
        folder.mkdir(parents=True)
    elsewhere.mkdir()
    (project / "policy.toml").write_text("", encoding="utf-8")
    monkeypatch.chdir(project)
    argv = ["--client", client, "manifests/git", str(elsewhere), ".", "--policy", "policy.toml"]
    argv += ["--skills", "skills", "--allow", "./manifests/git=git_*", "--allow", "read"]
    argv += ["--allow", f"{elsewhere}=*"]
    config, _ = _config(capsys, *argv)
    args = config[EXPECTED[client][0]]["toolbridge"]["args"]
    variable = FOLDER_VARIABLE[client]
    assert args[args.index("--policy") + 1] == f"{variable}/policy.toml"
    assert args[args.index("--skills") + 1] == f"{variable}/skills"
    allowed = [args[i + 1] for i, a in enumerate(args) if a == "--allow"]
    assert allowed == [f"{variable}/manifests/git=git_*", "read", f"{elsewhere.resolve()}=*"]
    assert args[-3:] == [f"{variable}/manifests/git", str(elsewhere.resolve()), variable]
    outside = (str(elsewhere.resolve()), f"{elsewhere.resolve()}=*")
    assert not any(str(tmp_path) in a for a in args if a not in outside)


@pytest.mark.parametrize("client", sorted(EXPECTED))
def test_with_a_workspace_given_or_for_a_user_level_file_every_path_stays_absolute(
    client: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No variable but the workspace's own where config cannot know the folder the file is
    for: a workspace given to config, or config run in the home folder (a user-level file)."""
    (tmp_path / "m").mkdir()
    monkeypatch.chdir(tmp_path)
    config, _ = _config(capsys, "--client", client, "m", "--workspace", str(tmp_path))
    args = config[EXPECTED[client][0]]["toolbridge"]["args"]
    assert args[-1] == str((tmp_path / "m").resolve())
    monkeypatch.setenv("HOME", str(tmp_path))
    if client in FOLDER_VARIABLE:
        config, _ = _config(capsys, "--client", client, "m")
        args = config[EXPECTED[client][0]]["toolbridge"]["args"]
        assert args[-1] == str((tmp_path / "m").resolve())


@pytest.mark.parametrize(
    "prefix",
    [
        ".cache/uv/environments-v2/mcp-toolbridge-0f3a9c",
        ".cache/uv/archive-v0/Xk2p9/",
        "AppData/Local/uv/cache/environments-v2/mcp-toolbridge-0f3a9c",
    ],
)
def test_under_uvx_the_command_names_the_package_not_a_path_in_uvs_cache(
    prefix: str, tmp_path: Path
) -> None:
    command = server_command(tmp_path / prefix)
    assert Path(command[0]).name == "uvx"
    # This checkout is installed editable: uvx is told to take the package from it again, with
    # the extras whose dependencies are here (the dev extra brings numpy: [semantic]);
    # tests/package/ runs a real uvx on a built wheel.
    checkout = str(Path(__file__).resolve().parents[2])
    extras = f"[{','.join(installed_extras())}]" if installed_extras() else ""
    assert command[1:] == ["--from", checkout + extras, "mcp-toolbridge"]
    assert not any(str(tmp_path) in part for part in command)


def test_a_persistent_environment_keeps_its_own_executable(tmp_path: Path) -> None:
    command = server_command(tmp_path / ".local/share/uv/tools/mcp-toolbridge")
    assert command == server_command()
    assert Path(command[0]).name != "uvx"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--client", "claude-code"], ["--expose", "all"]),
        (["--client", "claude-code", "--expose", "auto"], []),
        (["--client", "claude-desktop", "--expose", "search"], ["--expose", "search"]),
        (["--client", "cursor", "--locked", "read,grep"], []),
        (["--client", "vscode", "--pin", "git_*"], ["--pin", "git_*"]),
    ],
)
def test_config_writes_the_expose_mode_that_fits_the_client_unless_told(
    argv: list[str], expected: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config, _ = _config(capsys, *argv, "--workspace", str(tmp_path), str(tmp_path))
    args = next(iter(config.values()))["toolbridge"]["args"]
    tail = args[args.index(str(tmp_path.resolve())) + 1 : -1]
    if "--locked" in tail:
        tail = tail[tail.index("--locked") + 2 :]
    assert tail == expected


def test_a_manifest_path_given_to_allow_reaches_the_client_absolute(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Clients start servers in a folder of their own: ``--allow ./manifests/fx`` is written
    as the absolute path; names and globs are copied as typed."""
    monkeypatch.chdir(tmp_path)
    argv = ["--client", "cursor", "--workspace", str(tmp_path)]
    allow = ["--allow", "./manifests/fx", "--allow", "fx_*", "--allow", "bash=git status"]
    config, _ = _config(capsys, *argv, *allow)
    args = config["mcpServers"]["toolbridge"]["args"]
    given = [args[i + 1] for i, word in enumerate(args) if word == "--allow"]
    assert given == [str(tmp_path.resolve() / "manifests" / "fx"), "fx_*", "bash=git status"]


class _Dist:
    """A distribution's metadata as importlib.metadata gives it."""

    def __init__(self, direct_url: str | None, requires: list[str] | None = None) -> None:
        self.version = "1.2.3"
        self._direct_url = direct_url
        self.requires = requires

    def read_text(self, name: str) -> str | None:
        return self._direct_url if name == "direct_url.json" else None


@pytest.mark.parametrize(
    ("direct_url", "source"),
    [
        (None, "mcp-toolbridge==1.2.3"),  # from an index
        (
            '{"url": "file:///home/me/dist/mcp_toolbridge-1.2.3-py3-none-any.whl",'
            ' "archive_info": {}}',
            "/home/me/dist/mcp_toolbridge-1.2.3-py3-none-any.whl",
        ),
        (
            '{"url": "https://example.org/x.git",'
            ' "vcs_info": {"vcs": "git", "commit_id": "abc123"}}',
            "git+https://example.org/x.git@abc123",
        ),
        (
            '{"url": "https://example.org/mcp_toolbridge-1.2.3.tar.gz", "archive_info": {}}',
            "https://example.org/mcp_toolbridge-1.2.3.tar.gz",
        ),
    ],
)
def test_uvx_and_pipx_run_are_told_where_the_package_came_from(
    direct_url: str | None, source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: _Dist(direct_url))
    monkeypatch.setenv("UV", str(tmp_path / "bin" / "uv"))
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "uvx").write_text("", encoding="utf-8")
    uvx = server_command(tmp_path / ".cache/uv/archive-v0/Xk2p9")
    if source.startswith("mcp-toolbridge=="):
        assert uvx == [str(tmp_path / "bin" / "uvx"), "mcp-toolbridge@1.2.3"]
    else:
        assert uvx == [str(tmp_path / "bin" / "uvx"), "--from", source, "mcp-toolbridge"]
    pipx = server_command(tmp_path / ".local/pipx/.cache/0a1b2c3d")
    assert Path(pipx[0]).name == "pipx"
    assert pipx[1:] == ["run", "--spec", source, "mcp-toolbridge"]


def test_uvx_is_named_by_the_link_on_path_not_the_versioned_file_it_leads_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Homebrew's uvx is /opt/homebrew/bin/uvx, a link to .../Cellar/uv/0.9.1/bin/uvx, and uv
    sets $UV to the file it resolved: the entry named the Cellar path, which ``brew upgrade
    uv`` removes. The link on PATH that leads to the same file is named instead."""
    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: _Dist(None))
    cellar, links = tmp_path / "Cellar" / "uv" / "0.9.1" / "bin", tmp_path / "bin"
    cellar.mkdir(parents=True)
    links.mkdir()
    for name in ("uv", "uvx"):
        (cellar / name).write_text("", encoding="utf-8")
        (cellar / name).chmod(0o755)
        (links / name).symlink_to(cellar / name)
    monkeypatch.setenv("UV", str(cellar / "uv"))
    monkeypatch.setenv("PATH", f"{links}{os.pathsep}{os.environ.get('PATH', '')}")
    uvx = server_command(tmp_path / ".cache/uv/archive-v0/Xk2p9")
    assert uvx == [str(links / "uvx"), "mcp-toolbridge@1.2.3"]

    (links / "uvx").unlink()  # only uv is linked: uv tool run, by the link
    (cellar / "uvx").unlink()
    uvx = server_command(tmp_path / ".cache/uv/archive-v0/Xk2p9")
    assert uvx == [str(links / "uv"), "tool", "run", "mcp-toolbridge@1.2.3"]


def test_an_installation_in_a_temporary_folder_is_said_to_not_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Installed from an index (no direct URL): where the test's own checkout lies (a clone
    in /tmp, say) has nothing to do with it."""
    from mcp_toolbridge.cli.installed import temporary_warning

    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: _Dist(None))
    warning = temporary_warning(tmp_path / "venv")  # pytest's tmp_path is in the temp folder
    assert warning is not None and "uv tool install mcp-toolbridge" in warning
    assert temporary_warning(tmp_path / ".cache/uv/archive-v0/Xk2p9") is None  # uvx: its form
    assert temporary_warning(Path.home() / ".local/share/uv/tools/mcp-toolbridge") is None


def test_uvx_from_a_wheel_in_a_temporary_folder_is_said_to_not_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``uvx --from /tmp/.../the.whl mcp-toolbridge config``: the environment is uv's (it
    lasts as uv keeps it), but the config names the wheel, which goes with its folder."""
    from mcp_toolbridge.cli.installed import temporary_warning

    wheel = tmp_path / "dist" / "mcp_toolbridge-1.2.3-py3-none-any.whl"
    direct = json.dumps({"url": wheel.as_uri(), "archive_info": {}})
    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: _Dist(direct))
    warning = temporary_warning(tmp_path / ".cache/uv/archive-v0/Xk2p9")
    assert warning is not None
    assert f"the package it runs from ({wheel}) is in a temporary folder" in warning
    assert f"uv tool install {wheel}" in warning
    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: _Dist(None))
    assert temporary_warning(tmp_path / ".cache/uv/archive-v0/Xk2p9") is None  # from an index


@pytest.mark.parametrize(
    ("direct_url", "source"),
    [
        (None, "mcp-toolbridge[semantic]==1.2.3"),
        (
            '{"url": "file:///home/me/dist/mcp_toolbridge-1.2.3-py3-none-any.whl",'
            ' "archive_info": {}}',
            "/home/me/dist/mcp_toolbridge-1.2.3-py3-none-any.whl[semantic]",
        ),
        (
            '{"url": "https://example.org/x.git",'
            ' "vcs_info": {"vcs": "git", "commit_id": "abc123"}}',
            "mcp-toolbridge[semantic] @ git+https://example.org/x.git@abc123",
        ),
    ],
)
def test_uvx_and_pipx_run_keep_the_extras_this_run_has(
    direct_url: str | None, source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``uvx --from 'mcp-toolbridge[semantic]' mcp-toolbridge config``: the entry runs the
    package with the same extra (its dependencies installed here), or the client's server
    would search without the semantic leg. The dev extra is never carried over."""
    requires = ["anyio>=4.11", "numpy>=2; extra == 'semantic'", "numpy>=2; extra == 'dev'"]
    requires.append("pytest>=8.3; extra == 'dev'")
    installed = {"mcp-toolbridge": _Dist(direct_url, requires), "numpy": _Dist(None)}

    def distribution(name: str) -> _Dist:
        if name not in installed:
            raise importlib.metadata.PackageNotFoundError(name)
        return installed[name]

    monkeypatch.setattr(importlib.metadata, "distribution", distribution)
    monkeypatch.setenv("UV", str(tmp_path / "bin" / "uv"))
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "uvx").write_text("", encoding="utf-8")
    uvx = server_command(tmp_path / ".cache/uv/archive-v0/Xk2p9")
    assert uvx == [str(tmp_path / "bin" / "uvx"), "--from", source, "mcp-toolbridge"]
    pipx = server_command(tmp_path / ".local/pipx/.cache/0a1b2c3d")
    assert pipx[1:] == ["run", "--spec", source, "mcp-toolbridge"]
    del installed["numpy"]  # the extra's dependency is not here: the run had no such extra
    assert "[semantic]" not in " ".join(server_command(tmp_path / ".cache/uv/archive-v0/Xk2p9"))


def test_a_value_that_begins_with_a_dash_starts_the_server_the_client_launches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the red-team pass of 2026-11-29, 8th: for a tool named ``-echo`` (a name the
    rules allow), ``config --pin=-ec* --allow=-echo`` wrote ``"--pin", "-ec*"``, and the
    client's server refused to start (``argument --pin: expected one argument``). A value
    that begins with ``-`` is joined to its option. The entry is started here as the client
    starts it: a real process, its stdin closed at once."""
    agentcli_manifest(tmp_path / "m", [echo_tool("-echo", bin="echo")], {"echo": ECHO})
    monkeypatch.chdir(tmp_path)
    config, _ = _config(capsys, "--client", "claude-code", "--pin=-ec*", "--allow=-echo", "m")
    entry = config["mcpServers"]["toolbridge"]
    assert "--pin=-ec*" in entry["args"] and "--allow=-echo" in entry["args"]
    env = {**os.environ, "HOME": str(tmp_path), "TOOLBRIDGE_CACHE_DIR": str(tmp_path / "c")}
    started = subprocess.run(
        [entry["command"], *entry["args"], "--no-audit"],
        input=b"",
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert started.returncode == 0, started.stderr.decode()
    assert b"expected one argument" not in started.stderr
