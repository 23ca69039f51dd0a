"""A stdio server imports what its first answers need, not what only some servers or only
calls need (docs/performance.md, "Server start-up as a client sees it"): PyJWT (about 20 ms of
a start) comes with ``--auth-issuer``, the HTTP service's modules with ``--http``, jsonschema
(about 30 ms) with the first call's arguments checked or a declared schema holding a value the
meta-schema check does not know as valid beforehand (schemas/meta.py), and the call machinery
(the bridge, the tool executors, the secret scanner's engine) once the first tools/list is
answered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Literal

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from mcp_toolbridge.executors import probe_sandbox
from mcp_toolbridge.sandbox import BWRAP_VARIABLE, Sandbox
from tests.support.fresh_python import run_json_script
from tests.support.manifests import ECHO, NOT_DESTRUCTIVE, agentcli_manifest, echo_tool
from tests.support.rawstdio import raw_server, request

# The real command line's main(), in a child that writes the modules it imported when it ends.
CHILD = (
    "import atexit, json, sys\n"
    "out = sys.argv.pop(1)\n"
    "atexit.register(lambda: open(out, 'w').write(json.dumps(sorted(sys.modules))))\n"
    "from mcp_toolbridge.cli import main\n"
    "raise SystemExit(main(sys.argv[1:]))\n"
)

# The same, also writing the modules imported when the first tools/list has been answered
# (the server's own on_first_list callback, called before the answer is sent).
AT_FIRST_LIST = (
    "import json, sys\n"
    "first = sys.argv.pop(1)\n"
    "from mcp_toolbridge.server import toolbridge_server as ts\n"
    "made = ts.ToolbridgeServer.__init__\n"
    "def init(self, *a, on_first_list=None, **k):\n"
    "    def listed():\n"
    "        open(first, 'w').write(json.dumps(sorted(sys.modules)))\n"
    "        if on_first_list is not None: on_first_list()\n"
    "    made(self, *a, on_first_list=listed, **k)\n"
    "ts.ToolbridgeServer.__init__ = init\n"
) + CHILD
CALL_MACHINERY = {
    "mcp_toolbridge.bridge.pipeline",
    "mcp_toolbridge.bridge.gate",
    "mcp_toolbridge.bridge.audit",
    "mcp_toolbridge.bridge.screen",
    "mcp_toolbridge.executors.base",
    "mcp_toolbridge.executors.exec_tool",
    "mcp_toolbridge.executors.http",
    "mcp_toolbridge.policy.watchdog",
    "mcp_toolbridge.builtins.tool_search",
    "mcp_toolbridge.builtins.task.subagent",
    "mcp_toolbridge.leaks.engine",
    "mcp_toolbridge.leaks.scan",
    "betterleaks",
    "jsonschema",
}
"""What a call needs and a listing does not: none of it is imported before the first list."""
BUNDLED = Path(__file__).resolve().parents[2] / "manifests"
KEY = "-----BEGIN OPENSSH PRIVATE KEY----- not a real one -----END OPENSSH PRIVATE KEY-----\n"
PEEK = (
    "import json, sys\n"
    "path = json.load(sys.stdin)['path']\n"
    "try:\n"
    "    found = open(path).read()\n"
    "except OSError as exc:\n"
    "    found = type(exc).__name__\n"
    "print(json.dumps({'found': found}))\n"
)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_first_list_comes_before_the_call_machinery_and_calls_are_still_sandboxed(
    tmp_path: Path, mode: Literal["auto", "legacy"]
) -> None:
    """A stdio server started from the start-up cache answers its first tools/list from the
    catalog and the policy; the bridge, the executors and the secret scanner are imported and
    opened after it, and the first call runs in the OS sandbox (the home folder's keys stay
    hidden) and is audited."""
    support = await probe_sandbox(Sandbox("auto", home=None))
    if not support.ok:
        pytest.skip(f"this machine cannot run the OS sandbox: {support.reason}")
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    key = home / ".ssh" / "id_ed25519"
    key.parent.mkdir(parents=True)
    key.write_text(KEY, encoding="utf-8")
    peek = {
        "name": "peek",
        "description": "Read a file",
        "schema": {"type": "object", "properties": {"path": {"type": "string"}}},
        "command": ["./tools/bin/peek"],
        "annotations": NOT_DESTRUCTIVE,
    }
    manifest = agentcli_manifest(tmp_path / "m", [peek], {"peek": PEEK})
    first, modules, audit = (tmp_path / n for n in ("first.json", "modules.json", "audit.nd"))
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home)}
    env["TOOLBRIDGE_CACHE_DIR"] = str(tmp_path / "cache")
    argv = ["serve", str(manifest.parent), "--workspace", str(workspace), "--audit", str(audit)]
    child = [sys.executable, "-c", AT_FIRST_LIST, str(first), str(modules), *argv]
    params = StdioServerParameters(command=child[0], args=child[1:], env=env, cwd=tmp_path)
    with anyio.fail_after(60), (tmp_path / "stderr.txt").open("w", encoding="utf-8") as err:
        for start in ("fills the start-up cache", "starts from it"):
            async with Client(stdio_client(params, errlog=err), mode=mode) as client:
                listed = {t.name for t in (await client.list_tools()).tools}
                if start == "starts from it":
                    result = await client.call_tool("peek", {"path": str(key)})
    assert "peek" in listed and "read" in listed, listed
    at_first_list = json.loads(first.read_text(encoding="utf-8"))
    assert "mcp_toolbridge.server.toolbridge_server" in at_first_list
    assert sorted(CALL_MACHINERY.intersection(at_first_list)) == []
    assert result.is_error is False, result
    assert result.structured_content in (
        {"found": "FileNotFoundError"},
        {"found": "PermissionError"},
    )
    imported = json.loads(modules.read_text(encoding="utf-8"))
    assert CALL_MACHINERY - {"jsonschema"} <= set(imported)  # opened since
    lines = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
    assert [(r["tool"], r["sandboxed"]) for r in lines] == [("peek", True)]


async def test_a_cold_start_checks_everyday_schemas_without_jsonschema(tmp_path: Path) -> None:
    """Without the start-up cache every declared schema is checked before the first list: the
    bundled manifests and one schema with the usual keywords (types, a pattern, a oneOf,
    bounds, defaults, nested objects and arrays) are checked without importing jsonschema
    (a wrong one is still refused in its words: tests/test_schemas.py)."""
    fine = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "pattern": "^[a-z]+$", "minLength": 1, "default": "a"},
            "size": {"type": ["integer", "null"], "minimum": 0, "maximum": 10},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}},
            "mode": {"oneOf": [{"const": "fast"}, {"const": "slow"}], "description": "how"},
            "more": {"type": "object", "additionalProperties": False, "properties": {}},
        },
        "required": ["name"],
        "additionalProperties": False,
    }
    manifest = agentcli_manifest(
        tmp_path / "m", [{**echo_tool("fine"), "schema": fine}], {"fine": ECHO}
    )
    first, modules = tmp_path / "first.json", tmp_path / "modules.json"
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    env["TOOLBRIDGE_CACHE_DIR"] = str(tmp_path / "cache")
    argv = ["serve", str(BUNDLED), str(manifest.parent), "--no-index-cache", "--no-audit"]
    argv += ["--workspace", str(tmp_path)]
    child = [sys.executable, "-c", AT_FIRST_LIST, str(first), str(modules), *argv]
    params = StdioServerParameters(command=child[0], args=child[1:], env=env, cwd=tmp_path)
    with anyio.fail_after(60), (tmp_path / "stderr.txt").open("w", encoding="utf-8") as err:
        async with Client(stdio_client(params, errlog=err)) as client:
            listed = {t.name for t in (await client.list_tools()).tools}
    assert {"fine", "word_count"} <= listed, listed
    at_first_list = json.loads(first.read_text(encoding="utf-8"))
    assert "mcp_toolbridge.server.toolbridge_server" in at_first_list
    assert "mcp_toolbridge.schemas.meta" in at_first_list  # the schemas were checked
    assert [m for m in at_first_list if m.split(".")[0] in ("jsonschema", "referencing")] == []


AFTER_THE_FIRST_LIST = {
    "mcp_toolbridge.catalog.index",
    "mcp_toolbridge.catalog.index_build",
    "mcp_toolbridge.catalog.index_cache",
    "mcp_toolbridge.catalog.text",
    "Stemmer",
    "re2",
    "ctypes",
}
"""What a cold start of a small catalog imports once its first tools/list is answered: the
search index's modules (its index is made then, in the worker thread that imports the call
machinery; runtime/cache.py, INDEX_AFTER_LIST_BELOW), RE2 (the secret scan's and the
secrets' matchers, made for a call) and ctypes (glibc's mmap threshold, pinned before the first
call: cli/allocator.py)."""
ON_NEED = {"difflib", "concurrent.futures.process"}
"""Imported by a start only when it needs them: a name to correct (a typo in a manifest or
the policy file), a load big enough to share with a forked worker."""
SHARED_STATE = (
    "mcp_toolbridge.state.shared",
    "mcp_toolbridge.state.redis_client",
    "mcp_toolbridge.server.shared_events",
    "mcp_toolbridge.server.resume",
)
"""The replicas' modules (state in Redis, streams resumed on another replica): a server
without ``--state redis://...`` never imports them."""


