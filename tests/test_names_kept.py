"""Tool names: collisions created by sanitizing, and ``--keep-names`` (SEP-986 names)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.shared.tool_name_validation import validate_tool_name

from mcp_toolbridge.cli.main import main
from mcp_toolbridge.errors import ErrorCode
from mcp_toolbridge.names import KEPT_NAME_PATTERN
from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog, open_bridge
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool


@pytest.fixture
def dotted_and_underscored(tmp_path: Path) -> tuple[Path, Path]:
    """``mail.send`` in one manifest and ``mail_send`` in another: equal once sanitized."""
    first = agentcli_manifest(tmp_path / "a", [echo_tool("mail.send")], {"echo": ECHO})
    second = agentcli_manifest(tmp_path / "b", [echo_tool("mail_send")], {"echo": ECHO})
    return first, second


def test_two_ids_that_sanitize_alike_collide_naming_both_sources(
    dotted_and_underscored: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = dotted_and_underscored
    loaded = load_catalog(Settings(paths=[first, second]))
    assert loaded.catalog.names == ["mail_send"]
    assert loaded.catalog.get("mail_send") is not None
    assert loaded.catalog.resolve("mail.send") is not None
    [problem] = loaded.errors
    assert problem.code is ErrorCode.MANIFEST_DUPLICATE
    assert problem.path == str(second)
    assert problem.locator == 'tool[0] "mail_send"'
    assert f'already used by {first}: tool[0] "mail.send"' in problem.message
    assert "after sanitizing" in problem.message and "--keep-names" in problem.message

    assert main(["lint", str(first), str(second)]) == 1
    out = capsys.readouterr().out
    assert f'{second}: tool[0] "mail_send": tool name "mail_send" is already used by {first}' in out


async def test_keep_names_serves_both_ids_as_written_through_a_real_client(
    dotted_and_underscored: tuple[Path, Path],
) -> None:
    settings = Settings(paths=list(dotted_and_underscored), keep_names=True)
    loaded = load_catalog(settings, BUILTIN_SPECS)
    assert not loaded.problems, [p.render() for p in loaded.problems]
    assert sorted(loaded.catalog.names) == ["call_tool", "mail.send", "mail_send", "tool_search"]
    with anyio.fail_after(30):
        async with open_bridge(settings, loaded) as bridge:
            server = ToolbridgeServer(bridge)
            async with Client(server.server, raise_exceptions=True) as client:
                listed = {t.name: t for t in (await client.list_tools()).tools}
                assert {"mail.send", "mail_send"} <= set(listed)
                assert listed["mail.send"].meta is not None
                assert listed["mail.send"].meta["toolbridge/id"] == "mail.send"
                result = await client.call_tool("mail.send", {"text": "dotted"})
    assert result.is_error is False
    assert result.structured_content == {"echo": {"text": "dotted"}}


def test_keep_names_still_finds_collisions_between_equal_ids(tmp_path: Path) -> None:
    first = agentcli_manifest(tmp_path / "a", [echo_tool("mail.send")], {"echo": ECHO})
    second = agentcli_manifest(tmp_path / "b", [echo_tool("mail.send")], {"echo": ECHO})
    loaded = load_catalog(Settings(paths=[first, second], keep_names=True))
    [problem] = loaded.errors
    assert problem.path == str(second)
    assert problem.message == (
        f'tool name "mail.send" is already used by {first}: tool[0] "mail.send"'
    )


@pytest.mark.parametrize("tool_id", ["team/mail", "with space", "x" * 129])
def test_keep_names_refuses_ids_that_are_not_sep_986_names(tmp_path: Path, tool_id: str) -> None:
    assert not validate_tool_name(tool_id).is_valid  # the SDK agrees they are not tool names
    path = agentcli_manifest(tmp_path / "a", [echo_tool(tool_id)], {"echo": ECHO})
    loaded = load_catalog(Settings(paths=[path], keep_names=True))
    assert len(loaded.catalog) == 0
    [problem] = loaded.errors
    assert f'tool id "{tool_id}" cannot be served as written (--keep-names)' in problem.message
    assert "[A-Za-z0-9._-]{1,128}" in problem.message
    # Without --keep-names the same id is sanitized and served.
    assert len(load_catalog(Settings(paths=[path])).catalog) == 1


@pytest.mark.parametrize(
    "name",
    ["mail.send", "a", "a\n", "x" * 128, "v1.2_beta-3", "a/b", "", "x" * 129, "é", "a b", "a,b"],
)
def test_the_kept_name_rule_is_the_sdks_sep_986_rule(name: str) -> None:
    assert bool(KEPT_NAME_PATTERN.fullmatch(name)) is validate_tool_name(name).is_valid


def test_keep_names_is_a_cli_option_of_list(
    dotted_and_underscored: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    paths = [str(p) for p in dotted_and_underscored]
    assert main(["list", *paths, "--keep-names"]) == 0
    names = {line.split()[0] for line in capsys.readouterr().out.splitlines()}
    assert names == {"mail.send", "mail_send"}


def test_ids_that_transliterate_alike_collide_naming_both_sources(tmp_path: Path) -> None:
    first = agentcli_manifest(tmp_path / "a", [echo_tool("café_menu")], {"echo": ECHO})
    second = agentcli_manifest(tmp_path / "b", [echo_tool("cafe_menu")], {"echo": ECHO})
    loaded = load_catalog(Settings(paths=[first, second]))
    assert loaded.catalog.names == ["cafe_menu"]
    assert loaded.catalog.resolve("café_menu") is loaded.catalog.get("cafe_menu")
    [problem] = loaded.errors
    assert problem.code is ErrorCode.MANIFEST_DUPLICATE
    assert f'already used by {first}: tool[0] "café_menu"' in problem.message
    assert "after sanitizing" in problem.message
