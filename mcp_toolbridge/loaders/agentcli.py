"""agentcli ``tools.json``: ``{"tools": [{name, description?, schema?, command, timeoutSec?,
envPassthrough?, progress?}]}``, plus the optional ``annotations`` object (safety facts; see
:mod:`mcp_toolbridge.loaders.safety`), which agentcli itself ignores.

Rules and error texts follow agentcli's own loader (spec/agentcli-tools-json.txt), checked in
its order per tool: name, duplicate, command, envPassthrough, command[0] path; but every
problem of every tool is reported, not only the first. ``progress`` (true: the tool reports
progress on ``TOOLBRIDGE_PROGRESS_FD``) is ours; agentcli ignores fields it does not know.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from pathlib import Path
from typing import Any

from mcp_toolbridge.loaders.report import (
    ProblemLog,
    checked_schema,
    input_schemas,
    json_quote,
    server_env_problem,
    unknown_fields,
)
from mcp_toolbridge.loaders.safety import declared_safety
from mcp_toolbridge.model import EnvSpec, ExecTransport, Format, Source, ToolSpec
from mcp_toolbridge.names import sanitize_name

__all__ = ["load_agentcli", "normalize_command", "normalize_env_passthrough"]

_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")
_BIN_PREFIX = "./tools/bin/"
_FIELDS = (
    "name",
    "description",
    "schema",
    "command",
    "timeoutSec",
    "envPassthrough",
    "progress",
    "annotations",
)
_MEANT = {
    "inputSchema": "schema",
    "input_schema": "schema",
    "parameters": "schema",
    "inputs": "schema",
    "args": "command",
    "argv": "command",
    "env": "envPassthrough",
}


def normalize_command(raw: str) -> tuple[str | None, str | None]:
    """``(relative path under ./tools/bin, None)``, ``(None, None)`` for an absolute path, or
    ``(None, error)`` for a command[0] that agentcli rejects.

    agentcli's steps: backslashes become slashes, the path is cleaned (``tools/...`` gets a
    leading ``./``); a path that starts with ``..`` is rejected; one written under
    ``./tools/bin/`` must still be there once cleaned; any other must clean to ``./tools/bin/``.
    """
    if os.path.isabs(raw):
        return None, None
    slashed = raw.replace("\\", "/")
    cleaned = posixpath.normpath(slashed) if slashed else "."
    if cleaned.startswith("tools/") or cleaned == "tools":
        cleaned = "./" + cleaned
    if cleaned == ".." or cleaned.startswith("../"):
        return (
            None,
            f"command[0] must not start with '..' or escape tools/bin (got {json_quote(raw)})",
        )
    if slashed == "./tools/bin" or slashed.startswith(_BIN_PREFIX):
        if not cleaned.startswith(_BIN_PREFIX):
            return None, (
                "command[0] escapes ./tools/bin after normalization "
                f"(got {json_quote(raw)} -> {json_quote(cleaned)})"
            )
    elif not cleaned.startswith(_BIN_PREFIX):
        return None, (
            f"relative command[0] must start with ./tools/bin/ (got {json_quote(raw)}; put the "
            "program in tools/bin/ beside this tools.json, or give its absolute path)"
        )
    return cleaned, None


def _upper(name: str) -> str:
    """Upper-cased one character at a time, like Go's strings.ToUpper: a character whose
    upper case is several characters (``ß`` -> ``SS``) stays as it is, and so stays invalid."""
    return "".join(up if len(up := c.upper()) == 1 else c for c in name)


def normalize_env_passthrough(value: object) -> tuple[tuple[str, ...], list[str]]:
    """Trimmed, upper-cased, deduplicated (first kept) names, and the problems found."""
    if not isinstance(value, list):
        return (), ["envPassthrough must be a list of environment variable names"]
    names: list[str] = []
    problems: list[str] = []
    for j, entry in enumerate(value):
        if not isinstance(entry, str):
            problems.append(f"envPassthrough[{j}]: must be a string, got {type(entry).__name__}")
            continue
        name = _upper(entry.strip())
        if not name:
            problems.append(f"envPassthrough[{j}]: empty name")
        elif not _ENV_NAME.fullmatch(name):
            problems.append(
                f"envPassthrough[{j}]: invalid name {json_quote(entry)} "
                "(must match [A-Z_][A-Z0-9_]*)"
            )
        elif problem := server_env_problem(name):
            problems.append(f"envPassthrough[{j}]: {problem}")
        elif name not in names:
            names.append(name)
    return tuple(names), problems


def _command_hint(command: object) -> str:
    """What to write instead of a missing, empty or mistyped ``command`` (agentcli's own text
    says "at least program name" for all of them, never that it is a list)."""
    if isinstance(command, str) and command.split():
        written = json.dumps(command.split(), ensure_ascii=False)
        return f'command is a list, not a string: "command": {written}'
    shape = 'a list: the program, then its fixed arguments ("command": ["./tools/bin/NAME"])'
    if command is None:
        return f"command is missing; it is {shape}"
    if isinstance(command, list):
        return f"command is {shape}"
    got = {bool: "true/false", dict: "an object", str: "an empty string"}.get(type(command))
    return f"command is {shape}, not {got or 'a number'}"


def _program(command: list[Any], folder: Path, log: ProblemLog, locator: str) -> str | None:
    raw = command[0]
    relative, problem = normalize_command(raw)
    if problem:
        log.error(problem, locator)
        return None
    if relative is None:
        return str(raw)
    program = os.path.normpath(folder / relative)
    if os.name == "nt" and not Path(program).suffix:
        program += ".exe"
    return program


def _timeout(value: object, log: ProblemLog, locator: str) -> float | None:
    """``timeoutSec``: an integer number of seconds; zero or less means the server default.

    agentcli reads it into an int, so a fraction (0.5) fails to load there. Here a fraction is
    served as given, with a notice that the manifest is not portable; any other type is an
    error."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        log.error("timeoutSec must be a whole number of seconds (an integer like 30)", locator)
        return None
    if isinstance(value, float):
        log.notice(
            f"timeoutSec {value:g} is not a whole number of seconds: agentcli itself reads an "
            "integer and refuses this manifest; served here with that deadline",
            locator,
        )
    return float(value) if value > 0 else None


