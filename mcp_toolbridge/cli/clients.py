"""Client configuration snippets (``mcp-toolbridge config --client NAME``), and the connect
hint ``serve`` prints.

Every snippet starts this installation over stdio with absolute paths (``installed.py``: the
``mcp-toolbridge`` script of its environment, or ``uvx --from SOURCE mcp-toolbridge`` for an
installation uvx made in its cache). Manifest and policy paths are made absolute. Clients start
servers from an undefined working directory (Claude Desktop: ``/``), so nothing relative
would work, and every snippet names the workspace: the client's own variable for its open
folder where it has one (VS Code and Cursor: ``${workspaceFolder}``), an absolute path
otherwise. With that variable, the paths inside the folder the config is written for (the
working directory) are written from it (``${workspaceFolder}/manifests``), so a project's
``.vscode/mcp.json`` or ``.cursor/mcp.json`` works in every clone of the project.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_toolbridge.builtins import LOCKED_IDS
from mcp_toolbridge.cli.installed import server_command as server_command
from mcp_toolbridge.errors import ConfigError, ErrorCode
from mcp_toolbridge.executors import DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT_S
from mcp_toolbridge.policy import is_manifest_path
from mcp_toolbridge.runtime import Settings
from mcp_toolbridge.workspace import default_workspace, unfit_reason

SERVER_NAME = "toolbridge"


@dataclass(frozen=True)
class ClientKind:
    name: str
    title: str
    files: str
    """Where the snippet goes."""
    top_key: str
    typed: bool
    """Whether entries carry ``"type": "stdio"``."""
    folder_variable: str | None = None
    """What the client replaces with the folder it has open, in ``args``."""
    expose: str = "auto"
    """The ``--expose`` mode that fits the client (docs/clients.md says why)."""
    expose_why: str = ""

    def folder(self, config: Path | None = None) -> FolderVariable | None:
        """What the client puts in for its folder variable when it reads ``config``: the
        project holding it (``PROJECT/.vscode/mcp.json``, ``PROJECT/.cursor/mcp.json``), else
        the working directory (the project ``config`` writes the entry for)."""
        if self.folder_variable is None:
            return None
        place = config.resolve().parent if config is not None else None
        project = (
            place.parent if place is not None and place.name in (".vscode", ".cursor") else None
        )
        return FolderVariable(self.folder_variable, project or Path.cwd().resolve())


CLIENTS = {
    c.name: c
    for c in (
        ClientKind(
            "claude-desktop",
            "Claude Desktop",
            "macOS: ~/Library/Application Support/Claude/claude_desktop_config.json; "
            "Windows: %APPDATA%\\Claude\\claude_desktop_config.json (restart the app after edits)",
            "mcpServers",
            False,
        ),
        ClientKind(
            "claude-code",
            "Claude Code",
            ".mcp.json in the project (or ~/.claude.json for every project)",
            "mcpServers",
            True,
            expose="all",
            expose_why="it defers MCP tools behind its own tool search, so the server lists "
            "every tool (a second search of the server's own would cost a turn)",
        ),
        ClientKind(
            "vscode",
            "VS Code",
            ".vscode/mcp.json in the workspace (or the user profile's mcp.json)",
            "servers",
            True,
            "${workspaceFolder}",
        ),
        ClientKind(
            "cursor",
            "Cursor",
            ".cursor/mcp.json in the project (or ~/.cursor/mcp.json for every project)",
            "mcpServers",
            False,
            "${workspaceFolder}",
            expose="search",
            expose_why="its agent does best with a few dozen tools in all, and the locked "
            "tools are 13 already: the rest are found with tool_search and run with call_tool",
        ),
    )
}


PATH_OPTIONS = frozenset({"--secrets", "--audit", "--record", "--skills", "--ad-hoc"})
"""The options of ``serving_options`` whose value is a path."""


@dataclass(frozen=True)
class FolderVariable:
    """A client's variable for the folder it has open, and the folder it stands for here."""

    variable: str
    folder: Path

    def path(self, path: Path | str) -> str:
        """``path`` absolute, or from the variable when it lies inside the folder (as named:
        a link in the project stays one, as it is in every clone)."""
        for absolute in (Path(os.path.abspath(path)), Path(path).resolve()):
            if absolute.is_relative_to(self.folder):
                inside = absolute.relative_to(self.folder).as_posix()
                return self.variable if inside == "." else f"{self.variable}/{inside}"
        return str(Path(path).resolve())

    def options(self, options: Sequence[str]) -> list[str]:
        """``options`` (of ``serving_options``: paths absolute) with the paths inside the
        folder written from the variable: values of :data:`PATH_OPTIONS`, and the manifest
        path of an ``--allow`` entry (``${workspaceFolder}/manifests/fx=convert``)."""
        out = []
        for i, option in enumerate(options):
            before = options[i - 1] if i else None
            if before in PATH_OPTIONS:
                option = self.path(option)
            elif before == "--allow":
                name, equals, pattern = option.partition("=")
                if is_manifest_path(name.strip()):
                    option = self.path(name.strip()) + equals + pattern
            out.append(option)
        return out

    def expand(self, argv: Sequence[str]) -> list[str]:
        """``argv`` as the client starts it: the variable in paths replaced by the folder
        (``--workspace``'s value kept as written)."""
        prefix = self.variable + "/"
        return [
            str(self.folder / a.removeprefix(prefix))
            if a.startswith(prefix) or (a == self.variable and argv[i - 1 : i] != ["--workspace"])
            else a
            for i, a in enumerate(argv)
        ]


