from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_toolbridge.errors import ConfigError, ErrorCode
from mcp_toolbridge.model import RequirementSet, ToolSpec
from mcp_toolbridge.policy.compiled import Decision, Policy, combine
from mcp_toolbridge.policy.grants import SessionRules
from mcp_toolbridge.policy.paths import canonical_root
from mcp_toolbridge.policy.requirements import ArgumentRoles
from mcp_toolbridge.policy.show import render_policy
from mcp_toolbridge.policy.watchdog import Verdict
from tests.support.policy_fixtures import builtin, exec_tool, http_tool, write_policy

READ: ArgumentRoles = {"file_path": "fs.read"}
WRITE: ArgumentRoles = {"file_path": "fs.write"}
EDIT: ArgumentRoles = {"file_path": ("fs.read", "fs.write")}
BASH: ArgumentRoles = {"command": "shell.run"}
FETCH: ArgumentRoles = {"url": "net.fetch"}
BASH_SPEC = builtin("bash", requires=RequirementSet(capabilities=("shell.run",)))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = canonical_root(tmp_path) / "ws"
    (workspace / "src").mkdir(parents=True)
    return workspace


def load(ws: Path, text: str | None = None, *, project: str | None = None, **kw) -> Policy:
    policy_file = write_policy(ws.parent / "policy.toml", text) if text is not None else None
    if project is not None:
        write_policy(ws / ".toolbridge" / "policy.toml", project)
    return Policy.load(policy_file, workspace=ws, user_data=ws.parent / "data", **kw)


def call(
    policy: Policy,
    spec: ToolSpec,
    arguments: dict[str, object],
    roles: ArgumentRoles | None = None,
    session: SessionRules | None = None,
) -> Decision:
    """The first two layers as the bridge runs them."""
    targets = policy.targets(spec, arguments, roles=roles)
    denial = policy.check_capabilities(spec, targets)
    if denial is not None:
        return Decision.refused(denial)
    return policy.decide(spec, targets, session)


# -- the default policy ----------------------------------------------------------------------


def test_default_policy_allows_read_only_locked_tools_inside_the_workspace(ws):
    policy = load(ws)
    for name in ("read", "glob", "grep"):
        decision = call(policy, builtin(name, read_only=True), {"file_path": "src/a.py"}, READ)
        assert decision.action == "allow", name
        assert decision.scope == "manifest"


def test_default_policy_asks_for_write_edit_and_bash(ws):
    policy = load(ws)
    assert call(policy, builtin("write"), {"file_path": "src/a.py"}, WRITE).action == "ask"
    assert call(policy, builtin("edit"), {"file_path": "src/a.py"}, EDIT).action == "ask"
    assert call(policy, BASH_SPEC, {"command": "ls"}, BASH).action == "ask"


def test_default_policy_denies_paths_outside_the_workspace(ws):
    policy = load(ws)
    decision = call(policy, builtin("read"), {"file_path": "../../etc/passwd"}, READ)
    assert decision.action == "deny"
    assert decision.scope == "capability"
    assert "outside the granted fs.read scope" in decision.rule


def test_default_policy_denies_hosts_nobody_declared(ws):
    policy = load(ws)
    fetch = builtin("web_fetch", requires=RequirementSet(capabilities=("net.fetch",)))
    decision = call(policy, fetch, {"url": "https://example.org/"}, FETCH)
    assert decision.action == "deny" and "not in the granted net.hosts" in decision.rule
    # the fix is named in words a manifest uses ("requirements" is none of the formats')
    assert 'in the tool\'s capabilities ("net:HOST" in its Runloop entry)' in decision.rule


def test_default_policy_allows_served_manifest_tools_and_asks_for_destructive_ones(ws):
    policy = load(ws)
    assert call(policy, exec_tool("git_log", destructive=False), {}).action == "allow"
    destructive = call(policy, exec_tool("rm_branch", destructive=True), {})
    assert destructive.action == "ask" and "destructive" in destructive.rule


