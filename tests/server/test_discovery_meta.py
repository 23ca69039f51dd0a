"""The discovery facts clients read on a listed tool: ``anthropic/alwaysLoad`` on a pinned
tool (``--pin`` or the policy's ``[discovery] pin``), ``anthropic/searchHint`` on a tool whose
manifest gives keywords, in both eras; a pin that names nothing is a notice."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_toolbridge.errors import Severity
from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog
from tests.support.discovery import POLICY, write_catalog
from tests.support.served import served_client


def _settings(tmp_path: Path, policy: str = POLICY, pins: tuple[str, ...] = ()) -> Settings:
    paths, policy_file = write_catalog(tmp_path, policy)
    return Settings(paths=paths, policy_file=policy_file, workspace=tmp_path, pins=pins)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_policys_pins_are_listed_under_search_with_always_load(
    tmp_path: Path, mode: str
) -> None:
    policy = POLICY + '\n[discovery]\npin = ["send_*", "guarded"]\n'
    settings = _settings(tmp_path, policy)
    async with served_client(settings, mode, server={"expose": "search"}) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert list(tools) == ["tool_search", "call_tool", "send_email", "guarded"]
    for name in ("send_email", "guarded"):
        assert (tools[name].meta or {})["anthropic/alwaysLoad"] is True


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_every_listed_tool_carries_its_search_hint_and_only_pins_always_load(
    tmp_path: Path, mode: str
) -> None:
    settings = _settings(tmp_path, pins=("guarded",))
    async with served_client(settings, mode, server={"expose": "all"}) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert "call_tool" not in tools  # everything is listed: no proxy needed
    assert (tools["post_note"].meta or {})["anthropic/searchHint"] == "notes team"
    assert "anthropic/searchHint" not in (tools["send_email"].meta or {})
    loaded = {name for name, t in tools.items() if (t.meta or {}).get("anthropic/alwaysLoad")}
    assert loaded == {"guarded"}


def test_a_pin_that_names_no_served_tool_is_a_notice_naming_where_it_was_given(
    tmp_path: Path,
) -> None:
    policy = POLICY + '\n[discovery]\npin = ["forbidden"]\n'
    settings = _settings(tmp_path, policy, pins=("nothing_*", "post_note"))
    loaded = load_catalog(settings, BUILTIN_SPECS)
    assert not loaded.errors
    rendered = [p.render() for p in loaded.unmatched_pins]
    assert [p.severity for p in loaded.unmatched_pins] == [Severity.NOTICE] * 2
    assert rendered[0].startswith('--pin: pin "nothing_*" names no served tool')
    # forbidden is denied whatever its arguments, so it is not served and cannot be pinned
    assert rendered[1].startswith(f'{settings.policy_file}: pin "forbidden" names no served')
    entry = loaded.catalog.get("post_note")
    assert entry is not None and entry.spec.pinned


def test_a_manifest_tool_cannot_take_the_proxys_name(tmp_path: Path) -> None:
    from tests.support.manifests import ECHO, agentcli_manifest, echo_tool

    agentcli_manifest(tmp_path / "m", [echo_tool("call_tool")], {"echo": ECHO})
    loaded = load_catalog(Settings(paths=[tmp_path / "m"]), BUILTIN_SPECS)
    assert any(
        'tool name "call_tool" is reserved for the proxy built-in tool' in p.message
        for p in loaded.errors
    )
