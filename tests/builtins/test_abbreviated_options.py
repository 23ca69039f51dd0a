"""Long options written abbreviated, from where users stand: the served bash tool under
``P *`` allow rules, real bash, real programs, in the sandbox the default policy gives it.

GNU getopt_long (sed, tar, sort, cp...) and git's parse-options take any unambiguous prefix of
a long option, so ``sed --exp='1e CMD'`` is ``sed --expression``, ``tar --checkpoint-act=...``
is ``--checkpoint-action`` and ``git fetch --upl=CMD`` is ``--upload-pack``. The sub-policy
knew these options only written out (the red-team pass of 2026-11-29): each line below ran
under its program's ``*`` rule. Now each asks (so is refused headless) and nothing happens;
the control shows each is a real attack once the exact line is allowed (the sandbox does not
stop it: the workspace is writable in it)."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_toolbridge.bridge.gate import HEADLESS_DENIED
from tests.support.results import text_of
from tests.support.served import error_text, locked_settings, served_client

RULES = ["bash=sed *", "bash=tar *", "bash=sort *", "bash=cp *", "bash=git *", "bash=split *"]
ATTACKS = {
    "sed --exp='1e touch PWNED' a.txt": "runs a command (sed's e)",
    "sed --in-pl s/keep/gone/ a.txt": "edits a.txt in place",
    "tar --checkpoint=1 --checkpoint-act=exec='touch PWNED' -cf out.tar a.txt": "runs a command",
    "sort --o=.git/config a.txt": "overwrites .git/config (core.fsmonitor: later git runs it)",
    "cp --t=.git/hooks pre-commit": "plants a hook that the person's own git runs later",
    "git fetch --upl='touch PWNED; false' .": "runs a command as upload-pack",
    "git rebase --exe 'touch PWNED' HEAD~1": "runs a command after each commit",
    "git grep --open='touch PWNED;' keep": "runs a command as the pager",
    "tar cf out.tar --lab -- *": "runs pwn.sh: '--' is --label's value, '*' the planted options",
    "split -l 1 -a 1 --additional-suffix=ig lines.txt .git/con": "writes .git/config (piece f)",
}
"""Each abbreviated line and what it does once it runs (and split, whose output prefix was
not a path the sub-policy checked: its pieces can be named exactly)."""


def _git(workspace: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=workspace, check=True, capture_output=True)


def _workspace(workspace: Path) -> None:
    (workspace / "a.txt").write_text("keep\n", encoding="utf-8")
    for name in ("--checkpoint=1", "--checkpoint-action=exec=sh pwn.sh"):  # issue 25's names
        (workspace / name).write_text("planted\n", encoding="utf-8")
    (workspace / "pwn.sh").write_text("touch PWNED\n", encoding="utf-8")
    (workspace / "lines.txt").write_text("a\nb\nc\nd\ne\n[core]\n", encoding="utf-8")
    hook = workspace / "pre-commit"
    hook.write_text("#!/bin/sh\ntouch PWNED\n", encoding="utf-8")
    hook.chmod(0o755)
    _git(workspace, "init", "-q", ".")
    _git(workspace, "config", "user.name", "t")
    _git(workspace, "config", "user.email", "t@example.com")
    _git(workspace, "add", "a.txt")
    _git(workspace, "commit", "-q", "-m", "one")
    _git(workspace, "commit", "-q", "--allow-empty", "-m", "two")


def _state(workspace: Path) -> dict[str, str]:
    """What the attacks change: a.txt, .git/config, the hooks folder, and PWNED."""
    hooks = sorted(p.name for p in (workspace / ".git" / "hooks").iterdir())
    return {
        "a.txt": (workspace / "a.txt").read_text(encoding="utf-8"),
        "config": (workspace / ".git" / "config").read_text(encoding="utf-8"),
        "hooks": " ".join(hooks),
        "PWNED": str((workspace / "PWNED").exists()),
    }


async def _call(client: Client, command: str) -> Any:
    return await client.call_tool("bash", {"command": command, "timeout": 20_000})


async def test_an_abbreviated_option_asks_as_the_option_written_out(tmp_path: Path):
    settings = locked_settings(tmp_path, f"allow = {json.dumps(RULES)}\n")
    assert settings.workspace is not None
    _workspace(settings.workspace)
    before = _state(settings.workspace)
    async with served_client(settings, locked=True) as client:
        for command in ATTACKS:
            error = error_text(await _call(client, command))
            assert error.startswith("Denied") and HEADLESS_DENIED in error, (command, error)
            assert _state(settings.workspace) == before, f"{command!r} ran"
        safe = await _call(client, "sed -n p a.txt && git log --oneline -1 --format=%s")
        assert not safe.is_error, safe  # the rules still allow what they allowed


@pytest.mark.parametrize("command", list(ATTACKS))
async def test_each_abbreviated_line_is_a_real_attack_once_allowed_exactly(
    tmp_path: Path, command: str
):
    """The control: allowed by an exact rule, the line does what :data:`ATTACKS` says."""
    exact = [  # the command's subject, and the whole line's (a write inside .git asks so)
        f"bash={shlex.join(shlex.split(command))}",
        f"bash=bash -c {shlex.quote(command)}",
    ]
    settings = locked_settings(tmp_path, f"allow = {json.dumps([*RULES, *exact])}\n")
    assert settings.workspace is not None
    _workspace(settings.workspace)
    before = _state(settings.workspace)
    async with served_client(settings, locked=True) as client:
        result = await _call(client, command)
        assert not result.is_error, text_of(result)
    after = _state(settings.workspace)
    changed = {key for key in before if before[key] != after[key]}
    assert changed, f"{command!r} changed nothing: {result}"
    if "PWNED" in command or "*" in command:
        assert after["PWNED"] == "True", result
