"""Catalog: the tools a server publishes, by unique MCP name, with compiled validators.

Validators are compiled lazily: a tool's argument and output validators are built the first
time a call needs them and kept. Building a catalog is then a pass over names, which keeps
start-up with 100,000 tools fast (compiling every validator up front took about 40 µs a
tool for validators most tools never use in a session).

A catalog restored from the start-up cache goes one step further: its entries know their name
and whether they are built in, and fetch their spec on first use (:meth:`Catalog.deferred`),
so a start serves 100,000 cached tools without rebuilding the records a session never reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from mcp_toolbridge.errors import ErrorCode, Problem
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.names import KEPT_NAME_PATTERN, NAME_PATTERN, PROXY_TOOL, RESERVED_NAMES

if TYPE_CHECKING:
    from mcp_toolbridge.schemas import CompiledSchema


def _compile(schema: dict[str, Any]) -> CompiledSchema:
    # jsonschema is imported by the first call that validates: a cached start never loads a
    # manifest, and importing it would cost a start ≈ 30 ms.
    from mcp_toolbridge.schemas import compile_schema

    return compile_schema(schema)


class CatalogEntry:
    """One catalog tool: its spec (maybe fetched on first use) and, compiled on first use, its
    validators."""

    __slots__ = ("_arguments", "_fetch", "_output", "_spec", "builtin", "name", "pinned")

    def __init__(self, spec: ToolSpec) -> None:
        self._spec: ToolSpec | None = spec
        self._fetch: Callable[[], ToolSpec] | None = None
        self.name = spec.name
        self.builtin = spec.is_locked
        self.pinned = spec.pinned
        self._arguments: CompiledSchema | None = None
        self._output: CompiledSchema | None = None

    @classmethod
    def deferred(
        cls, name: str, fetch: Callable[[], ToolSpec], *, pinned: bool = False
    ) -> CatalogEntry:
        """A manifest tool whose spec ``fetch()`` gives when first needed."""
        entry = cls.__new__(cls)
        entry._spec = None
        entry._fetch = fetch
        entry.name = name
        entry.builtin = False
        entry.pinned = pinned
        entry._arguments = entry._output = None
        return entry

    @property
    def spec(self) -> ToolSpec:
        spec = self._spec
        if spec is None:
            # Two threads racing here fetch equal specs; either may be kept.
            fetch = self._fetch
            assert fetch is not None
            spec = self._spec = fetch()
        return spec

    @property
    def arguments(self) -> CompiledSchema:
        """Validates call arguments against the model-facing input schema."""
        compiled = self._arguments
        if compiled is None:
            # Two threads racing here compile equal validators; either may be kept.
            compiled = self._arguments = _compile(self.spec.input_schema)
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
            compiled = self._output = _compile(schema)
        return compiled

    def __repr__(self) -> str:
        return f"CatalogEntry({self.name!r})"


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

    def __init__(
        self, entries: dict[str, CatalogEntry], by_id: Mapping[str, str] | None = None
    ) -> None:
        self._entries = entries
        if by_id is None:
            by_id = {entry.spec.id: name for name, entry in entries.items()}
        self._by_id: Mapping[str, str] | None = by_id
        self._ids_later: Callable[[], Mapping[str, str]] | None = None
        self._pending: Mapping[str, object] = {}
        """Deferred manifest tools without an entry yet: name -> where its spec is."""
        self._fetch: Callable[[str, object], ToolSpec] | None = None
        self._builtins: list[str] | None = None
        self._pinned: frozenset[str] = frozenset()

    @classmethod
    def deferred(
        cls,
        builtins: Sequence[CatalogEntry],
        pending: Mapping[str, object],
        fetch: Callable[[str, object], ToolSpec],
        by_id: Callable[[], Mapping[str, str]],
        pinned: Sequence[str] = (),
    ) -> Catalog:
        """A catalog :meth:`build` made before (its names checked, its problems reported),
        restored without reading a manifest tool's spec: ``pending`` maps each manifest
        tool's name, in catalog order after the built-in tools, to where ``fetch(name,
        where)`` finds its spec; ``by_id()`` maps every id to its name (asked for when a
        lookup by id needs it); ``pinned`` names the manifest tools that are pinned. An
        entry is made when a tool is first looked up."""
        catalog = cls({entry.name: entry for entry in builtins}, {})
        catalog._by_id = None
        catalog._ids_later = by_id
        catalog._pending = pending
        catalog._fetch = fetch
        catalog._builtins = [entry.name for entry in builtins]
        catalog._pinned = frozenset(pinned)
        return catalog

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
            reserved = spec.name.lower()
            if reserved in RESERVED_NAMES and not spec.is_locked:
                kind = "proxy" if reserved == PROXY_TOOL else "locked"
                case = (
                    f' "{reserved}" (names that differ only in case are one to a model)'
                    if reserved != spec.name
                    else ""
                )
                problems.append(
                    Problem(
                        spec.source.path,
                        f'tool name "{spec.name}" is reserved for the {kind} built-in tool'
                        f"{case}; rename the tool",
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
        entry = self._entries.get(name)
        if entry is None and name in self._pending:
            fetch = self._fetch
            assert fetch is not None
            made = CatalogEntry.deferred(
                name, partial(fetch, name, self._pending[name]), pinned=name in self._pinned
            )
            # Two threads racing here make equal entries; the first one stored is kept.
            entry = self._entries.setdefault(name, made)
        return entry

    def resolve(self, name_or_id: str) -> CatalogEntry | None:
        """Look a tool up by MCP name, or by the id written in its manifest."""
        entry = self.get(name_or_id)
        if entry is None:
            name = self._ids().get(name_or_id)
            entry = self.get(name) if name is not None else None
        return entry

    def _ids(self) -> Mapping[str, str]:
        by_id = self._by_id
        if by_id is None:
            assert self._ids_later is not None
            by_id = self._by_id = self._ids_later()
        return by_id

    def __contains__(self, name: object) -> bool:
        return name in self._entries or name in self._pending

    def __len__(self) -> int:
        if self._builtins is None:
            return len(self._entries)
        return len(self._builtins) + len(self._pending)

    def __iter__(self) -> Iterator[CatalogEntry]:
        for name in self.names:
            entry = self.get(name)
            assert entry is not None
            yield entry

    @property
    def names(self) -> Sequence[str]:
        if self._builtins is None:
            return list(self._entries)
        return [*self._builtins, *self._pending]

    def builtin_names(self) -> list[str]:
        if self._builtins is not None:
            return list(self._builtins)
        return [name for name, entry in self._entries.items() if entry.builtin]

    def locked_count(self) -> int:
        """How many locked tools are served: the built-in tools without the proxy beside
        tool_search (``call_tool``), which is not one of them."""
        return sum(1 for name in self.builtin_names() if name != PROXY_TOOL)

    def manifest_names(self) -> list[str]:
        """The names of the tools that come from manifests, in catalog order."""
        if self._builtins is not None:
            return list(self._pending)
        return [name for name, entry in self._entries.items() if not entry.builtin]

    def pinned_names(self) -> list[str]:
        """The pinned tools, in catalog order (without reading a restored catalog's
        records)."""
        if self._builtins is None:
            return [name for name, entry in self._entries.items() if entry.pinned]
        pinned = [name for name in self._builtins if self._entries[name].pinned]
        return pinned + [name for name in self._pending if name in self._pinned]

    def ids(self) -> dict[str, str]:
        """Manifest id (or built-in id) -> MCP name, for every tool."""
        return dict(self._ids())

    def specs(self) -> list[ToolSpec]:
        return [entry.spec for entry in self]

    def manifest_specs(self) -> list[ToolSpec]:
        """The tools loaded from manifests, in catalog order (reads every record of a
        restored catalog: ask :meth:`manifest_names` when names will do)."""
        return [self._spec(name) for name in self.manifest_names()]

    def locked_specs(self) -> list[ToolSpec]:
        """The locked tools, in catalog order."""
        return [self._spec(name) for name in self.builtin_names()]

    def _spec(self, name: str) -> ToolSpec:
        entry = self.get(name)
        assert entry is not None, name
        return entry.spec
