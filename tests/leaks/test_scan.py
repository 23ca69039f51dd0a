"""The secret scan on the corpus kept in benchmarks/sets/secrets: no finding in tool output
that holds no secret (git logs, JSON API responses full of ids and hashes, build logs, a
minified bundle), every planted secret of every family found and gone after redaction; and
the policy's [secret_scan] table, checked with errors that say where and what."""

from __future__ import annotations

import random
import string

import pytest

from benchmarks.secrets_corpus import FAMILIES, clean_texts, planted
from mcp_toolbridge.errors import ConfigError
from mcp_toolbridge.leaks import Engine, SecretScan, SecretScanSettings
from mcp_toolbridge.leaks.engine import CHUNK_CHARS, chunks
from mcp_toolbridge.policy import PolicyFile
from mcp_toolbridge.policy.file import parse_policy

TOKEN = "ghp_" + "".join(random.Random(3).choices(string.ascii_letters + string.digits, k=36))
GENERIC_ON = SecretScanSettings(rules={"generic-api-key": True})


def test_the_clean_corpus_yields_no_finding() -> None:
    scan = SecretScan(SecretScanSettings())
    found = {name: scan.findings(text, "bash") for name, text in clean_texts().items()}
    assert {name: [f.rule for f in hits] for name, hits in found.items() if hits} == {}


@pytest.mark.parametrize("settings", [SecretScanSettings(), GENERIC_ON], ids=["default", "generic"])
def test_every_planted_secret_is_found_and_redacted(settings: SecretScanSettings) -> None:
    scan = SecretScan(settings)
    missed = []
    for plant, document in planted():
        if plant.family == "generic" and settings is not GENERIC_ON:
            continue  # only the entropy-gated rule can see a random value under any name
        redacted, counts = scan.redact_text(document, "bash")
        if plant.secret in redacted or not counts:
            missed.append(plant.family)
    assert missed == []
    assert {p.family for p, _ in planted()} == set(FAMILIES)


@pytest.mark.parametrize("settings", [SecretScanSettings(), GENERIC_ON], ids=["default", "generic"])
def test_a_redacted_text_redacted_again_stays_as_it_was(settings: SecretScanSettings) -> None:
    scan = SecretScan(settings)
    for _, document in planted():
        once, _ = scan.redact_text(document, "bash")
        twice, counts = scan.redact_text(once, "bash")
        assert (twice, counts) == (once, {}), once
    url = f"git push https://x:{TOKEN}@github.com/acme/w.git"
    once, counts = scan.redact_text(url, "bash")
    assert once == "git push https://x:[REDACTED:github-pat]@github.com/acme/w.git"
    assert scan.redact_text(once, "bash") == (once, {})


def test_a_secret_across_a_chunk_boundary_is_found_whole() -> None:
    key = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(["Ab3+" * 16] * 50)
    key += "\n-----END RSA PRIVATE KEY-----"
    text = "x" * (CHUNK_CHARS - 1000) + "\n" + key + "\n" + "y\n" * 5000
    assert len(list(chunks(text))) > 2
    assert [f.rule for f in Engine().scan(text)] == ["private-key"]


def test_a_value_keeps_its_shape_and_only_strings_change() -> None:
    token = TOKEN
    value = {"items": [{"t": token, "n": 1, "ok": True}], token: None}
    redacted, counts = SecretScan(SecretScanSettings()).redact_value(value, "t")
    marker = "[REDACTED:github-pat]"
    assert redacted == {"items": [{"t": marker, "n": 1, "ok": True}], marker: None}
    assert counts == {"github-pat": 2}


def test_allow_entries_match_by_tool_rule_and_pattern() -> None:
    token = TOKEN
    settings = SecretScanSettings.model_validate(
        {"allow": [{"tool": "git_*", "rule": "github-pat"}, {"pattern": "^xoxb-"}]}
    )
    scan = SecretScan(settings)
    assert scan.findings(f"t={token}", "git_log") == []
    assert [f.rule for f in scan.findings(f"t={token}", "bash")] == ["github-pat"]


def _policy_error(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        parse_policy(PolicyFile, text, "policy.toml")
    return str(info.value)


def test_the_policy_table_is_checked_with_clear_errors() -> None:
    unknown = _policy_error('[secret_scan]\nrules = { "github-pta" = false }\n')
    assert "policy.toml: line 2" in unknown and "no rule 'github-pta'" in unknown
    assert "github-pat" in unknown
    empty = _policy_error("[[secret_scan.allow]]\n")
    assert "an allow entry needs tool, rule or pattern" in empty
    bad = _policy_error('[[secret_scan.allow]]\npattern = "("\n')
    assert "not a valid regular expression" in bad
    mode = _policy_error('[secret_scan]\nmode = "redact"\n')
    assert "secret_scan.mode" in mode


def test_off_finds_nothing_and_rules_switch() -> None:
    token = TOKEN
    off = SecretScan(SecretScanSettings(mode="off"))
    assert off.redact_text(token, "t") == (token, {})
    no_github = SecretScan(SecretScanSettings(rules={"github-pat": False}))
    assert no_github.findings(f"token {token}", "t") == []
    assert "generic-api-key" in SecretScanSettings().disabled()
    assert "generic-api-key" not in GENERIC_ON.disabled()
