"""Rules for some callers: a subject, an OAuth client, a group or role, a scope, in a
[[rules]] entry or a [[callers]] table. A rule for a person beats a rule for everyone at equal
specificity; a tool no caller may use leaves the catalog, one some may use stays and is hidden
per caller; a refusal names the identity rule and how to allow that caller alone; `policy
show --as` shows what a caller gets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_toolbridge.bridge.gate import PolicyGate
from mcp_toolbridge.cli.main import main
from mcp_toolbridge.errors import ConfigError
from mcp_toolbridge.host import LOCAL, CallContext, Caller
from mcp_toolbridge.policy import Decision, Policy, Targets
from mcp_toolbridge.policy.paths import canonical_root
from tests.support.policy_fixtures import exec_tool, write_policy

ALICE = Caller(
    subject="alice", client_id="ide", groups=frozenset({"ops"}), scopes=frozenset({"tools"})
)
BOB = Caller(subject="bob", client_id="ide", groups=frozenset({"dev"}), scopes=frozenset({"tools"}))
AGENT = Caller(subject="ci", client_id="ci-agent", scopes=frozenset({"tools", "deploy"}))
DEPLOY = exec_tool("deploy", destructive=True)
STATUS = exec_tool("status", destructive=False)

POLICY = """
deny = ["deploy"]

[[rules]]
permission = "deploy"
action = "allow"
subject = "alice"

[[callers]]
client = "ci-agent"
scope = "deploy"
allow = ["deploy"]

[[callers]]
group = "dev"
deny = ["status"]
"""


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = canonical_root(tmp_path) / "ws"
    workspace.mkdir()
    return workspace


def _policy(ws: Path, text: str = POLICY) -> Policy:
    return Policy.load(write_policy(ws.parent / "policy.toml", text), workspace=ws, user_data=None)


def test_a_rule_for_a_person_beats_a_rule_for_everyone_at_equal_specificity(ws: Path) -> None:
    policy = _policy(ws)

    def decide(caller: Caller) -> Decision:
        return policy.for_caller(caller).decide(DEPLOY, Targets())

    assert decide(ALICE).action == "allow"
    assert "for subject 'alice'" in decide(ALICE).rule
    assert decide(BOB).action == "deny" and decide(LOCAL).action == "deny"
    assert decide(AGENT).action == "allow"  # its client and its scope: both hold
    no_scope = Caller(subject="ci", client_id="ci-agent", scopes=frozenset({"tools"}))
    assert decide(no_scope).action == "deny"  # the client alone is not enough


def test_a_more_specific_rule_for_everyone_still_beats_a_broad_rule_for_a_person(ws: Path) -> None:
    text = """
[[rules]]
permission = "fs.read"
pattern = "secrets/**"
action = "deny"