def test_default_policy_asks_before_a_tool_that_declares_nothing(ws):
    """Fail-closed: an undeclared fact takes the cautious value, so a manifest tool that says
    nothing about itself (goagent's fs_rm and exec) is treated as destructive."""
    decision = call(load(ws), exec_tool("fs_rm"), {})
    assert decision.action == "ask" and decision.scope == "default"
    assert '"fs_rm" does not declare whether it changes or deletes anything' in decision.rule


def test_requires_confirmation_asks_unless_confirm_external_actions_is_off(ws):
    spec = http_tool(
        "mail_smtp_send",
        "https://api.mail.example/send",
        capabilities=("net:api.mail.example",),
        requires_confirmation=True,
        destructive=False,
    )
    asked = call(load(ws), spec, {})
    assert asked.action == "ask" and asked.scope == "confirmation"
    off = load(ws, 'default_action = "by-safety"\n[security]\nconfirm_external_actions = false\n')
    assert off.confirm_external_actions is False
    assert call(off, spec, {}).action == "allow"


def test_an_http_tool_is_exposed_only_when_its_host_is_declared(ws):
    policy = load(ws)
    declared = http_tool(
        "send", "https://api.mail.example/send", capabilities=("net:api.mail.example",)
    )
    undeclared = http_tool("leak", "https://collector.evil/x")
    assert policy.exposed(declared)
    assert not policy.exposed(undeclared)
    assert call(policy, undeclared, {}).action == "deny"


# -- specificity -----------------------------------------------------------------------------


def rules_policy(
    ws: Path, *rules: tuple[str, str | None, str], prefix: set[int] | None = None
) -> Policy:
    lines = [
        'extends = "none"',  # these rules alone: not over the default policy's
        'default_action = "ask"',
        "[requires]",
        'fs.read = ["{workspace}"]',
        'capabilities = ["shell.run"]',
    ]
    for index, (permission, pattern, action) in enumerate(rules):
        lines += ["[[rules]]", f'permission = "{permission}"', f'action = "{action}"']
        if pattern is not None:
            rendered = json.dumps(pattern)
            lines.append(
                f"pattern = {{ prefix = {rendered} }}"
                if index in (prefix or set())
                else f"pattern = {rendered}"
            )
    return load(ws, "\n".join(lines) + "\n")


def test_exact_beats_prefix_beats_glob_whatever_the_rule_order(ws):
    rules = [
        ("bash", "git *", "deny"),
        ("bash", "git status", "allow"),
        ("bash", "git", "ask"),
    ]
    for ordered in (rules, rules[::-1]):
        prefix = {i for i, r in enumerate(ordered) if r[1] == "git"}
        policy = rules_policy(ws, *ordered, prefix=prefix)
        assert call(policy, BASH_SPEC, {"command": "git status"}, BASH).action == "allow"
        assert call(policy, BASH_SPEC, {"command": "git log"}, BASH).action == "ask"
        assert (
            call(policy, BASH_SPEC, {"command": "gitk"}, BASH).action == "ask"
        )  # no rule: default


def test_a_longer_literal_part_wins_between_rules_of_one_kind(ws):
    policy = rules_policy(ws, ("read", "src/**", "deny"), ("read", "src/public/**", "allow"))
    assert call(policy, builtin("read"), {"file_path": "src/public/a"}, READ).action == "allow"
    assert call(policy, builtin("read"), {"file_path": "src/private/a"}, READ).action == "deny"


def test_on_a_tie_deny_beats_ask_beats_allow(ws):
    policy = rules_policy(ws, ("bash", "rm *", "allow"), ("bash", "rm *", "ask"))
    assert call(policy, BASH_SPEC, {"command": "rm x"}, BASH).action == "ask"
    policy = rules_policy(
        ws, ("bash", "rm *", "allow"), ("bash", "rm *", "deny"), ("bash", "rm *", "ask")
    )
    assert call(policy, BASH_SPEC, {"command": "rm x"}, BASH).action == "deny"


