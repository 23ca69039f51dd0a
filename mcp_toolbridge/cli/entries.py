"""A client config's entry as the client reads it, for ``doctor``: the entry that starts
mcp-toolbridge in a config file, under the key that client reads, and the variables in its
arguments that client fills in (``${workspaceFolder}``: VS Code and Cursor; environment
variables: Claude Code; none: Claude Desktop)."""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_toolbridge.cli.clients import CLIENTS, SERVER_NAME
from mcp_toolbridge.cli.console import counted
from mcp_toolbridge.errors import SecretError, ToolbridgeError
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.secrets import SecretResolver

MISSING_VARIABLE = "Missing environment variable: "
"""How AgentPM's load error for a required variable begins (its SDK's words, loaders/agentpm.py)."""
SET_IT = " Set it where the server starts: "
"""Where that error says how to set the variable: doctor, which names the client's entry,
leaves it out."""
PASSES = "a client passes the server only its own environment and the entry's env"

SERVER_KEYS = ("mcpServers", "servers")
"""The keys of a client config's server table: Claude Desktop, Claude Code and Cursor read
``mcpServers``, VS Code ``servers``."""


@dataclass(frozen=True)
class Finding:
    ok: bool
    what: str
    detail: str
    fix: str = ""

    def render(self) -> str:
        line = f"{'ok' if self.ok else 'problem':<8} {self.what:<12} {self.detail}"
        indent = "\n" + " " * 27  # under the first line of the fix
        fix = self.fix.replace("\n", indent)
        return line + (f"\n{'':<8} {'':<12} fix: {fix}" if self.fix else "")


SPAWN_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
"""What of its own environment a client built on an MCP SDK's stdio transport passes a server
(the SDKs' default environment), the entry's ``env`` added: Claude Desktop's. A GUI app holds
none of the shell's exports anyway."""


def client_environ(
    client: str | None, environ: dict[str, str], entry: dict[str, Any], path: str
) -> dict[str, str]:
    """The environment the client starts the server with: for Claude Desktop the SDK's
    default variables, for the others (started from a terminal, or reading the login shell's
    environment) this one; then the client's PATH, then the entry's ``env``."""
    if client == "claude-desktop":
        made = {name: environ[name] for name in SPAWN_ENV if name in environ}
    else:
        made = dict(environ)
    made["PATH"] = path
    given = entry.get("env")
    if isinstance(given, dict):
        made.update((str(k), str(v)) for k, v in given.items() if isinstance(v, str | int | float))
    return made


def variable_fix(messages: list[str]) -> str | None:
    """The fix for a variable an AgentPM manifest requires that the client does not give."""
    unset = [m for m in messages if m.startswith(MISSING_VARIABLE)]
    if not unset:
        return None
    name = unset[0].removeprefix(MISSING_VARIABLE).split(".")[0]
    given = f'"env": {{"{name}": "..."}}'
    return f"give the server the variable in the client's entry: {given} ({PASSES})"


def shown_problems(rendered: list[str]) -> str:
    """The first three load problems on one line, and how many more (a missing variable's
    way to set it left out: doctor's fix names the client's entry)."""
    shown = "; ".join(text.partition(SET_IT)[0] for text in rendered[:3])
    return shown + (f" and {len(rendered) - 3} more" if len(rendered) > 3 else "")


def check_secrets(
    specs: list[ToolSpec], environ: dict[str, str], secrets_file: Path | None
) -> Finding | None:
    """Whether the secrets the served tools declare resolve where the client starts the
    server (its environment, the entry's --secrets file); None when no tool declares one.
    A secret not set does not stop the server: every call of its tool fails instead."""
    declared = [spec for spec in specs if spec.secrets]
    if not declared:
        return None
    try:
        resolver = SecretResolver.from_sources(environ, secrets_file)
    except ToolbridgeError as exc:
        return Finding(False, "secrets", exc.message, "correct the secrets file (docs/secrets.md)")
    unset = []
    for spec in declared:
        try:
            resolver.resolve(spec.secrets, tool=spec.name)
        except SecretError as exc:
            unset.append(f'tool "{spec.name}": {exc.message}')
    if unset:
        more = f" and {len(unset) - 3} more" if len(unset) > 3 else ""
        return Finding(
            False,
            "secrets",
            "; ".join(unset[:3]) + more + ": every call of it fails",
            'put the variable in the client\'s entry ("env": {"TOOLBRIDGE_SECRET_...": "..."}) '
            f"or give the entry --secrets FILE, an absolute path ({PASSES})",
        )
    count = sum(len(spec.secrets) for spec in declared)
    said = f"{counted(count, 'secret')} of {counted(len(declared), 'tool')}, all set"
    return Finding(True, "secrets", said)


