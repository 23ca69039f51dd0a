"""What every loader shares: the :class:`LoadReport`, the per-file problem log, JSON reading
with clear errors, and the normalization of declared schemas into MCP input schemas."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from blake3 import blake3

from mcp_toolbridge.cache import Signature, settled_signature, signature
from mcp_toolbridge.errors import ErrorCode, Problem, Severity
from mcp_toolbridge.host import HIDDEN, visible
from mcp_toolbridge.model import SERVER_ENV_PREFIXES, Format, ToolSpec

__all__ = [
    "LoadReport",
    "ProblemLog",
    "checked_schema",
    "input_schemas",
    "json_quote",
    "parse_json",
    "probe_file",
    "read_bytes",
    "recording_reads",
    "unknown_fields",
]


@dataclass(frozen=True)
class LoadReport:
    """The outcome of loading manifests: the tools that loaded cleanly, every problem found
    (notices included), and the display paths of the manifest files read."""

    tools: list[ToolSpec] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    manifests: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity is Severity.ERROR]

    @classmethod
    def merge(cls, reports: list[LoadReport]) -> LoadReport:
        return cls(
            tools=[t for r in reports for t in r.tools],
            problems=[p for r in reports for p in r.problems],
            manifests=[m for r in reports for m in r.manifests],
        )


class ProblemLog:
    """Collects the problems of one manifest file (shown as ``path``)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.problems: list[Problem] = []

    def error(
        self, message: str, locator: str = "", code: ErrorCode = ErrorCode.MANIFEST_INVALID
    ) -> None:
        self.problems.append(Problem(self.path, escaped(message), escaped(locator), code))

    def notice(self, message: str, locator: str = "") -> None:
        self.problems.append(
            Problem(
                self.path,
                escaped(message),
                escaped(locator),
                ErrorCode.MANIFEST_INVALID,
                Severity.NOTICE,
            )
        )

    def error_count(self) -> int:
        return sum(1 for p in self.problems if p.severity is Severity.ERROR)

    def report(self, tools: list[ToolSpec], manifests: list[str] | None = None) -> LoadReport:
        shown = [self._shown(tool) for tool in tools]
        return LoadReport(
            shown, list(self.problems), [self.path] if manifests is None else manifests
        )

    def _shown(self, tool: ToolSpec) -> ToolSpec:
        """``tool`` with the hidden characters of its description and title removed, and of
        every description and title inside its schemas, with a notice for each kind (see
        :data:`HIDDEN`)."""
        description = HIDDEN.sub("", tool.description)
        title = HIDDEN.sub("", tool.title) if tool.title is not None else None
        schemas, nested = _shown_schemas(tool)
        if description == tool.description and title == tool.title and not nested:
            return tool
        where = "" if tool.source.format is Format.AGENTPM else f"tool[{tool.source.index}] "
        locator = f"{where}{json_quote(tool.id)}" if where else ""
        gone = len(tool.description) - len(description)
        gone += len(tool.title or "") - len(title or "")
        if gone:
            self.notice(
                f"{gone} control or hidden character(s) removed from the description or title "
                "(terminal escapes, bidi overrides, tag characters): they hide or rewrite text "
                "for whoever reads it",
                locator,
            )
        if nested:
            self.notice(
                "control or hidden characters removed from "
                f"{nested} description(s) or title(s) inside its input or output schema "
                "(terminal escapes, bidi overrides, tag characters): clients show them to the "
                "model as they show the tool's own",
                locator,
            )
        return tool.model_copy(update={"description": description, "title": title, **schemas})


def _shown_schemas(tool: ToolSpec) -> tuple[dict[str, Any], int]:
    """The schemas of ``tool`` that carry hidden characters in a description or title, cleaned
    (by field name), and how many such texts the served schemas (input, output) had."""
    from mcp_toolbridge.schemas import cleaned_texts

    def clean(text: str) -> str:
        return HIDDEN.sub("", text)

    changed: dict[str, Any] = {}
    count = 0
    for name in ("input_schema", "output_schema"):
        schema = getattr(tool, name)
        if schema is not None:
            shown, found = cleaned_texts(schema, clean)
            if found:
                changed[name] = shown
                count += found
    runtime = tool.runtime_input_schema
    if runtime is tool.input_schema or runtime == tool.input_schema:  # usual: no internal field
        if "input_schema" in changed:
            changed["runtime_input_schema"] = changed["input_schema"]
    else:
        shown, found = cleaned_texts(runtime, clean)
        if found:
            changed["runtime_input_schema"] = shown
    return changed, count


def escaped(text: str) -> str:
    """``text`` with every :data:`HIDDEN` character written as its escape (``\\x1b``)."""
    return visible(text)


def unknown_fields(
    value: Mapping[str, Any],
    known: Sequence[str],
    log: ProblemLog,
    locator: str = "",
    *,
    prefix: str = "",
    meant: Mapping[str, str] | None = None,
) -> None:
    """A notice for each key of ``value`` the format does not define, naming the field it was
    probably meant to be. The formats' own loaders ignore such keys, so a misspelt optional
    field (``inputSchema`` for ``schema``, ``timeout`` for ``timeoutSec``) would otherwise
    change the tool without a word: no schema for the model, the server's deadline.
    ``meant`` maps the common slips difflib cannot guess (``parameters`` -> ``schema``)."""
    for key in value:
        if key in known:
            continue
        guess = (meant or {}).get(key)
        if guess is None:
            import difflib  # a typo's: not imported by a start without one

            close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
            guess = close[0] if close else None
        hint = (
            f'did you mean "{prefix}{guess}"?'
            if guess is not None
            else "the fields are " + ", ".join(known)
        )
        log.notice(f"{prefix}{key}: unknown field, ignored; {hint}", locator)


