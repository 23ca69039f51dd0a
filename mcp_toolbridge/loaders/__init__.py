"""Manifest loaders: agentcli ``tools.json``, AgentPM ``agent.json``, Runloop ``tools.json``
v1 and Runloop bundles (``manifest.toml``), each normalized into :class:`ToolSpec` records.

:func:`load_paths` takes files and folders (walked recursively, sorted) and returns one
:class:`LoadReport` holding every tool that loaded cleanly and every problem found in every
file; nothing stops at the first error.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mcp_toolbridge.errors import ErrorCode
from mcp_toolbridge.loaders.agentcli import load_agentcli
from mcp_toolbridge.loaders.agentpm import load_agentpm
from mcp_toolbridge.loaders.report import LoadReport, ProblemLog, parse_json, read_bytes
from mcp_toolbridge.loaders.runloop import bundle_tools_path, load_bundle, load_runloop
from mcp_toolbridge.model import Format

__all__ = ["MANIFEST_NAMES", "LoadReport", "detect_format", "load_file", "load_paths"]

MANIFEST_NAMES = ("tools.json", "agent.json", "manifest.toml")
_SKIP_DIRS = frozenset({"node_modules", "__pycache__"})

_FORMAT_HELP = (
    "cannot tell which manifest format this is; accepted shapes: "
    'agentcli tools.json {"tools": [{"name": ..., "command": ["./tools/bin/NAME"]}]}, '
    'AgentPM agent.json {"kind": "tool", "name": ..., "entrypoint": {"command": ...}, ...}, '
    'Runloop tools.json {"version": 1, "tools": [{"id": ..., "transport": {"kind": ...}}]} '
    "(or a Runloop bundle manifest.toml with [artifacts.tools])"
)


def _detect_doc(doc: Any) -> Format | None:
    if not isinstance(doc, dict):
        return None
    if "kind" in doc or "entrypoint" in doc:
        return Format.AGENTPM
    tools = doc.get("tools")
    entries = [t for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []
    if "version" in doc or any("transport" in t or "id" in t for t in entries):
        return Format.RUNLOOP
    if "tools" in doc:
        return Format.AGENTCLI
    return None


def detect_format(path: Path) -> Format | None:
    """The manifest format of ``path`` by its name, else by its JSON content; None when the
    file cannot be read or matches none of the accepted shapes."""
    if path.name == "agent.json":
        return Format.AGENTPM
    if path.name == "manifest.toml":
        return Format.RUNLOOP
    if path.suffix != ".json":
        return None
    log = ProblemLog(str(path))
    data = read_bytes(path, log)
    ok, doc = parse_json(data, log) if data is not None else (False, None)
    return _detect_doc(doc) if ok else None


def load_file(
    path: Path, *, display: str | None = None, environ: Mapping[str, str] | None = None
) -> LoadReport:
    """Load one manifest file; ``display`` is how problems name it (default ``str(path)``)."""
    shown = str(path) if display is None else display
    if path.name == "manifest.toml":
        return load_bundle(path, shown)
    log = ProblemLog(shown)
    if not path.exists():
        log.error("no such file or folder; check the path", code=ErrorCode.MANIFEST_UNREADABLE)
        return log.report([], [])
    if path.is_dir():
        log.error("is a folder, not a manifest file", code=ErrorCode.MANIFEST_UNREADABLE)
        return log.report([], [])
    if path.suffix != ".json":
        log.error(_FORMAT_HELP, code=ErrorCode.MANIFEST_FORMAT)
        return log.report([], [])
    data = read_bytes(path, log)
    if data is None:
        return log.report([], [])
    ok, doc = parse_json(data, log)
    if not ok:
        return log.report([])
    fmt = Format.AGENTPM if path.name == "agent.json" else _detect_doc(doc)
    if fmt is Format.AGENTPM:
        tools = load_agentpm(doc, path, log, os.environ if environ is None else environ)
    elif fmt is Format.RUNLOOP:
        tools = load_runloop(doc, path, log)
    elif fmt is Format.AGENTCLI:
        tools = load_agentcli(doc, path, log)
    else:
        log.error(_FORMAT_HELP, code=ErrorCode.MANIFEST_FORMAT)
        tools = []
    return log.report(tools)


def _walk(folder: Path, shown: str) -> Iterator[tuple[Path, str]]:
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
        rel = os.path.relpath(root, folder)
        for name in sorted(files):
            if name in MANIFEST_NAMES:
                yield Path(root, name), os.path.normpath(os.path.join(shown, rel, name))


# Above this many new container objects a load ends with one full collection (see below).
_COLLECT_AFTER = 100_000


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while manifests are parsed.

    Loading allocates millions of long-lived containers (parsed schemas, models) and almost no
    cyclic garbage. With the collector on, every full collection during a load rescans all of
    them: 4.7 s of a 100,000-tool load went to collections that freed nothing. Paused, a big
    load ends with ONE full collection, so the new objects reach the oldest generation at once
    instead of being rescanned young, middle-aged and then old during the next phases.
    """
    if not gc.isenabled():
        yield
        return
    before = gc.get_count()[0]
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        if gc.get_count()[0] - before > _COLLECT_AFTER:
            gc.collect()


def load_paths(paths: Sequence[Path], *, environ: Mapping[str, str] | None = None) -> LoadReport:
    """Load files and folders (folders walked recursively, sorted; hidden folders,
    node_modules and __pycache__ skipped). A tools.json that a bundle's manifest.toml pins is
    loaded once, through the bundle and its digest check."""
    with _collector_paused():
        return _load_paths(paths, environ)


def _load_paths(paths: Sequence[Path], environ: Mapping[str, str] | None) -> LoadReport:
    reports: list[LoadReport] = []
    found: list[tuple[Path, str]] = []
    for path in paths:
        if path.is_dir():
            walked = list(_walk(path, str(path)))
            if not walked:
                log = ProblemLog(str(path))
                log.error(
                    "no manifests found (looked for tools.json, agent.json and manifest.toml)",
                    code=ErrorCode.MANIFEST_UNREADABLE,
                )
                reports.append(log.report([], []))
            found.extend(walked)
        else:
            found.append((path, str(path)))
    seen: set[Path] = set()
    unique: list[tuple[Path, str]] = []
    for path, shown in found:
        key = path.resolve()
        if key not in seen:
            seen.add(key)
            unique.append((path, shown))
    claimed = {
        target.resolve()
        for path, _ in unique
        if path.name == "manifest.toml"
        and path.is_file()
        and (target := bundle_tools_path(path)) is not None
    }
    for path, shown in unique:
        if path.name != "manifest.toml" and path.resolve() in claimed:
            continue
        reports.append(load_file(path, display=shown, environ=environ))
    return LoadReport.merge(reports)