MAX_CONFIG_BYTES = 16 * 1024 * 1024
"""The largest client config file doctor reads (Claude Code's ~/.claude.json grows with its
history; the others are a few KB)."""


def read_config(file: Path) -> Any:
    """A client config file's JSON: a regular file (a FIFO does not hold doctor, a link to
    ``/dev/zero`` does not fill its memory) of at most MAX_CONFIG_BYTES, nested no deeper than
    the parser takes. Raises ValueError or OSError saying why (red-team pass of 2026-11-29,
    8th: a FIFO held ``doctor --config`` forever, a file nested 100,000 deep ended it in a
    traceback)."""
    with open(os.open(file, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise ValueError("it is not a regular file")
        data = handle.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        raise ValueError(f"it has more than {MAX_CONFIG_BYTES} bytes")
    try:
        return json.loads(data.decode("utf-8"))
    except RecursionError:
        raise ValueError("it is nested deeper than a JSON parser reads") from None


def entry_from_file(file: Path) -> dict[str, Any] | Finding:
    """The entry of a client config file that starts mcp-toolbridge."""
    try:
        data = read_config(file)
    except (OSError, ValueError) as exc:
        return Finding(False, "config", f"cannot read {file}: {exc}", "give a client's JSON file")
    servers: dict[str, Any] = {}
    if isinstance(data, dict):
        for key in SERVER_KEYS:
            if isinstance(data.get(key), dict):
                servers.update(data[key])
    chosen = _ours(servers)
    if chosen is None:
        return Finding(
            False,
            "config",
            f"{file} has no server entry that starts mcp-toolbridge",
            "add the entry `mcp-toolbridge config --client NAME` prints",
        )
    return chosen


def check_key(file: Path, client: str) -> Finding | None:
    """A problem when the entry is under another client's key (VS Code's ``servers`` pasted
    into Claude Desktop's file, or the other way round): the client reads its own only."""
    try:
        data = read_config(file)
    except (OSError, ValueError):
        return None  # said by the entry's own check
    kind = CLIENTS[client]
    if not isinstance(data, dict) or _ours(data.get(kind.top_key)) is not None:
        return None
    for key in SERVER_KEYS:
        if key != kind.top_key and _ours(data.get(key)) is not None:
            return Finding(
                False,
                "config",
                f'{file} has the entry under "{key}", which {kind.title} does not read: it '
                "starts no server from it",
                f'rename "{key}" to "{kind.top_key}"',
            )
    return None


def _ours(servers: object) -> dict[str, Any] | None:
    """The entry of ``servers`` (a config's server table) that starts mcp-toolbridge."""
    if not isinstance(servers, dict):
        return None
    chosen = servers.get(SERVER_NAME)
    if not isinstance(chosen, dict):
        chosen = next(
            (
                e
                for e in servers.values()
                if isinstance(e, dict)
                and any(
                    "mcp-toolbridge" in str(p) or "mcp_toolbridge" in str(p) for p in argv_of(e)
                )
            ),
            None,
        )
    return chosen


def argv_of(entry: dict[str, Any]) -> list[str]:
    args = entry.get("args", [])
    return [str(entry.get("command", "")), *(str(a) for a in args if isinstance(args, list))]


def filled_in(given: Path, client: str | None, environ: dict[str, str]) -> Path | Finding:
    """``given`` with the variables the client fills in replaced (Claude Code: environment
    variables), or a problem naming one it does not (``${workspaceFolder}`` in Claude
    Desktop's entry reaches the server as written)."""
    kind = CLIENTS.get(client or "")
    if kind is None or kind.folder_variable is not None:
        return given  # this shell, or the client's folder variable: said as it is
    text = str(given)
    if kind.name == "claude-code":  # it expands ${VAR} from its environment
        text = os.path.expandvars(text) if "${" in text else text
    found = re.search(r"\$\{[^}]*\}", text)
    if found is None:
        return Path(text)
    variable = found[0]
    whose = "VS Code's and Cursor's variable" if variable == "${workspaceFolder}" else "a variable"
    return Finding(
        False,
        "workspace",
        f"{variable} is {whose}: {kind.title} does not fill it in, so the server gets it as "
        "written and the file tools and bash fail on every call",
        "write the project folder's absolute path in the entry (`mcp-toolbridge config "
        f"--client {kind.name}` run in the project writes it)",
    )


__all__ = [
    "MISSING_VARIABLE",
    "SERVER_KEYS",
    "SET_IT",
    "SPAWN_ENV",
    "Finding",
    "argv_of",
    "check_key",
    "check_secrets",
    "client_environ",
    "entry_from_file",
    "filled_in",
    "shown_problems",
    "variable_fix",
]