async def test_a_cold_start_lists_before_the_search_modules_and_still_searches(
    tmp_path: Path,
) -> None:
    """A cold start (``--no-index-cache``) of the bundled catalog answers its first tools/list
    without importing the search modules; tool_search then finds the bundled tools, the
    index made after the list."""
    first, modules = tmp_path / "first.json", tmp_path / "modules.json"
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    env["TOOLBRIDGE_CACHE_DIR"] = str(tmp_path / "cache")
    argv = ["serve", "--no-index-cache", "--no-audit", "--workspace", str(tmp_path)]
    child = [sys.executable, "-c", AT_FIRST_LIST, str(first), str(modules), *argv]
    params = StdioServerParameters(command=child[0], args=child[1:], env=env, cwd=tmp_path)
    with anyio.fail_after(60), (tmp_path / "stderr.txt").open("w", encoding="utf-8") as err:
        async with Client(stdio_client(params, errlog=err)) as client:
            listed = {t.name for t in (await client.list_tools()).tools}
            found = await client.call_tool("tool_search", {"query": "count the words"})
    assert {"tool_search", "word_count"} <= listed, listed
    at_first_list = json.loads(first.read_text(encoding="utf-8"))
    assert "mcp_toolbridge.server.toolbridge_server" in at_first_list
    assert sorted(AFTER_THE_FIRST_LIST.intersection(at_first_list)) == []
    assert sorted(ON_NEED.intersection(at_first_list)) == []
    assert found.is_error is False, found
    assert "word_count" in "".join(getattr(c, "text", "") for c in found.content), found
    imported = set(json.loads(modules.read_text(encoding="utf-8")))
    assert AFTER_THE_FIRST_LIST <= imported  # imported since


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_stdio_start_without_auth_issuer_never_imports_pyjwt(
    tmp_path: Path, mode: Literal["auto", "legacy"]
) -> None:
    manifest = agentcli_manifest(tmp_path / "m", [echo_tool("echo")], {"echo": ECHO})
    modules = tmp_path / "modules.json"
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "TOOLBRIDGE_CACHE_DIR": str(tmp_path / "cache"),
    }
    argv = ["serve", str(manifest.parent), "--no-audit", "--workspace", str(tmp_path)]
    params = StdioServerParameters(
        command=sys.executable, args=["-c", CHILD, str(modules), *argv], env=env, cwd=tmp_path
    )
    with anyio.fail_after(60), (tmp_path / "stderr.txt").open("w", encoding="utf-8") as err:
        async with Client(stdio_client(params, errlog=err), mode=mode) as client:
            listed = {t.name for t in (await client.list_tools()).tools}
            result = await client.call_tool("echo", {"text": "hi"})
    assert "echo" in listed and result.structured_content == {"echo": {"text": "hi"}}
    imported = set(json.loads(modules.read_text(encoding="utf-8")))
    assert "mcp_toolbridge.server.toolbridge_server" in imported  # it is the server's list
    assert sorted(m for m in imported if m == "jwt" or m.startswith("jwt.")) == []
    http = ("mcp_toolbridge.server.http", "mcp_toolbridge.server.auth")
    assert sorted(m for m in imported if m.startswith(http)) == []  # the HTTP service's
    assert sorted(m for m in imported if m.startswith(SHARED_STATE)) == []


