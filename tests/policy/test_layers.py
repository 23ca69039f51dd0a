"""Policy files that add, not replace: the default, the --policy file over it, --allow over
both; the user's rule wins at equal specificity; errors name the file, the line and the
closest valid name; ``policy show`` says where each rule came from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_toolbridge.cli.main import main
from mcp_toolbridge.errors import ConfigError, ErrorCode, Severity
from mcp_toolbridge.model import RequirementSet
from mcp_toolbridge.policy.compiled import Decision, Policy
from mcp_toolbridge.policy.paths import canonical_root
from mcp_toolbridge.policy.requirements import ArgumentRoles
from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog, open_runtime
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool
from tests.support.policy_fixtures import builtin, exec_tool, write_policy

READ: ArgumentRoles = {"file_path": "fs.read"}
WRITE: ArgumentRoles = {"file_path": "fs.write"}
BASH: ArgumentRoles = {"command": "shell.run"}
BASH_SPEC = builtin("bash", requires=RequirementSet(capabilities=("shell.run",)))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = canonical_root(tmp_path) / "ws"
    (workspace / "src").mkdir(parents=True)
    return workspace


def load(ws: Path, text: str | None = None, **kw) -> Policy:
    policy_file = write_policy(ws.parent / "policy.toml", text) if text is not None else None
    return Policy.load(policy_file, workspace=ws, user_data=ws.parent / "data", **kw)


def call(policy: Policy, spec, arguments: dict[str, object], roles=None) -> Decision:
    targets = policy.targets(spec, arguments, roles=roles)
    denial = policy.check_capabilities(spec, targets)
    if denial is not None:
        return Decision.refused(denial)
    return policy.decide(spec, targets)


def _error(ws: Path, text: str) -> str:
    with pytest.raises(ConfigError) as info:
        load(ws, text)
    assert info.value.code == ErrorCode.POLICY_INVALID
    return str(info.value)


# -- adding to the default ---------------------------------------------------------------------


def test_a_file_that_grants_a_host_keeps_everything_else_of_the_default(ws):
    policy = load(ws, '[requires]\nnet.hosts = ["api.github.com"]\n')
    assert policy.file.default_action == "by-safety"  # not silently "ask"
    assert call(policy, builtin("read", read_only=True), {"file_path": "src/a"}, READ).action == (
        "allow"
    )
    assert call(policy, builtin("read"), {"file_path": "src/.env"}, READ).action == "ask"
    assert call(policy, builtin("write"), {"file_path": "src/a"}, WRITE).action == "ask"
    harmless = exec_tool("word_count", read_only=True)
    assert call(policy, harmless, {}).action == "allow"
    assert [p.source for p in policy.scope.hosts] == ["api.github.com"]


def test_requires_lists_are_added_to_the_defaults_and_table_keys_replaced_one_by_one(ws):
    data = ws.parent / "data"
    data.mkdir()
    policy = load(
        ws,
        f'[requires]\nfs.read = ["{data}"]\n[security]\nconfirm_external_actions = false\n',
    )
    reader = builtin("read", read_only=True)
    assert call(policy, reader, {"file_path": "src/a"}, READ).action == "allow"
    assert call(policy, reader, {"file_path": str(data / "x")}, READ).action == "allow"
    assert policy.confirm_external_actions is False
    assert policy.layers.settings_from["requires.fs.read"] == (
        f"default policy, {ws.parent / 'policy.toml'} line 2"
    )
    assert policy.layers.settings_from["grant"] == "default policy"


def test_the_users_rule_beats_the_defaults_rule_for_the_same_subject(ws):
    """At equal specificity the later layer wins: without it, deny > ask > allow would let the
    default's bash ask beat the user's bash allow."""
    for text in ('[[rules]]\npermission = "bash"\naction = "allow"\n', 'allow = ["bash"]\n'):
        policy = load(ws, text)
        decision = call(policy, BASH_SPEC, {"command": "ls"}, BASH)
        assert decision.action == "allow", text
        assert "policy.toml" in decision.rule


def test_a_more_specific_default_rule_still_wins_over_a_broad_user_rule(ws):
    policy = load(ws, 'allow = ["read", "fs.read"]\n')
    assert call(policy, builtin("read"), {"file_path": "src/.env"}, READ).action == "ask"


def test_within_one_file_deny_still_beats_allow_at_equal_specificity(ws):
    policy = load(ws, 'allow = ["bash=git push"]\ndeny = ["bash=git push"]\n')
    assert call(policy, BASH_SPEC, {"command": "git push"}, BASH).action == "deny"


def test_extends_none_replaces_the_default_in_one_explicit_line(ws):
    policy = load(ws, 'extends = "none"\n[requires]\nfs.read = ["{workspace}"]\n')
    assert policy.file.default_action == "ask"
    assert policy.sources == (str(ws.parent / "policy.toml"),)
    decision = call(policy, builtin("read", read_only=True), {"file_path": "src/a"}, READ)
    assert decision.action == "ask" and decision.scope == "default"
    assert [p.source for p in policy.scope.fs_write] == []


# -- --allow -----------------------------------------------------------------------------------


def test_allow_on_the_command_line_adds_rules_over_the_file(ws):
    policy = load(ws, 'deny = ["bash=git status"]\n', allow=["bash=git status", "fs_rm"])
    allowed = call(policy, BASH_SPEC, {"command": "git status"}, BASH)
    assert allowed.action == "allow" and "--allow 'bash=git status'" in allowed.rule
    assert call(policy, BASH_SPEC, {"command": "git push"}, BASH).action == "ask"
    assert call(policy, exec_tool("fs_rm"), {}).action == "allow"
    assert policy.sources == ("default policy", str(ws.parent / "policy.toml"), "--allow")


def test_allow_cannot_open_what_the_project_denies(ws):
    project = ws / ".toolbridge" / "policy.toml"
    write_policy(project, 'deny = ["bash=git status"]\n')
    policy = load(ws, allow=["bash=git status"])
    assert call(policy, BASH_SPEC, {"command": "git status"}, BASH).action == "deny"


def test_an_empty_allow_pattern_is_refused(ws):
    with pytest.raises(ConfigError) as info:
        load(ws, allow=["bash="])
    assert "--allow: 'bash=': the pattern after \"bash=\" is empty" in str(info.value)


# -- errors name the file, the line and the closest valid name ---------------------------------


def test_an_unknown_key_names_its_line_and_the_closest_key(ws):
    message = _error(ws, '# my policy\ndefault_actoin = "allow"\n')
    assert message.endswith(
        'policy.toml: line 2: default_actoin: unknown key; did you mean "default_action"? '
        "(valid here: extends, allow, ask, deny, default_action, grant, trust_project_allow, "
        "requires, security, watchdog, rules, callers, web_search, subagents, bash, web_fetch, "
        "discovery, sandbox, secret_scan, auth, limits, state)"
    )
    nested = _error(ws, '[requires]\nfs.raed = ["/x"]\n')
    assert 'line 2: requires.fs.raed: unknown key; did you mean "read"?' in nested


def test_a_string_where_a_list_goes_says_how_to_write_the_list(ws):
    """A first hour's slip: pydantic's "Input should be a valid list" named no fix."""
    message = _error(ws, 'allow = "greet"\n')
    assert message.endswith('line 1: allow: a list is expected here: allow = ["greet"]')
    nested = _error(ws, '[requires]\ncapabilities = "fs.read"\n')
    assert nested.endswith(
        'line 2: requires.capabilities: a list is expected here: capabilities = ["fs.read"]'
    )


def test_a_single_rules_table_says_to_write_one_double_bracket_table_per_rule(ws):
    """A first hour's slip: ``[rules]`` with keys got pydantic's "Input should be a valid
    list", which named neither the [[rules]] form nor an example of it."""
    message = _error(ws, '[rules]\npermission = "bash"\naction = "deny"\n')
    assert message.endswith(
        "line 1: rules: a list of tables is expected here, one [[rules]] (two brackets) per "
        'entry, not a single [rules] table; for example: [[rules]] permission = "bash" '
        'pattern = "git status" action = "allow" (keys: permission, pattern, action, subject, '
        "client, group, scope)"
    )
    assert "one [[callers]] (two brackets)" in _error(ws, '[callers]\nsubject = "alice"\n')
    nested = _error(ws, '[requires.shell]\ncmd = "git"\n')
    assert "line 1: requires.shell: a list of tables is expected here, one [[requires.shell]]" in (
        nested
    )
    assert '[[requires.shell]] cmd = "git" (keys: cmd, args)' in nested


