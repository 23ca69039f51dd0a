"""What a word can become: patterns that expand to options, subcommands, scripts or names
the command line does not show (issue 25), judged from the text alone.

The word-level judgement is checked against real bash in a folder full of names that begin
with ``-``; the per-program judgement is checked for every program the sub-policy knows,
taken from its own tables, so a program added there is covered here too."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_toolbridge.builtins.bash import SPEC as BASH
from mcp_toolbridge.policy.compiled import Decision, Policy
from mcp_toolbridge.policy.grants import SessionRules
from mcp_toolbridge.policy.shell.argv import SHELLS
from mcp_toolbridge.policy.shell.expanded import HARMLESS, JUDGED, KNOWN, hidden_option
from mcp_toolbridge.policy.shell.flags import FLAG_CHECKED
from mcp_toolbridge.policy.shell.hooks import shell_floor, shell_targets
from mcp_toolbridge.policy.shell.operands import KNOWN_PROGRAMS
from mcp_toolbridge.policy.shell.parse import parse_command, splitter
from mcp_toolbridge.policy.shell.words import expands, may_begin_with_dash
from tests.support.fuzzing import FUZZ
from tests.support.policy_fixtures import load_policy_text

NAMES = ("-", "-a", "-delete", "--x", "-x.txt", "a", "ax", "x-", "b.txt", ".hidden", "[", "!")
"""The folder the bash oracle expands words in: names beginning with ``-`` and others."""
PARTS = st.sampled_from(
    ["*", "?", "[-a]", "[!a]", "[a-z]", "[+--]", "[]-]", "[[:punct:]]", "[[:alpha:]]",
    "[[=-=]]", "-", "--", "a", "x", ".", "./", "/", "txt", "'*'", '"-"', "\\*", "'-'", "\\-",
    "[", "]", "!"]
)  # fmt: skip
POSITIONAL = frozenset(
    {"git", "tar", "gtar", "bsdtar", "sed", "gsed", "dd", "awk", "gawk", "mawk", "nawk"}
)
"""Programs where even ``./*`` can land where no file goes (subcommand, letters, script)."""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("names")
    for name in NAMES:
        (root / name).write_text("x", encoding="utf-8")
    (root / "-d").mkdir()
    (root / "-d" / "in").write_text("x", encoding="utf-8")
    return root


def _bash_words(folder: Path, word: str) -> list[str]:
    """The words bash passes a program for ``word`` in ``folder`` (bash is the oracle)."""
    done = subprocess.run(
        ["bash", "-c", f"printf '%s\\0' {word}"],
        cwd=folder,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"},
        capture_output=True,
        check=False,
        timeout=10,
    )
    assert done.returncode == 0, (word, done.stderr)
    return [w for w in done.stdout.decode("utf-8", "replace").split("\0") if w]


@FUZZ
@given(st.lists(PARTS, min_size=1, max_size=4).map("".join))
def test_a_word_that_bash_can_expand_to_a_dash_name_is_known_to(folder: Path, word: str):
    """Soundness against real bash: whenever pathname expansion hands the program a word that
    begins with ``-``, the judgement said it could."""
    if not expands(word):
        return  # no pathname expansion: the word is what it shows
    try:
        words = _bash_words(folder, word)
    except AssertionError:
        return  # not a word bash can read alone (an unbalanced quote)
    if any(w.startswith("-") for w in words):
        assert may_begin_with_dash(word), (word, words)


@pytest.mark.parametrize(
    ("word", "dash"),
    [
        ("*", True), ("?*", True), ("[-a]*", True), ("*.txt", True), ("*/x", True),
        ("-*", True), ("[!a]*", True), ("[[:punct:]]*", True), ('"-"*', True),
        ("[-]delete", True), ("./*", False), ("dir/*", False), ("/abs/*", False),
        ('"*"', False), ("'*'", False), ("\\*", False), ("[a-z]*", False), ("[!-]*", False),
        ("[[:alpha:]]*", False), ("--include=*.py", False), ("x", False), ("-x", False),
    ],
)  # fmt: skip
def test_a_word_may_begin_with_a_dash_by_what_it_can_match(word: str, dash: bool):
    """``--include=*.py`` stays the option it shows; ``-x`` is an option the flag checks see."""
    assert may_begin_with_dash(word) is dash


def test_the_programs_judged_come_from_the_sub_policys_own_tables():
    assert KNOWN_PROGRAMS | FLAG_CHECKED | SHELLS == JUDGED | HARMLESS
    assert {"find", "rm", "git", "tar", "sed", "cp", "mv", "chmod", "chown", "awk"} <= JUDGED
    assert {"cat", "ls", "head", "tail", "wc"} & HARMLESS == {"cat", "ls", "head", "tail"}