def serve_arguments(
    paths: Sequence[Path],
    *,
    policy: Path | None = None,
    workspace: Path | str | None = None,
    options: Sequence[str] = (),
    verb: Sequence[str] = ("serve",),
    folder: FolderVariable | None = None,
) -> list[str]:
    """``serve`` (or ``verb``), its options and the manifest paths, every path absolute, or
    from ``folder``'s variable when it lies in that folder.

    ``workspace``: a path (made absolute), or a client's variable (kept as written).
    ``options`` are further options, already absolute (see ``serving_options``)."""
    made: Callable[[Path], str] = folder.path if folder else _absolute
    args = list(verb)
    if policy is not None:
        args += ["--policy", made(policy)]
    if isinstance(workspace, Path):
        workspace = str(workspace.resolve())
    if workspace is not None:
        args += ["--workspace", workspace]
    if folder is not None:
        options = folder.options(options)
    return [*args, *options, *(made(p) for p in paths)]


def fitting_expose(kind: ClientKind, locked: Sequence[str]) -> str:
    """The ``--expose`` mode for ``kind``, given the locked tools served: search needs
    tool_search, so without it the default (auto, which then lists everything) is kept."""
    if kind.expose == "search" and "tool_search" not in locked:
        return "auto"
    return kind.expose


def server_entry(kind: ClientKind, command: Sequence[str], args: Sequence[str]) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "stdio"} if kind.typed else {}
    entry["command"] = command[0]
    entry["args"] = [*command[1:], *args]
    return entry


def client_config(
    client: str,
    paths: Sequence[Path],
    *,
    policy: Path | None = None,
    workspace: Path | None = None,
    options: Sequence[str] = (),
    command: Sequence[str] | None = None,
    expose: str | None = None,
) -> dict[str, Any]:
    """The whole config file content for ``client`` with one server, ``toolbridge``.

    The workspace is ``workspace`` when given, else the client's folder variable (and the
    paths inside the working directory are written from it), else the working directory;
    ConfigError when that is ``/`` or the home folder. ``expose`` is the
    ``--expose`` mode, by default the one that fits the client (``ClientKind.expose``)."""
    kind = CLIENTS[client]
    chosen_expose = expose or kind.expose
    if chosen_expose != "auto":
        options = [*options, "--expose", chosen_expose]
    chosen: Path | str | None = workspace or kind.folder_variable or default_workspace()
    # paths from the folder variable when the config is for the project `config` runs in
    # (not / or the home folder: a user-level file, where the variable names any project)
    folder = kind.folder() if workspace is None and default_workspace() is not None else None
    if chosen is None:
        raise ConfigError(
            f"{kind.title} starts servers in a folder nobody chose, so the config must name "
            f"the workspace, and the working directory is {unfit_reason(Path.cwd())}: run "
            "this in the project folder, or add --workspace DIR",
            code=ErrorCode.CONFIG_INVALID,
        )
    args = serve_arguments(paths, policy=policy, workspace=chosen, options=options, folder=folder)
    entry = server_entry(kind, command or server_command(), args)
    return {kind.top_key: {SERVER_NAME: entry}}