class _File:
    """What every tool of one tools.json shares: its folder, namespace and the environment
    specs already built (one frozen EnvSpec per distinct envPassthrough list, not per tool)."""

    def __init__(self, path: Path, log: ProblemLog) -> None:
        self.folder = path.absolute().parent
        self.namespace = self.folder.name
        self.log = log
        self.envs: dict[tuple[str, ...], EnvSpec] = {}

    def env(self, passthrough: tuple[str, ...]) -> EnvSpec:
        env = self.envs.get(passthrough)
        if env is None:
            env = self.envs[passthrough] = EnvSpec(passthrough=passthrough)
        return env


def _tool(entry: dict[str, Any], i: int, seen: set[str], file: _File) -> ToolSpec | None:
    log, namespace = file.log, file.namespace
    before = log.error_count()
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        log.error("name is required" if not name else "name must be a string", f"tool[{i}]")
        name = None
    source = Source(path=log.path, index=i, format=Format.AGENTCLI)
    locator = source.locator(name)
    if name is not None:
        if name in seen:
            log.error("duplicate name", locator)
        seen.add(name)
    command = entry.get("command")
    program: str | None = None
    if not isinstance(command, list) or not command:
        log.error(f"command must have at least program name; {_command_hint(command)}", locator)
        command = []
    elif bad := [j for j, arg in enumerate(command) if not isinstance(arg, str)]:
        for j in bad:
            log.error(f"command[{j}] must be a string", locator)
    passthrough: tuple[str, ...] = ()
    if "envPassthrough" in entry and entry["envPassthrough"] is not None:
        passthrough, env_problems = normalize_env_passthrough(entry["envPassthrough"])
        for problem in env_problems:
            log.error(problem, locator)
    if command and isinstance(command[0], str):
        program = _program(command, file.folder, log, locator)
    timeout_s = _timeout(entry.get("timeoutSec"), log, locator)
    progress = entry.get("progress")
    if progress is not None and not isinstance(progress, bool):
        log.error("progress must be true or false (the tool reports progress)", locator)
    description = entry.get("description", "")
    if not isinstance(description, str):
        log.error("description must be a string", locator)
    schemas = None
    if entry.get("schema") is None:
        schemas = input_schemas(None, "schema", log, locator)
    elif (declared := checked_schema(entry["schema"], "schema", log, locator)) is not None:
        schemas = input_schemas(declared, "schema", log, locator)
    facts = declared_safety(entry.get("annotations"), log, locator)
    unknown_fields(entry, _FIELDS, log, locator, meant=_MEANT)
    if log.error_count() > before or name is None or program is None or schemas is None:
        return None
    assert facts is not None
    return ToolSpec(
        name=sanitize_name(name),
        id=name,
        namespace=namespace,
        title=facts.title,
        description=str(description),
        input_schema=schemas[0],
        runtime_input_schema=schemas[1],
        transport=ExecTransport(
            argv=(program, *command[1:]),
            args_via="stdin",
            stdout="json",
            ok_flag=False,
            env=file.env(passthrough),
            reports_progress=progress is True,
        ),
        timeout_s=timeout_s,
        safety=facts.safety,
        source=source,
    )


def load_agentcli(doc: object, path: Path, log: ProblemLog) -> list[ToolSpec]:
    """Tools of an agentcli manifest already parsed from ``path``; problems go to ``log``."""
    if not isinstance(doc, dict):
        log.error('the manifest must be a JSON object like {"tools": [...]}')
        return []
    entries = doc.get("tools")
    if entries is None:
        return []
    if not isinstance(entries, list):
        log.error("tools must be a list of tool objects")
        return []
    file = _File(path, log)
    seen: set[str] = set()
    tools: list[ToolSpec] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            log.error(f"must be a JSON object, got {type(entry).__name__}", f"tool[{i}]")
            continue
        tool = _tool(entry, i, seen, file)
        if tool is not None:
            tools.append(tool)
    return tools
