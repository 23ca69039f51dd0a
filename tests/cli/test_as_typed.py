"""The command line as people type it: options anywhere, before the verb or among its positional
arguments, and a usage error that shows the verb's own usage (``policy show`` included)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from mcp_toolbridge.cli.main import main
from mcp_toolbridge.cli.parsing import POLICY_SHOW, VERBS, _parser, parse_args
from mcp_toolbridge.cli.values import positive, seconds
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool
from tests.support.results import text_of


@pytest.fixture
def manifests(tmp_path: Path) -> Path:
    agentcli_manifest(tmp_path / "m", [echo_tool("echo_json")], {"echo": ECHO})
    return tmp_path / "m"


@pytest.mark.parametrize(
    "order",
    [
        ("TOOL", "--args", "PATH"),
        ("TOOL", "PATH", "--args"),
        ("--args", "TOOL", "PATH"),
    ],
)
def test_call_takes_its_options_before_between_or_after_the_positionals(
    order: tuple[str, ...], manifests: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    words = {
        "TOOL": ["echo_json"],
        "--args": ["--args", '{"text": "anywhere"}'],
        "PATH": [str(manifests)],
    }
    argv = ["call", *(w for part in order for w in words[part]), "--no-audit"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out) == {"echo": {"text": "anywhere"}}


def test_list_takes_options_after_the_paths(
    manifests: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["list", str(manifests), "--json", "--locked", "none"]) == 0
    assert [row["name"] for row in json.loads(capsys.readouterr().out)] == ["echo_json"]


def test_an_unknown_option_shows_the_verbs_usage_and_exits_2(manifests: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mcp_toolbridge", "call", "echo_json", str(manifests), "--bogus"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: mcp-toolbridge call ")
    assert "--args JSON" in proc.stderr
    assert "mcp-toolbridge call: error: unrecognized arguments: --bogus" in proc.stderr


def test_an_unknown_verb_still_shows_the_top_level_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["frobnicate", "--json"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: mcp-toolbridge [-h] [--version] VERB")
    assert "invalid choice: 'frobnicate'" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["policy", "show", "PATH", "--allow", "write", "--locked", "none"],
        ["policy", "--allow", "write", "show", "PATH", "--locked", "none"],
        ["policy", "--locked", "none", "PATH", "--show", "--allow", "write"],
    ],
)
def test_policy_show_takes_its_options_anywhere(
    argv: list[str], manifests: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    typed = [str(manifests) if word == "PATH" else word for word in argv]
    assert main([*typed, "--workspace", str(tmp_path)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [layer["layer"] for layer in shown["layers"]] == ["default", "--allow"]
    assert shown["layers"][1]["allow"] == ["write"]


def test_an_unknown_option_of_policy_show_shows_its_usage_and_exits_2(manifests: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mcp_toolbridge", "policy", "show", str(manifests), "--bogus"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: mcp-toolbridge policy show ")
    assert "--allow NAME[=PATTERN]" in proc.stderr
    assert "mcp-toolbridge policy show: error: unrecognized arguments: --bogus" in proc.stderr


def test_an_empty_policy_or_secrets_file_means_none() -> None:
    """What a launcher writes for a setting left blank (an MCP bundle's
    ``--policy=${user_config.policy}`` with the default "")."""
    args = parse_args(["serve", "--policy=", "--secrets=", "m"])
    assert args.policy is None and args.secrets is None
    assert parse_args(["serve", "--policy", "p.toml"]).policy == Path("p.toml")


# -- options before the verb ------------------------------------------------------------------

CONSOLE = Path(sys.executable).with_name("mcp-toolbridge")
"""The console script the package installs (pip/uv put it beside the interpreter)."""

NEEDED: dict[str, list[str]] = {
    "serve": [],
    "replay": ["REC"],
    "lint": [],
    "list": [],
    "call": ["echo_json"],
    "search": ["echo"],
    "policy": ["show"],
    "export": ["--format", "mcp"],
    "inspect": ["echo_json"],
    "config": ["--client", "cursor"],
    "doctor": [],
}
"""What each verb needs besides the option under test (its positionals, its required options);
``console-url`` loads nothing, so it has none of the shared options (its own below)."""


def _sample(action: argparse.Action) -> list[str]:
    """One way to write ``action``'s option with a value argparse accepts; a text value is a
    verb's name, so that the value is not mistaken for the verb."""
    option = max(action.option_strings, key=len)
    if action.nargs == 0:
        return [option]
    if action.choices is not None:
        return [option, list(action.choices)[-1]]
    if action.type in (int, float, positive, seconds):
        return [option, "3"]
    if option == "--locked":
        return [option, "read,grep"]
    return [option, "list"]


