"""The sandbox as the server applies it: on by default for every tool process, built from the
tool's own effective capabilities, recorded in the audit log; ``required`` refuses where it
cannot sandbox, ``auto`` says so once, ``off`` is explicit."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_toolbridge.bridge import Bridge, PolicyGate
from mcp_toolbridge.builtins import Sessions
from mcp_toolbridge.builtins.base import builtin_spec
from mcp_toolbridge.builtins.bash import BashTool
from mcp_toolbridge.errors import ErrorCode, ExecSpawnError
from mcp_toolbridge.executors import ExecRequest, ExecToolExecutor, probe_sandbox, run_process
from mcp_toolbridge.model import RequirementSet, Safety
from mcp_toolbridge.policy import Policy, SandboxMode, Scope
from mcp_toolbridge.runtime import Settings, load_catalog, open_bridge
from mcp_toolbridge.sandbox import BWRAP_VARIABLE, Sandbox, find_bwrap
from tests.sandbox.conftest import PRIVATE_KEY, Box
from tests.support.manifests import agentcli_manifest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

PEEK = """\
import json, os, sys
args = json.load(sys.stdin)
out = {}
try:
    out["key"] = open(args["key"]).read()
except OSError as exc:
    out["key"] = type(exc).__name__
try:
    open(args["plant"], "w").write("owned")
    out["plant"] = "written"
except OSError as exc:
    out["plant"] = type(exc).__name__
print(json.dumps(out))
"""

TOOL = {
    "name": "peek",
    "description": "Try to read a key and plant a file",
    "schema": {
        "type": "object",
        "properties": {"key": {"type": "string"}, "plant": {"type": "string"}},
        "required": ["key", "plant"],
    },
    "command": ["./tools/bin/peek"],
}


def _settings(box: Box, mode: SandboxMode | None) -> Settings:
    manifest = agentcli_manifest(box.root / "manifest", [TOOL], {"peek": PEEK})
    return Settings(
        paths=[manifest],
        workspace=box.ws,
        environ=box.env,
        audit_path=box.root / "audit.ndjson",
        sandbox=mode,
        allow=("peek",),  # it declares no safety facts: the fail-closed default would ask
    )


async def _peek(box: Box, mode: SandboxMode | None) -> tuple[Any, dict[str, Any]]:
    settings = _settings(box, mode)
    loaded = load_catalog(settings)
    assert not loaded.errors, [p.render() for p in loaded.errors]
    arguments = {"key": str(box.home / ".ssh" / "id_ed25519"), "plant": str(box.outside / "x")}
    with anyio.fail_after(30):
        async with open_bridge(settings, loaded) as bridge:
            outcome = await bridge.call("peek", arguments)
    assert outcome.ok, outcome.error
    lines = (box.root / "audit.ndjson").read_text(encoding="utf-8").splitlines()
    return outcome.value, json.loads(lines[-1])


async def test_a_manifest_tool_is_sandboxed_by_default_and_the_audit_line_says_so(
    box: Box,
) -> None:
    value, audit = await _peek(box, None)
    assert value == {"key": "FileNotFoundError", "plant": "FileNotFoundError"}
    assert not (box.outside / "x").exists()
    assert audit["sandboxed"] is True


async def test_with_sandbox_off_the_same_tool_reads_the_key_and_plants_the_file(box: Box) -> None:
    value, audit = await _peek(box, "off")
    assert value == {"key": PRIVATE_KEY, "plant": "written"}
    assert audit["sandboxed"] is False


def _writer(name: str, requires: RequirementSet) -> Any:
    return builtin_spec(
        name,
        title=name,
        description="writes a file",
        input_schema={"type": "object"},
        safety=Safety(read_only=False, destructive=False, idempotent=True, open_world=False),
        requires=requires,
    )


async def test_a_new_requirement_widens_the_sandbox_with_no_other_change(box: Box) -> None:
    """The same policy and the same script: only the tool's declared fs.write differs."""
    gate = PolicyGate(box.policy(), sandbox=Sandbox("required", home=box.home))
    target = box.outside / "granted.txt"
    script = f"open({str(target)!r}, 'w').write('ok')"
    for requires, works in (
        (RequirementSet(), False),
        (RequirementSet(fs_write=(str(box.outside),)), True),
    ):
        confinement = gate.confinement(_writer("w", requires))
        with anyio.fail_after(30):
            outcome = await run_process(
                [sys.executable, "-I", "-c", script],
                stdin=None,
                cwd=str(box.ws),
                env=box.env,
                timeout_s=20,
                sandbox=confinement,
            )
        assert (outcome.exit_code == 0) is works
        assert target.exists() is works


async def test_the_bash_tool_runs_in_its_sandbox(box: Box, tmp_path: Path) -> None:
    sessions = Sessions(tmp_path / "sidecars")
    bash = BashTool(box.ws, sessions, box.env)
    gate = PolicyGate(box.policy(), sandbox=Sandbox("required", home=box.home))
    command = (
        f"cat {box.home}/.ssh/id_ed25519; echo planted > {box.outside}/x; "
        "echo made > here.txt; cat here.txt"
    )
    request = ExecRequest(
        spec=bash.spec,
        arguments={"command": command},
        timeout_s=20,
        sandbox=gate.confinement(bash.spec),
    )
    try:
        with anyio.fail_after(30):
            result = await bash.run(request)
    finally:
        sessions.close_all()
    assert result.sandboxed is True
    assert result.value["stdout"] == "made\n"
    assert "No such file or directory" in result.value["stderr"]
    assert not (box.outside / "x").exists()


