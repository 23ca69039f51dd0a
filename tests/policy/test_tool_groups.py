"""A permission that names many tools at once: a glob of tool names (``--allow 'fx_*'``) or a
whole manifest by its file or folder (``--allow ./manifests/fx``), on the command line and in
the policy file's rules. Trusting the tools of one manifest is one flag; names, capabilities
and ``NAME=PATTERN`` keep their meaning; a group that names nothing served is a load error."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mcp_toolbridge.cli.main import main
from mcp_toolbridge.errors import ErrorCode
from mcp_toolbridge.runtime import Settings, load_catalog
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool
from tests.support.results import text_of
from tests.support.served import served_client

FX = [f"fx_{n}" for n in ("add", "sub", "mul", "div", "drop")]
"""The tools of one manifest (they declare nothing: the default policy asks before each)."""


def _cautious(name: str) -> dict[str, object]:
    tool = echo_tool(name)
    del tool["annotations"]  # undeclared: destructive, so the default policy asks first
    return tool


@pytest.fixture
def manifests(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path)) / "manifests"
    agentcli_manifest(root / "fx", [_cautious(n) for n in FX], {"echo": ECHO})
    agentcli_manifest(root / "other", [_cautious("other_add")], {"echo": ECHO})
    return root


def _call(capsys: pytest.CaptureFixture[str], tool: str, root: Path, *allow: str) -> str:
    """``mcp-toolbridge call TOOL ROOT --allow ...`` with no terminal (headless): what it
    prints, the result or the refusal."""
    flags = [word for entry in allow for word in ("--allow", entry)]
    argv = ["call", tool, str(root), "--args", '{"text": "hi"}', "--no-audit", *flags]
    main([*argv, "--locked", "none", "--no-index-cache"])
    return capsys.readouterr().out


@pytest.mark.parametrize(
    "allow",
    [
        "fx_*",
        "fx_[a-z]*",
        "MANIFESTS/fx",
        "MANIFESTS/fx/",
        "MANIFESTS/fx/tools.json",
        "./manifests/fx",
    ],
)
def test_one_allow_trusts_every_tool_of_a_manifest_and_nothing_else(
    allow: str,
    manifests: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(manifests.parent)  # ./manifests/fx is read from the working directory
    entry = allow.replace("MANIFESTS", str(manifests))
    for name in FX:
        assert json.loads(_call(capsys, name, manifests, entry)) == {"echo": {"text": "hi"}}
    refused = json.loads(_call(capsys, "other_add", manifests, entry))
    assert "--allow other_add" in refused["error"]


def test_a_tools_own_rule_is_more_specific_than_its_group(
    manifests: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``ask = ["fx_drop"]`` in the policy file beats ``--allow 'fx_*'``: a rule naming the
    tool outranks one naming its group, whatever the layer (layers order equal ranks)."""
    policy = tmp_path / "policy.toml"
    policy.write_text('ask = ["fx_drop"]\n', encoding="utf-8")
    allowed = _call(capsys, "fx_add", manifests, "fx_*")
    flags = ["--allow", "fx_*", "--policy", str(policy), "--locked", "none"]
    main(["call", "fx_drop", str(manifests), "--args", '{"text": "x"}', "--no-audit", *flags])
    refused = json.loads(capsys.readouterr().out)
    assert json.loads(allowed) == {"echo": {"text": "hi"}}
    assert f"(asked by {policy} ask[0] (fx_drop, any argument, ask))" in refused["error"]


def test_names_and_name_equals_pattern_keep_their_meaning(
    manifests: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert json.loads(_call(capsys, "fx_add", manifests, "fx_add")) == {"echo": {"text": "hi"}}
    refused = json.loads(_call(capsys, "fx_sub", manifests, "fx_add"))
    assert "--allow fx_sub" in refused["error"]


def test_the_policy_files_rules_name_groups_too_relative_to_the_file(
    manifests: Path, tmp_path: Path
) -> None:
    """``allow = ["fx_*"]`` and ``[[rules]] permission = "manifests/other"``: a relative
    manifest path in a file is read from that file's folder."""
    policy = tmp_path / "policy.toml"
    policy.write_text(
        'allow = ["fx_*"]\n\n[[rules]]\npermission = "manifests/other"\naction = "deny"\n',
        encoding="utf-8",
    )
    loaded = load_catalog(Settings(paths=[manifests], policy_file=policy, audit=False))
    assert loaded.errors == []
    names = {spec.name for spec in loaded.catalog.specs()}
    assert names == set(FX)  # other_add is denied whatever its arguments: not listed
    decisions = {
        spec.name: loaded.policy.decide(spec, loaded.policy.targets(spec, {})).action
        for spec in loaded.catalog.specs()
    }
    assert set(decisions.values()) == {"allow"}


@pytest.mark.parametrize(
    ("allow", "expected"),
    [
        ("zz_*", '"zz_*" fits no tool served here'),
        ("MANIFESTS/nothing-here", "no tool served here comes from"),
        (
            "fx_ad",
            'unknown permission "fx_ad": not a tool served here, a locked tool or a '
            'capability; did you mean "fx_add"?',
        ),
    ],
)
def test_an_allow_that_names_nothing_served_stops_the_load(
    allow: str, expected: str, manifests: Path
) -> None:
    entry = allow.replace("MANIFESTS", str(manifests))
    loaded = load_catalog(Settings(paths=[manifests], allow=(entry,), audit=False))
    [error] = loaded.errors
    assert error.code is ErrorCode.POLICY_INVALID
    assert error.path == "--allow"
    assert expected in error.message


def test_a_glob_may_name_locked_tools(manifests: Path) -> None:
    loaded = load_catalog(Settings(paths=[manifests], allow=("web_*",), audit=False), locked=True)
    assert loaded.errors == []


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_client_calls_every_tool_of_the_trusted_manifest_without_being_asked(
    mode: str, manifests: Path, tmp_path: Path
) -> None:
    """Served, both eras, a client that cannot ask: ``--allow <the manifest's folder>`` runs
    its tools, another manifest's tool is still refused (it would ask)."""
    settings = Settings(
        paths=[manifests], allow=(str(manifests / "fx"),), workspace=tmp_path, audit=False
    )
    async with served_client(settings, mode) as client:
        results = [await client.call_tool(name, {"text": name}) for name in FX]
        other = await client.call_tool("other_add", {"text": "x"})
    assert [r.structured_content for r in results] == [{"echo": {"text": n}} for n in FX]
    assert other.is_error and "--allow other_add" in text_of(other)
