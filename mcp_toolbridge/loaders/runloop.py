"""Runloop ``tools.json`` v1 (the bundles that pin it by BLAKE3 are runloop_bundle.py's).

Error texts follow Runloop's loader and bundle audit (spec/runloop-tools-json-v1.txt). Beyond
Runloop, this loader also requires what the spec says is required (the schemas), an absolute
exec command and an absolute http(s) URL, a pin of 64 hex digits for a tools.json inside the
bundle, and resolves ``{"$ref": "schema:ID"}`` schemas from the entry's ``schema_refs`` or
``schemas/<ID>.json`` beside the tools.json. An exec transport's ``progress`` (true: the
tool reports progress on ``TOOLBRIDGE_PROGRESS_FD``) is ours.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mcp_toolbridge.loaders.report import (
    ProblemLog,
    checked_schema,
    input_schemas,
    json_quote,
    parse_json,
    probe_file,
    read_bytes,
    unknown_fields,
)
from mcp_toolbridge.loaders.safety import declared_safety, http_method_facts
from mcp_toolbridge.model import (
    Budget,
    ExecTransport,
    Format,
    HttpTransport,
    RequirementSet,
    Source,
    ToolSpec,
    Transport,
)
from mcp_toolbridge.names import sanitize_name
from mcp_toolbridge.secrets import secret_env_clash

__all__ = ["display_join", "json_shown", "load_runloop"]

Lookup = Callable[[str], dict[str, Any] | None]

_FIELDS = (
    *("id", "description", "transport", "input_schema", "result_schema", "schema_refs"),
    *("capabilities", "secrets", "budget", "requires_confirmation", "observability"),
    "annotations",
)
_MEANT = {"name": "id", "schema": "input_schema", "parameters": "input_schema"}
_MEANT |= dict.fromkeys(("output_schema", "outputSchema", "outputs"), "result_schema")
_TRANSPORT_FIELDS = {
    "exec": ("kind", "command", "args", "progress"),
    "http": ("kind", "method", "url", "headers"),
}


def display_join(display: str, relative: str) -> str:
    """``relative`` to the file shown as ``display``, shown the same way."""
    return os.path.normpath(os.path.join(os.path.dirname(display), relative))


class _SchemaSource:
    """Finds ``schema:ID`` targets for one tools.json; files are read once."""

    def __init__(self, folder: Path, display: str, log: ProblemLog) -> None:
        self.folder = folder
        self.display = display
        self.log = log
        self.files: dict[Path, dict[str, Any]] = {}

    def where(self) -> str:
        return f"schema_refs and {display_join(self.display, 'schemas')}/"

    def _file(self, path: Path, shown: str, locator: str) -> dict[str, Any]:
        if path not in self.files and not self._contained(path, shown, locator):
            self.files[path] = {}
        if path not in self.files:
            sub = ProblemLog(self.log.path)
            data = read_bytes(path, sub)
            ok, doc = parse_json(data, sub) if data is not None else (False, None)
            if ok and not isinstance(doc, dict):
                sub.error("must be a JSON object (a JSON Schema)")
            for problem in sub.problems:
                self.log.error(f"schema file {shown}: {problem.message}", locator)
            self.files[path] = doc if ok and isinstance(doc, dict) else {}
        return self.files[path]

    def _contained(self, path: Path, shown: str, locator: str) -> bool:
        """Whether ``path``, its links followed, is a regular file inside the tools.json's
        folder. A schema file is read by the server, outside any sandbox, and what it holds is
        published in the tool's schema: a manifest that named ``~/.config/gcloud/...`` (any
        JSON object is a schema) or ``/dev/zero`` read it (the red-team pass of 2026-11-29,
        4th)."""
        real, folder = os.path.realpath(path), os.path.realpath(self.folder)
        if os.path.commonpath([real, folder]) != folder:
            self.log.error(
                f"schema file {shown} must stay inside the manifest folder (the tools.json's "
                "folder; links are followed)",
                locator,
            )
            return False
        if os.path.exists(real) and not os.path.isfile(real):
            self.log.error(f"schema file {shown} is not a regular file", locator)
            return False
        return True

    def lookup(self, refs: dict[str, Any], locator: str) -> Lookup:
        def find(ref: str) -> dict[str, Any] | None:
            from mcp_toolbridge.schemas import SCHEMA_REF_PREFIX  # called from bundle_refs

            ident = ref.removeprefix(SCHEMA_REF_PREFIX)
            for key in (ref, ident):
                value = refs.get(key)
                if isinstance(value, dict):
                    return value
                if isinstance(value, str):
                    return self._file(
                        self.folder / value, display_join(self.display, value), locator
                    )
            base = Path(os.path.normpath(self.folder / "schemas"))
            candidate = Path(os.path.normpath(base / f"{ident}.json"))
            if candidate.parent == base and probe_file(candidate):
                shown = display_join(self.display, f"schemas/{ident}.json")
                return self._file(candidate, shown, locator)
            return None

        return find


def _schema(
    entry: dict[str, Any], key: str, find: Lookup, where: str, log: ProblemLog, locator: str
) -> tuple[dict[str, Any] | None, str | None]:
    value = entry.get(key)
    if value is None:
        log.error(f'{key} is required (an inline JSON Schema or {{"$ref": "schema:ID"}})', locator)
        return None, None
    if not isinstance(value, dict):
        return checked_schema(value, key, log, locator), None
    from mcp_toolbridge.schemas import bundle_refs  # jsonschema: not for a cached start

    bundled, root_ref, unresolved = bundle_refs(value, find)
    for ref in unresolved:
        log.error(f"{key}: unresolved schema ref {ref} (looked in {where})", locator)
    if unresolved:
        return None, root_ref
    return checked_schema(bundled, key, log, locator), root_ref


def _str_list(entry: dict[str, Any], key: str, log: ProblemLog, locator: str) -> tuple[str, ...]:
    value = entry.get(key, [])
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        log.error(f"{key} must be a list of strings", locator)
        return ()
    return tuple(value)


def _resolved(command: str, folder: Path) -> str | None:
    """The absolute path a relative exec command names from the tools.json's folder; None
    for a bare name not found there (a program on PATH, whose path the loader does not
    guess)."""
    if os.path.isabs(command):
        return command
    here = os.path.normpath(folder / command)
    return here if "/" in command or os.sep in command or os.path.exists(here) else None


def _absolute(command: str, folder: Path) -> str:
    """What to write for a relative exec command."""
    if (here := _resolved(command, folder)) is not None:
        return (
            f"write {json_quote(here)} (the path {json_quote(command)} names from this "
            "tools.json's folder)"
        )
    return f"write the program's absolute path, as `command -v {command}` prints it"


def _command_list(command: list[Any], folder: Path) -> str:
    """An exec command written as a list: what to write instead. Runloop gives the program
    the path of the arguments file first, then ``args``, so an interpreter and its script
    (``["python3", "tool.py"]``) become the script alone, run by its ``#!`` line."""
    words = [w for w in command if isinstance(w, str)] or ["PROGRAM"]
    script = len(words) > 1 and "." in os.path.basename(words[1]) and words[1][:1] != "-"
    if script:
        words = words[1:]
    program = _resolved(words[0], folder) or (
        os.path.normpath(folder / words[0]) if script else f"/ABSOLUTE/PATH/{words[0]}"
    )
    write = f'"command": {json_quote(program)}'
    if len(words) > 1:
        write += f', "args": {json.dumps(words[1:], ensure_ascii=False)}'
    why = "the program gets the path of the arguments file first, then args"
    if script:
        line = command[0] if os.path.isabs(command[0]) else f"/usr/bin/env {command[0]}"
        why += f"; give the script a #! line (#!{line}) and make it executable"
    return (
        "exec transport command must be a string, the absolute path of one program, not a "
        f"list: write {write} ({why})"
    )