async def test_required_refuses_to_run_a_process_it_cannot_sandbox(
    box: Box, tmp_path: Path
) -> None:
    settings = _settings(box, "required")
    loaded = load_catalog(settings)
    sandbox = Sandbox("required", home=box.home, bwrap=str(tmp_path / "no-bwrap"))
    gate = PolicyGate(loaded.policy, sandbox=sandbox)
    bridge = Bridge(loaded.catalog, {"exec": ExecToolExecutor(box.env)}, gate=gate)
    arguments = {"key": "k", "plant": str(box.ws / "ran")}
    with anyio.fail_after(30):
        outcome = await bridge.call("peek", arguments)
    assert not outcome.ok and outcome.code == ErrorCode.EXEC_SPAWN
    assert outcome.error is not None and "the OS sandbox is required" in outcome.error
    assert "bwrap could not be run" in outcome.error
    assert not (box.ws / "ran").exists()  # nothing was run


async def test_auto_runs_unsandboxed_where_it_cannot_and_says_so_once(
    box: Box, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="mcp_toolbridge.sandbox")
    sandbox = Sandbox("auto", home=box.home, bwrap=str(tmp_path / "no-bwrap"))
    confinement = sandbox.confine(sandbox.profile(box.policy().scope, tool="t"))
    for _ in range(2):
        with anyio.fail_after(30):
            outcome = await run_process(
                ["/bin/true"], stdin=None, cwd=None, env=box.env, timeout_s=20, sandbox=confinement
            )
        assert outcome.exit_code == 0 and outcome.sandboxed is False
    warnings = [
        r.getMessage() for r in caplog.records if "WITHOUT the OS sandbox" in r.getMessage()
    ]
    assert len(warnings) == 1
    assert "--sandbox required" in warnings[0]


async def test_a_missing_program_is_the_same_spawn_error_as_without_a_sandbox(
    sandbox_support: None,
) -> None:
    sandbox = Sandbox("required", home=None)
    confinement = sandbox.confine(sandbox.profile(Scope(), tool="t"))
    for given in (confinement, None):
        with pytest.raises(ExecSpawnError, match="no such file"), anyio.fail_after(30):
            await run_process(
                ["/nonexistent/tool"], stdin=None, cwd=None, env={}, timeout_s=5, sandbox=given
            )


def test_inspect_shows_the_sandbox_profile_of_a_tool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mcp_toolbridge.cli.main import main

    manifest = agentcli_manifest(tmp_path / "m", [TOOL], {"peek": PEEK}).parent
    workspace = tmp_path / "ws"
    workspace.mkdir()
    argv = [
        "inspect",
        "peek",
        str(manifest),
        "--workspace",
        str(workspace),
        "--sandbox",
        "required",
    ]
    assert main(argv) == 0
    profile = json.loads(capsys.readouterr().out)["Safety"]["sandbox_profile"]
    assert profile["mode"] == "required"
    assert profile["read"] == [str(workspace.resolve()), str(manifest)]
    assert profile["write"] == [str(workspace.resolve())]
    assert profile["network"] == "none" and profile["hosts"] == []
    assert any(path.endswith("/.ssh") for path in profile["masked"])
    assert profile["reuse"].startswith("called again, it runs in a sandbox set up before")


async def test_a_policy_with_warm_false_gives_every_call_a_fresh_sandbox(box: Box) -> None:
    policy = box.root / "policy.toml"
    box.policy()  # the box's grants, then the switch
    policy.write_text(policy.read_text() + "[sandbox]\nwarm = false\n", encoding="utf-8")
    gate = PolicyGate.configured(
        Policy.load(policy, workspace=box.ws, user_data=None), "required", environ=box.env
    )
    assert gate.sandbox is not None
    confinement = gate.confinement(_writer("w", RequirementSet()))
    assert confinement is not None
    assert str(gate.sandbox.describe(confinement.profile)["reuse"]).startswith("a fresh sandbox")
    with anyio.fail_after(30):
        for _ in range(4):
            outcome = await run_process(
                ["/bin/true"],
                stdin=None,
                cwd=str(box.ws),
                env=box.env,
                timeout_s=20,
                sandbox=confinement,
            )
            assert (outcome.exit_code, outcome.sandboxed) == (0, True)
    assert gate.sandbox.warm.taken == 0 and gate.sandbox.warm.sandboxes == []


async def test_mcp_toolbridge_bwrap_names_the_bwrap_every_launch_uses(
    box: Box, tmp_path: Path
) -> None:
    packaged = find_bwrap()
    assert packaged is not None
    named = tmp_path / "bin" / "bwrap"
    named.parent.mkdir()
    named.symlink_to(packaged)
    sandbox = Sandbox.from_environ("required", {**box.env, BWRAP_VARIABLE: str(named)})
    assert sandbox.bwrap == str(named) and sandbox.probe_argv()[0] == str(named)
    confinement = sandbox.confine(sandbox.profile(box.policy().scope, tool="t"))
    with anyio.fail_after(30):
        outcome = await run_process(
            ["/bin/true"], stdin=None, cwd=None, env=box.env, timeout_s=20, sandbox=confinement
        )
        assert (outcome.exit_code, outcome.sandboxed) == (0, True)
        missing = {**box.env, BWRAP_VARIABLE: str(tmp_path / "nowhere" / "bwrap")}
        support = await probe_sandbox(Sandbox.from_environ("auto", missing))
    assert not support.ok and support.reason.startswith("bwrap could not be run")
    assert BWRAP_VARIABLE in support.fixes[0].how
