""" "Always" answers belong to whoever gave them: an identified person keeps theirs across
sessions and nobody else is allowed by it; an anonymous session's go when it ends; one the
State cannot keep counts once."""

from __future__ import annotations

from pathlib import Path

import anyio

from mcp_toolbridge.bridge.asking import ALLOW_ALWAYS
from mcp_toolbridge.builtins import Sessions
from mcp_toolbridge.host import Answer, CallContext, Caller
from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog, open_runtime
from mcp_toolbridge.state import MemoryState
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool
from tests.support.scripted_host import ScriptedHost

ISSUER = "https://id.example"
ALICE = Caller(subject="alice", client_id="ide", issuer=ISSUER)
BOB = Caller(subject="bob", client_id="ide", issuer=ISSUER)


def _settings(tmp_path: Path) -> Settings:
    agentcli_manifest(tmp_path / "m", [echo_tool("guarded")], {"echo": ECHO})
    policy = tmp_path / "policy.toml"
    policy.write_text('ask = ["guarded"]\n', encoding="utf-8")
    return Settings(paths=[tmp_path / "m"], policy_file=policy, workspace=tmp_path, audit=False)


def _always() -> ScriptedHost:
    return ScriptedHost(answers=[Answer("accept", {"decision": ALLOW_ALWAYS})])


async def test_a_persons_always_answer_holds_in_their_next_session_and_for_nobody_else(
    tmp_path: Path,
) -> None:
    settings = _settings(tmp_path)
    loaded = load_catalog(settings, BUILTIN_SPECS)
    args = {"text": "hi"}
    with anyio.fail_after(30):
        async with open_runtime(settings, loaded) as runtime:
            bridge = runtime.bridge
            asked = await bridge.call(
                "guarded", args, CallContext("a1", host=_always(), caller=ALICE)
            )
            assert asked.ok and asked.answer == "always"
            runtime.end_session("a1")
            await anyio.wait_all_tasks_blocked()
            again = await bridge.call("guarded", args, CallContext("a2", caller=ALICE))
            bobs = await bridge.call("guarded", args, CallContext("b1", caller=BOB))
            other_client = Caller(subject="alice", client_id="cli", issuer=ISSUER)
            via_cli = await bridge.call("guarded", args, CallContext("a3", caller=other_client))
    assert again.ok and again.decision is not None and again.decision.scope == "session"
    assert not bobs.ok and bobs.answer == "headless"
    assert not via_cli.ok and via_cli.answer == "headless"


async def test_an_anonymous_sessions_always_answer_ends_with_it(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    loaded = load_catalog(settings, BUILTIN_SPECS)
    args = {"text": "hi"}
    with anyio.fail_after(30):
        async with open_runtime(settings, loaded) as runtime:
            bridge = runtime.bridge
            assert (await bridge.call("guarded", args, CallContext("s1", host=_always()))).ok
            assert (await bridge.call("guarded", args, CallContext("s1"))).ok
            assert not (await bridge.call("guarded", args, CallContext("s2"))).ok
            runtime.end_session("s1")
            await anyio.wait_all_tasks_blocked()
            after = await bridge.call("guarded", args, CallContext("s1"))
    assert not after.ok and after.answer == "headless"


async def test_an_always_answer_the_state_cannot_keep_lets_the_call_run_once(
    tmp_path: Path,
) -> None:
    """A server keeping its one person, who holds a counted use: bob's "always" cannot be kept,
    so his call runs once and he is asked again next time; alice keeps her count."""
    settings = _settings(tmp_path)
    loaded = load_catalog(settings, BUILTIN_SPECS)
    state = MemoryState(max_people=1)
    args = {"text": "hi"}
    with anyio.fail_after(30):
        async with open_runtime(settings, loaded, sessions=Sessions(state=state)) as runtime:
            assert ALICE.key is not None
            assert await state.take(ALICE.key, "web_search.calls", 10)
            bridge = runtime.bridge
            asked = await bridge.call(
                "guarded", args, CallContext("b1", host=_always(), caller=BOB)
            )
            again = await bridge.call("guarded", args, CallContext("b1", caller=BOB))
    assert asked.ok and asked.answer == "once"
    assert not again.ok and again.answer == "headless"
    assert state.people() == 1