def _options(verb: str) -> list[list[str]]:
    parser = _verb_parsers()[POLICY_SHOW if verb == "policy" else verb]
    return [
        _sample(action)
        for action in parser._actions
        if action.option_strings and not isinstance(action, argparse._HelpAction)
    ]


def _verb_parsers() -> dict[str, argparse.ArgumentParser]:
    return _parser()[1]


@pytest.mark.parametrize("verb", sorted(NEEDED))
def test_every_option_of_every_verb_may_come_before_the_verb(verb: str) -> None:
    """Each option alone before the verb, then all of them at once, parse exactly as they do
    after it."""
    needed = NEEDED[verb]
    options = [o for o in _options(verb) if o[0] not in needed]
    assert len(options) >= 5, options  # the shared load and policy options at least
    together = [word for o in options if o != ["--no-audit"] for word in o]  # --audit excludes it
    for option in [*options, together]:
        assert vars(parse_args([*option, verb, *needed])) == vars(
            parse_args([verb, *needed, *option])
        ), option


def test_console_urls_option_may_come_before_it() -> None:
    assert set(VERBS) == {*NEEDED, "console-url"}
    assert vars(parse_args(["--pid", "3", "console-url"])) == vars(
        parse_args(["console-url", "--pid", "3"])
    )
    assert parse_args(["console-url", "--pid", "3"]).pid == 3


def test_a_prefix_of_a_long_option_before_the_verb_takes_its_value() -> None:
    assert parse_args(["--sand", "off", "serve"]).sandbox == "off"
    assert parse_args(["--work=/tmp", "lint"]).workspace == Path("/tmp")


def test_help_and_version_before_a_verb_are_the_top_level_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version", "serve"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith("mcp-toolbridge ")


def _console(*argv: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home)}
    return subprocess.run(
        [str(CONSOLE), *argv],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env=env,
        check=False,
    )


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("before", "verb", "after"),
    [
        (["--format", "json", "--locked", "none"], "lint", ["PATH"]),
        (["--json", "--locked", "none"], "list", ["PATH"]),
        (["-k", "1", "--json", "--locked", "none"], "search", ["echo", "PATH"]),
        (
            ["--args", '{"text": "first"}', "--no-audit", "--sandbox", "off"],
            "call",
            ["echo_json", "PATH"],
        ),
        (["--allow", "write", "--locked", "none", "--workspace", "WS"], "policy", ["show", "PATH"]),
        (["--format", "openai", "--locked", "none"], "export", ["PATH"]),
        (
            ["--sandbox", "off", "--workspace", "WS", "--locked", "none"],
            "inspect",
            ["echo_json", "PATH"],
        ),
        (["--client", "vscode", "--workspace", "WS"], "config", ["PATH"]),
    ],
)
def test_the_console_script_takes_options_before_the_verb(
    before: list[str], verb: str, after: list[str], manifests: Path, tmp_path: Path
) -> None:
    """The installed ``mcp-toolbridge`` prints the same with the options before the verb as
    with them after it."""
    words = {"PATH": str(manifests), "WS": str(tmp_path)}
    before = [words.get(w, w) for w in before]
    after = [words.get(w, w) for w in after]
    first = _console(*before, verb, *after, "--no-index-cache", home=tmp_path)
    last = _console(verb, *after, *before, "--no-index-cache", home=tmp_path)
    assert first.returncode == last.returncode == 0, first.stderr
    assert first.stdout == last.stdout
    assert first.stdout.strip()


@pytest.mark.e2e
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_serve_with_its_options_before_the_verb_serves_over_real_stdio(
    mode: str, manifests: Path, tmp_path: Path
) -> None:
    """The command line of the issue, ``mcp-toolbridge --sandbox off serve``, launched by an
    MCP client as a client config would."""
    (tmp_path / "notes.txt").write_text("first line\n", encoding="utf-8")
    params = StdioServerParameters(
        command=str(CONSOLE),
        args=[
            "--sandbox",
            "off",
            "--workspace",
            str(tmp_path),
            "--no-audit",
            "--locked",
            "read",
            "serve",
            str(manifests),
        ],
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)},
    )
    with anyio.fail_after(60):
        async with Client(params, mode=mode) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            read = await client.call_tool("read", {"file_path": "notes.txt"})
    assert names == {"echo_json", "read"}
    assert not read.is_error
    assert text_of(read) == "     1\tfirst line"