def _transport(value: object, folder: Path, log: ProblemLog, locator: str) -> Transport | None:
    if not isinstance(value, dict):
        log.error(
            'transport is required: {"kind": "exec", "command": ...} or {"kind": "http", ...}',
            locator,
        )
        return None
    kind = value.get("kind")
    if isinstance(kind, str) and kind in _TRANSPORT_FIELDS:
        unknown_fields(value, _TRANSPORT_FIELDS[kind], log, locator, prefix="transport.")
    if kind == "exec":
        command = value.get("command")
        args = value.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            log.error("exec transport args must be a list of strings", locator)
            args = None
        progress = value.get("progress")
        if progress is not None and not isinstance(progress, bool):
            log.error("exec transport progress must be true or false", locator)
            args = None
        if isinstance(command, list) and command:
            log.error(_command_list(command, folder), locator)
        elif not isinstance(command, str) or not command.strip():
            log.error("exec transport requires a command", locator)
        elif not os.path.isabs(command):
            log.error(
                f"exec transport command must be an absolute path (got {json_quote(command)}): "
                + _absolute(command, folder),
                locator,
            )
        elif args is not None:
            return ExecTransport(
                argv=(command, *args),
                args_via="file",
                stdout="json",
                ok_flag=False,
                reports_progress=progress is True,
            )
        return None
    if kind == "http":
        method, url, headers = value.get("method"), value.get("url"), value.get("headers", {})
        failed = False
        if not isinstance(method, str) or not method.strip():
            log.error("http transport requires a method", locator)
            failed = True
        if not isinstance(url, str) or not url.strip():
            log.error("http transport requires a url", locator)
            failed = True
        elif urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).netloc:
            log.error(
                "http transport url must be an absolute http:// or https:// URL "
                f"(got {json_quote(url)})",
                locator,
            )
            failed = True
        if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
            log.error("http transport headers must be an object of string values", locator)
            failed = True
        if failed:
            return None
        return HttpTransport(method=str(method).strip().upper(), url=str(url), headers=headers)
    shown = json_quote(kind) if isinstance(kind, str) else "missing"
    log.error(f'unknown transport.kind {shown} (supported kinds: "exec", "http")', locator)
    return None


