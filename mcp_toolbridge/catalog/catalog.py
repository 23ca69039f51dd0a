"""Catalog: the tools a server publishes, by unique MCP name, with compiled validators.

Validators are compiled lazily: a tool's argument and output validators are built the first
time a call needs them and kept. Building a catalog is then a pass over names, which keeps
start-up with 100,000 tools fast (compiling every validator up front took about 40 µs a
tool for validators most tools never use in a session).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from mcp_toolbridge.errors import ErrorCode, Problem
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.names import KEPT_NAME_PATTERN, NAME_PATTERN, PROXY_TOOL, RESERVED_NAMES
from mcp_toolbridge.schemas import CompiledSchema, compile_schema


class CatalogEntry:
    """One catalog tool: its spec and, compiled on first use, its validators."""

    __slots__ = ("_arguments", "_output", "spec")

    def __init__(self, spec: ToolSpec) -> None:
        self.spec = spec
        self._arguments: CompiledSchema | None = None
        self._output: CompiledSchema | None = None

    @property
    def arguments(self) -> CompiledSchema:
        """Validates call arguments against the model-facing input schema."""
        compiled = self._arguments
        if compiled is None:
            # Two threads racing here compile equal validators; either may be kept.
            compiled = self._arguments = compile_schema(self.spec.input_schema)
        return compiled

    @property
    def output(self) -> CompiledSchema | None:
        """Validates a successful result against the output schema, when the tool declares
        one."""
        schema = self.spec.output_schema
        if schema is None:
            return None
        compiled = self._output
        if compiled is None:
            compiled = self._output = compile_schema(schema)
        return compiled

    def __repr__(self) -> str:
        return f"CatalogEntry({self.spec.name!r})"


def _where(spec: ToolSpec) -> str:
    return f"{spec.source.path}: {spec.source.locator(spec.id)}"


def named_as_written(spec: ToolSpec) -> ToolSpec:
    """``--keep-names``: a manifest tool's MCP name is its manifest id, unsanitized (checked
    against SEP-986 by :meth:`Catalog.build`). Built-in tools keep their names."""
    if spec.is_locked or spec.name == spec.id:
        return spec
    return spec.model_copy(update={"name": spec.id})


def _sanitized(spec: ToolSpec) -> bool:
    return not spec.is_locked and spec.name != spec.id


def _name_problem(spec: ToolSpec, keep_names: bool) -> str | None:
    if keep_names:
        if KEPT_NAME_PATTERN.fullmatch(spec.name):
            return None
        return (
            f'tool id "{spec.name}" cannot be served as written (--keep-names): an MCP tool '
            "name must match [A-Za-z0-9._-]{1,128} (SEP-986); rename the tool, or drop "
            "--keep-names to have the name sanitized"
        )
    if NAME_PATTERN.fullmatch(spec.name):
        return None
    return f'tool name "{spec.name}" must match [A-Za-z0-9_-]{{1,64}}'


class Catalog:
    """Unique names over every loaded tool. Built once; immutable afterwards."""

    def __init__(self, entries: dict[str, CatalogEntry]) -> None:
        self._entries = entries
        self._by_id = {entry.spec.id: name for name, entry in entries.items()}

    @classmethod
    def build(
        cls, tools: Iterable[ToolSpec], *, keep_names: bool = False
    ) -> tuple[Catalog, list[Problem]]:
        """Register every tool; report names that are reserved, malformed or taken.

        Names must match ``[A-Za-z0-9_-]{1,64}``, or with ``keep_names`` (ids served as
        written, see :func:`named_as_written`) SEP-986's ``[A-Za-z0-9._-]{1,128}``. Collisions
        are found on the final names, so two ids that sanitize alike collide. A tool that
        collides keeps the first declaration; the problem names both sources. The locked ids
        and the proxy's name (``call_tool``) are reserved for built-in tools: a manifest
        cannot redefine them.
        """
        entries: dict[str, CatalogEntry] = {}
        problems: list[Problem] = []
        for spec in tools:
            locator = spec.source.locator(spec.id)
            malformed = _name_problem(spec, keep_names)
            if malformed is not None:
                problems.append(Problem(spec.source.path, malformed, locator))
                continue
            if spec.name in RESERVED_NAMES and not spec.is_locked:
                which = "proxy" if spec.name == PROXY_TOOL else "locked"
                problems.append(
                    Problem(
                        spec.source.path,
                        f'tool name "{spec.name}" is reserved for the {which} built-in tool; '
                        "rename the tool",
                        locator,
                        ErrorCode.MANIFEST_DUPLICATE,
                    )
                )
                continue
            taken = entries.get(spec.name)
            if taken is not None:
                message = f'tool name "{spec.name}" is already used by {_where(taken.spec)}'
                if _sanitized(spec) or _sanitized(taken.spec):
                    message += (
                        " (after sanitizing to [A-Za-z0-9_-]); rename one of them, or serve "
                        "with --keep-names if every client accepts dots"
                    )
                problems.append(
                    Problem(spec.source.path, message, locator, ErrorCode.MANIFEST_DUPLICATE)
                )
                continue
            entries[spec.name] = CatalogEntry(spec)
        return cls(entries), problems

    def get(self, name: str) -> CatalogEntry | None:
        return self._entries.get(name)

    def resolve(self, name_or_id: str) -> CatalogEntry | None:
        """Look a tool up by MCP name, or by the id written in its manifest."""
        entry = self._entries.get(name_or_id)
        if entry is None and name_or_id in self._by_id:
            entry = self._entries[self._by_id[name_or_id]]
        return entry

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[CatalogEntry]:
        return iter(self._entries.values())

    @property
    def names(self) -> Sequence[str]:
        return list(self._entries)

    def specs(self) -> list[ToolSpec]:
        return [entry.spec for entry in self._entries.values()]

    def manifest_specs(self) -> list[ToolSpec]:
        """The tools loaded from manifests, in catalog order."""
        return [entry.spec for entry in self._entries.values() if not entry.spec.is_locked]

    def locked_specs(self) -> list[ToolSpec]:
        """The locked tools, in catalog order."""
        return [entry.spec for entry in self._entries.values() if entry.spec.is_locked]
