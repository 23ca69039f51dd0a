"""mcp-toolbridge doctor on good and broken setups: each line ok or a problem with its fix,
exit status 1 on a problem. The client's launch is checked as the client makes it (Claude
Desktop: launchd's minimal PATH, working directory /)."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from mcp_toolbridge.cli.doctor import GUI_PATH
from mcp_toolbridge.cli.main import main


def _doctor(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, str], str]:
    """The exit status, each check's line by its name, and the whole output."""
    code = main(["doctor", *argv])
    text = capsys.readouterr().out
    lines: dict[str, str] = {}
    last = ""
    for line in text.splitlines()[1:-1]:
        if line.startswith(("ok ", "problem ")):
            last = line.split()[1] if line.split()[1] != "index" else "index cache"
            lines[last] = line
        else:
            lines[last] += "\n" + line
    return code, lines, text


@pytest.fixture(autouse=True)
def _temporary_folder_is_the_tests_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The system's temporary folder, as doctor sees it, is this test's own: a checkout that
    CI cloned under /tmp is not an installation in a temporary folder for these tests, while
    a launcher the test puts in tmp_path still is."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def _sandbox_ok(lines: dict[str, str]) -> bool:
    return lines["sandbox"].startswith("ok ")


def test_a_good_setup_is_all_ok_and_exits_zero(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines, text = _doctor(capsys, "--workspace", str(project))
    assert set(lines) == {
        "command",
        "workspace",
        "policy",
        "manifests",
        "sandbox",
        "index cache",
        "grep",
        "search",
    }
    for name in ("command", "workspace", "policy", "manifests", "index cache", "grep"):
        assert lines[name].startswith("ok "), text
    assert str(project.resolve()) in lines["workspace"]
    # the bundled examples' five tools, counted apart from the locked ones
    assert re.search(
        r"ok +manifests +5 tools from 3 manifests, and \d+ locked tools$", lines["manifests"]
    )
    # The dev extra brings numpy: tool_search searches by meaning too ([semantic]).
    assert lines["search"].startswith("ok       search       by words and by meaning: MiniLM"), text
    # The sandbox line is what the sandbox's own probe says on this machine.
    assert code == (0 if _sandbox_ok(lines) else 1)
    assert text.rstrip().endswith("no problems" if code == 0 else "1 problem")


def test_a_bare_command_missing_from_the_gui_path_is_the_classic_enoent(
    project: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # uvx is on the user's shell PATH (~/.local/bin), not on the one a GUI app gets.
    local_bin = tmp_path / "local-bin"
    local_bin.mkdir()
    uvx = local_bin / "uvx"
    uvx.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    uvx.chmod(uvx.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{local_bin}{os.pathsep}{os.environ['PATH']}")
    config = tmp_path / "claude_desktop_config.json"
    entry = {"command": "uvx", "args": ["mcp-toolbridge", "serve", "--workspace", str(project)]}
    config.write_text(json.dumps({"mcpServers": {"toolbridge": entry}}), encoding="utf-8")
    code, lines, _ = _doctor(capsys, "--client", "claude-desktop", "--config", str(config))
    assert code == 1
    assert lines["command"].startswith("problem ")
    assert f"uvx is not on Claude Desktop's PATH ({GUI_PATH})" in lines["command"]
    assert "spawn uvx ENOENT" in lines["command"]
    assert f'fix: write its absolute path in the entry: "command": "{uvx}"' in lines["command"]
    assert lines["workspace"].startswith("ok ")
    # The same entry for Claude Code, started from the terminal's PATH, finds it (and says
    # that a launcher in a temporary folder will not last).
    code, lines, _ = _doctor(capsys, "--client", "claude-code", "--config", str(config))
    assert lines["command"].startswith(f"problem  command      {uvx} is in a temporary folder")
    assert "ENOENT" not in lines["command"]


def test_the_home_folder_as_workspace_is_a_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    code, lines, _ = _doctor(capsys, "--workspace", str(home))
    assert code == 1
    assert lines["workspace"].startswith("problem ")
    assert f"is the home folder ({home.resolve()})" in lines["workspace"]
    assert "fix: name the project folder with --workspace DIR" in lines["workspace"]


def test_claude_desktop_without_a_workspace_in_its_entry_is_a_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "claude_desktop_config.json"
    entry = {"command": sys.executable, "args": ["-m", "mcp_toolbridge", "serve"]}
    config.write_text(json.dumps({"mcpServers": {"tb": entry}}), encoding="utf-8")
    code, lines, _ = _doctor(capsys, "--client", "claude-desktop", "--config", str(config))
    assert code == 1
    assert (
        "none: Claude Desktop starts servers in / and the entry names no --workspace"
        in (lines["workspace"])
    )


def test_a_broken_manifest_is_a_problem_naming_it(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "tools.json").write_text('{"tools": [{"name": "x"}]}', encoding="utf-8")
    code, lines, _ = _doctor(capsys, str(broken), "--workspace", str(project))
    assert code == 1
    assert lines["manifests"].startswith("problem ")
    assert "command must have at least program name" in lines["manifests"]
    assert "`mcp-toolbridge lint PATH` lists every one" in lines["manifests"]


def test_a_policy_that_does_not_parse_is_a_problem_naming_the_line(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[[rules]]\npermission = "read"\naction = "maybe"\n', encoding="utf-8")
    code, lines, _ = _doctor(capsys, "--policy", str(policy), "--workspace", str(project))
    assert code == 1
    assert lines["policy"].startswith("problem ")
    assert "line 3: rules[0].action" in lines["policy"]
    # not loaded under a policy that does not parse, and said so
    assert lines["manifests"].startswith("problem  manifests    not checked: ")


def test_a_script_whose_interpreter_was_removed_is_a_problem(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "venv" / "bin" / "mcp-toolbridge"
    script.parent.mkdir(parents=True)
    script.write_text(f"#!{tmp_path}/gone/bin/python\n", encoding="utf-8")
    script.chmod(0o755)
    config = tmp_path / "mcp.json"
    entry = {"command": str(script), "args": ["serve", "--workspace", str(project)]}
    config.write_text(json.dumps({"mcpServers": {"toolbridge": entry}}), encoding="utf-8")
    code, lines, _ = _doctor(capsys, "--client", "cursor", "--config", str(config))
    assert code == 1
    assert f"runs {tmp_path}/gone/bin/python, which no longer exists" in lines["command"]


def test_the_entry_config_writes_for_claude_desktop_passes(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    code, lines, text = _doctor(capsys, "--client", "claude-desktop", "--sandbox", "off")
    assert text.startswith("mcp-toolbridge doctor: Claude Desktop, the entry `config` writes")
    assert code == 0, text
    assert lines["workspace"] == f"ok       workspace    {project.resolve()}"
    assert lines["sandbox"].startswith("ok       sandbox      off")


def test_a_launchers_package_that_is_gone_or_temporary_is_a_problem(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An entry ``uvx --from WHEEL mcp-toolbridge serve ...`` (what config run through uvx
    writes) starts only while that wheel is there: gone, the client's start fails; in a
    temporary folder, it goes. A package from an index has nothing to check."""
    wheel = tmp_path / "dist" / "mcp_toolbridge-1.2.3-py3-none-any.whl"
    config = tmp_path / "claude_desktop_config.json"

    def doctor_with(*launcher: str) -> tuple[int, str]:
        args = [*launcher, "serve", "--workspace", str(project)]
        entry = {"command": sys.executable, "args": args}  # stands for uvx: it lasts
        config.write_text(json.dumps({"mcpServers": {"toolbridge": entry}}), encoding="utf-8")
        code, lines, _ = _doctor(capsys, "--client", "claude-desktop", "--config", str(config))
        return code, lines["command"]

    code, line = doctor_with("--from", str(wheel), "mcp-toolbridge")
    assert code == 1
    assert line.startswith(f"problem  command      {wheel}, the package the entry runs, is not")
    assert "mcp-toolbridge config --client NAME" in line
    wheel.parent.mkdir()
    wheel.write_bytes(b"")
    code, line = doctor_with(f"--from={wheel}", "mcp-toolbridge")
    assert line.startswith(f"problem  command      {wheel}, the package the entry runs, is in a")
    code, line = doctor_with("--spec", str(wheel), "mcp-toolbridge")  # pipx run
    assert line.startswith(f"problem  command      {wheel}, the package the entry runs, is in a")
    code, line = doctor_with("mcp-toolbridge@1.2.3")
    assert line == f"ok       command      {sys.executable}"
    code, line = doctor_with("--from", f"{wheel}[semantic]", "mcp-toolbridge")  # an extra
    assert line.startswith(f"problem  command      {wheel}, the package the entry runs, is in a")


def test_without_the_semantic_extra_the_search_line_says_how_to_add_it(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An install without numpy (no [semantic]): still ok, and the line says what adds the
    search by meaning. (semantic_status is the catalog's own check, find_spec on numpy.)"""
    import importlib.util

    from mcp_toolbridge.catalog import semantic_model

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "numpy" else real(name, *a)
    )
    semantic_model.semantic_status.cache_clear()
    try:
        _, lines, _ = _doctor(capsys, "--workspace", str(project))
    finally:
        semantic_model.semantic_status.cache_clear()
    assert lines["search"] == (
        "ok       search       by words only: numpy not installed "
        "(pip install 'mcp-toolbridge[semantic]' adds search by meaning)"
    )


def test_a_tilde_in_a_clients_config_is_the_home_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Clients expand no ``~`` (no shell starts the server), so a path copied from a shell
    command into a config arrives as written: ``--workspace ~/code/proj`` is the home folder's
    code/proj, as at a shell, not a folder named ``~`` in the client's working directory."""
    from mcp_toolbridge.cli.main import parse_args

    home = tmp_path / "home"
    (home / "code" / "proj").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    examples = Path(__file__).resolve().parents[2] / "manifests" / "text-tools"
    args = parse_args(["serve", "--workspace", "~/code/proj", "--policy", "~/p.toml", "~/tools"])
    assert args.workspace == home / "code" / "proj"
    assert args.policy == home / "p.toml" and args.paths == [home / "tools"]
    (home / "tools").symlink_to(examples)
    config = tmp_path / "claude_desktop_config.json"
    serve = ["-m", "mcp_toolbridge", "serve", "--workspace", "~/code/proj", "~/tools"]
    entry = {"command": sys.executable, "args": serve}
    config.write_text(json.dumps({"mcpServers": {"toolbridge": entry}}), encoding="utf-8")
    _, lines, text = _doctor(capsys, "--client", "claude-desktop", "--config", str(config))
    assert lines["workspace"] == f"ok       workspace    {home / 'code' / 'proj'}", text
    assert lines["manifests"].startswith("ok       manifests    3 tools from 1 manifest,"), text


@pytest.mark.parametrize("client", ["vscode", "cursor"])
def test_paths_from_the_folder_variable_are_the_projects_the_config_is_for(
    client: str, project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """config writes ``${workspaceFolder}/manifests`` for a project's manifests (VS Code and
    Cursor put in the folder they have open): doctor reads them in the project the entry is
    written for (the working directory), or the one holding the ``--config`` file it reads
    (``PROJECT/.vscode/mcp.json``), not as a folder named ``${workspaceFolder}``."""
    examples = Path(__file__).resolve().parents[2] / "manifests" / "text-tools"
    (project / "manifests").symlink_to(examples)
    (project / "policy.toml").write_text("", encoding="utf-8")
    monkeypatch.chdir(project)
    given = ["--client", client, "manifests", "--policy", "policy.toml", "--sandbox", "off"]
    code, lines, text = _doctor(capsys, *given)
    assert lines["manifests"].startswith("ok       manifests    3 tools from 1 manifest,"), text
    assert lines["workspace"].startswith("ok       workspace    ${workspaceFolder}: the folder ")
    assert code == 0, text

    assert main(["config", *given]) == 0
    written = capsys.readouterr().out
    assert "${workspaceFolder}/manifests" in written
    config = project / (".vscode" if client == "vscode" else ".cursor") / "mcp.json"
    config.parent.mkdir()
    config.write_text(written, encoding="utf-8")
    monkeypatch.chdir(project.parent)  # doctor run elsewhere: the file's project counts
    code, lines, text = _doctor(capsys, "--client", client, "--config", str(config))
    assert lines["manifests"].startswith("ok       manifests    3 tools from 1 manifest,"), text
    assert lines["policy"].startswith("ok "), text


def test_a_cache_folder_others_may_write_is_a_problem(
    project: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Writable, but not used by the cache (red-team pass of 2026-11-29, 5th): doctor said ok."""
    shared = tmp_path / "shared-cache"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv("TOOLBRIDGE_CACHE_DIR", str(shared))
    code, lines, _ = _doctor(capsys, "--workspace", str(project))
    assert code == 1
    assert lines["index cache"].startswith("problem "), lines["index cache"]
    assert "others may write it" in lines["index cache"]
    assert "chmod go-w" in lines["index cache"]


def _doctor_process(home: Path, config: Path) -> subprocess.CompletedProcess[bytes]:
    """``doctor --config CONFIG`` as a real process, in ``home``, its output as bytes."""
    env = {**os.environ, "HOME": str(home), "TOOLBRIDGE_CACHE_DIR": str(home / "c")}
    return subprocess.run(
        [sys.executable, "-m", "mcp_toolbridge", "doctor", "--config", str(config)],
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )


def _plant_fifo(path: Path) -> None:
    os.mkfifo(path)


def _plant_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _plant_nested(path: Path) -> None:
    path.write_text("[" * 100_000, encoding="utf-8")


@pytest.mark.parametrize(
    ("plant", "said"),
    [
        (_plant_fifo, "it is not a regular file"),
        (_plant_zero, "it is not a regular file"),
        (_plant_nested, "it is nested deeper than a JSON parser reads"),
    ],
    ids=["fifo", "dev-zero", "nested"],
)
def test_a_config_file_that_is_not_a_clients_json_is_a_problem_not_a_hang(
    tmp_path: Path, plant: Any, said: str
) -> None:
    """Found by the red-team pass of 2026-11-29, 8th: ``doctor --config`` on a FIFO (a
    project's ``.vscode/mcp.json`` in a cloned repository) waited forever, a link to
    ``/dev/zero`` read until memory ran out, a file nested 100,000 deep ended it with a
    traceback. Each is now a problem line; doctor runs as a real process here."""
    config = tmp_path / "mcp.json"
    plant(config)
    done = _doctor_process(tmp_path, config)
    assert done.returncode == 1, done.stderr.decode()
    assert f"cannot read {config}: {said}" in done.stdout.decode()
    assert b"Traceback" not in done.stderr


def test_a_planted_configs_escapes_reach_the_terminal_as_escapes(tmp_path: Path) -> None:
    """Found by the red-team pass of 2026-11-29, 9th: ``doctor --config`` on a client
    config a cloned project planted quoted its paths as they were, so ESC ]0; retitled the
    terminal, the one-byte CSI ``\\x9b`` cleared it and U+202E reordered the line."""
    entry = {
        "command": "mcp-toolbridge",
        "args": ["serve", "--workspace", "/nowhere/x\x9b2J\u202eabc", "--policy",
                 "/nowhere/p\x1b]0;owned\x07.toml"],
    }  # fmt: skip
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"servers": {"tb": entry}}), encoding="utf-8")
    done = _doctor_process(tmp_path, config)
    shown = done.stdout.decode()
    assert done.returncode == 1, done.stderr.decode()
    for raw in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert raw not in shown, repr(raw)
    assert "/nowhere/x\\x9b2J\\u202eabc is not a folder" in shown
    assert "/nowhere/p\\x1b]0;owned\\x07.toml" in shown
