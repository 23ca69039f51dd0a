"""What a served server keeps of people comes from the policy's [auth] table: how long after a
person's last call (person_idle_s) and for how many people (max_people); out-of-range values
are policy errors that name the key."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from mcp_toolbridge.cli.http import opened_state, people_sessions
from mcp_toolbridge.errors import ConfigError, ErrorCode
from mcp_toolbridge.runtime import BUILTIN_SPECS, Loaded, Settings, load_catalog
from mcp_toolbridge.state import MAX_PEOPLE, PERSON_IDLE_S, MemoryState, RedisState


def _loaded(tmp_path: Path, auth: str) -> Loaded:
    policy = tmp_path / "policy.toml"
    policy.write_text(f"[auth]\n{auth}", encoding="utf-8")
    return load_catalog(Settings(policy_file=policy, audit=False), BUILTIN_SPECS)


def _sessions_of(tmp_path: Path, auth: str) -> MemoryState:
    loaded = _loaded(tmp_path, auth)
    state = people_sessions(loaded).state
    assert isinstance(state, MemoryState)
    return state


def test_the_auth_table_sets_how_long_and_for_how_many_people_state_is_kept(tmp_path):
    state = _sessions_of(tmp_path, "person_idle_s = 3600\nmax_people = 50\n")
    assert (state.person_idle_s, state.max_people) == (3600, 50)
    default = _sessions_of(tmp_path, "")
    assert (default.person_idle_s, default.max_people) == (PERSON_IDLE_S, MAX_PEOPLE)
    assert PERSON_IDLE_S == 86_400


@pytest.mark.parametrize(
    ("auth", "expected"),
    [
        ("person_idle_s = 30\n", "line 2: auth.person_idle_s: Input should be greater than"),
        ("max_people = 0\n", "line 2: auth.max_people: Input should be greater than"),
    ],
)
def test_a_window_shorter_than_ten_minutes_or_no_room_is_a_policy_error(tmp_path, auth, expected):
    with pytest.raises(ConfigError) as info:
        _sessions_of(tmp_path, auth)
    assert info.value.code == ErrorCode.POLICY_INVALID
    assert expected in str(info.value)


@pytest.mark.anyio
async def test_with_redis_a_persons_keys_live_person_idle_s(tmp_path: Path) -> None:
    """``--state redis://…``: the same ``person_idle_s`` is each of a person's keys' TTL
    (``max_people`` caps one process's memory only: in Redis the TTL bounds the people)."""
    settings = Settings(audit=False)
    args = argparse.Namespace(state="redis://127.0.0.1:6379/0")  # opened lazily: not here
    for auth, expected in (("person_idle_s = 3600\n", 3600), ("", PERSON_IDLE_S)):
        loaded = _loaded(tmp_path, auth)
        async with opened_state(args, settings, loaded, http=False) as (sessions, replica):
            assert isinstance(sessions.state, RedisState) and replica is None
            assert sessions.state.person_ttl_s == expected
