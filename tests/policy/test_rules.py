from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mcp_toolbridge.policy.requirements import Targets
from mcp_toolbridge.policy.rules import (
    Rule,
    Subject,
    compile_rule,
    literal_length,
    resolve,
    subjects,
    text_glob,
)
from tests.support.policy_fixtures import builtin

BASH = builtin("bash")
PATTERNS = [None, "*", "git *", "git status", "git s*", "g?t status", "rm *"]
PERMISSIONS = ["bash", "shell.run", "*"]
ACTIONS = ["allow", "ask", "deny"]
SCOPES = ["manifest", "project", "session"]

rule_specs = st.tuples(
    st.sampled_from(PERMISSIONS),
    st.sampled_from(PATTERNS),
    st.booleans(),
    st.sampled_from(ACTIONS),
    st.sampled_from(SCOPES),
)


def build(specs: list[tuple[str, str | None, bool, str, str]]) -> list[Rule]:
    return [
        compile_rule(
            perm,
            pattern,
            action,  # type: ignore[arg-type]
            scope=scope,  # type: ignore[arg-type]
            origin=f"r{i}",
            prefix=prefix and pattern is not None and "*" not in pattern,
        )
        for i, (perm, pattern, prefix, action, scope) in enumerate(specs)
    ]


@given(st.lists(rule_specs, max_size=8), st.randoms(use_true_random=False))
def test_the_decision_never_depends_on_rule_order(specs, rnd):
    rules = build(specs)
    shuffled = rules[:]
    rnd.shuffle(shuffled)
    for command in (("git", "status"), ("git", "status", "-s"), ("rm", "x"), ("ls",)):
        subject = Subject.command(command)
        first, second = resolve(rules, BASH, subject), resolve(shuffled, BASH, subject)
        assert (first and first.action) == (second and second.action)


@given(st.lists(rule_specs, max_size=8))
def test_a_manifest_deny_that_is_the_manifests_best_match_always_wins(specs):
    rules = build(specs)
    subject = Subject.command(("git", "status"))
    manifest = [r for r in rules if r.scope == "manifest"]
    best_manifest = resolve(manifest, BASH, subject)
    if best_manifest is not None and best_manifest.action == "deny":
        winner = resolve(rules, BASH, subject)
        assert winner is not None and winner.action == "deny"


def test_literal_length_ignores_wildcards_and_bracket_expressions():
    assert literal_length("src/**/*.py") == len("src//.py")
    assert literal_length("a[bc]d?") == 2
    assert literal_length("[") == 1


def test_text_globs_span_any_characters_and_hosts_ignore_case():
    assert text_glob("git *", ignore_case=False).match("git a/b c")
    assert not text_glob("git *", ignore_case=False).match("GIT x")
    assert text_glob("*.example.com", ignore_case=True).match("A.EXAMPLE.COM")
    assert text_glob("[!x]y", ignore_case=False).match("ay")


def test_a_call_with_no_targets_has_one_argument_less_subject():
    assert subjects(Targets()) == (Subject.none(),)
    only_any = compile_rule("bash", None, "deny", scope="manifest", origin="r")
    exact = compile_rule("bash", "ls", "allow", scope="manifest", origin="r")
    assert resolve([only_any, exact], BASH, Subject.none()) is only_any
