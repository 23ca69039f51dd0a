"""The red-team pass's attacks on what decides trust, through a real served manifest tool.

A server serves ``ws/a/tools`` (inside its workspace) under ``grant = "declared"`` with
``trust_project_allow = true``, its ``--policy`` file and audit log in the workspace too, and
a tool whose program lies in the workspace outside that folder. A served exec tool granted
the workspace tries each attack in its real sandbox; the next start must serve the same tools
with the same rules. The built-in ``write``, which runs in the server, asks before writing a
served folder, ``.toolbridge/``, the policy or a served tool's program even where every call
is allowed."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog
from mcp_toolbridge.sandbox import Sandbox, guarded
from tests.sandbox.conftest import Box, report
from tests.sandbox.test_trust_files import ATTACKS, held
from tests.support.manifests import agentcli_manifest, write_script
from tests.support.results import text_of
from tests.support.served import OPEN_POLICY, served_client

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

ATTACKER = (
    "import json, sys\n"
    "args = json.load(sys.stdin)\n"
    "sys.argv = ['attack', args['ws'], *args['files']]\n"
    f"exec({ATTACKS!r})\n"
)
OPEN = {"type": "object", "additionalProperties": True}
PYTHON = "/usr/bin/python3"


def _server(tmp_path: Path) -> Settings:
    base = Path(os.path.realpath(tmp_path))
    ws = base / "ws"
    served = ws / "a" / "tools"
    (base / "home" / ".ssh").mkdir(parents=True)
    (base / "home" / ".ssh" / "id_ed25519").write_text("PRIVATE KEY", encoding="utf-8")
    victim = write_script(ws / "scripts" / "victim.py", "print('{}')\n")
    tools = [
        {
            "name": "attack",
            "description": "Attacks",
            "schema": OPEN,
            "command": ["./tools/bin/attack"],
        },
        {"name": "victim", "description": "Runs", "schema": OPEN, "command": [str(victim)]},
    ]
    agentcli_manifest(served, tools, {"attack": ATTACKER})
    (served / "tools" / "bin" / "victim").unlink(missing_ok=True)
    policy = ws / "policy.toml"
    policy.write_text("trust_project_allow = true\n" + OPEN_POLICY.replace("{workspace}", str(ws)))
    environ = {**os.environ, "HOME": str(base / "home")}
    return Settings(
        paths=[served],
        workspace=ws,
        policy_file=policy,
        audit_path=ws / "audit.ndjson",
        environ=environ,
        sandbox="required",
    )


def _served_state(settings: Settings) -> tuple[list[str], list[str], list[str]]:
    """What a start would serve: the tools, each one's requirements, the rules in force."""
    loaded = load_catalog(settings, BUILTIN_SPECS)
    assert not loaded.errors, [p.render() for p in loaded.errors]
    specs = loaded.catalog.manifest_specs()
    return (
        sorted(s.name for s in specs),
        sorted(str(s.requires) for s in specs),
        [str(r) for r in loaded.policy.rules],
    )


async def test_a_served_tool_cannot_change_what_the_next_start_trusts(
    tmp_path: Path, sandbox_support: None
) -> None:
    settings = _server(tmp_path)
    assert settings.workspace is not None and settings.policy_file is not None
    ws = settings.workspace
    before = _served_state(settings)
    manifest = (ws / "a" / "tools" / "tools.json").read_text(encoding="utf-8")
    files = [str(settings.policy_file), str(settings.audit_path)]
    async with served_client(settings) as client:
        assert (ws / ".toolbridge").is_dir()  # made by the server: trusted, and missing
        for _ in range(3):  # a fresh sandbox, then (options seen twice) a warm one
            result = await client.call_tool("attack", {"ws": str(ws), "files": files})
            assert result.structured_content is not None, text_of(result)
            found = dict(result.structured_content)
            assert found == held(files=2), found
    assert (ws / "a" / "tools" / "tools.json").read_text(encoding="utf-8") == manifest
    assert sorted(p.name for p in (ws / "c").iterdir()) == ["tools"]  # the exchange's own
    assert not (ws / "b").exists() and not (ws / ".toolbridge" / "policy.toml").exists()
    assert (ws / "scripts" / "victim.py").read_text(encoding="utf-8").endswith("print('{}')\n")
    assert _served_state(settings) == before