@pytest.mark.parametrize("program", sorted(JUDGED))
@pytest.mark.parametrize("word", ["*", "?*", "[-a]*", "*.txt", "-*"])
def test_a_pattern_is_any_flag_of_every_program_whose_flags_are_judged(program: str, word: str):
    parsed = parse_command(f"{program} {word}")
    assert parsed.flagged, parsed
    assert any(repr(word) in reason for reason in parsed.uncheckable), parsed.uncheckable


@pytest.mark.parametrize("program", sorted(KNOWN - HARMLESS - {"popd"}))
def test_a_pattern_after_any_other_program_the_sub_policy_knows_needs_an_exact_rule(
    program: str,
):
    """Wrappers, builtins that assign, cd, eval...: not one takes a pattern silently (popd
    is followed back to any directory already seen, whatever its argument)."""
    parsed = parse_command(f"{program} *")
    assert parsed.flagged or not parsed.checkable, parsed


@pytest.mark.parametrize("program", sorted(JUDGED - POSITIONAL))
def test_a_pattern_that_cannot_begin_with_a_dash_is_left_to_the_path_checks(program: str):
    for word in ("./*", "dir/*", "/abs/*", "'*'", "./-*"):
        argv = (program, word.strip("'"))
        assert hidden_option(argv, (program, word)) is None, word


@pytest.mark.parametrize("program", sorted(HARMLESS))
def test_programs_whose_every_option_only_changes_what_they_print_keep_their_patterns(
    program: str,
):
    parsed = parse_command(f"{program} *")
    assert not parsed.flagged and parsed.checkable, parsed.uncheckable


@pytest.mark.parametrize(
    ("command", "asks"),
    [
        ("rm -- *", False), ("rm -f -- *", False), ("rm -rf -- *.o", False), ("rm *", True),
        ("rm * --", True), ("ls *", False), ("cat *.txt", False),
        ("find ./* -name x", False), ("find . -name '*.py'", False), ("find *", True),
        ("find -- *", True), ("find . -name *.py", True), ("find */x", True),
        ("git add -- *", False), ("git add ./*", False), ("git log -- *", False),
        ("git add *", True), ("git *", True), ("git -C sub *", True),
        ("git commit -m -- *", True),  # -m takes "--" as its message
        ("tar cf out.tar -- *", False), ("tar -cf out.tar -- *", False),
        ("tar cf out.tar *", True), ("tar cf *", True), ("tar *", True),
        ("sed -n p -- *", False), ("sed -n p *", True), ("sed -- *", True),
        ("awk '{print}' *", False), ("awk -- '{print}' *", False), ("awk *", True),
        ("awk ./*", True), ("grep -e x -- *", False), ("grep -e -- *", True),
        ("grep --include=*.py -r x .", False), ("cp -t d -- *.txt", False),
        ("cp *.txt d/", True), ("chmod +x -- *.sh", False), ("chmod +x *.sh", True),
        ("dd if=a of=b *", True), ("curl -- *", False), ("curl -s -- *", True),
        ("bash *", True), ("bash -o posix *", True), ("sh -- ./*", False),
        ("bash ./x.sh *", False), ("ls | xargs curl", True),
        ("ls | xargs curl --", False), ("find * | head", True), ("bash -c 'find *'", True),
        ("echo *", False), ("python3 *", False),
        # an abbreviated option takes the "--" as its value too (the red-team pass of
        # 2026-11-29: tar cf out.tar --lab -- * ran a planted --checkpoint-action)
        ("tar cf out.tar --lab -- *", True), ("sort --field-sep -- *", True),
        ("grep --reg -- *", True), ("git commit --mess -- *", True),
        ("cp --suf -- * d/", True), ("tar cf out.tar --label=x -- *", False),
    ],
)  # fmt: skip
def test_options_end_where_each_program_ends_them(command: str, asks: bool):
    parsed = parse_command(command)
    assert bool(parsed.flagged) is asks, parsed.uncheckable


@pytest.mark.parametrize(
    ("command", "fragment"),
    [
        ("timeout 5 *", "the command name '*' is a pattern"),
        ("env *", "the command name '*' is a pattern"),
        ("xargs *", "the command name '*' is a pattern"),
        ("timeout * x", "'*' can expand to an option of timeout or to the command it runs"),
        ("env -u *", "'*' can expand to an option of env or to the command it runs"),
        ("xargs -a *", "'*' can expand to an option of xargs or to the command it runs"),
        ("export *", "'*' can expand to a variable that export sets"),
        ("read -r *", "'*' can expand to a variable that read sets"),
        ("printf *", "'*' can expand to a variable that printf sets"),
        ("shopt -s dotglob; rm -- *", "shopt -s/-u dotglob changes what patterns match"),
        ("set -k; git log", "set -k turns every NAME=value word into an assignment"),
        ("set -o keyword", "set -o keyword turns every NAME=value word"),
        ("bash -O dotglob -c 'rm -- *'", "bash -O dotglob changes how words expand"),
        ("ls | xargs rm", "xargs passes rm the words it reads, which can become options"),
    ],
)
def test_what_cannot_be_followed_makes_the_line_uncheckable(command: str, fragment: str):
    parsed = parse_command(command)
    assert not parsed.checkable
    assert any(fragment in reason for reason in parsed.uncheckable), parsed.uncheckable