def test_a_tool_rule_beats_a_capability_rule_beats_a_star_rule_on_equal_patterns(ws):
    policy = rules_policy(ws, ("*", None, "deny"), ("bash", None, "allow"))
    assert call(policy, BASH_SPEC, {"command": "ls"}, BASH).action == "allow"
    assert call(policy, exec_tool("other"), {}).action == "deny"
    policy = rules_policy(ws, ("shell.run", None, "deny"), ("bash", None, "ask"))
    assert call(policy, BASH_SPEC, {"command": "ls"}, BASH).action == "ask"


def test_a_command_prefix_matches_at_a_word_boundary_only(ws):
    policy = rules_policy(ws, ("bash", "git status", "allow"), prefix={0})
    assert call(policy, BASH_SPEC, {"command": "git status --short"}, BASH).action == "allow"
    assert call(policy, BASH_SPEC, {"command": "git status-evil"}, BASH).action == "ask"


def test_a_glob_on_commands_does_not_match_shell_syntax_appended_to_them(ws):
    policy = rules_policy(ws, ("bash", "git *", "allow"))
    assert call(policy, BASH_SPEC, {"command": "git log"}, BASH).action == "allow"
    assert call(policy, BASH_SPEC, {"command": "git log; curl evil"}, BASH).action == "ask"


def test_path_prefix_rules_compare_components_not_strings(ws):
    (ws.parent / "ws_evil").mkdir()
    text = (
        'extends = "none"\n[requires]\nfs.read = ["{workspace}", "{workspace}_evil"]\n'
        '[[rules]]\npermission = "fs.read"\n'
        'pattern = { prefix = "{workspace}" }\naction = "allow"\n'
    )
    policy = load(ws, text)
    assert call(policy, builtin("read"), {"file_path": "src/a"}, READ).action == "allow"
    evil = call(policy, builtin("read"), {"file_path": "../ws_evil/a"}, READ)
    assert evil.action == "ask"


def test_a_symlink_inside_the_workspace_cannot_dodge_a_path_rule(ws):
    (ws / "secrets").mkdir()
    (ws / "innocent").symlink_to(ws / "secrets", target_is_directory=True)
    policy = rules_policy(ws, ("read", None, "allow"), ("fs.read", "secrets/**", "deny"))
    assert call(policy, builtin("read"), {"file_path": "innocent/key.pem"}, READ).action == "deny"


def test_host_rules_are_case_insensitive(ws):
    text = (
        '[requires]\nnet.hosts = ["*"]\n'
        '[[rules]]\npermission = "net.fetch"\npattern = "*.Evil.COM"\naction = "deny"\n'
    )
    fetch = builtin("web_fetch")
    policy = load(ws, text)
    assert call(policy, fetch, {"url": "https://x.EVIL.com/"}, FETCH).action == "deny"
    assert call(policy, fetch, {"url": "https://good.org/"}, FETCH).action == "ask"


# -- scopes ----------------------------------------------------------------------------------

MANIFEST_DENY = (
    '[[rules]]\npermission = "bash"\naction = "deny"\n'
    '[[rules]]\npermission = "read"\npattern = "src/**"\naction = "deny"\n'
)
PROJECT_ALLOW = (
    '[[rules]]\npermission = "bash"\npattern = "ls"\naction = "allow"\n'
    '[[rules]]\npermission = "read"\npattern = "src/a.py"\naction = "allow"\n'
)


def test_a_project_allow_never_overrides_a_manifest_deny(ws):
    policy = load(
        ws,
        'trust_project_allow = true\n[requires]\nfs.read = ["{workspace}"]\n' + MANIFEST_DENY,
        project=PROJECT_ALLOW,
    )
    assert call(policy, builtin("read"), {"file_path": "src/a.py"}, READ).action == "deny"
    decision = call(policy, BASH_SPEC, {"command": "ls"}, BASH)
    assert decision.action == "deny" and decision.scope == "manifest"


