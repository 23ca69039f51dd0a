"""The prefilter that spares the engine a call for a text it cannot find anything in: built
from the engine's own embedded rules, and never skipping a text the engine finds a secret in
(the clean corpus and every planted secret, cut into lines and pieces, and the planted
secrets encoded, upper-cased and spelled with the runes that fold to ASCII letters)."""

from __future__ import annotations

import base64
import string
import urllib.parse

import pytest

from benchmarks.secrets_corpus import clean_texts, planted
from mcp_toolbridge.leaks import Engine
from mcp_toolbridge.leaks.engine import CHUNK_CHARS, OFF_BY_DEFAULT, embedded_rules, prefilter_for
from mcp_toolbridge.leaks.prefilter import Prefilter, Rule, _may_decode

GENERIC_ON: frozenset[str] = frozenset()


def _pieces() -> list[str]:
    texts = [*clean_texts().values(), *(document for _, document in planted())]
    pieces: list[str] = []
    for text in texts:
        pieces.extend(line for line in text.splitlines(keepends=True) if line.strip())
        pieces.extend(text[i : i + 512] for i in range(0, len(text), 512))
    for plant, document in planted():
        line = next((x for x in document.splitlines() if plant.secret[:16] in x), plant.secret)
        pieces += [
            line.upper(),
            line.replace("k", "\u212a").replace("s", "\u017f"),  # Kelvin sign, long s
            base64.b64encode(line.encode()).decode(),
            "value " + base64.urlsafe_b64encode(line.encode()).decode().rstrip("=") + " end",
            urllib.parse.quote(line, safe=""),
            line.encode().hex(),
        ]
    return pieces


@pytest.mark.parametrize("disabled", [OFF_BY_DEFAULT, GENERIC_ON], ids=["default", "generic"])
def test_it_never_skips_a_text_the_engine_finds_a_secret_in(disabled: frozenset[str]) -> None:
    prefilter = prefilter_for(disabled)
    assert prefilter is not None
    engine = Engine(disabled, prefilter=False)
    pieces = _pieces()
    skipped = [piece for piece in pieces if not prefilter.may_find(piece)]
    missed = {piece[:80]: [f.rule for f in engine.scan(piece)] for piece in skipped}
    assert {piece: rules for piece, rules in missed.items() if rules} == {}
    assert len(skipped) > len(pieces) // 3  # and it does spare the engine most lines


def test_it_is_built_from_the_engine_rules_that_can_report_on_a_text() -> None:
    rules = embedded_rules()
    assert rules is not None and len(rules) > 400
    default = prefilter_for(OFF_BY_DEFAULT)
    generic = prefilter_for(GENERIC_ON)
    assert default is not None and generic is not None
    assert {"ghp_", "akia", "-----begin", "eyj", "://"} <= set(default.keywords)
    assert "api" not in default.keywords and "api" in generic.keywords  # generic-api-key's
    # aws-secret-access-key only reports as a part of aws-access-token (akia...);
    # kubernetes-secret-yaml only sees files named *.yaml: a text has no name.
    assert "secret" not in default.keywords and "token" not in default.keywords
    assert "://" not in (prefilter_for(OFF_BY_DEFAULT | {"url-password"}) or default).keywords


def test_what_it_lets_through_and_what_it_skips() -> None:
    prefilter = prefilter_for(OFF_BY_DEFAULT)
    assert prefilter is not None
    skipped = [
        '{"text": "hello from the benchmark"}',
        '["/tmp/tmpr5101syf/on/tools/bin/echo_json", "--name", "x"]',
        "     1\ta line of notes, nothing secret\n",
        "src/mcp_toolbridge/leaks/prefilter.py | 12 ++++--",
    ]
    through = [
        "ghp_",
        "GHP_",  # ASCII case ignored
        "a\u212aia",  # the Kelvin sign folds to k: "akia"
        "\u017fk_live",  # the long s folds to s: "sk_live"
        "%41",  # percent-encoded
        "\\u0041",  # a unicode escape
        "U+0041 ",
        "0123456789abcdef0123456789abcdef",  # hex of 16 bytes
        base64.b64encode(b"nothing but words here").decode(),  # decodes to printable text
    ]
    assert [t for t in skipped if prefilter.may_find(t)] == []
    assert [t for t in through if not prefilter.may_find(t)] == []


def test_a_rule_without_keywords_turns_it_off() -> None:
    keyed = Rule("keyed", ("abc_",), has_regex=True, reports=True)
    bare = Rule("bare", (), has_regex=True, reports=True)
    path_only = Rule("p12", (), has_regex=False, reports=True, has_path=True)
    assert Prefilter.of([keyed, bare], frozenset()) is None
    assert Prefilter.of([keyed, bare], frozenset({"bare"})) is not None
    built = Prefilter.of([keyed, path_only], frozenset())
    assert built is not None and built.keywords == ("abc_",)


def test_texts_judged_together_are_judged_as_each_would_be() -> None:
    engine = Engine()
    engine.warm()
    pieces = _pieces()
    for start in range(0, 600, 3):  # three pieces at a time, as a call's parts are
        group = pieces[start : start + 3]
        if not engine.may_find(group):
            assert [f.rule for piece in group for f in engine.scan(piece)] == []
    run = "Zm9v" * 10  # a run that may decode: in a text cut into pieces it goes to the engine
    long_text = "x " * CHUNK_CHARS + "/tmp" + run
    assert not engine.may_find(["/tmp" + run]) and engine.may_find([long_text])
    assert not engine.may_find(["ghp", "_"])  # a line end between them: no keyword


def test_only_a_run_starting_with_a_to_f_can_decode_to_printable_text() -> None:
    """What lets the prefilter's one pass skip a run by its first character: whatever
    follows, a run that starts with another character of either base64 alphabet decodes to
    a first byte that is not printable."""
    alphabet = string.ascii_letters + string.digits + "+/-_"
    starts = {c for c in alphabet if c not in string.ascii_uppercase + "abcdef"}
    assert not any(
        _may_decode(f"{a}{b}{c}AAAAAAAAAAAAA".encode())
        for a in starts
        for b in alphabet
        for c in "Ag/"
    )
    assert _may_decode(base64.b64encode(b"plain words, printable").decode().encode())
