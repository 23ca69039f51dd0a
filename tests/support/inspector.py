"""The pinned MCP Inspector CLI (2.12.0) as an independent, headless client.

Installed by scripts/install-inspector into .ci/node/; :func:`require_inspector` skips a test
module without node or without it. The Inspector is a TypeScript-SDK client: it checks a
result's structuredContent against the tool's outputSchema, errors included.

:func:`run_inspector` runs it once; :func:`run_inspector_signing_in` runs it against an
OAuth-protected server it signs in to itself (the authorization code flow with PKCE, after
registering itself), as a person at a terminal does: it prints the authorization URL, the
person's browser (:func:`tests.support.oidc.sign_in`) opens it and is sent back to the
Inspector's own callback listener.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from tests.support.oidc import sign_in
from tests.support.paths import ROOT

INSPECTOR = ROOT / ".ci" / "node" / "node_modules" / ".bin" / "mcp-inspector"
TOOL_ERROR_EXIT = 5
"""The Inspector's exit status for a result with isError (and for an unknown tool)."""
AUTH_REQUIRED_EXIT = 3
"""The Inspector's exit status when the server wants a sign-in it cannot do or was refused."""
_NAVIGATE = re.compile(r"Please navigate to: (\S+)")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def require_inspector() -> None:
    if shutil.which("node") is None:
        pytest.skip(
            "node is not installed: the MCP Inspector e2e test needs it", allow_module_level=True
        )
    if not INSPECTOR.exists():
        pytest.skip(
            "the MCP Inspector is not installed: run scripts/install-inspector (npm) first",
            allow_module_level=True,
        )


@dataclass(frozen=True)
class Inspected:
    returncode: int
    result: Any
    """The printed result (``None`` when it printed none)."""
    error: Any
    """The JSON error line on stderr (``None`` when it printed none)."""
    stderr: str = ""
    """Everything on its stderr (a stdio server's own stderr comes through it)."""


def _env(home: Path) -> dict[str, str]:
    """A private HOME; OAuth tokens the Inspector keeps go to a file there (no keychain)."""
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "MCP_STORAGE_DIR": str(home / "storage"),
        "XDG_DATA_HOME": str(home / "data"),
        "MCP_INSPECTOR_SECRET_STORE": "file",
    }


async def run_inspector(home: Path, *argv: str) -> Inspected:
    """One ``mcp-inspector --cli ... --format json`` run with a private HOME."""
    with anyio.fail_after(60):
        done = await anyio.run_process(
            [str(INSPECTOR), "--cli", *argv, "--format", "json"], env=_env(home), check=False
        )
    result, error = _last_json(done.stdout, "result"), _last_json(done.stderr)
    return Inspected(done.returncode, result, error, done.stderr.decode(errors="replace"))


async def run_inspector_signing_in(home: Path, login: str, url: str, *argv: str) -> Inspected:
    """One run against the OAuth-protected server at ``url`` in which the Inspector signs
    ``login`` in itself. It registers itself with the authorization server the server names,
    prints the authorization URL and waits on its callback listener (a free port); the
    person's browser opens that URL, logs in, consents and is sent back to the listener; the
    Inspector exchanges the code (PKCE) and runs ``argv``. Without a terminal the Inspector
    signs in only with ``MCP_AUTO_OPEN_ENABLED=true`` (``BROWSER=true``: it launches no
    browser of its own). Its tokens stay in ``home`` for later runs (``--stored-auth-only``)."""
    env = _env(home) | {"MCP_AUTO_OPEN_ENABLED": "true", "BROWSER": "true"}
    command = [str(INSPECTOR), "--cli", url, "--transport", "http"]
    command += ["--callback-url", "http://127.0.0.1:0/oauth/callback", *argv, "--format", "json"]
    with anyio.fail_after(90):
        async with (
            await anyio.open_process(command, env=env, stdin=subprocess.DEVNULL) as process,
            anyio.create_task_group() as group,
        ):
            assert process.stdout is not None and process.stderr is not None
            out: list[bytes] = []
            group.start_soon(_collect, process.stdout, out)
            err = BufferedByteReceiveStream(process.stderr)
            lines: list[str] = []
            authorization = None
            while authorization is None:
                try:
                    line = await err.receive_until(b"\n", 1 << 20)
                except (anyio.EndOfStream, anyio.IncompleteRead):
                    raise AssertionError(f"the Inspector asked for no sign-in: {lines}") from None
                lines.append(_ANSI.sub("", line.decode("utf-8", "replace")))
                if (found := _NAVIGATE.search(lines[-1])) is not None:
                    authorization = found[1]
            callback = parse_qs(urlsplit(authorization).query)["redirect_uri"][0]
            redirected = await sign_in(authorization, login, redirect_prefix=callback)
            async with httpx2.AsyncClient() as browser:
                landed = await browser.get(redirected)
            assert landed.status_code == 200, landed.text
            rest = ["".join(f"{line}\n" for line in lines).encode()]
            group.start_soon(_collect, err, rest)
            await process.wait()
    stdout, stderr = b"".join(out), b"".join(rest)
    assert process.returncode is not None
    return Inspected(process.returncode, _last_json(stdout, "result"), _last_json(stderr))


async def _collect(stream: Any, into: list[bytes]) -> None:
    try:
        while True:
            into.append(await stream.receive())
    except (anyio.EndOfStream, anyio.ClosedResourceError):
        pass


def _last_json(data: bytes, key: str | None = None) -> Any:
    for line in reversed(data.decode("utf-8", "replace").splitlines()):
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            return value.get(key) if key is not None else value
    return None