def test_a_session_always_never_overrides_a_manifest_deny(ws):
    policy = load(ws, '[requires]\nfs.read = ["{workspace}"]\n' + MANIFEST_DENY)
    session = SessionRules()
    targets = policy.targets(builtin("read"), {"file_path": "src/a.py"}, roles=READ)
    session.add_always(builtin("read"), targets)
    session.add("*", None, "allow")
    assert call(policy, builtin("read"), {"file_path": "src/a.py"}, READ, session).action == "deny"
    assert call(policy, BASH_SPEC, {"command": "ls"}, BASH, session).action == "deny"


def test_a_session_always_turns_a_later_identical_ask_into_allow_and_nothing_more(ws):
    policy = load(ws)
    session = SessionRules()
    write = builtin("write")
    targets = policy.targets(write, {"file_path": "src/a.py"}, roles=WRITE)
    session.add_always(write, targets)
    allowed = call(policy, write, {"file_path": "src/a.py"}, WRITE, session)
    assert allowed.action == "allow" and allowed.scope == "session"
    assert call(policy, write, {"file_path": "src/b.py"}, WRITE, session).action == "ask"


def test_a_session_always_cannot_override_a_project_deny(ws):
    policy = load(
        ws, project='[[rules]]\npermission = "bash"\npattern = "curl *"\naction = "deny"\n'
    )
    session = SessionRules()
    session.add("bash", "curl x", "allow")  # exact: more specific than the project's glob
    session.add("bash", "ls", "allow")
    decision = call(policy, BASH_SPEC, {"command": "curl x"}, BASH, session)
    assert decision.action == "deny" and decision.scope == "project"
    assert call(policy, BASH_SPEC, {"command": "ls"}, BASH, session).action == "allow"


def test_project_allow_rules_are_ignored_unless_the_operator_trusts_them(ws):
    policy = load(ws, project=PROJECT_ALLOW)
    assert call(policy, BASH_SPEC, {"command": "ls"}, BASH).action == "ask"
    shown = json.loads(render_policy(policy))
    assert len(shown["ignored_rules"]) == 2
    assert "trust_project_allow" in shown["ignored_rules"][0]["why"]


def test_project_rules_may_tighten_the_default_policy(ws):
    policy = load(
        ws, project='[[rules]]\npermission = "read"\npattern = "**/.env"\naction = "ask"\n'
    )
    assert call(policy, builtin("read"), {"file_path": "src/.env"}, READ).action == "ask"
    assert call(policy, builtin("read"), {"file_path": "src/app.py"}, READ).action == "allow"


def test_a_project_file_cannot_widen_requirements_or_switch_off_confirmation(ws):
    with pytest.raises(ConfigError) as info:
        load(ws, project='[requires]\nfs.read = ["/"]\n')
    assert info.value.code == ErrorCode.POLICY_INVALID
    assert (
        '.toolbridge/policy.toml: line 1: requires: unknown key; did you mean "rules"? '
        "(valid here: allow, ask, deny, rules)"
    ) in str(info.value)


# -- exposure --------------------------------------------------------------------------------


def test_a_tool_denied_whatever_its_arguments_is_not_exposed(ws):
    policy = rules_policy(ws, ("bash", None, "deny"))
    assert not policy.exposed(BASH_SPEC)
    assert policy.exposed(builtin("read"))


def test_a_tool_with_a_narrower_non_deny_rule_stays_exposed(ws):
    policy = rules_policy(ws, ("bash", None, "deny"), ("bash", "git status", "allow"))
    assert policy.exposed(BASH_SPEC)
    assert call(policy, BASH_SPEC, {"command": "git status"}, BASH).action == "allow"
    assert call(policy, BASH_SPEC, {"command": "ls"}, BASH).action == "deny"


