"""What a served server keeps of people comes from the policy's [auth] table: how long after a
person's last call (person_idle_s) and for how many people (max_people); out-of-range values
are policy errors that name the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_toolbridge.cli.http import people_sessions
from mcp_toolbridge.errors import ConfigError, ErrorCode
from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog
from mcp_toolbridge.state import MAX_PEOPLE, PERSON_IDLE_S, MemoryState


def _sessions_of(tmp_path: Path, auth: str) -> MemoryState:
    policy = tmp_path / "policy.toml"
    policy.write_text(f"[auth]\n{auth}", encoding="utf-8")
    loaded = load_catalog(Settings(policy_file=policy, audit=False), BUILTIN_SPECS)
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