def test_printing_a_pattern_and_setting_positional_arguments_stay_checkable():
    for command in ("printf '%s\\n' *", "printf -v x '%s' *", "set -- *", "shopt dotglob"):
        assert parse_command(command).checkable, command


# -- through the gate ----------------------------------------------------------------------

HEADER = """
extends = "none"
default_action = "ask"
[requires]
capabilities = ["shell.run"]
fs.read = ["{workspace}"]
fs.write = ["{workspace}"]
"""


def _policy(tmp_path: Path, *patterns: str, exact: str | None = None) -> Policy:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    rules = "".join(
        f'[[rules]]\npermission = "bash"\npattern = {json.dumps(p)}\naction = "allow"\n'
        for p in (*patterns, *((exact,) if exact else ()))
    )
    deny = '[[rules]]\npermission = "bash"\npattern = "*"\naction = "deny"\n'
    return load_policy_text(tmp_path / "policy.toml", HEADER + rules + deny, workspace=workspace)


def _decide(policy: Policy, command: str, session: SessionRules | None = None) -> Decision:
    arguments = {"command": command}
    targets = policy.targets(BASH, arguments, roles=BASH.argument_roles, splitter=splitter)
    targets = shell_targets(policy, BASH, arguments, targets)
    denial = policy.check_capabilities(BASH, targets)
    if denial is not None:
        return Decision.refused(denial)
    decision = policy.decide(BASH, targets, session)
    return shell_floor(policy, BASH, arguments, decision, session)


def test_the_issue_25_lines_ask_and_say_how_to_write_them_safely(tmp_path: Path):
    policy = _policy(tmp_path, "find *", "tar cf out.tar *")
    find = _decide(policy, "find *")
    assert find.action == "ask" and find.scope == "shell"
    assert "'*' can expand to an option of find such as -delete" in find.rule
    assert "write './*'" in find.rule
    tar = _decide(policy, "tar cf out.tar *")
    assert "--checkpoint-action" in tar.rule and "put '--' before it" in tar.rule
    for safe in ("find ./*", "find ./* -name x", "tar cf out.tar -- *", "tar cf out.tar ./*"):
        assert _decide(policy, safe).action == "allow", safe


def test_an_exact_rule_for_the_line_allows_that_line_only(tmp_path: Path):
    policy = _policy(tmp_path, "find *", exact="find '*'")
    assert _decide(policy, "find *").action == "allow"
    assert _decide(policy, "find * -name x").action == "ask"


def test_an_always_answer_allows_that_line_again_and_nothing_looser(tmp_path: Path):
    policy = _policy(tmp_path, "find *", "rm *")
    session = SessionRules()
    arguments = {"command": "find *"}
    targets = policy.targets(BASH, arguments, roles=BASH.argument_roles, splitter=splitter)
    session.add_always(BASH, shell_targets(policy, BASH, arguments, targets))
    assert _decide(policy, "find *", session).action == "allow"
    assert _decide(policy, "find * -newer x", session).action == "ask"
    assert _decide(policy, "rm *", session).action == "ask"


COMMAND_WORDS = st.lists(
    st.sampled_from(["-n", "-v", "x", "a.txt", "out.tar", "--", "./*", "-f", "p", "cf"]),
    max_size=3,
)
DASHY = st.sampled_from(["*", "?*", "[-a]*", "*.txt", "-*", "*/x", "[!.]*"])


@FUZZ
@given(
    st.sampled_from(sorted(JUDGED)),
    COMMAND_WORDS,
    DASHY,
    COMMAND_WORDS,
    st.integers(0, 1000),
)
def test_no_rule_pattern_that_ends_in_a_star_lets_a_hidden_option_through(
    tmp_path: Path, program: str, before: list[str], word: str, after: list[str], cut: int
):
    """Whatever allow rule ending in ``*`` matches it (``*``, ``P *``, any prefix of the line
    and ``*``), a line whose pattern can become an option of a judged program is not allowed
    unless options had ended before the pattern."""
    command = " ".join([program, *before, word, *after])
    parsed = parse_command(command)
    if not parsed.checkable and not parsed.flagged:
        return  # refused for another reason (opaque): never allowed by a pattern either
    text = " ".join(parsed.commands[0]) if parsed.commands else command
    prefix = text[: cut % (len(text) + 1)]
    policy = _policy(tmp_path, "*", f"{program} *", f"{program}*", prefix + "*")
    decision = _decide(policy, command)
    if parsed.flagged:
        assert decision.action != "allow", (command, decision)
    else:
        assert "--" in before or program in POSITIONAL | SHELLS, command  # options ended