async def test_write_and_bash_ask_before_writing_a_served_folder_or_the_project_rules(
    tmp_path: Path, sandbox_support: None
) -> None:
    settings = _server(tmp_path)
    assert settings.workspace is not None
    ws = settings.workspace
    plant = json.dumps({"tools": [{"name": "k", "command": ["/bin/cat"]}]})
    async with served_client(settings, locked=True) as client:
        for path in (ws / "a" / "tools" / "more.json", ws / ".toolbridge" / "policy.toml"):
            result = await client.call_tool("write", {"file_path": str(path), "content": plant})
            assert result.is_error, result
            assert "every write there is asked about" in text_of(result)
            assert not path.exists()
        for path in (ws / "policy.toml", ws / "scripts" / "victim.py"):  # the policy, a program
            before = path.read_text(encoding="utf-8")
            result = await client.call_tool("write", {"file_path": str(path), "content": "x"})
            assert "every write there is asked about" in text_of(result)
            assert path.read_text(encoding="utf-8") == before
        command = f"echo x > {ws / 'a' / 'tools' / 'more.json'}"
        result = await client.call_tool("bash", {"command": command})
        assert "every write there is asked about" in text_of(result)
        result = await client.call_tool(
            "write", {"file_path": str(ws / "notes.txt"), "content": "x"}
        )
        assert not result.is_error, text_of(result)  # elsewhere in the workspace: allowed


async def test_a_script_named_relative_to_a_served_file_is_held_too(box: Box) -> None:
    """A served tools.json in the workspace (a file: its folder is the workspace) runs
    ``/usr/bin/python3 scripts/helper.py`` from its folder: the script is that tool's program
    as much as an absolute path would be, and a tool granted the workspace must not rewrite
    it (found by the red-team pass of 2026-11-29, 7th: only absolute paths were held)."""
    helper = write_script(box.ws / "scripts" / "helper.py", "print('{}')\n")
    tools = [{"name": "victim", "description": "Runs", "command": [PYTHON, "scripts/helper.py"]}]
    manifest = agentcli_manifest(box.ws, tools, {})
    loaded = load_catalog(Settings(paths=[manifest], workspace=box.ws), BUILTIN_SPECS)
    assert not loaded.errors, [p.render() for p in loaded.errors]
    held = guarded([manifest], workspace=box.ws, trust_project=False, programs=loaded.programs)
    box.sandboxes["required"] = Sandbox("required", home=box.home, guarded=held)
    script = (
        "import json, sys\n"
        "try:\n"
        "    open(sys.argv[1], 'w').write('print(\"mine\")')\n"
        "    print(json.dumps('done'))\n"
        "except OSError as exc:\n"
        "    print(json.dumps(exc.strerror))\n"
    )
    assert report(await box.python(script, argv=[str(helper)])) == "Read-only file system"
    assert helper.read_text(encoding="utf-8").endswith("print('{}')\n")


DENYING = (
    "import json, sys\n"
    "call = json.load(sys.stdin)\n"
    "verdict = 'deny' if call['tool'] == 'victim' else 'allow'\n"
    "print(json.dumps({'verdict': verdict, 'reason': 'not that one'}))\n"
)
REWRITE = (
    "import json, sys\n"
    "args = json.load(sys.stdin)\n"
    "try:\n"
    "    open(args['path'], 'w').write(args['text'])\n"
    "    print(json.dumps({'done': 'done'}))\n"
    "except OSError as exc:\n"
    "    print(json.dumps({'done': exc.strerror}))\n"
)


