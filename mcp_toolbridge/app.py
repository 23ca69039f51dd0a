"""Composition root: settings -> loaded catalog -> a Bridge with its executors.

The CLI verbs and the server share this, so ``mcp-toolbridge call`` runs a tool exactly the
way MCP ``tools/call`` does.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from mcp_toolbridge.bridge import Bridge
from mcp_toolbridge.builtins import BuiltinExecutor, tool_search
from mcp_toolbridge.catalog import Catalog
from mcp_toolbridge.errors import Problem, Severity
from mcp_toolbridge.executors.base import DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT_S
from mcp_toolbridge.executors.exec_tool import ExecToolExecutor
from mcp_toolbridge.executors.http import HttpExecutor
from mcp_toolbridge.loaders import LoadReport, load_paths
from mcp_toolbridge.model import Format, ToolSpec
from mcp_toolbridge.search import SearchIndex
from mcp_toolbridge.secrets import SecretResolver

BUILTIN_SPECS: tuple[ToolSpec, ...] = (tool_search.SPEC,)
"""The locked tools this server provides, reserved in every catalog it serves."""


def bundled_manifests() -> Path:
    """The example catalog: inside the installed package, or beside it in a checkout."""
    packaged = Path(__file__).parent / "examples"
    return packaged if packaged.is_dir() else Path(__file__).parent.parent / "manifests"


@dataclass(frozen=True)
class Settings:
    paths: Sequence[Path] = ()
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    max_concurrency: int | None = None
    secrets_file: Path | None = None
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))

    def manifest_paths(self) -> list[Path]:
        return list(self.paths) if self.paths else [bundled_manifests()]


@dataclass(frozen=True)
class Loaded:
    """A catalog and everything found while building it."""

    catalog: Catalog
    report: LoadReport
    problems: list[Problem]
    """Load and catalog problems, notices included."""

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity is Severity.ERROR]


def load_catalog(settings: Settings, builtins: Sequence[ToolSpec] = ()) -> Loaded:
    report = load_paths(settings.manifest_paths(), environ=settings.environ)
    catalog, problems = Catalog.build([*builtins, *report.tools])
    return Loaded(catalog, report, [*report.problems, *problems])


@asynccontextmanager
async def open_bridge(settings: Settings, catalog: Catalog) -> AsyncIterator[Bridge]:
    """A Bridge over ``catalog`` with every executor; shared clients close on exit."""
    secrets = SecretResolver.from_sources(settings.environ, settings.secrets_file)
    index = SearchIndex.build(s for s in catalog.specs() if s.source.format is not Format.BUILTIN)
    builtins = BuiltinExecutor([tool_search.ToolSearch(index, catalog)])
    async with HttpExecutor.open() as http:
        yield Bridge(
            catalog,
            {
                "exec": ExecToolExecutor(environ=settings.environ),
                "http": http,
                "builtin": builtins,
            },
            default_timeout_s=settings.timeout_s,
            max_output_bytes=settings.max_output_bytes,
            max_concurrency=settings.max_concurrency,
            secrets=secrets,
        )