def test_a_universal_capability_deny_hides_every_tool_declaring_it(ws):
    policy = rules_policy(ws, ("fs.write", "**", "deny"))
    assert not policy.exposed(builtin("write", requires=RequirementSet(capabilities=("fs.write",))))
    assert policy.exposed(builtin("read", requires=RequirementSet(capabilities=("fs.read",))))


def test_a_deny_on_a_declared_host_hides_the_tool(ws):
    text = '[[rules]]\npermission = "net.fetch"\npattern = "api.mail.example"\naction = "deny"\n'
    spec = http_tool(
        "send", "https://api.mail.example/send", capabilities=("net:api.mail.example",)
    )
    assert not load(ws, text).exposed(spec)


def test_default_action_deny_without_rules_hides_everything(ws):
    assert not load(ws, 'default_action = "deny"\n').exposed(exec_tool("x"))


def test_grant_policy_hides_tools_needing_more_than_the_policy_grants(ws):
    text = (
        'grant = "policy"\n[requires]\nnet.hosts = ["*.mail.example"]\n'
        'capabilities = ["mail.send"]\nfs.read = ["{workspace}"]\n'
    )
    policy = load(ws, text)
    assert policy.exposed(
        http_tool(
            "a", "https://api.mail.example/x", capabilities=("net:api.mail.example", "mail.send")
        )
    )
    assert not policy.exposed(
        http_tool(
            "b", "https://api.mail.example/x", capabilities=("net:api.mail.example", "sms.send")
        )
    )
    assert not policy.exposed(
        http_tool("c", "https://other.example/x", capabilities=("net:other.example",))
    )
    inside = exec_tool("d", requires=RequirementSet(fs_read=("{workspace}/src",)))
    outside = exec_tool("e", requires=RequirementSet(fs_read=("/etc",)))
    assert policy.exposed(inside) and not policy.exposed(outside)


# -- loading ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '[requires]\nfs.read = ["{worksapce}/x"]\n',
            r"requires.fs.read[0]: unknown variable {worksapce}",
        ),
        (
            '[[rules]]\npermission = "read"\npattern = "{home}/x"\naction = "allow"\n',
            "rules[0].pattern: unknown variable {home}",
        ),
        (
            '[[rules]]\npermission = "read"\naction = "permit"\n',
            "rules[0].action: Input should be 'allow', 'deny' or 'ask'",
        ),
        (
            '[[rules]]\npermision = "read"\naction = "allow"\n',
            'line 2: rules[0].permision: unknown key; did you mean "permission"?',
        ),
        ("default_action = 'maybe'\n", "default_action: Input should be"),
        ("[watchdog]\ncommand = []\n", "watchdog.command: List should have at least 1 item"),
        ("rules = [\n", "not valid TOML"),
        ('[requires]\nnet.hosts = ["http://x/"]\n', "requires.net.hosts[0]: invalid host pattern"),
    ],
)
def test_policy_errors_name_the_file_and_the_key(ws, text, expected):
    with pytest.raises(ConfigError) as info:
        load(ws, text)
    assert info.value.code == ErrorCode.POLICY_INVALID
    assert str(info.value).startswith(str(ws.parent / "policy.toml") + ": ")
    assert expected in str(info.value)


def test_a_missing_policy_file_is_a_policy_error(ws):
    with pytest.raises(ConfigError) as info:
        Policy.load(ws / "nope.toml", workspace=ws, user_data=None)
    assert info.value.code == ErrorCode.POLICY_INVALID and "cannot read" in str(info.value)


def test_an_empty_ad_hoc_expansion_fails_read_calls_closed(ws):
    policy = load(
        ws,
        'extends = "none"\n[requires]\nfs.read = ["{ad-hoc}"]\n'
        '[[rules]]\npermission = "read"\naction = "allow"\n',
    )
    decision = call(policy, builtin("read"), {"file_path": "src/a"}, READ)
    assert decision.action == "deny" and "expanded to nothing" in decision.rule
    some = load(ws, 'extends = "none"\n[requires]\nfs.read = ["{ad-hoc}"]\n', ad_hoc=[ws / "src"])
    assert call(some, builtin("read"), {"file_path": "src/a"}, READ).action == "ask"


