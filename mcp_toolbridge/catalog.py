"""Catalog: the tools a server publishes, by unique MCP name, with compiled validators.

Validators are compiled lazily: a tool's argument and output validators are built the first
time a call needs them and kept. Building a catalog is then a pass over names, which keeps
start-up with 100,000 tools fast (compiling every validator up front took about 40 µs a
tool for validators most tools never use in a session).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from mcp_toolbridge.errors import ErrorCode, Problem
from mcp_toolbridge.model import Format, ToolSpec
from mcp_toolbridge.names import LOCKED_TOOL_IDS, NAME_PATTERN
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


class Catalog:
    """Unique names over every loaded tool. Built once; immutable afterwards."""

    def __init__(self, entries: dict[str, CatalogEntry]) -> None:
        self._entries = entries
        self._by_id = {entry.spec.id: name for name, entry in entries.items()}

    @classmethod
    def build(cls, tools: Iterable[ToolSpec]) -> tuple[Catalog, list[Problem]]:
        """Register every tool; report names that are reserved, malformed or taken.

        A tool that collides keeps the first declaration; the problem names both sources. The
        locked ids are reserved for built-in tools: a manifest cannot redefine them.
        """
        entries: dict[str, CatalogEntry] = {}
        problems: list[Problem] = []
        for spec in tools:
            locator = spec.source.locator(spec.id)
            builtin = spec.source.format is Format.BUILTIN
            if not NAME_PATTERN.match(spec.name):
                problems.append(
                    Problem(
                        spec.source.path,
                        f'tool name "{spec.name}" must match [A-Za-z0-9_-]{{1,64}}',
                        locator,
                    )
                )
                continue
            if spec.name in LOCKED_TOOL_IDS and not builtin:
                problems.append(
                    Problem(
                        spec.source.path,
                        f'tool name "{spec.name}" is reserved for the locked built-in tool; '
                        "rename the tool",
                        locator,
                        ErrorCode.MANIFEST_DUPLICATE,
                    )
                )
                continue
            taken = entries.get(spec.name)
            if taken is not None:
                problems.append(
                    Problem(
                        spec.source.path,
                        f'tool name "{spec.name}" is already used by {_where(taken.spec)}',
                        locator,
                        ErrorCode.MANIFEST_DUPLICATE,
                    )
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
