"""A rule with a pattern on a tool that has no argument roles can never match: a notice says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_toolbridge.cli.main import main
from mcp_toolbridge.errors import ErrorCode, Severity
from mcp_toolbridge.policy.compiled import Policy
from mcp_toolbridge.runtime import Settings, load_catalog
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool
from tests.support.policy_fixtures import builtin, exec_tool, http_tool, write_policy

RULES = """
[[rules]]
permission = "echo"
action = "allow"

[[rules]]
permission = "echo"
pattern = "*secret*"
action = "deny"

[[rules]]
permission = "mail.send"
pattern = { prefix = "ops@" }
action = "ask"
"""


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    return agentcli_manifest(
        tmp_path / "m", [echo_tool("echo"), echo_tool("mail.send")], {"echo": ECHO}
    )


def test_lint_names_each_patterned_rule_and_the_tool_it_can_never_match(
    tmp_path: Path, manifest: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = write_policy(tmp_path / "policy.toml", RULES)
    loaded = load_catalog(Settings(paths=[manifest], policy_file=policy, workspace=tmp_path))
    notices = [p for p in loaded.problems if p.code is ErrorCode.POLICY_INVALID]
    assert [(p.path, p.locator, p.severity) for p in notices] == [
        (str(policy), "rules[1]", Severity.NOTICE),
        (str(policy), "rules[2]", Severity.NOTICE),
    ]
    echo, mail = (p.message for p in notices)
    assert echo.startswith('the pattern "*secret*" of this rule for "echo" can never match')
    assert f'tool "echo" ({manifest}: tool[0] "echo") has no argument roles' in echo
    assert "Drop the pattern to have the rule deny every call" in echo and "watchdog" in echo
    assert 'the pattern { prefix = "ops@" } of this rule for "mail.send"' in mail
    assert f'tool "mail_send" ({manifest}: tool[1] "mail.send")' in mail
    assert not loaded.errors  # a notice, not an error: both tools are served
    assert len(loaded.catalog) == 2

    assert main(["lint", str(manifest), "--policy", str(policy), "--workspace", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert f"notice: {policy}: rules[1]: the pattern " in out[0]
    assert f"notice: {policy}: rules[2]: the pattern " in out[1]

    argv = ["lint", str(manifest), "--policy", str(policy), "--format", "json"]
    assert main([*argv, "--workspace", str(tmp_path)]) == 0
    rows = json.loads(capsys.readouterr().out)["problems"]
    assert [(r["locator"], r["severity"], r["code"]) for r in rows] == [
        ("rules[1]", "notice", "policy.invalid"),
        ("rules[2]", "notice", "policy.invalid"),
    ]


def test_what_the_notice_says_is_true_the_deny_pattern_never_stops_a_call(
    tmp_path: Path, manifest: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = write_policy(tmp_path / "policy.toml", RULES)
    argv = ["call", "echo", str(manifest), "--policy", str(policy), "--no-audit"]
    argv += ["--workspace", str(tmp_path), "--args", '{"text": "top secret"}']
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out) == {"echo": {"text": "top secret"}}


def test_rules_that_can_match_give_no_notice(tmp_path: Path) -> None:
    policy = Policy.load(
        write_policy(
            tmp_path / "policy.toml",
            """
[[rules]]
permission = "read"
pattern = "src/**"
action = "allow"

[[rules]]
permission = "mail_send"
pattern = "api.mail.example"
action = "deny"

[[rules]]
permission = "fs.read"
pattern = "src/**"
action = "deny"

[[rules]]
permission = "hash_text"
action = "deny"
""",
        ),
        workspace=tmp_path,
        user_data=None,
    )
    read = builtin("read").model_copy(update={"argument_roles": {"path": ("fs.read",)}})
    tools = [
        read,  # a built-in with roles: paths reach the pattern
        http_tool("mail_send", "https://api.mail.example/send"),  # hosts reach the pattern
        exec_tool("hash_text"),  # a rule without a pattern applies to every call
        exec_tool("word_count"),  # named by no rule; capability rules are not about one tool
    ]
    assert policy.unmatchable_rules(tools) == []
    assert [p.locator for p in policy.unmatchable_rules([exec_tool("read")])] == ["rules[0]"]