_NO_REQUIREMENTS = RequirementSet()


def _derived_safety(
    transport: Transport, capabilities: tuple[str, ...], confirm: bool | None
) -> dict[str, bool]:
    """The safety facts a Runloop entry's own fields declare (docs/manifests.md, "Safety
    facts"): the http method, network and write capability families, requires_confirmation."""
    facts: dict[str, bool] = {}
    if isinstance(transport, HttpTransport):
        facts.update(http_method_facts(transport.method))
        facts["open_world"] = True
    families = {cap.partition(":")[0] for cap in capabilities if ":" in cap}
    if "net" in families:
        facts["open_world"] = True
    if "fs.write" in families:
        facts["read_only"] = False
    if confirm is not None:
        facts["requires_confirmation"] = confirm
    return facts


def _requires(capabilities: tuple[str, ...]) -> RequirementSet:
    if not capabilities:
        return _NO_REQUIREMENTS
    net: list[str] = []
    reads: list[str] = []
    writes: list[str] = []
    other: list[str] = []
    for cap in capabilities:
        family, _, arg = cap.partition(":")
        bucket = {"net": net, "fs.read": reads, "fs.write": writes}.get(family) if arg else None
        (bucket if bucket is not None else other).append(arg if bucket is not None else cap)
    return RequirementSet(
        net_hosts=tuple(net),
        fs_read=tuple(reads),
        fs_write=tuple(writes),
        capabilities=tuple(other),
    )


_PORTED = re.compile(r"net:(?:\[(?P<v6>[^\]]+)\]|(?P<host>[^:\[\]]+)):\d+")


def _net_ports(capabilities: tuple[str, ...], log: ProblemLog, locator: str) -> None:
    """``net:HOST`` names a host; a port after it would match no URL's host, so the tool
    would never be served, with nothing in the manifest looking wrong."""
    for j, cap in enumerate(capabilities):
        if ported := _PORTED.fullmatch(cap):
            host = ported["v6"] or ported["host"]
            log.error(
                f"capabilities[{j}] {json_quote(cap)}: net:HOST names a host without a port "
                f"(a host is granted on every port); write {json_quote('net:' + host)}",
                locator,
            )


def _extras(entry: dict[str, Any], log: ProblemLog, locator: str) -> dict[str, Any]:
    """Budget, confirmation and tags: the optional fields."""
    out: dict[str, Any] = {}
    budget = entry.get("budget")
    if budget is not None:
        tokens = budget.get("tokens") if isinstance(budget, dict) else None
        usd = budget.get("usd") if isinstance(budget, dict) else None
        if (
            not isinstance(budget, dict)
            or (tokens is not None and (type(tokens) is not int or tokens < 0))
            or (
                usd is not None
                and (isinstance(usd, bool) or not isinstance(usd, int | float) or usd < 0)
            )
        ):
            log.error(
                "budget must be {tokens?: non-negative integer, usd?: non-negative number}", locator
            )
        else:
            out["budget"] = Budget(tokens=tokens, usd=usd)
    confirm = entry.get("requires_confirmation")
    if confirm is not None and not isinstance(confirm, bool):
        log.error("requires_confirmation must be true or false", locator)
    out["confirm"] = confirm
    observability = entry.get("observability") or {}
    if not isinstance(observability, dict):
        log.error("observability must be an object {tags: [...]}", locator)
        observability = {}
    out["tags"] = _str_list(observability, "tags", log, locator)
    return out


