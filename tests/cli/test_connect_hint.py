"""The stdio connect hint in the serve banner, and `config`: a client started from them serves
what the server serves (same options, paths absolute, the workspace pinned)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from mcp_toolbridge.cli.clients import args_for
from mcp_toolbridge.cli.main import main, parse_args, settings_of
from mcp_toolbridge.runtime import Settings
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool

HTTP_ONLY = {"http", "token", "stateless", "allow_host"}


def _comparable(settings: Settings) -> dict[str, Any]:
    fields = dict(vars(settings))
    fields.pop("environ")
    fields["paths"] = [p.resolve() for p in settings.manifest_paths()]
    fields["workspace"] = settings.workspace_root()
    for key in ("secrets_file", "policy_file", "audit_path"):
        if fields[key] is not None:
            fields[key] = fields[key].resolve()
    fields["skills_dirs"] = tuple(p.resolve() for p in settings.skills_dirs)
    fields["ad_hoc"] = tuple(p.resolve() for p in settings.ad_hoc)
    return fields


def _hint(argv: list[str]) -> list[str]:
    args = parse_args(argv)
    return args_for(args, settings_of(args))


def _served(argv: list[str]) -> dict[str, Any]:
    """What a command line serves, every path resolved against the working directory."""
    args = parse_args(argv)
    fields = _comparable(settings_of(args))
    for key in ("expose", "skip_invalid", "watch", "verb"):
        fields[key] = getattr(args, key)
    for key in ("record", "recording"):
        value = getattr(args, key, None)
        fields[key] = value.resolve() if value is not None else None
    return fields


def _started_elsewhere(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A client that starts the hint from another working directory gets the same server."""
    expected, hint = _served(argv), _hint(argv)
    monkeypatch.chdir("/")
    assert _served(hint) == expected
    started = parse_args(hint)
    for key in HTTP_ONLY:
        assert getattr(started, key) in (None, False, []), key


def test_every_serving_option_is_in_the_hint_with_absolute_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for folder in ("m", "skills", "notes", "rec", "ws"):
        (tmp_path / folder).mkdir()
    monkeypatch.chdir(tmp_path)
    argv = [
        "serve",
        "m",
        "--skip-invalid",
        "--secrets",
        "secrets.toml",
        "--timeout",
        "7.5",
        "--expose",
        "all",
        "--locked",
        "read,grep",
        "--skills",
        "skills",
        "--max-concurrency",
        "3",
        "--max-output",
        "4096",
        "--audit",
        "audit.ndjson",
        "--watch",
        "--record",
        "rec",
        "--keep-names",
        "--ad-hoc",
        "notes",
        "--allow",
        "bash=git status",
        "--policy",
        "policy.toml",
        "--workspace",
        "ws",
        "--http",
        "127.0.0.1:0",
        "--allow-host",
        "example.test",
    ]
    hint = _hint(argv)
    assert "--http" not in hint and "--allow-host" not in hint and "127.0.0.1:0" not in hint
    for relative in ("m", "secrets.toml", "skills", "audit.ndjson", "rec", "notes", "ws"):
        assert relative not in hint and str(tmp_path.resolve() / relative) in hint
    _started_elsewhere(argv, monkeypatch)


def test_defaults_stay_out_of_the_hint_but_the_workspace_is_pinned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    hint = _hint(["serve", "--no-audit", "--locked", "none"])
    assert hint == [
        "serve",
        "--workspace",
        str(tmp_path.resolve()),
        "--locked",
        "none",
        "--no-audit",
    ]
    _started_elsewhere(["serve", "--no-audit", "--locked", "none"], monkeypatch)


def test_replay_hints_replay_of_the_same_recording(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "rec").mkdir()
    monkeypatch.chdir(tmp_path)
    argv = ["replay", "rec", "--skip-invalid"]
    assert _hint(argv)[:2] == ["replay", str((tmp_path / "rec").resolve())]
    _started_elsewhere(argv, monkeypatch)


def test_config_carries_the_options_that_shape_the_catalog(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--client", "cursor", str(tmp_path), "--keep-names", "--locked", "read"]
    assert main(["config", *argv]) == 0
    entry = json.loads(capsys.readouterr().out)["mcpServers"]["toolbridge"]
    assert entry["args"][-7:] == [
        "serve",
        "--workspace",
        "${workspaceFolder}",
        "--keep-names",
        "--locked",
        "read",
        str(tmp_path),
    ]


@pytest.mark.e2e
async def test_a_client_started_from_the_banner_hint_serves_the_same_tools(
    tmp_path: Path,
) -> None:
    """serve --skip-invalid over real stdio; the banner's hint must carry --skip-invalid (and
    the rest), or the second server would refuse the invalid manifest and exit 2."""
    good = agentcli_manifest(tmp_path / "good", [echo_tool("echo")], {"echo": ECHO})
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "tools.json").write_text(
        json.dumps({"tools": [{"name": "broken", "command": ["echo"]}]}), encoding="utf-8"
    )
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    argv = [str(good.parent), str(bad), "--skip-invalid", "--locked", "none", "--no-audit"]
    first = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcp_toolbridge", "serve", *argv],
        env=env,
        cwd=str(tmp_path),
    )
    errlog = tmp_path / "stderr.txt"
    with anyio.fail_after(60), errlog.open("w", encoding="utf-8") as err:
        async with Client(stdio_client(first, errlog=err)) as client:
            served = {t.name for t in (await client.list_tools()).tools}
        banner = errlog.read_text(encoding="utf-8")
        assert 'tool[0] "broken": relative command[0] must start with ./tools/bin/' in banner
        assert served == {"echo"}
        [line] = [ln for ln in banner.splitlines() if "connect a client with " in ln]
        entry = json.loads(line.split("connect a client with ", 1)[1])
        assert "--skip-invalid" in entry["args"] and "--no-audit" in entry["args"]
        again = StdioServerParameters(command=entry["command"], args=entry["args"], env=env)
        async with Client(stdio_client(again, errlog=err)) as client:
            assert {t.name for t in (await client.list_tools()).tools} == served
            result = await client.call_tool("echo", {"text": "from the hint"})
    assert result.structured_content == {"echo": {"text": "from the hint"}}


@pytest.mark.e2e
async def test_serve_record_takes_a_leading_tilde_as_the_home_folder(tmp_path: Path) -> None:
    """Like every other path option: a client starts serve without a shell, so ``--record
    ~/rec`` in its config arrives as written; the frames go to the home folder's rec, not to a
    folder named ``~`` in the client's working directory, and the hint names it by its path."""
    good = agentcli_manifest(tmp_path / "good", [echo_tool("echo")], {"echo": ECHO})
    home, elsewhere = tmp_path / "home", tmp_path / "started-here"
    home.mkdir()
    elsewhere.mkdir()
    argv = ["serve", str(good.parent), "--record", "~/rec", "--locked", "none", "--no-audit"]
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcp_toolbridge", *argv, "--workspace", str(elsewhere)],
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(home)},
        cwd=str(elsewhere),
    )
    errlog = tmp_path / "stderr.txt"
    with anyio.fail_after(60), errlog.open("w", encoding="utf-8") as err:
        async with Client(stdio_client(server, errlog=err)) as client:
            result = await client.call_tool("echo", {"text": "recorded"})
    assert result.structured_content == {"echo": {"text": "recorded"}}
    assert not (elsewhere / "~").exists()
    (frames,) = (home / "rec").glob("*.jsonl")
    assert "recorded" in frames.read_text(encoding="utf-8")
    assert f'"--record", "{home / "rec"}"' in errlog.read_text(encoding="utf-8")
