"""Issue 25 from where users stand: files named as options in a real workspace, and the bash
tool served to the SDK's client, run by real bash in the sandbox the default policy gives it.

Every program the bash sub-policy knows (taken from its own tables) is called with a pattern
that expands to those names, under every shape of allow rule that ends in ``*``: nothing
destructive runs and every file is still there afterwards. The same lines written safely run,
and the exact rule the refusal names does let the attack through, which shows the planted
files are real attacks (the sandbox cannot stop them: the workspace is writable in it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_toolbridge.bridge.gate import HEADLESS_DENIED
from mcp_toolbridge.executors import probe_sandbox
from mcp_toolbridge.policy.shell.expanded import HARMLESS, JUDGED, KNOWN
from mcp_toolbridge.sandbox import Sandbox
from tests.support.results import text_of
from tests.support.served import error_text, locked_settings, served_client

PLANTED = (
    "-delete", "-exec", "-rf", "--output=x", "-fprint", "--no-preserve-root", "-i",
    "--checkpoint=1", "--checkpoint-action=exec=sh pwn.sh",
)  # fmt: skip
"""Files named as options: find's, rm's, git's and sed's, and the tar wildcard injection."""
PROGRAMS = sorted(KNOWN)
RUNS = HARMLESS | {"popd"}
"""What may run with a pattern: options that only change the output, and popd (followed back
to any directory already seen, whatever its argument)."""
EXTRA = {
    "find": ["find . -name x *", "find ?*"],
    "tar": ["tar cf out.tar *", "tar czf out.tgz *"],
    "git": ["git add *", "git rm -r *"],
    "sed": ["sed -n p *"],
    "rm": ["rm -f *", "rm [-]*"],
    "cp": ["cp * dir/"],
    "mv": ["mv * dir/"],
    "chmod": ["chmod 600 *"],
    "chown": ["chown root *"],
    "xargs": ["ls | xargs rm", "ls -A | xargs -n1 rm -f"],
}
"""Lines written as people write them, besides ``P *`` and ``ls | xargs P``."""


def _workspace(root: Path) -> Path:
    for name in PLANTED:
        (root / name).write_text(f"planted {name}\n", encoding="utf-8")
    (root / "pwn.sh").write_text("touch PWNED\n", encoding="utf-8")
    (root / "keep.txt").write_text("keep me\n", encoding="utf-8")
    (root / "dir").mkdir()
    (root / "dir" / "inner.txt").write_text("inner\n", encoding="utf-8")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    return root


def _snapshot(root: Path) -> dict[str, str]:
    """Every file and folder under ``root`` with its content and mode."""
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        mode = oct(path.lstat().st_mode)
        text = path.read_text(encoding="utf-8") if path.is_file() else "<dir>"
        found[str(path.relative_to(root))] = f"{mode} {text}"
    return found


def _lines(program: str) -> list[str]:
    return [f"{program} *", f"ls | xargs {program}", *EXTRA.get(program, [])]


async def _call(client: Client, command: str) -> Any:
    return await client.call_tool("bash", {"command": command, "timeout": 20_000})


@pytest.mark.parametrize("shape", ["*", "P *", "P*"])
async def test_no_allow_rule_ending_in_a_star_lets_a_planted_option_run(tmp_path: Path, shape: str):
    if shape == "*":
        rules = 'allow = ["bash=*"]\n'
    else:
        allowed = [f"bash={shape.replace('P', p)}" for p in PROGRAMS]
        rules = f'allow = {json.dumps(allowed)}\ndeny = ["bash=*"]\n'
    settings = locked_settings(tmp_path, rules)
    assert settings.workspace is not None
    workspace = _workspace(settings.workspace)
    before = _snapshot(workspace)
    ran: list[str] = []
    async with served_client(settings, locked=True) as client:
        for program in PROGRAMS:
            for command in _lines(program):
                result = await _call(client, command)
                if not result.is_error:
                    ran.append(command)
                    # xargs runs programs, not builtins: `xargs declare` finds nothing to run
                    builtin = command.startswith("ls | xargs") and program not in JUDGED
                    assert program in RUNS or builtin, f"{command!r} ran under {shape!r}"
                    continue
                error = error_text(result)  # asked (so refused: no person here) or denied
                assert error.startswith("Denied"), (command, error)
                if program in JUDGED and command == f"{program} *":
                    assert HEADLESS_DENIED in error, (command, error)
                    assert "'*' can expand to" in error, (command, error)
                assert _snapshot(workspace) == before, f"{command!r} changed the workspace"
    assert _snapshot(workspace) == before
    assert {f"{p} *" for p in HARMLESS} <= set(ran)  # they ran, and changed nothing
    assert not (workspace / "PWNED").exists() and not (workspace / "x").exists()
    support = await probe_sandbox(Sandbox("auto", home=None))
    lines = [json.loads(x) for x in settings.audit_path.read_text().splitlines()]  # type: ignore[union-attr]
    assert {line["sandboxed"] for line in lines if line["decision"] == "allow"} == {support.ok}


async def test_the_same_lines_written_safely_run_and_do_what_they_say(tmp_path: Path):
    policy = 'allow = ["bash=find *", "bash=tar *", "bash=rm *", "bash=ls *"]\n'
    settings = locked_settings(tmp_path, policy)
    assert settings.workspace is not None
    workspace = _workspace(settings.workspace)
    async with served_client(settings, locked=True) as client:
        found = await _call(client, "find ./* -name inner.txt")
        assert text_of(found) == "./dir/inner.txt\nexit code 0", found
        listed = await _call(client, "ls *")  # allowed: ls's options only change its output
        assert "--- stderr ---\nls: unrecognized option" in text_of(listed), listed
        listed = await _call(client, "ls -- *")
        assert "\nkeep.txt\n" in text_of(listed).split("--- stderr ---")[0], listed
        archived = await _call(client, "tar cf out.tar -- *")
        assert text_of(archived).endswith("exit code 0"), archived
        members = await _call(client, "tar tf out.tar")
        assert "--checkpoint=1" in text_of(members), members
        assert not (workspace / "PWNED").exists()
        removed = await _call(client, "rm -f -- *")  # -rf is a file here, not a flag
        assert text_of(removed).endswith("exit code 1"), removed  # dir is not removed
    assert sorted(p.name for p in workspace.iterdir()) == [".git", "dir"]
    assert (workspace / "dir" / "inner.txt").read_text(encoding="utf-8") == "inner\n"


@pytest.mark.parametrize(
    ("command", "planted"),
    [("find *", ("-delete",)), ("tar cf out.tar *", PLANTED[-2:])],
)
async def test_the_exact_rule_the_refusal_names_lets_the_real_attack_through(
    tmp_path: Path, command: str, planted: tuple[str, ...]
):
    """The control: the planted names really are attacks once an operator allows the exact
    line (the sandbox does not stop them), which is why nothing looser may. Issue 25's find:
    a workspace holding ``-delete`` (and dot files) loses everything, ``.git`` included."""
    program = command.split()[0]
    settings = locked_settings(tmp_path, f'allow = ["bash={program} *"]\n')
    assert settings.workspace is not None
    workspace = settings.workspace
    for name in planted:
        (workspace / name).write_text("planted\n", encoding="utf-8")
    if program == "tar":
        (workspace / "pwn.sh").write_text("touch .PWNED\n", encoding="utf-8")
    (workspace / ".git").mkdir()
    (workspace / ".git" / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    async with served_client(settings, locked=True) as client:
        refused = error_text(await _call(client, command))
    exact = command.replace("*", "'*'")
    assert f"--allow 'bash={program} *' " not in refused
    assert "start the server with --allow " in refused and "'\"'\"'*'\"'\"''" in refused
    assert (workspace / ".git" / "HEAD").exists() and not (workspace / ".PWNED").exists()
    allowed = [f"bash={program} *", f"bash={exact}"]
    settings.policy_file.write_text(f"allow = {json.dumps(allowed)}\n", encoding="utf-8")  # type: ignore[union-attr]
    async with served_client(settings, locked=True) as client:
        result = await _call(client, command)
        assert not result.is_error, result
    if program == "find":
        assert list(workspace.iterdir()) == []
    else:
        assert (workspace / ".PWNED").exists()


async def test_a_pattern_that_matches_a_name_with_a_control_character_asks_and_says_why(
    tmp_path: Path,
):
    """A name the model never wrote cannot be judged as a path (control characters are never
    accepted in one): the line asks, naming the pattern and the name escaped, instead of
    refusing with a path error about a path the command does not spell."""
    settings = locked_settings(tmp_path, 'allow = ["bash=cat *"]\n')
    assert settings.workspace is not None
    (settings.workspace / "red\x1b[31m.txt").write_text("odd\n", encoding="utf-8")
    (settings.workspace / "plain.txt").write_text("plain\n", encoding="utf-8")
    async with served_client(settings, locked=True) as client:
        error = error_text(await _call(client, "cat *.txt"))
        assert error.startswith("Denied") and HEADLESS_DENIED in error, error
        assert "the pattern '*.txt' matches 'red\\x1b[31m.txt'" in error, error
        assert "control character" in error and "\x1b" not in error, error
        plain = await _call(client, "cat plain.txt")
        assert text_of(plain) == "plain\nexit code 0", plain