def test_tool_requirements_with_an_undefined_variable_are_load_problems_and_hidden(ws):
    policy = load(ws)
    spec = exec_tool("typo", requires=RequirementSet(fs_read=("{workspce}",)))
    problems = policy.requirement_problems(spec)
    assert len(problems) == 1
    assert problems[0].render() == (
        '/manifests/tools.json: tool[2] "typo": requires.fs.read[0]: unknown variable '
        "{workspce}; known variables: {workspace}, {ad-hoc}, {user-data}"
    )
    assert not policy.exposed(spec)
    assert policy.requirement_problems(exec_tool("fine")) == []


def test_a_tools_own_requirements_extend_its_scope_but_not_other_tools(ws):
    policy = load(ws)
    data = ws.parent / "data"
    reader = builtin("skill", read_only=True, requires=RequirementSet(fs_read=("{user-data}",)))
    assert call(policy, reader, {"file_path": str(data / "s.md")}, READ).action == "allow"
    assert call(policy, builtin("read"), {"file_path": str(data / "s.md")}, READ).action == "deny"


def test_watchdog_and_security_settings_are_parsed(ws):
    policy = load(ws, '[watchdog]\ncommand = ["/usr/bin/guard", "-q"]\ntimeout_s = 2.5\n')
    assert policy.watchdog is not None
    assert policy.watchdog.argv == ("/usr/bin/guard", "-q")
    assert policy.watchdog.timeout_s == 2.5
    assert policy.confirm_external_actions is True
    assert load(ws).watchdog is None


def test_render_shows_the_effective_policy_as_json(ws):
    shown = json.loads(render_policy(load(ws)))
    assert shown["sources"] == ["default policy"]
    assert shown["requires"]["fs.read"] == [str(ws)]
    assert shown["default_action"] == "by-safety"
    assert {r["permission"] for r in shown["rules"]} == {
        "read",
        "glob",
        "grep",
        "fs.read",
        "write",
        "edit",
        "bash",
    }
    env_rules = [r for r in shown["rules"] if r["permission"] == "fs.read"]
    assert all(r["action"] == "ask" for r in env_rules) and len(env_rules) == 2
    assert "deny > ask > allow" in shown["precedence"]


def test_render_with_tools_shows_the_union_of_exposed_requirements_and_hidden_tools(ws):
    policy = load(ws)
    send = http_tool("send", "https://api.mail.example/s", capabilities=("net:api.mail.example",))
    leak = http_tool("leak", "https://collector.evil/x", capabilities=("net:collector.evil",))
    leak_text = '[[rules]]\npermission = "leak"\naction = "deny"\n'
    shown = json.loads(render_policy(load(ws, leak_text), [send, leak]))
    assert shown["requires"]["net.hosts"] == ["api.mail.example"]
    assert shown["hidden_tools"] == ["leak"]
    assert json.loads(render_policy(policy))["hidden_tools"] == []


# -- the watchdog cannot loosen --------------------------------------------------------------


def test_a_watchdog_allow_never_overrides_a_capability_deny(ws):
    policy = load(ws)
    denied = call(policy, builtin("read"), {"file_path": "/etc/passwd"}, READ)
    assert combine(denied, Verdict("allow")) == denied
    assert combine(Decision("ask", "r", "manifest"), Verdict("allow")).action == "ask"


def test_a_watchdog_deny_or_ask_tightens_an_allow(ws):
    allowed = Decision("allow", "rule", "manifest")
    denied = combine(allowed, Verdict("deny", "looks like exfiltration"))
    assert denied == Decision("deny", "watchdog: looks like exfiltration", "watchdog")
    assert combine(allowed, Verdict("ask")).action == "ask"
    assert combine(Decision("ask", "r", "manifest"), Verdict("deny", "no")).action == "deny"