def test_importing_the_cli_and_the_server_loads_neither_pyjwt_nor_jsonschema() -> None:
    """What a start from the start-up cache imports before its first answer: the command
    line, serving, and the server; jsonschema, PyJWT and the bash sub-policy come later, when
    they are needed (the sub-policy in a worker thread once the first list is answered)."""
    code = (
        "import json, sys\n"
        "import mcp_toolbridge.cli.main, mcp_toolbridge.cli.serve, mcp_toolbridge.server\n"
        "import mcp_toolbridge.runtime, mcp_toolbridge.bridge\n"
        "late = ('jwt', 'jsonschema', 'referencing', 'mcp_toolbridge.policy.shell')\n"
        "found = {m for m in sys.modules for p in late if m == p or m.startswith(p + '.')}\n"
        "print(json.dumps(sorted(found)))\n"
    )
    assert run_json_script(code) == []


def test_the_bash_sub_policy_is_there_when_asked_for() -> None:
    """Its names import their modules on first use, and say so when one does not exist."""
    from mcp_toolbridge import policy

    assert policy.splitter("ls -l | wc") == (("ls", "-l"), ("wc",))
    assert callable(policy.shell_floor) and callable(policy.shell_targets)
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        policy.nothing  # noqa: B018


def _failed_start(
    argv: list[str], env: dict[str, str], cwd: Path
) -> subprocess.CompletedProcess[str]:
    """``python -m mcp_toolbridge *argv`` with nothing on stdin, which must fail its start
    (exit 2)."""
    done = subprocess.run(
        [sys.executable, "-m", "mcp_toolbridge", *argv],
        input="",
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    return done


@pytest.mark.parametrize("how", ["--sandbox", "policy"])
def test_a_required_sandbox_that_cannot_work_still_fails_the_start(
    tmp_path: Path, how: str
) -> None:
    """The runtime opened after the first list is not the required sandbox's: its probe still
    refuses the start, before anything is served (from the flag or the policy file)."""
    manifest = agentcli_manifest(tmp_path / "m", [echo_tool("echo")], {"echo": ECHO})
    argv = ["serve", str(manifest.parent), "--no-audit", "--workspace", str(tmp_path)]
    if how == "--sandbox":
        argv += ["--sandbox", "required"]
    else:
        policy = tmp_path / "policy.toml"
        policy.write_text('[sandbox]\nmode = "required"\n', encoding="utf-8")
        argv += ["--policy", str(policy)]
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "TOOLBRIDGE_CACHE_DIR": str(tmp_path / "cache"),
        BWRAP_VARIABLE: str(tmp_path / "no-bwrap"),
    }
    done = _failed_start(argv, env, tmp_path)
    assert "the OS sandbox is required (--sandbox required) but cannot be used" in done.stderr
    assert done.stdout == ""  # nothing was answered