def test_a_top_level_key_written_under_a_table_says_where_it_goes(ws):
    """In TOML a key after ``[requires]`` is that table's: ``allow`` there was "unknown"."""
    message = _error(ws, '[requires]\ncapabilities = ["fs.read"]\nallow = ["greet"]\n')
    assert message.endswith(
        "line 3: requires.allow: unknown key here: allow is a top-level key, so it goes above "
        "the first [table] (in TOML every key after [requires] belongs to that table)"
    )


def test_errors_come_in_line_order_with_suggestions_for_misspelt_values(ws):
    message = _error(
        ws, '[[rules]]\npermission = "bash"\naction = "alow"\n[[rules]]\nacton = "deny"\n'
    )
    assert message.split(": ", 1)[1] == (
        "line 3: rules[0].action: Input should be 'allow', 'deny' or 'ask'; did you mean "
        '"allow"?; line 4: rules[1].permission: Field required; line 4: rules[1].action: Field '
        'required; line 5: rules[1].acton: unknown key; did you mean "action"? (valid here: '
        "permission, pattern, action, subject, client, group, scope)"
    )
    assert 'did you mean "by-safety"?' in _error(ws, 'default_action = "by_safety"\n')
    assert "line 1: extends: Input should be 'default' or 'none'" in _error(ws, 'extends = "no"\n')


