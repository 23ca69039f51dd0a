"""The OAuth resource server's options from the policy's [auth] table (the flags winning): the
introspection client, its secret resolved from the secrets (never written in the file), and
how long an introspection answer is kept (default 30 s, 0 to ask on every request; out of
range is a policy error that names the key)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from mcp_toolbridge.cli.http import auth_options
from mcp_toolbridge.errors import ConfigError, ErrorCode
from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog
from mcp_toolbridge.server.auth_options import INTROSPECTION_CACHE_S, AuthOptions

TABLE = """[auth]
issuer = "https://id.example.com"
introspection_client_id = "toolbridge"
introspection_secret = "toolbridge-rs"
"""


def _options(tmp_path: Path, extra: str = "", **flags: str | None) -> AuthOptions | None:
    policy = tmp_path / "policy.toml"
    policy.write_text(TABLE + extra, encoding="utf-8")
    environ = {"TOOLBRIDGE_SECRET_TOOLBRIDGE_RS": "rs-secret-value"}
    settings = Settings(policy_file=policy, audit=False, environ=environ)
    loaded = load_catalog(settings, BUILTIN_SPECS)
    args = argparse.Namespace(auth_issuer=None, auth_resource=None)
    for name, value in flags.items():
        setattr(args, name, value)
    return auth_options(args, settings, loaded)


def test_the_auth_table_names_the_introspection_client_its_secret_and_cache_time(
    tmp_path: Path,
) -> None:
    default = _options(tmp_path)
    kept = _options(tmp_path, "introspection_cache_s = 60\n")
    off = _options(tmp_path, "introspection_cache_s = 0\n", auth_issuer="https://id2.example")
    assert default is not None and kept is not None and off is not None
    assert default.introspection_client_id == "toolbridge"
    assert default.introspection_secret == "rs-secret-value"
    assert "rs-secret-value" not in repr(default)
    assert default.introspection_cache_s == INTROSPECTION_CACHE_S == 30
    assert (kept.introspection_cache_s, off.introspection_cache_s) == (60, 0)
    assert off.issuer == "https://id2.example"  # the flag wins


@pytest.mark.parametrize("value", ["-1", "301"])
def test_a_cache_time_out_of_range_is_a_policy_error(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError) as info:
        _options(tmp_path, f"introspection_cache_s = {value}\n")
    assert info.value.code == ErrorCode.POLICY_INVALID
    assert "auth.introspection_cache_s" in str(info.value)
