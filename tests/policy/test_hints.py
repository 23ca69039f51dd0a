"""Every refusal says how to allow the call, and what it says works: each kind of refusal's
text, and the suggested --allow (or policy line) tried for real through the gate."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_toolbridge.bridge.gate import HEADLESS_DENIED, REJECTED, Clearance, PolicyGate
from mcp_toolbridge.builtins.bash import SPEC as BASH
from mcp_toolbridge.host import CallContext
from mcp_toolbridge.model import RequirementSet, ToolSpec
from mcp_toolbridge.policy.compiled import Decision, Policy
from mcp_toolbridge.policy.paths import canonical_root
from tests.support.policy_fixtures import builtin, exec_tool, http_tool, write_policy

HEADLESS = CallContext(session_id="hints")
READ = builtin("read", read_only=True, requires=RequirementSet(capabilities=("fs.read",)))
READ = READ.model_copy(update={"argument_roles": {"file_path": ("fs.read",)}})
FETCH = builtin("web_fetch", read_only=True, requires=RequirementSet(capabilities=("net.fetch",)))
FETCH = FETCH.model_copy(update={"argument_roles": {"url": ("net.fetch",)}})
NEW_FILE = (
    "a policy file (for example toolbridge-policy.toml: it adds to the default policy) and start "
    "the server with --policy toolbridge-policy.toml"
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = canonical_root(tmp_path) / "ws"
    (workspace / "src").mkdir(parents=True)
    return workspace


def _policy(ws: Path, text: str | None = None, *, project: str | None = None, **kw) -> Policy:
    policy_file = write_policy(ws.parent / "policy.toml", text) if text is not None else None
    if project is not None:
        write_policy(ws / ".toolbridge" / "policy.toml", project)
    return Policy.load(policy_file, workspace=ws, user_data=None, **kw)


async def _refusal(policy: Policy, spec: ToolSpec, arguments: dict[str, Any]) -> Clearance:
    clearance = await PolicyGate(policy)(spec, arguments, HEADLESS)
    assert not clearance.allowed
    return clearance


def _flags(text: str) -> list[str]:
    """The ``--allow`` values a refusal suggests (shell words, as a person would paste them)."""
    _, found, rest = text.partition("start the server with --allow ")
    assert found, text
    words = shlex.split("--allow " + re.split(r", or |\.$", rest)[0])
    return [w for w in words if w != "--allow"]


async def _allowed_with_the_flags(
    ws: Path, text: str | None, spec: ToolSpec, arguments: dict[str, Any], message: str
) -> None:
    """The suggestion works: the same call with the suggested --allow passes the gate."""
    again = _policy(ws, text, allow=_flags(message))
    assert (await PolicyGate(again)(spec, arguments, HEADLESS)).allowed, message


async def test_a_tool_that_declares_nothing_headless(ws: Path):
    fs_rm = exec_tool("fs_rm")
    message = (await _refusal(_policy(ws), fs_rm, {})).refusal()
    assert message.startswith(HEADLESS_DENIED)
    assert message.endswith(
        'To allow it, start the server with --allow fs_rm, or add allow = ["fs_rm"] to '
        f"{NEW_FILE}, or, if the tool changes nothing, declare it in its manifest "
        '("annotations": {"destructiveHint": false}, or "readOnlyHint": true; see '
        "docs/manifests.md)."
    )
    await _allowed_with_the_flags(ws, None, fs_rm, {}, message)


async def test_an_ask_rule_for_one_command_headless_names_that_command(ws: Path):
    arguments = {"command": "git status"}
    message = (await _refusal(_policy(ws, 'grant = "declared"\n'), BASH, arguments)).refusal()
    policy_file = ws.parent / "policy.toml"
    assert "(asked by default policy rules[7] (bash, any argument, ask))" in message
    assert message.endswith(
        "To allow it, start the server with --allow 'bash=git status', or add "
        f'allow = ["bash=git status"] to {policy_file} (before any [table]).'
    )
    await _allowed_with_the_flags(ws, 'grant = "declared"\n', BASH, arguments, message)
    written = _policy(ws, 'allow = ["bash=git status"]\n')  # the policy line works too
    assert (await PolicyGate(written)(BASH, arguments, HEADLESS)).allowed


async def test_a_deny_in_the_policy_file_names_its_line(ws: Path):
    text = '# mine\ndeny = ["bash=ls"]\n'
    message = (await _refusal(_policy(ws, text), BASH, {"command": "ls"})).refusal()
    assert message == (
        f"Denied by {ws.parent / 'policy.toml'} deny[0] (bash, exact 'ls', deny). To allow it, "
        "start the server with --allow bash=ls, or remove or change the rule that denies it "
        f"(deny[0] in {ws.parent / 'policy.toml'} line 2)."
    )
    await _allowed_with_the_flags(ws, text, BASH, {"command": "ls"}, message)


async def test_a_project_deny_no_operator_rule_can_open(ws: Path):
    project = '[[rules]]\npermission = "bash"\npattern = "ls"\naction = "deny"\n'
    message = (await _refusal(_policy(ws, project=project), BASH, {"command": "ls"})).refusal()
    assert message.endswith(
        "To allow it, remove or change the rule that denies it (rules[0] in "
        f"{ws / '.toolbridge' / 'policy.toml'} line 2)."
    )


async def test_default_action_deny_names_the_allow_that_opens_it(ws: Path):
    text = 'default_action = "deny"\n'
    tool = exec_tool("lint", destructive=False)
    clearance = await _refusal(_policy(ws, text), tool, {})
    assert clearance.decision.scope == "default"
    assert clearance.refusal().endswith(
        f'To allow it, start the server with --allow lint, or add allow = ["lint"] to '
        f"{ws.parent / 'policy.toml'} (before any [table])."
    )


async def test_a_path_outside_the_workspace_names_the_workspace_and_the_grant(ws: Path):
    outside = ws.parent / "data"
    outside.mkdir()
    target = outside / "notes.txt"
    message = (await _refusal(_policy(ws), READ, {"file_path": str(target)})).refusal()
    assert message.startswith("Denied by capability check: ")
    assert message.endswith(
        f"To allow it, serve a workspace that contains it (--workspace {outside}), or add "
        f'fs.read = ["{target}"] under [requires] in {NEW_FILE}.'
    )
    granted = _policy(ws, f'[requires]\nfs.read = ["{target}"]\n')
    assert (await PolicyGate(granted)(READ, {"file_path": str(target)}, HEADLESS)).allowed


async def test_an_empty_ad_hoc_scope_names_the_ad_hoc_flag(ws: Path):
    text = 'extends = "none"\n[requires]\nfs.read = ["{ad-hoc}"]\n'
    message = (await _refusal(_policy(ws, text), READ, {"file_path": "src/a"})).refusal()
    assert f"To allow it, start the server with --ad-hoc {ws / 'src'}, or add fs.read" in message


async def test_a_host_nobody_declared_names_the_net_hosts_line(ws: Path):
    message = (await _refusal(_policy(ws), FETCH, {"url": "https://docs.example/a"})).refusal()
    assert message.endswith(
        f'To allow it, add net.hosts = ["docs.example"] under [requires] in {NEW_FILE}.'
    )


async def test_commands_name_the_shell_grant_they_miss(ws: Path):
    no_shell = builtin("run", requires=RequirementSet()).model_copy(
        update={"argument_roles": {"command": ("shell.run",)}}
    )
    message = (await _refusal(_policy(ws), no_shell, {"command": "ls"})).refusal()
    assert message.endswith(
        f'To allow it, add capabilities = ["shell.run"] under [requires] in {NEW_FILE}.'
    )
    text = '[requires]\nshell = [{ cmd = "git" }]\n'
    entries = _policy(ws, text)
    outside = (await _refusal(entries, no_shell, {"command": "ls -l"})).refusal()
    policy_file = ws.parent / "policy.toml"
    assert outside.endswith(
        f'To allow it, add {{ cmd = "ls" }} to shell under [requires] in {policy_file}.'
    )


async def test_requires_confirmation_headless_names_the_security_setting(ws: Path):
    mail = http_tool(
        "mail_send",
        "https://api.mail.example/send",
        capabilities=("net:api.mail.example",),
        requires_confirmation=True,
        destructive=False,
    )
    confirm = (
        "to run such tools without asking, set confirm_external_actions = false under "
        f"[security] in {NEW_FILE} (for every tool that declares it)."
    )
    message = (await _refusal(_policy(ws), mail, {})).refusal()
    assert message.endswith(f"The tool declares requires_confirmation: {confirm}")
    unsaid = http_tool(  # and says nothing about destroying: the rules ask first
        "mail_send",
        "https://api.mail.example/send",
        capabilities=("net:api.mail.example",),
        requires_confirmation=True,
    )
    both = (await _refusal(_policy(ws), unsaid, {})).refusal()
    assert both.endswith(
        "To allow it, start the server with --allow mail_send=api.mail.example, or add "
        f'allow = ["mail_send=api.mail.example"] to {NEW_FILE}, or, if the tool changes '
        "nothing, declare it in its manifest "
        '("annotations": {"destructiveHint": false}, or "readOnlyHint": true; see '
        f"docs/manifests.md); the tool also declares requires_confirmation: {confirm}"
    )


async def test_an_unchecked_shell_line_names_the_exact_rules_it_needs(ws: Path):
    text = (
        'extends = "none"\ndefault_action = "allow"\nallow = ["bash=cat *", "bash=echo *"]\n'
        '[requires]\nfs.read = ["{workspace}"]\ncapabilities = ["shell.run"]\n'
    )
    arguments = {"command": "cat $(echo notes.txt)"}
    clearance = await _refusal(_policy(ws, text), BASH, arguments)
    assert clearance.decision.scope == "shell"
    message = clearance.refusal()
    assert "--allow 'bash=bash -c '\"'\"'cat $(echo notes.txt)'\"'\"''" in message
    await _allowed_with_the_flags(ws, text, BASH, arguments, message)


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX shell script as the watchdog")
async def test_a_watchdog_deny_says_no_rule_overrules_it(ws: Path):
    guard = ws.parent / "guard.sh"
    guard.write_text('#!/bin/sh\necho \'{"verdict": "deny", "reason": "no"}\'\n')
    guard.chmod(0o755)
    text = f'allow = ["lint"]\n[watchdog]\ncommand = ["{guard}"]\n'
    message = (await _refusal(_policy(ws, text), exec_tool("lint"), {})).refusal()
    assert message == (
        f"Denied by watchdog: no. The watchdog ([watchdog] in {ws.parent / 'policy.toml'}) "
        "refused it, and no rule can overrule it: change what the watchdog allows, or, when it "
        "failed, fix what the reason says."
    )


def test_a_persons_rejection_carries_no_way_around_it():
    rejected = Clearance(Decision("deny", "x", "manifest"), "reject", hint="To allow it, ...")
    assert rejected.refusal() == REJECTED