def test_an_audit_log_that_cannot_be_opened_still_fails_the_start(tmp_path: Path) -> None:
    """The audit log is opened before anything is served, though its observer comes later."""
    manifest = agentcli_manifest(tmp_path / "m", [echo_tool("echo")], {"echo": ECHO})
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    argv = ["serve", str(manifest.parent), "--workspace", str(tmp_path)]
    argv += ["--audit", str(blocker / "audit.ndjson")]  # its folder is a file
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    env["TOOLBRIDGE_CACHE_DIR"] = str(tmp_path / "cache")
    done = _failed_start(argv, env, tmp_path)
    assert "cannot open the audit log" in done.stderr and done.stdout == ""


def test_every_exported_name_is_what_it_names_after_every_module_is_imported() -> None:
    """A name a package imports on first use must not also be one of its modules' names: once
    that module is imported, the package's attribute is the module and the name is never
    looked up (such names are imported eagerly, as ``state.forgetting`` is). Checked in a
    fresh interpreter, with every module of the package imported first."""
    code = (
        "import importlib, pkgutil, types\n"
        "import mcp_toolbridge\n"
        "wrong = []\n"
        "for info in pkgutil.walk_packages(mcp_toolbridge.__path__, 'mcp_toolbridge.'):\n"
        "    if info.name.endswith('__main__') or '.examples' in info.name:\n"
        "        continue\n"
        "    importlib.import_module(info.name)\n"
        "for info in pkgutil.walk_packages(mcp_toolbridge.__path__, 'mcp_toolbridge.'):\n"
        "    if not info.ispkg or '.examples' in info.name:\n"
        "        continue\n"
        "    package = importlib.import_module(info.name)\n"
        "    for name in getattr(package, '__all__', ()):\n"
        "        if isinstance(getattr(package, name), types.ModuleType):\n"
        "            wrong.append(f'{info.name}.{name}')\n"
        "print(wrong)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    assert out.stdout.strip() == "[]", out.stdout


async def test_a_runtime_that_cannot_open_after_the_first_list_ends_the_server_in_one_line(
    tmp_path: Path,
) -> None:
    """What the start checked can change before the runtime opens (here the audit log's path
    becomes a folder after the start): the server then ends as a start that fails does, exit
    2 and one line that says why, never a traceback, and the call that was waiting never
    runs."""
    manifest = agentcli_manifest(tmp_path / "m", [echo_tool("echo")], {"echo": ECHO})
    audit = tmp_path / "audit.ndjson"
    async with raw_server(tmp_path, str(manifest.parent), audit=audit) as server:
        await server.initialize()  # answered after the start's checks: the log was opened
        audit.unlink()
        audit.mkdir()
        listed = await server.call(request(1, "tools/list"))
        assert "echo" in {tool["name"] for tool in listed["result"]["tools"]}
        await server.send_json(request(2, "tools/call", {"name": "echo", "arguments": {}}))
        assert await server.wait_exit(120) == 2, server.stderr()
    stderr = server.stderr()
    assert "mcp-toolbridge: cannot open the audit log:" in stderr
    assert "Traceback" not in stderr and "Exception Group" not in stderr, stderr
    assert [m for m in server.seen if m.get("id") == 2] == []  # no call ran