def json_quote(text: str) -> str:
    """Double-quoted like Go's %q for the common cases: backslashes and quotes escaped."""
    return json.dumps(text, ensure_ascii=False)


Read = tuple[str, str, bytes | bool | None, Signature | None]
"""A file a load looked at: ("read", absolute path, BLAKE3 of its bytes or None when it could
not be read, its signature when settled) or ("probe", absolute path, whether it is a file,
None)."""


_reads: ContextVar[list[Read] | None] = ContextVar("reads", default=None)


@contextmanager
def recording_reads() -> Iterator[list[Read]]:
    """Record every file the loaders read or probe inside this block (the inputs a cached
    load must find unchanged to be reused)."""
    reads: list[Read] = []
    token = _reads.set(reads)
    try:
        yield reads
    finally:
        _reads.reset(token)


def probe_file(path: Path) -> bool:
    """``path.is_file()``, recorded (see :func:`recording_reads`)."""
    found = path.is_file()
    reads = _reads.get()
    if reads is not None:
        reads.append(("probe", os.path.abspath(path), found, None))
    return found


def read_bytes(path: Path, log: ProblemLog) -> bytes | None:
    reads = _reads.get()
    if reads is None:
        return _read(path, log)
    try:
        before: Signature | None = signature(os.stat(path))
    except OSError:
        before = None
    data = _read(path, log)
    settled = None
    if data is not None:
        try:
            after: Signature | None = signature(os.stat(path))
        except OSError:
            after = None
        settled = settled_signature(before, after)
    digest = None if data is None else blake3(data).digest()
    reads.append(("read", os.path.abspath(path), digest, settled))
    return data


def _read(path: Path, log: ProblemLog) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        log.error("no such file; check the path", code=ErrorCode.MANIFEST_UNREADABLE)
    except IsADirectoryError:
        log.error("is a directory, not a manifest file", code=ErrorCode.MANIFEST_UNREADABLE)
    except OSError as exc:
        log.error(f"cannot read file: {exc.strerror or exc}", code=ErrorCode.MANIFEST_UNREADABLE)
    return None


def server_env_problem(name: str) -> str | None:
    """Why a manifest may not pass ``name`` through to its tool, or None."""
    if not name.startswith(SERVER_ENV_PREFIXES):
        return None
    return (
        f"{name} is the server's own (TOOLBRIDGE_* and MCP_TOOLBRIDGE_* hold its token, keys, "
        "secrets and settings) and never reaches a tool; a secret reaches only the tools that "
        "declare it (a Runloop tool's secrets)"
    )


def parse_json(data: bytes, log: ProblemLog) -> tuple[bool, Any]:
    """``(True, value)`` or ``(False, None)`` after logging ``invalid JSON: line L column C``."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        log.error(f"not UTF-8 text (byte {exc.start}); save the file as UTF-8")
        return False, None
    try:
        return True, json.loads(text)
    except json.JSONDecodeError as exc:
        log.error(f"invalid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}")
        return False, None
    except RecursionError:  # the parser recurses per nesting level
        log.error("invalid JSON: nested too deeply to parse; flatten the document")
        return False, None


def checked_schema(
    value: object, name: str, log: ProblemLog, locator: str = ""
) -> dict[str, Any] | None:
    """``value`` when it is a valid JSON Schema object; otherwise log ``<name>: ...`` problems."""
    if not isinstance(value, dict):
        kind = "null" if value is None else type(value).__name__
        log.error(f"{name}: must be a JSON Schema object, got {kind}", locator)
        return None
    from mcp_toolbridge.schemas import check_schema  # jsonschema: not for a cached start

    problems = check_schema(value)
    for problem in problems:
        log.error(f"{name}: {problem}", locator)
    return None if problems else value


# Keywords that some MCP clients refuse at the root of a tool's input schema: OpenAI-style
# function parameters must be a plain object schema without them.
_ROOT_ALTERNATIVES = ("oneOf", "anyOf", "allOf", "not", "enum")


def input_schemas(
    declared: dict[str, Any] | None, name: str, log: ProblemLog, locator: str = ""
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """``(model-facing, runtime)`` input schemas; MCP needs an object at the root.

    None (missing) becomes ``{"type": "object"}``; a root without ``type`` gets it in the
    model-facing copy; any other root type is an error naming the field. A root ``oneOf``
    (``anyOf``, ``allOf``, ``not``, ``enum``) is valid JSON Schema and is kept, with a notice:
    some clients reject such a tool.
    """
    from mcp_toolbridge.schemas import model_facing  # jsonschema: not for a cached start

    if declared is None or not declared:
        return {"type": "object"}, {"type": "object"}
    root_type = declared.get("type")
    if root_type is None or root_type == "object":
        facing = model_facing(declared)
    elif isinstance(root_type, list) and "object" in root_type:
        facing = model_facing(declared)
    else:
        log.error(
            f'{name}: the root type must be "object" (MCP passes tool arguments as one JSON '
            f"object), got {json.dumps(root_type)}",
            locator,
        )
        return None
    if root_type != "object":
        facing = {**facing, "type": "object"}
    if found := [key for key in _ROOT_ALTERNATIVES if key in declared]:
        log.notice(
            f"{name}: top-level {'/'.join(found)} passes JSON Schema validation, but some MCP "
            "clients reject it at the root of an input schema (OpenAI-style function "
            "parameters must be a plain object schema); the tool is served as declared",
            locator,
        )
    return facing, declared