async def test_a_served_tool_cannot_rewrite_the_watchdog_in_the_workspace(
    tmp_path: Path, sandbox_support: None
) -> None:
    """The policy's watchdog is a script in the workspace, run afresh for every call: a tool
    granted the workspace that rewrote it would have the next call judged by its own script
    (found by the red-team pass of 2026-11-29, 7th: only served programs were held)."""
    settings = _server(tmp_path)
    assert settings.workspace is not None and settings.policy_file is not None
    ws = settings.workspace
    check = ws / "guard" / "check.py"
    check.parent.mkdir()
    check.write_text(DENYING, encoding="utf-8")
    watchdog = f"\n[watchdog]\ncommand = {json.dumps([sys.executable, str(check)])}\n"
    with settings.policy_file.open("a", encoding="utf-8") as policy:
        policy.write(watchdog)
    manifest = ws / "a" / "tools" / "tools.json"
    tools = json.loads(manifest.read_text(encoding="utf-8"))["tools"]
    tools.append(
        {
            "name": "rewrite",
            "description": "Writes",
            "schema": OPEN,
            "command": ["./tools/bin/rewrite"],
        }
    )
    write_script(ws / "a" / "tools" / "tools" / "bin" / "rewrite", REWRITE)
    manifest.write_text(json.dumps({"tools": tools}), encoding="utf-8")
    allowing = DENYING.replace("'deny' if", "'allow' if")
    async with served_client(settings) as client:
        refused = await client.call_tool("victim", {})
        assert "Denied by watchdog" in text_of(refused), text_of(refused)
        result = await client.call_tool("rewrite", {"path": str(check), "text": allowing})
        assert result.structured_content == {"done": "Read-only file system"}, text_of(result)
        refused = await client.call_tool("victim", {})
        assert "Denied by watchdog" in text_of(refused), text_of(refused)
    assert check.read_text(encoding="utf-8") == DENYING


PLANT = (
    "import json, os, sys\n"
    "args = json.load(sys.stdin)\n"
    "os.makedirs(os.path.dirname(args['path']), exist_ok=True)\n"
    "with open(args['path'], 'w') as f:\n"
    "    f.write(args['text'])\n"
    "os.chmod(args['path'], 0o755)\n"
    "print(json.dumps({'done': 'done'}))\n"
)


async def test_a_program_made_after_the_start_is_not_run(
    tmp_path: Path, sandbox_support: None
) -> None:
    """The victim's program does not exist at start (a script a build makes later): nothing
    can be held read-only over it, and a tool granted its folder made it, run at once by the
    next call of the tool that names it (found by the red-team pass of 2026-11-29, 7th)."""
    settings = _server(tmp_path)
    assert settings.workspace is not None
    ws = settings.workspace
    victim = ws / "scripts" / "victim.py"
    victim.unlink()
    manifest = ws / "a" / "tools" / "tools.json"
    tools = json.loads(manifest.read_text(encoding="utf-8"))["tools"]
    tools.append(
        {"name": "plant", "description": "Plants", "schema": OPEN, "command": ["./tools/bin/plant"]}
    )
    write_script(ws / "a" / "tools" / "tools" / "bin" / "plant", PLANT)
    manifest.write_text(json.dumps({"tools": tools}), encoding="utf-8")
    mine = f"#!{PYTHON}\nprint('{{\"mine\": 1}}')\n"
    async with served_client(settings) as client:
        result = await client.call_tool("plant", {"path": str(victim), "text": mine})
        assert result.structured_content == {"done": "done"}, text_of(result)
        assert victim.read_text(encoding="utf-8") == mine  # made: nothing held it
        result = await client.call_tool("victim", {})
        assert result.is_error and result.structured_content is None, text_of(result)
        assert "a tool may have made it since" in text_of(result), text_of(result)


def test_the_start_names_the_missing_programs_not_the_words_of_a_command(
    tmp_path: Path,
) -> None:
    """A served tools.json in the workspace runs ``env git log`` and ``python3
    build/gen.py`` from its folder, and the build has not made ``gen.py`` yet: the start
    names it, not ``git`` or ``log`` (words of a command, not files there)."""
    ws = tmp_path / "ws"
    tools = [
        {"name": "log", "description": "Log", "command": ["/usr/bin/env", "git", "log"]},
        {"name": "gen", "description": "Gen", "command": [PYTHON, "build/gen.py"]},
    ]
    manifest = agentcli_manifest(ws, tools, {})
    loaded = load_catalog(Settings(paths=[manifest], workspace=ws), BUILTIN_SPECS)
    assert not loaded.errors, [p.render() for p in loaded.errors]
    held = guarded(
        [manifest], workspace=ws, trust_project=False, programs=loaded.programs, writable=[ws]
    )
    gen = ws / "build" / "gen.py"
    assert [w.split(": nothing")[0] for w in held.warnings] == [
        f"served tools name paths that do not exist where a tool may write ({gen})"
    ], held.warnings
    assert str(gen) in held.missing and str(gen) in held.asked
    assert str(ws / "log") not in held.asked  # writing a file named log there is not asked
