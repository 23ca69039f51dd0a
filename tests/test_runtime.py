"""The composition root's own refusals: a runtime that cannot be built is a config error."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_toolbridge.errors import ConfigError, ErrorCode
from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog, open_bridge
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool


async def test_an_audit_log_that_cannot_be_opened_is_config_invalid_before_any_call(
    tmp_path: Path,
) -> None:
    agentcli_manifest(tmp_path / "m", [echo_tool()], {"echo": ECHO})
    taken = tmp_path / "audit.ndjson"
    taken.mkdir()  # a folder where the log file should go
    settings = Settings(paths=[tmp_path / "m"], audit_path=taken)
    loaded = load_catalog(settings, BUILTIN_SPECS)
    with pytest.raises(ConfigError) as caught:
        async with open_bridge(settings, loaded):
            pytest.fail("the bridge opened without its audit log")
    assert caught.value.code is ErrorCode.CONFIG_INVALID
    assert str(caught.value).startswith("cannot open the audit log: ")
    assert str(taken) in str(caught.value)