[[rules]]
permission = "fs.read"
action = "allow"
subject = "alice"
"""
    policy = _policy(ws, text).for_caller(ALICE)
    secret = Targets(paths_read=(ws / "secrets" / "key",))
    other = Targets(paths_read=(ws / "src" / "a.py",))
    read = exec_tool("reader", read_only=True)
    assert policy.decide(read, secret).action == "deny"
    assert policy.decide(read, other).action == "allow"


def test_a_tool_some_callers_may_use_stays_in_the_catalog_and_is_hidden_from_the_others(
    ws: Path,
) -> None:
    policy = _policy(ws)
    assert policy.exposed(DEPLOY)  # alice may: the catalog keeps it
    assert policy.callable_by(DEPLOY, ALICE) and policy.callable_by(DEPLOY, AGENT)
    assert not policy.callable_by(DEPLOY, BOB) and not policy.callable_by(DEPLOY, LOCAL)
    assert policy.callable_by(STATUS, ALICE) and not policy.callable_by(STATUS, BOB)
    assert policy.caller_view(ALICE) != policy.caller_view(BOB)
    carol = Caller(subject="carol", groups=frozenset({"ops"}))
    assert policy.caller_view(carol) == policy.caller_view(LOCAL)  # no rule names her
    nobody = _policy(ws, 'deny = ["deploy"]\n[[callers]]\ngroup = "ops"\ndeny = ["deploy"]\n')
    assert not nobody.exposed(DEPLOY)  # denied to everyone: left out of the catalog


async def test_a_refusal_names_the_identity_rule_and_how_to_allow_that_caller_alone(
    ws: Path,
) -> None:
    gate = PolicyGate(_policy(ws))
    refused = await gate(STATUS, {}, CallContext(session_id="s", caller=BOB))
    assert not refused.allowed
    text = refused.refusal()
    assert "callers[1].deny[0]" in text and "for group 'dev'" in text
    assert "for bob (client ide) alone" in text
    assert '[[callers]] table (subject = "bob", allow = ["status"])' in text
    trial = _policy(ws, POLICY + '\n[[callers]]\nsubject = "bob"\nallow = ["status"]\n')
    allowed = await PolicyGate(trial)(STATUS, {}, CallContext(session_id="s", caller=BOB))
    assert allowed.allowed  # the suggestion works


def test_a_callers_table_must_name_someone_and_its_errors_name_the_line(ws: Path) -> None:
    with pytest.raises(ConfigError) as nobody:
        _policy(ws, '[[callers]]\nallow = ["status"]\n')
    assert "name the callers" in str(nobody.value)
    with pytest.raises(ConfigError) as bad:
        _policy(ws, '\n[[callers]]\nsubject = "alice"\nallow = ["status={nope}"]\n')
    assert "line 4: callers[0].allow[0]" in str(bad.value)


def test_policy_show_as_a_caller_shows_its_rules_and_what_is_hidden_from_it(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "m" / "tools.json"
    manifest.parent.mkdir()
    tools = [
        {"name": name, "description": name, "command": ["/bin/true"], "annotations": ann}
        for name, ann in (("deploy", {}), ("status", {"readOnlyHint": True}))
    ]
    manifest.write_text(json.dumps({"tools": tools}), encoding="utf-8")
    policy = write_policy(tmp_path / "policy.toml", POLICY)
    common = [
        "policy",
        "show",
        str(manifest.parent),
        "--policy",
        str(policy),
        "--workspace",
        str(ws),
    ]
    assert main([*common, "--as", "bob", "--as-group", "dev"]) == 0
    bob = json.loads(capsys.readouterr().out)
    assert main([*common, "--as", "alice"]) == 0
    alice = json.loads(capsys.readouterr().out)
    assert bob["as"] == {"subject": "bob", "client": None, "groups": ["dev"], "scopes": []}
    assert {"deploy", "status"} <= set(bob["hidden_tools"])
    assert "deploy" not in alice["hidden_tools"] and "status" not in alice["hidden_tools"]
    mine = [r for r in alice["rules"] if r["for"] != "everyone"]
    assert [(r["permission"], r["for"]) for r in mine] == [("deploy", {"subject": "alice"})]
    assert mine[0]["from"].endswith("policy.toml line 5")  # its permission line
    others = {json.dumps(r["for"]) for r in alice["rules_for_others"]}
    assert others == {'{"client": "ci-agent", "scope": "deploy"}', '{"group": "dev"}'}


def test_a_rule_for_a_person_may_name_a_group_of_tools(ws: Path) -> None:
    text = 'deny = ["fx_*"]\n\n[[callers]]\nsubject = "alice"\nallow = ["fx_*"]\n'
    policy = _policy(ws, text)
    spot = exec_tool("fx_spot", destructive=False)
    assert policy.for_caller(ALICE).decide(spot, Targets()).action == "allow"
    assert policy.for_caller(BOB).decide(spot, Targets()).action == "deny"
    assert policy.callable_by(spot, ALICE) and not policy.callable_by(spot, BOB)