def args_for(args: argparse.Namespace, settings: Settings) -> list[str]:
    """The stdio connect hint's arguments: a client started with them serves what this
    server serves. The workspace is pinned (clients start servers in an undefined working
    directory); HTTP options are left out, the hint is for stdio."""
    verb = ["serve"]
    if getattr(args, "recording", None) is not None:
        verb = ["replay", _absolute(args.recording)]
    return serve_arguments(
        args.paths,
        policy=args.policy,
        workspace=settings.workspace_root(),
        options=serving_options(args),
        verb=verb,
    )


def _absolute(path: Path) -> str:
    return str(path.resolve())


def _allow_entry(entry: str) -> str:
    """An ``--allow`` entry as a client started in another folder reads it the same: a
    relative manifest path (``./manifests/fx``) made absolute."""
    name, equals, pattern = entry.partition("=")
    path = Path(name.strip())
    if not is_manifest_path(name.strip()) or path.expanduser().is_absolute():
        return entry
    return _absolute(path) + equals + pattern


def valued(flag: str, value: str) -> list[str]:
    """``flag`` and its ``value`` as two arguments, or one (``--pin=-x``) when the value
    begins with ``-``: argparse takes such a value for an option, and a client started with
    ``--pin -x`` fails (``expected one argument``)."""
    return [f"{flag}={value}"] if value.startswith("-") else [flag, value]


def serving_options(args: argparse.Namespace, *, expose: bool = True) -> list[str]:
    """The options of ``args`` that change what is served or how it runs, other than the
    paths, ``--policy`` and ``--workspace`` (and ``--expose`` without ``expose``), with paths
    absolute; defaults are left out. A value the user gave as written (a pattern, an allow
    entry) that begins with ``-`` is joined to its option (:func:`valued`)."""
    out: list[str] = []
    for pattern in getattr(args, "pin", ()):
        out += valued("--pin", pattern)
    for entry in getattr(args, "allow", ()):
        out += valued("--allow", _allow_entry(entry))
    if getattr(args, "loop", "auto") != "auto":
        out += ["--loop", args.loop]
    if getattr(args, "keep_names", False):
        out.append("--keep-names")
    if getattr(args, "no_index_cache", False):
        out.append("--no-index-cache")
    if getattr(args, "sandbox", None) is not None:
        out += ["--sandbox", args.sandbox]
    for folder in getattr(args, "ad_hoc", ()):
        out += ["--ad-hoc", _absolute(folder)]
    locked = tuple(getattr(args, "locked", LOCKED_IDS))
    if locked != LOCKED_IDS:
        out += ["--locked", ",".join(locked) or "none"]
    for folder in getattr(args, "skills", ()):
        out += ["--skills", _absolute(folder)]
    if getattr(args, "timeout", DEFAULT_TIMEOUT_S) != DEFAULT_TIMEOUT_S:
        out += ["--timeout", repr(args.timeout)]
    if getattr(args, "max_concurrency", None) is not None:
        out += ["--max-concurrency", str(args.max_concurrency)]
    if getattr(args, "max_output", DEFAULT_MAX_OUTPUT_BYTES) != DEFAULT_MAX_OUTPUT_BYTES:
        out += ["--max-output", str(args.max_output)]
    for flag, attr in (("--secrets", "secrets"), ("--audit", "audit"), ("--record", "record")):
        if getattr(args, attr, None) is not None:
            out += [flag, _absolute(getattr(args, attr))]
    if getattr(args, "no_audit", False):
        out.append("--no-audit")
    if getattr(args, "eof_grace", None) is not None:
        out += ["--eof-grace", repr(args.eof_grace)]
    if expose and getattr(args, "expose", None) not in (None, "auto"):
        out += ["--expose", args.expose]
    for flag, attr in (("--skip-invalid", "skip_invalid"), ("--watch", "watch")):
        if getattr(args, attr, False):
            out.append(flag)
    return out
