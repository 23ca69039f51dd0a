"""AgentPM ``agent.json`` (kind ``tool``): one tool per file.

Follows the documented object shape (spec/agentpm-agent-json.txt) and the SDK's runtime
rules and texts (interpreter allow-list, runtime match, required environment variables); the
stale JSON Schema in the AgentPM CLI repository is not used. The optional top-level
``annotations`` object (safety facts; see :mod:`mcp_toolbridge.loaders.safety`) is read too;
the SDK ignores it. ``entrypoint.progress`` (true: the tool reports progress on
``TOOLBRIDGE_PROGRESS_FD``) is ours.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
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

__all__ = ["interpreter_family", "load_agentpm"]

_NAME = re.compile(r"^[a-z][a-z0-9-]{0,63}$")
_VAR = re.compile(r"^[A-Z][A-Z0-9_]*$")
_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
_PYTHON = re.compile(r"^python(3(\.\d+)?)?$")
_RUNTIME_VERSION = re.compile(r"\d+(\.\d+){0,2}")
_ALLOWED = "node|nodejs|python|python3"
_GOES_IN_ARGS = "what follows it goes in args: "
_FIELDS = (
    *("$schema", "kind", "name", "version", "description", "entrypoint", "inputs", "outputs"),
    *("files", "runtime", "environment", "readme", "license", "annotations"),
)
_ENTRYPOINT_FIELDS = ("command", "args", "cwd", "timeout_ms", "env", "progress")
_MEANT = {"schema": "inputs", "parameters": "inputs", "inputSchema": "inputs"}
_MEANT |= {"timeout": "timeout_ms", "timeoutMs": "timeout_ms"}


def interpreter_family(command: str) -> str | None:
    """``"node"`` or ``"python"`` for an interpreter name or path, else None."""
    base = re.split(r"[\\/]", command)[-1].lower()
    base = re.sub(r"\.(exe|cmd|bat)$", "", base)
    if base in ("node", "nodejs"):
        return "node"
    if _PYTHON.match(base):
        return "python"
    return None


def _inside(path: str, folder: Path) -> bool:
    try:
        return os.path.commonpath([path, str(folder)]) == str(folder)
    except ValueError:  # different drives on Windows
        return False


def _str_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _entrypoint(
    value: object, folder: Path, log: ProblemLog
) -> tuple[ExecTransport, float | None, str | None] | None:
    if not isinstance(value, dict):
        log.error(_entrypoint_shape(value, folder))
        return None
    before = log.error_count()
    command = value.get("command")
    args = value.get("args", [])
    extra = args if _str_list(args) else []
    if isinstance(command, list) and command and all(isinstance(c, str) for c in command):
        fix = _runnable(command, folder)
        log.error(
            "entrypoint.command must be a string, the interpreter alone; "
            + (f"{_GOES_IN_ARGS}{fix}" if fix else f"and {_not_runnable(command)}")
        )
        command = None
    elif not isinstance(command, str) or not command.strip():
        log.error(f"entrypoint.command is required ({_ALLOWED}, or an absolute path to one)")
        command = None
    elif interpreter_family(command) is None:  # an absolute path must name one of them too
        words = command.split()
        line = _runnable([*words, *extra], folder) if len(words) > 1 else None
        if line:  # "python3 x.py": a command line in one string
            log.error(f"entrypoint.command must be the interpreter alone; {_GOES_IN_ARGS}{line}")
        else:
            script = _interpreted([command, *extra], folder)
            fix = f"; to run the script, write {_split_entrypoint(script)}" if script else ""
            log.error(
                f"Unsupported agent.json.entrypoint.command {json_quote(command)}. Allowed: "
                f'{_ALLOWED} (or an absolute path to one of them, like "/usr/bin/python3"){fix}'
            )
    if not _str_list(args):
        log.error("entrypoint.args must be a list of strings")
    cwd_raw = value.get("cwd", ".")
    cwd = None
    if not isinstance(cwd_raw, str):
        log.error("entrypoint.cwd must be a string (a folder inside the package)")
    else:
        cwd = os.path.normpath(folder / cwd_raw)
        if not _inside(cwd, folder):
            log.error(f"entrypoint.cwd {json_quote(cwd_raw)} escapes the manifest folder")
    timeout_ms = value.get("timeout_ms")
    if timeout_ms is not None and (
        isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int | float) or timeout_ms <= 0
    ):
        log.error("entrypoint.timeout_ms must be a positive number of milliseconds")
    env = value.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        log.error("entrypoint.env must be an object of string values")
    elif "PATH" in env:
        log.error(f"entrypoint.env: {_SETS_PATH}")
    progress = value.get("progress")
    if progress is not None and not isinstance(progress, bool):
        log.error("entrypoint.progress must be true or false (the tool reports progress)")
    unknown_fields(value, _ENTRYPOINT_FIELDS, log, prefix="entrypoint.", meant=_MEANT)
    if log.error_count() > before or command is None:
        return None
    transport = ExecTransport(
        argv=(command, *args),
        cwd=cwd,
        args_via="stdin",
        stdout="first_json_object",
        ok_flag=True,
        env=EnvSpec(values=dict(env)),
        reports_progress=progress is True,
    )
    return transport, (timeout_ms / 1000 if timeout_ms else None), command


_SCRIPT_INTERPRETERS = {".py": "python3", ".js": "node", ".mjs": "node", ".cjs": "node"}


def _interpreted(words: list[str], folder: Path) -> list[str] | None:
    """``["python3", "count.py", ...]`` for a script named where the interpreter goes
    (``"count.py"``): the interpreter by the file's extension, else by its ``#!`` line (read
    only from a file inside the manifest folder, at most 256 bytes); None when neither says."""
    if not words or interpreter_family(words[0]) is not None:
        return None
    interpreter = _SCRIPT_INTERPRETERS.get(os.path.splitext(words[0])[1].lower())
    path = os.path.normpath(folder / words[0])
    if interpreter is None and _inside(path, folder):
        try:
            with open(path, "rb") as fh:
                first = fh.read(256).split(b"\n", 1)[0]
        except OSError:
            first = b""
        if first.startswith(b"#!"):
            named = [interpreter_family(w) for w in first[2:].decode("utf-8", "replace").split()]
            family = next((f for f in named if f is not None), None)
            interpreter = {"python": "python3", "node": "node"}.get(family or "")
    return [interpreter, *words] if interpreter else None


def _runnable(words: list[str], folder: Path) -> str | None:
    """How to write a command line given as one string or list: the interpreter as
    ``command``, the rest as ``args``; None when its program is no interpreter AgentPM runs
    (``"ruby x.rb"``), rather than a suggestion the loader would refuse in turn."""
    words = _interpreted(words, folder) or words
    return _split_entrypoint(words) if interpreter_family(words[0]) is not None else None


def _not_runnable(words: list[str]) -> str:
    return f"{json_quote(words[0])} is not an interpreter AgentPM runs (allowed: {_ALLOWED})"


def _split_entrypoint(words: list[str]) -> str:
    """``"command": "python3", "args": ["x.py"]`` for ``["python3", "x.py"]``."""
    args = json.dumps(words[1:], ensure_ascii=False)
    return f'"command": {json_quote(words[0])}, "args": {args}'


def _entrypoint_shape(value: object, folder: Path) -> str:
    """The problem with an ``entrypoint`` that is not an object: missing, or a command line
    written as one string (``"python3 x.py"``), which the SDK cannot run either."""
    shape = "an object {command, args, cwd, timeout_ms, env}"
    if value is None:
        return f"entrypoint is required: {shape}"
    words = value.split() if isinstance(value, str) else value
    if isinstance(words, list) and words and all(isinstance(v, str) for v in words):
        kind = "a string" if isinstance(value, str) else "a list"
        fix = _runnable(words, folder)
        if fix:
            return f'entrypoint must be {shape}, not {kind}: write "entrypoint": {{{fix}}}'
        return f"entrypoint must be {shape}, not {kind}; and {_not_runnable(words)}"
    return f"entrypoint must be {shape}"


_SETS_PATH = (
    "a manifest may not set PATH: the sandbox shows every folder on a tool's PATH, and the "
    "folder above a bin folder, so it would show what the policy never granted (found by the "
    "red-team pass of 2026-11-29, 4th); the tool gets the server's PATH"
)


def _environment(
    value: object, supplied: tuple[Mapping[str, str], ...], log: ProblemLog
) -> EnvSpec:
    """Declared variables: defaults become fixed values, every name is passed through.
    ``supplied`` holds what the caller supplies (the entrypoint's fixed env and the server's
    environment), looked up in place rather than merged into a copy per file."""
    if value is None:
        return EnvSpec()
    variables = value.get("vars", {}) if isinstance(value, dict) else None
    if not isinstance(variables, dict):
        log.error("environment.vars must be an object of NAME: {required, description, default}")
        return EnvSpec()
    names: list[str] = []
    defaults: dict[str, str] = {}
    for key, decl in variables.items():
        if not _VAR.match(key):
            log.error(
                f"environment.vars: invalid name {json_quote(key)} (must match ^[A-Z][A-Z0-9_]*$)"
            )
            continue
        if problem := server_env_problem(key):
            log.error(f"environment.vars: {problem}")
            continue
        if not isinstance(decl, dict):
            log.error(
                f"environment.vars.{key} must be an object {{required, description, default}}"
            )
            continue
        default = decl.get("default")
        if default is not None and not isinstance(default, str):
            log.error(f"environment.vars.{key}.default must be a string")
            continue
        if default is not None and key == "PATH":
            log.error(f"environment.vars.PATH.default: {_SETS_PATH}")
            continue
        if "required" in decl and not isinstance(decl["required"], bool):
            log.error(f"environment.vars.{key}.required must be true or false")
            continue
        if "description" in decl and not isinstance(decl["description"], str):
            log.error(f"environment.vars.{key}.description must be a string")
        names.append(key)
        if default is not None:
            defaults[key] = default
        elif decl.get("required") is True and not any(key in env for env in supplied):
            log.error(
                f"Missing environment variable: {key}. {key} is required and has no default value."
                f" Set it where the server starts: export {key}=... in the shell that runs it, or "
                f'"env": {{"{key}": "..."}} in the client\'s entry for the server (Claude Desktop '
                "passes none of the shell's variables; docs/clients.md)"
            )
    return EnvSpec(passthrough=tuple(names), values=defaults)


def _runtime(value: object, command: str | None, log: ProblemLog) -> None:
    """``runtime {type, version}``: the type must match the interpreter family (lint's rule)."""
    if value is None:
        return
    if not isinstance(value, dict):
        log.error('runtime must be an object {type: "python" or "node", version}')
        return
    rtype = value.get("type")
    if rtype not in ("python", "node"):
        log.error('runtime.type must be "python" or "node"')
    elif command is not None and interpreter_family(command) != rtype:
        log.error(f"`runtime.type` should match `entrypoint.command` ({command} vs {rtype})")
    version = value.get("version")
    if version is None:
        return
    if not isinstance(version, str):
        log.error('runtime.version must be a string MAJOR[.MINOR[.PATCH]], like "20" or "3.11"')
    elif not _RUNTIME_VERSION.fullmatch(version):
        log.error(
            f"runtime.version {json_quote(version)} must be MAJOR[.MINOR[.PATCH]], "
            'like "20" or "3.11"'
        )


def _files_hint(doc: dict[str, Any], folder: Path) -> str:
    """``"files": [...]`` naming the files the entrypoint's args name in the package folder,
    or, when none do, an example."""
    entry = doc.get("entrypoint")
    args = entry.get("args") if isinstance(entry, dict) else None
    words: list[str] = args if isinstance(args, list) and _str_list(args) else []
    named = [
        a
        for a in words
        if not a.startswith("-") and _inside(os.path.normpath(folder / a), folder)
        if os.path.isfile(folder / a)
    ]
    if not named:
        return 'for example "files": ["main.py", "src/**"]'
    return "write " + json.dumps({"files": named}, ensure_ascii=False)[1:-1]


def _documentation(doc: dict[str, Any], log: ProblemLog) -> None:
    """``readme`` (a path) and ``license {spdx, file}``: not used to run the tool, but typed."""
    readme = doc.get("readme")
    if readme is not None and not isinstance(readme, str):
        log.error("readme must be a string (the path to the README file)")
    license_ = doc.get("license")
    if license_ is None:
        return
    if not isinstance(license_, dict):
        log.error('license must be an object {spdx: "MIT", file: "LICENSE"}')
        return
    for key in ("spdx", "file"):
        if key in license_ and not isinstance(license_[key], str):
            log.error(f"license.{key} must be a string")


def _identity(doc: dict[str, Any], log: ProblemLog) -> tuple[str | None, str | None, str]:
    name = doc.get("name")
    if name is None:
        log.error("name is required: lower-case letters, digits and '-' (^[a-z][a-z0-9-]{0,63}$)")
    elif not isinstance(name, str) or not _NAME.match(name):
        shown = json_quote(name) if isinstance(name, str) else json_quote(str(name))
        log.error(f"name {shown} must match ^[a-z][a-z0-9-]{{0,63}}$")
        name = None
    version = doc.get("version")
    if version is None:
        log.error("version is required: a SemVer string like 1.2.3 (pre-release/build allowed)")
    elif not isinstance(version, str) or not _SEMVER.match(version):
        shown = json_quote(version) if isinstance(version, str) else json_quote(str(version))
        log.error(f"version {shown} must be a SemVer string like 1.2.3 (pre-release/build allowed)")
        version = None
    description = doc.get("description")
    if not isinstance(description, str):
        log.error("description is required (a string saying what the tool does)")
        description = ""
    elif not description.strip():
        log.notice("`description` should not be empty")
    return name, version, description


def load_agentpm(
    doc: object, path: Path, log: ProblemLog, environ: Mapping[str, str]
) -> list[ToolSpec]:
    """The tool of an ``agent.json`` already parsed from ``path``; problems go to ``log``."""
    if not isinstance(doc, dict):
        log.error('agent.json must be a JSON object with "kind": "tool"')
        return []
    kind = doc.get("kind")
    if kind is None:
        log.error('kind is required ("tool" for a tool package)')
        return []
    if not isinstance(kind, str):
        log.error('kind must be a string ("tool" for a tool package)')
        return []
    if kind != "tool":
        log.notice(f"kind {json_quote(kind)} is not a tool; skipped")
        return []
    folder = Path(os.path.normpath(path.absolute().parent))
    name, version, description = _identity(doc, log)
    entry = _entrypoint(doc.get("entrypoint"), folder, log)
    _runtime(doc.get("runtime"), entry[2] if entry is not None else None, log)
    _documentation(doc, log)
    files = doc.get("files")
    if not _str_list(files) or not files:
        log.error(
            "files must be a non-empty list of paths or globs to package (everything the tool "
            f"needs at runtime, the entrypoint's script too): {_files_hint(doc, folder)}"
        )
    fixed = entry[0].env.values if entry is not None else {}
    env = _environment(doc.get("environment"), (fixed, environ), log)
    for key in ("inputs", "outputs"):
        if key not in doc:
            log.error(f"{key} is required: a JSON Schema object ({{}} for none)")
    schemas = None
    if "inputs" in doc and (inputs := checked_schema(doc["inputs"], "inputs", log)) is not None:
        schemas = input_schemas(inputs, "inputs", log)
    outputs = checked_schema(doc["outputs"], "outputs", log) if "outputs" in doc else None
    declared = declared_safety(doc.get("annotations"), log)
    unknown_fields(doc, _FIELDS, log, meant=_MEANT)
    if log.error_count() or name is None or entry is None or schemas is None:
        return []
    assert declared is not None
    transport, timeout_s, _ = entry
    values = {**env.values, **transport.env.values}
    transport = transport.model_copy(
        update={"env": EnvSpec(passthrough=env.passthrough, values=values)}
    )
    return [
        ToolSpec(
            name=sanitize_name(name),
            id=name,
            namespace=name,
            title=declared.title,
            description=description,
            version=version,
            input_schema=schemas[0],
            runtime_input_schema=schemas[1],
            output_schema=outputs or None,
            transport=transport,
            timeout_s=timeout_s,
            safety=declared.safety,
            source=Source(path=log.path, index=0, format=Format.AGENTPM),
        )
    ]
