"""Finding and loading manifests: format detection, the folder walk, bundles' pinned
tools.json files, and the load of many files (in shares with a forked worker when it pays).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from mcp_toolbridge.errors import ErrorCode
from mcp_toolbridge.loaders.agentcli import load_agentcli
from mcp_toolbridge.loaders.agentpm import load_agentpm
from mcp_toolbridge.loaders.parallel import load_in_shares
from mcp_toolbridge.loaders.report import LoadReport, ProblemLog, parse_json, read_bytes
from mcp_toolbridge.loaders.runloop import bundle_tools_path, load_bundle, load_runloop
from mcp_toolbridge.model import Format

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


def _walk(folder: Path, shown: str) -> Iterator[tuple[Path, str, Path]]:
    """Manifest files under ``folder``, depth first in sorted order (a folder's own files
    before its subfolders), as (path, display, real path). Hidden folders, node_modules and
    __pycache__ are skipped, and so are links to folders (followed, a link could lead out of
    the tree or round in a circle). The real path is the folder's real path joined with the
    names below it, since only a file itself can still be a link; unreadable folders are
    skipped."""
    base = os.path.normpath(shown)
    stack = [(str(folder), "" if base == "." else base, os.path.realpath(folder))]
    while stack:
        where, display, real = stack.pop()
        try:
            with os.scandir(where) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError:
            continue
        subfolders = []
        for entry in entries:
            name = entry.name
            if entry.is_dir():
                if not entry.is_symlink() and not name.startswith(".") and name not in _SKIP_DIRS:
                    subfolders.append(
                        (entry.path, os.path.join(display, name), os.path.join(real, name))
                    )
            elif name in MANIFEST_NAMES:
                path = Path(entry.path)
                resolved = path.resolve() if entry.is_symlink() else Path(real, name)
                yield path, os.path.join(display, name), resolved
        stack.extend(reversed(subfolders))


# Above this many new container objects a load ends by freezing them (see below).
_FREEZE_AFTER = 100_000


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while manifests are parsed.

    Loading allocates millions of long-lived containers (parsed schemas, models) and no cyclic
    garbage at all (measured: a full collection right after a 10,000-tool load finds nothing
    to free). With the collector on, every collection during a load rescans them: 4.7 s of a
    100,000-tool load went to collections that freed nothing. Paused, a big load ends with
    ``gc.freeze()``: its objects move to the permanent generation, which no later collection
    scans (a full collection of them cost 0.13 s at 10,000 tools, and the server would pay it
    again at every full collection while it runs). Frozen objects are still freed by reference
    counting when a reload drops the old catalog.
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
        if gc.get_count()[0] - before > _FREEZE_AFTER:
            gc.freeze()


_UNPINNED = (
    "this Runloop tools.json sits beside a bundle manifest.toml that does not pin it; a bundle "
    "must list it under [artifacts.tools] with its blake3 digest; not loaded"
)


def _through_bundle(path: Path, shown: str) -> tuple[Path, str, LoadReport | None]:
    """A tools.json beside a bundle's manifest.toml is loaded through that bundle, so its
    digest is checked even when the tools.json itself was named. A Runloop tools.json that the
    manifest.toml beside it does not pin is refused: Runloop reads tools only through the pin.
    """
    if path.name in ("manifest.toml", "agent.json"):  # an agent.json is never Runloop's
        return path, shown, None
    bundle = path.parent / "manifest.toml"
    if not bundle.is_file():
        return path, shown, None
    target = bundle_tools_path(bundle)
    if target is not None and target.resolve() == path.resolve():
        return bundle, os.path.join(os.path.dirname(shown), "manifest.toml"), None
    if detect_format(path) is not Format.RUNLOOP:
        return path, shown, None
    log = ProblemLog(shown)
    log.error(_UNPINNED, code=ErrorCode.MANIFEST_DIGEST)
    return path, shown, log.report([])


def load_paths(paths: Sequence[Path], *, environ: Mapping[str, str] | None = None) -> LoadReport:
    """Load files and folders (folders walked recursively, sorted; hidden folders,
    node_modules and __pycache__ skipped). A tools.json that a bundle's manifest.toml pins is
    loaded once, through the bundle and its digest check, even when only the tools.json is
    named; a Runloop tools.json beside a manifest.toml that does not pin it is refused."""
    with _collector_paused():
        return _load_paths(paths, environ)


def _load_paths(paths: Sequence[Path], environ: Mapping[str, str] | None) -> LoadReport:
    # In the order given: a file to load (path, display, real path) or a problem already found.
    items: list[tuple[Path, str, Path] | LoadReport] = []
    seen: set[Path] = set()

    def add(given: Path, given_shown: str, real: Path | None = None) -> None:
        path, shown, problem = _through_bundle(given, given_shown)
        if problem is not None:
            items.append(problem)
            return
        key = real if real is not None and path is given else path.resolve()
        if key not in seen:
            seen.add(key)
            items.append((path, shown, key))

    for path in paths:
        if path.is_dir():
            walked = list(_walk(path, str(path)))
            if not walked:
                log = ProblemLog(str(path))
                log.error(
                    "no manifests found (looked for tools.json, agent.json and manifest.toml)",
                    code=ErrorCode.MANIFEST_UNREADABLE,
                )
                items.append(log.report([], []))
            for found, shown, real in walked:
                add(found, shown, real)
        else:
            add(path, str(path))
    claimed = {
        target.resolve()
        for item in items
        if isinstance(item, tuple)
        and item[0].name == "manifest.toml"
        and item[0].is_file()
        and (target := bundle_tools_path(item[0])) is not None
    }
    kept = [
        item
        for item in items
        if isinstance(item, LoadReport) or item[0].name == "manifest.toml" or item[2] not in claimed
    ]
    files = [(item[0], item[1]) for item in kept if not isinstance(item, LoadReport)]
    environ = dict(environ) if environ is not None else None
    loaded = iter(load_in_shares(files, partial(_load_shown, environ=environ)))
    return LoadReport.merge(
        [item if isinstance(item, LoadReport) else next(loaded) for item in kept]
    )


def _load_shown(path: Path, shown: str, environ: Mapping[str, str] | None) -> LoadReport:
    return load_file(path, display=shown, environ=environ)
