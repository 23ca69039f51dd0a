"""Catalog: the tools a server publishes, by unique MCP name, with compiled validators."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from mcp_toolbridge.errors import ErrorCode, Problem
from mcp_toolbridge.model import Format, ToolSpec
from mcp_toolbridge.names import LOCKED_TOOL_IDS, NAME_PATTERN
from mcp_toolbridge.schemas import CompiledSchema, compile_schema


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    spec: ToolSpec
    arguments: CompiledSchema
    """Validates call arguments against the model-facing input schema."""
    output: CompiledSchema | None
    """Validates a successful result against the output schema, when the tool declares one."""


def _where(spec: ToolSpec) -> str:
    return f"{spec.source.path}: {spec.source.locator(spec.id)}"


class Catalog:
    """Unique names over every loaded tool. Built once; immutable afterwards."""

    def __init__(self, entries: dict[str, CatalogEntry]) -> None:
        self._entries = entries
        self._by_id = {entry.spec.id: name for name, entry in entries.items()}

    @classmethod
    def build(cls, tools: Iterable[ToolSpec]) -> tuple[Catalog, list[Problem]]:
        """Compile every tool; report names that are reserved, malformed or taken.

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
            output = compile_schema(spec.output_schema) if spec.output_schema is not None else None
            entries[spec.name] = CatalogEntry(spec, compile_schema(spec.input_schema), output)
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
