"""A stdio server imports what its first answers need, not what only some servers or only
calls need (docs/performance.md, "Server start-up as a client sees it"): PyJWT (about 20 ms of
a start) comes with ``--auth-issuer``, the HTTP service's modules with ``--http``, and
jsonschema (about 30 ms) with the first schema checked or compiled (a manifest loaded without
the start-up cache, a call's arguments)."""

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

from tests.support.manifests import ECHO, agentcli_manifest, echo_tool

# The real command line's main(), in a child that writes the modules it imported when it ends.
CHILD = (
    "import atexit, json, sys\n"
    "out = sys.argv.pop(1)\n"
    "atexit.register(lambda: open(out, 'w').write(json.dumps(sorted(sys.modules))))\n"
    "from mcp_toolbridge.cli import main\n"
    "raise SystemExit(main(sys.argv[1:]))\n"
)


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


def test_importing_the_cli_and_the_server_loads_neither_pyjwt_nor_jsonschema() -> None:
    """What a start from the start-up cache imports before its first answer: the command
    line, serving, and the server; jsonschema, PyJWT and the bash sub-policy come later, when
    they are needed (the sub-policy in a worker thread once the first list is answered)."""
    code = (
        "import sys\n"
        "import mcp_toolbridge.cli.main, mcp_toolbridge.cli.serve, mcp_toolbridge.server\n"
        "import mcp_toolbridge.runtime, mcp_toolbridge.bridge\n"
        "late = ('jwt', 'jsonschema', 'referencing', 'mcp_toolbridge.policy.shell')\n"
        "print(sorted({m for m in sys.modules for p in late if m == p or m.startswith(p + '.')}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"


def test_the_bash_sub_policy_is_there_when_asked_for() -> None:
    """Its names import their modules on first use, and say so when one does not exist."""
    from mcp_toolbridge import policy

    assert policy.splitter("ls -l | wc") == (("ls", "-l"), ("wc",))
    assert callable(policy.shell_floor) and callable(policy.shell_targets)
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        policy.nothing  # noqa: B018