def _tool(
    entry: dict[str, Any], i: int, seen: set[str], schemas: _SchemaSource, namespace: str
) -> ToolSpec | None:
    log = schemas.log
    before = log.error_count()
    raw_id = entry.get("id")
    tool_id = raw_id.strip() if isinstance(raw_id, str) else ""
    locator = f'tool[{i}] "{tool_id}"' if tool_id else f"tool[{i}]"
    if raw_id is None:
        log.error('id is missing: a stable identifier such as "mail.smtp_send"', locator)
    elif not isinstance(raw_id, str):
        log.error("id must be a string", locator)
    elif not tool_id:
        log.error("tool id cannot be empty", locator)
    elif tool_id in seen:
        log.error("duplicate id", locator)
    seen.add(tool_id)
    description = entry.get("description")
    if description is None:
        log.error("description is missing: a short summary of what the tool does", locator)
    elif not isinstance(description, str):
        log.error("description must be a string (a short summary of what the tool does)", locator)
    elif not description.strip():
        log.error("description cannot be empty", locator)
    transport = _transport(entry.get("transport"), schemas.folder, log, locator)
    refs = entry.get("schema_refs") or {}
    if not isinstance(refs, dict) or not all(isinstance(v, dict | str) for v in refs.values()):
        log.error(
            "schema_refs must map schema ids to inline schemas or relative file paths", locator
        )
        refs = {}
    find = schemas.lookup(refs, locator)
    declared_in, in_ref = _schema(entry, "input_schema", find, schemas.where(), log, locator)
    declared_out, out_ref = _schema(entry, "result_schema", find, schemas.where(), log, locator)
    facing = (
        input_schemas(declared_in, "input_schema", log, locator)
        if declared_in is not None
        else None
    )
    capabilities = _str_list(entry, "capabilities", log, locator)
    _net_ports(capabilities, log, locator)
    secrets = _str_list(entry, "secrets", log, locator)
    for clash in filter(None, map(secret_env_clash, secrets)):
        log.error(f"secrets: {clash}", locator)
    extras = _extras(entry, log, locator)
    confirm = extras["confirm"] if isinstance(extras["confirm"], bool) else None
    derived = _derived_safety(transport, capabilities, confirm) if transport else None
    declared = declared_safety(entry.get("annotations"), log, locator, derived)
    unknown_fields(entry, _FIELDS, log, locator, meant=_MEANT)
    if log.error_count() > before or transport is None or facing is None or declared is None:
        return None
    return ToolSpec(
        name=sanitize_name(tool_id),
        id=tool_id,
        namespace=namespace,
        title=declared.title,
        description=str(description).strip(),
        input_schema=facing[0],
        runtime_input_schema=facing[1],
        output_schema=declared_out or None,
        input_schema_ref=in_ref,
        output_schema_ref=out_ref,
        transport=transport,
        requires=_requires(capabilities),
        safety=declared.safety,
        secrets=secrets,
        tags=extras["tags"],
        budget=extras.get("budget"),
        source=Source(path=log.path, index=i, format=Format.RUNLOOP),
    )


def load_runloop(
    doc: object, path: Path, log: ProblemLog, namespace: str | None = None
) -> list[ToolSpec]:
    """Tools of a Runloop tools.json already parsed from ``path``; problems go to ``log``."""
    if not isinstance(doc, dict):
        log.error('tools.json must be a JSON object like {"version": 1, "tools": [...]}')
        return []
    version = doc.get("version")
    if version is None:
        log.error("tools.json version is missing (expected 1)")
        return []
    if type(version) is not int or version != 1:  # Runloop reads an unsigned integer
        log.error(f"unsupported tools.json version {json_shown(version)} (expected 1)")
        return []
    entries = doc.get("tools")
    if entries is None:  # missing means no attachments
        entries = []
    if not isinstance(entries, list):
        log.error("tools must be a list of tool objects")
        return []
    folder = path.absolute().parent
    schemas = _SchemaSource(folder, log.path, log)
    seen: set[str] = set()
    tools: list[ToolSpec] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            log.error(f"must be a JSON object, got {type(entry).__name__}", f"tool[{i}]")
        elif (tool := _tool(entry, i, seen, schemas, namespace or folder.name)) is not None:
            tools.append(tool)
    return tools


def json_shown(value: object) -> str:
    """A scalar as written in JSON (``"1"``, ``1.0``, ``true``); other values by their type."""
    if isinstance(value, str):
        return json_quote(value[:40] + ("…" if len(value) > 40 else ""))
    if value is None or isinstance(value, bool | int | float):
        return json.dumps(value)
    return f"of type {type(value).__name__}"
