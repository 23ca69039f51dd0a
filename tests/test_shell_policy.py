"""The bash sub-policy's gate hooks: redirect paths as fs targets, and the exact-rule floor."""

from __future__ import annotations

from pathlib import Path

from mcp_toolbridge.builtins.bash import SPEC as BASH
from mcp_toolbridge.policy import Decision, Policy, SessionRules
from mcp_toolbridge.shell_parse import splitter
from mcp_toolbridge.shell_policy import shell_floor, shell_targets

RULES = """
default_action = "ask"
[requires]
capabilities = ["shell.run"]
fs.read = ["{workspace}"]
fs.write = ["{workspace}"]
[[rules]]
permission = "bash"
pattern = "git *"
action = "allow"
[[rules]]
permission = "bash"
pattern = "find *"
action = "allow"
[[rules]]
permission = "bash"
pattern = "find . -name '*.o' -delete"
action = "allow"
[[rules]]
permission = "fs.write"
action = "allow"
[[rules]]
permission = "fs.read"
action = "allow"
"""


def _policy(tmp_path: Path, text: str = RULES) -> Policy:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text(text)
    return Policy.load(policy_file, workspace=workspace, user_data=None)


def _gate(policy: Policy, command: str, session: SessionRules | None = None) -> Decision:
    """What PolicyGate does with the two hooks wired in (minus the watchdog and the ask)."""
    arguments = {"command": command}
    targets = policy.targets(BASH, arguments, roles=BASH.argument_roles, splitter=splitter)
    targets = shell_targets(policy, BASH, arguments, targets)
    denial = policy.check_capabilities(BASH, targets)
    if denial is not None:
        return Decision.refused(denial)
    decision = policy.decide(BASH, targets, session)
    return shell_floor(policy, BASH, arguments, decision, session)


def test_checkable_commands_keep_the_rules_decision(tmp_path: Path):
    policy = _policy(tmp_path)
    assert _gate(policy, "git status && git log -n 3").action == "allow"
    assert _gate(policy, "find . -name '*.py'").action == "allow"
    assert _gate(policy, "git status; ls").action == "ask"


def test_a_dangerous_flag_under_a_glob_allow_asks(tmp_path: Path):
    decision = _gate(_policy(tmp_path), "git status && find . -name '*.tmp' -delete")
    assert decision.action == "ask"
    assert decision.scope == "shell"
    assert "find -delete" in decision.rule


def test_an_exact_allow_rule_approves_the_exact_dangerous_form(tmp_path: Path):
    assert _gate(_policy(tmp_path), "find . -name '*.o' -delete").action == "allow"
    assert _gate(_policy(tmp_path), "find . -name '*.a' -delete").action == "ask"


def test_an_opaque_command_asks_even_under_an_allow_everything_rule(tmp_path: Path):
    policy = _policy(tmp_path, RULES + '[[rules]]\npermission = "bash"\naction = "allow"\n')
    assert _gate(policy, "ls -la").action == "allow"
    decision = _gate(policy, 'git status; eval "$(cat cmd.txt)"')
    assert decision.action == "ask"
    assert "eval" in decision.rule


def test_an_always_answer_approves_that_exact_command_only(tmp_path: Path):
    policy = _policy(tmp_path)
    session = SessionRules()
    command = "git status; X=$(date); echo $X"
    assert _gate(policy, command, session).action == "ask"
    arguments = {"command": command}
    targets = policy.targets(BASH, arguments, roles=BASH.argument_roles, splitter=splitter)
    session.add_always(BASH, shell_targets(policy, BASH, arguments, targets))
    assert _gate(policy, command, session).action == "allow"
    assert _gate(policy, command + " more", session).action == "ask"


def test_a_deny_is_never_loosened_or_replaced(tmp_path: Path):
    policy = _policy(tmp_path, RULES + '[[rules]]\npermission = "bash"\npattern = "rm *"\n'
                     'action = "deny"\n')  # fmt: skip
    assert _gate(policy, "git status; eval x; rm -rf build").action == "deny"


def test_redirect_targets_are_checked_as_paths(tmp_path: Path):
    policy = _policy(tmp_path)
    arguments = {"command": "git log > log.txt 2> /dev/null < in.txt"}
    targets = policy.targets(BASH, arguments, roles=BASH.argument_roles, splitter=splitter)
    targets = shell_targets(policy, BASH, arguments, targets)
    workspace = (tmp_path / "ws").resolve()
    assert targets.paths_write == (workspace / "log.txt",)
    assert targets.paths_read == (workspace / "in.txt",)
    assert _gate(policy, "git log > log.txt").action == "allow"
    refused = _gate(policy, "git log > /etc/cron.d/x")
    assert refused.action == "deny" and refused.scope == "capability"
    assert "/etc/cron.d/x" in refused.rule
    escaped = _gate(policy, "git log > ../outside.txt")
    assert escaped.action == "deny"