def test_a_misspelt_permission_or_capability_is_a_load_error_naming_the_line(tmp_path: Path):
    agentcli_manifest(tmp_path / "m", [echo_tool("word_count")], {"echo": ECHO})
    policy = tmp_path / "policy.toml"
    policy.write_text(
        '[requires]\ncapabilities = ["shel.run"]\n\n'
        '[[rules]]\npermission = "raed"\naction = "deny"\n\n'
        '[[rules]]\npermission = "wordcount"\naction = "ask"\n',
        encoding="utf-8",
    )
    loaded = load_catalog(Settings(paths=[tmp_path / "m"], policy_file=policy), BUILTIN_SPECS)
    errors = [p.render() for p in loaded.errors]
    assert errors == [
        f'{policy}: line 5: rules[0].permission: unknown permission "raed": not a tool served '
        'here, a locked tool or a capability; did you mean "read"?',
        f'{policy}: line 9: rules[1].permission: unknown permission "wordcount": not a tool '
        'served here, a locked tool or a capability; did you mean "word_count"?',
        f'{policy}: line 2: requires.capabilities[0]: unknown capability "shel.run"; did you '
        'mean "shell.run"?',
    ]
    assert all(p.code is ErrorCode.POLICY_INVALID for p in loaded.errors)


def test_names_a_served_tool_declares_are_known(tmp_path: Path):
    agentcli_manifest(tmp_path / "m", [echo_tool("fs_rm")], {"echo": ECHO})
    policy = tmp_path / "policy.toml"
    policy.write_text('allow = ["fs_rm", "bash=git status", "fs.read", "*"]\n', encoding="utf-8")
    loaded = load_catalog(Settings(paths=[tmp_path / "m"], policy_file=policy), BUILTIN_SPECS)
    assert [p for p in loaded.problems if p.severity is Severity.ERROR] == []


def test_call_tool_is_a_known_name_and_the_closest_to_a_misspelling(tmp_path: Path):
    agentcli_manifest(tmp_path / "m", [echo_tool("echo_json")], {"echo": ECHO})
    policy = tmp_path / "policy.toml"
    policy.write_text('deny = ["call_tool"]\n', encoding="utf-8")
    settings = Settings(paths=[tmp_path / "m"], policy_file=policy, workspace=tmp_path)
    loaded = load_catalog(settings, locked=True)
    assert loaded.errors == []
    assert "call_tool" not in loaded.catalog  # the rule that denies it leaves it out
    policy.write_text('deny = ["call_tol"]\n', encoding="utf-8")
    [error] = load_catalog(settings, locked=True).errors
    assert 'unknown permission "call_tol"' in error.message
    assert 'did you mean "call_tool"?' in error.message


# -- the CLI -----------------------------------------------------------------------------------


def test_policy_without_a_verb_prints_its_help(capsys: pytest.CaptureFixture[str]):
    assert main(["policy"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: mcp-toolbridge policy") and "show" in out


def test_policy_show_prints_the_merged_policy_and_where_each_rule_came_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    policy = tmp_path / "policy.toml"
    policy.write_text(
        'allow = ["bash=git status"]\n\n[[rules]]\npermission = "edit"\naction = "allow"\n',
        encoding="utf-8",
    )
    argv = ["policy", "show", "--workspace", str(tmp_path), "--policy", str(policy)]
    assert main([*argv, "--allow", "write"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [layer["layer"] for layer in shown["layers"]] == ["default", "policy file", "--allow"]
    assert shown["default_action"] == "by-safety"
    froms = {(r["permission"], r["pattern"]): (r["layer"], r["from"]) for r in shown["rules"]}
    assert froms[("read", None)] == ("default", "default policy rules[0]")
    assert froms[("bash", None)] == ("default", "default policy rules[7]")
    assert froms[("bash", "git status")] == ("policy file", f"{policy} line 1")
    assert froms[("edit", None)] == ("policy file", f"{policy} line 4")  # its permission
    assert froms[("write", None)] == ("--allow", "--allow write")
    assert shown["settings_from"]["default_action"] == "default policy"


async def test_a_workspace_the_clients_roots_move_keeps_the_allow_rules(tmp_path: Path):
    first, second = canonical_root(tmp_path) / "first", canonical_root(tmp_path) / "second"
    first.mkdir()
    second.mkdir()
    agentcli_manifest(tmp_path / "m", [echo_tool("echo_json")], {"echo": ECHO})
    settings = Settings(paths=[tmp_path / "m"], workspace=first, allow=("write",), audit=False)
    async with open_runtime(settings, load_catalog(settings, BUILTIN_SPECS)) as runtime:
        assert await runtime.move_workspace(second) == []
        policy = runtime.gate.policy
    assert policy.workspace == second
    assert call(policy, builtin("write"), {"file_path": "a.txt"}, WRITE).action == "allow"
    assert call(policy, builtin("edit"), {"file_path": "a.txt"}, WRITE).action == "ask"
