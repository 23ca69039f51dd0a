"""Finding and loading manifests: format detection, the folder walk, bundles' pinned
tools.json files, and the load of many files (in shares with a forked worker when it pays),
with or without the per-file cache (``cache.py``).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from mcp_toolbridge.cache import CacheFolder
from mcp_toolbridge.errors import ErrorCode
from mcp_toolbridge.loaders.agentcli import load_agentcli
from mcp_toolbridge.loaders.agentpm import load_agentpm
from mcp_toolbridge.loaders.cache import (
    FileLoad,
    Manifests,
    absolute,
    load_recorded,
    read_pack,
    unchanged,
)
from mcp_toolbridge.loaders.json_lines import with_lines
from mcp_toolbridge.loaders.parallel import load_in_shares
from mcp_toolbridge.loaders.report import LoadReport, ProblemLog, parse_json, read_bytes
from mcp_toolbridge.loaders.runloop import load_runloop
from mcp_toolbridge.loaders.runloop_bundle import bundle_tools_path, load_bundle
from mcp_toolbridge.model import Format, ToolSpec
from mcp_toolbridge.progress import Meter

MANIFEST_NAMES = ("tools.json", "agent.json", "manifest.toml")
_SKIP_DIRS = frozenset({"node_modules", "__pycache__"})

_FORMAT_HELP = (
    "cannot tell which manifest format this is; accepted shapes: "
    'agentcli tools.json {"tools": [{"name": ..., "command": ["./tools/bin/NAME"]}]}, '
    'AgentPM agent.json {"kind": "tool", "name": ..., "entrypoint": {"command": ...}, ...}, '
    'Runloop tools.json {"version": 1, "tools": [{"id": ..., "transport": {"kind": ...}}]} '
    "(or a Runloop bundle manifest.toml with [artifacts.tools])"
)


_NPM_PACKAGE = (
    "an npm package.json, not a manifest: mcp-toolbridge reads tools.json (agentcli or "
    "Runloop), agent.json (AgentPM) and a Runloop bundle's manifest.toml; name the manifest, "
    "or the folder that holds it"
)


def _detect_doc(doc: Any, name: str) -> Format | None:
    """The format of a parsed document. A file with another name than tools.json needs one of
    the keys that mark a manifest ("tools", "kind", "entrypoint"): a ``version`` alone marks
    a Runloop tools.json only in a file named so."""
    if not isinstance(doc, dict):
        return None
    if "kind" in doc or "entrypoint" in doc:
        return Format.AGENTPM
    if name != "tools.json" and "tools" not in doc:
        return None
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
    return _detect_doc(doc, path.name) if ok else None


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
    fmt = Format.AGENTPM if path.name == "agent.json" else _detect_doc(doc, path.name)
    if fmt is Format.AGENTPM:
        tools = load_agentpm(doc, path, log, os.environ if environ is None else environ)
    elif fmt is Format.RUNLOOP:
        tools = load_runloop(doc, path, log)
    elif fmt is Format.AGENTCLI:
        tools = load_agentcli(doc, path, log)
    else:  # a package.json has a "version" too: it was read as a Runloop tools.json
        help_ = _NPM_PACKAGE if path.name == "package.json" else _FORMAT_HELP
        log.error(help_, code=ErrorCode.MANIFEST_FORMAT)
        tools = []
    if log.problems:  # only then: a clean load never scans the text again
        log.problems = with_lines(log.problems, data.decode("utf-8-sig"))
    return log.report(tools)


def _walk(folder: Path, shown: str) -> Iterator[tuple[str, str, str]]:
    """Manifest files under ``folder``, depth first in sorted order (a folder's own files
    before its subfolders), as (path, display, real path). Hidden folders, node_modules and
    __pycache__ are skipped, and so are links to folders (followed, a link could lead out of
    the tree or round in a circle). The real path is the folder's real path joined with the
    names below it, since only a file itself can still be a link; unreadable folders are
    skipped. Paths are strings: a 100,000-tool catalog can be 10,000 folders, and Path
    objects cost more than the walk itself."""
    base = os.path.normpath(shown)
    stack = [(str(folder), "" if base == "." else base, os.path.realpath(folder))]
    join = _join
    while stack:
        where, display, real = stack.pop()
        try:
            with os.scandir(where) as listing:
                entries = list(listing)
        except OSError:
            continue
        if len(entries) > 1:
            entries.sort(key=lambda entry: entry.name)
        subfolders = []
        for entry in entries:
            name = entry.name
            if entry.is_dir():
                if not entry.is_symlink() and not name.startswith(".") and name not in _SKIP_DIRS:
                    subfolders.append((entry.path, join(display, name), join(real, name)))
            elif name in MANIFEST_NAMES:
                path = entry.path
                resolved = os.path.realpath(path) if entry.is_symlink() else join(real, name)
                yield path, join(display, name), resolved
        if subfolders:
            stack.extend(reversed(subfolders))


def _join(parent: str, name: str) -> str:
    """``os.path.join`` for a plain file name (no separator in it): a third of the cost."""
    if not parent:
        return name
    return parent + name if parent.endswith(os.sep) else parent + os.sep + name


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


TargetOf = Callable[[str], str | None]
"""The real path of the tools.json a bundle's manifest.toml pins (None if none or broken)."""


def _targets() -> TargetOf:
    """:func:`bundle_tools_path`, resolved, once per bundle (a walk asks for each bundle
    twice: from its tools.json and from the manifest.toml itself)."""
    found: dict[str, str | None] = {}

    def target_of(bundle: str) -> str | None:
        if bundle not in found:
            target = bundle_tools_path(Path(bundle))
            found[bundle] = os.path.realpath(target) if target is not None else None
        return found[bundle]

    return target_of


def _through_bundle(
    path: str, shown: str, target_of: TargetOf
) -> tuple[str, str, LoadReport | None]:
    """A tools.json beside a bundle's manifest.toml is loaded through that bundle, so its
    digest is checked even when the tools.json itself was named. A Runloop tools.json that the
    manifest.toml beside it does not pin is refused: Runloop reads tools only through the pin.
    """
    if os.path.basename(path) in ("manifest.toml", "agent.json"):  # agent.json: never Runloop's
        return path, shown, None
    bundle = os.path.join(os.path.dirname(path), "manifest.toml")
    if not os.path.isfile(bundle):
        return path, shown, None
    target = target_of(bundle)
    if target is not None and target == os.path.realpath(path):
        return bundle, os.path.join(os.path.dirname(shown), "manifest.toml"), None
    if detect_format(Path(path)) is not Format.RUNLOOP:
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
        kept = _manifest_files(paths)
        files = [(Path(p), shown) for p, shown in _files(kept)]
        environ = dict(environ) if environ is not None else None
        loaded = iter(load_in_shares(files, partial(_load_shown, environ=environ)))
        return LoadReport.merge(
            [item if isinstance(item, LoadReport) else next(loaded) for item in kept]
        )


def load_manifests(
    paths: Sequence[Path],
    *,
    environ: Mapping[str, str] | None = None,
    cache: CacheFolder | None = None,
    meter: Callable[[int], Meter | None] | None = None,
) -> Manifests:
    """What :func:`load_paths` loads, per file and with each file's inputs recorded; a file
    whose inputs are all unchanged since ``cache`` stored it is taken from there instead of
    loaded (its tools unpickled only when asked for). ``meter(files)`` shows the progress of
    the files that are loaded."""
    with _collector_paused():
        kept = _manifest_files(paths)
        files = _files(kept)
        environ = dict(environ) if environ is not None else None
        current = os.environ if environ is None else environ
        stored = read_pack(cache, paths) if cache is not None else {}
        found: dict[int, FileLoad] = {}
        missing: list[tuple[Path, str]] = []
        for i, (path, shown) in enumerate(files):
            entry = stored.get((absolute(path), shown))
            if entry is not None and unchanged(entry, current):
                entry._reload = partial(_reload, path, shown, environ)
                found[i] = entry
            else:
                missing.append((Path(path), shown))
        load_one = partial(load_recorded, load=load_file, environ=environ, record=cache is not None)
        progress = meter(len(missing)) if meter is not None and missing else None
        fresh = iter(load_in_shares(missing, load_one, progress))
        loads = [found[i] if i in found else next(fresh) for i in range(len(files))]
        again = iter(loads)
        items = [item if isinstance(item, LoadReport) else next(again) for item in kept]
        dirty = bool(missing) or len(stored) != len(found)
        return Manifests(items, list(paths), reused=len(found), dirty=dirty)


def _manifest_files(paths: Sequence[Path]) -> list[tuple[str, str] | LoadReport]:
    """The manifest files to load, in order, as (path, display), or the problems found
    instead of one."""
    # In the order given: a file to load (path, display, real path) or a problem already found.
    items: list[tuple[str, str, str] | LoadReport] = []
    seen: set[str] = set()
    target_of = _targets()

    def add(given: str, given_shown: str, real: str | None = None) -> None:
        path, shown, problem = _through_bundle(given, given_shown, target_of)
        if problem is not None:
            items.append(problem)
            return
        key = real if real is not None and path == given else os.path.realpath(path)
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
            add(str(path), str(path))
    claimed = {
        target
        for item in items
        if isinstance(item, tuple)
        and os.path.basename(item[0]) == "manifest.toml"
        and os.path.isfile(item[0])
        and (target := target_of(item[0])) is not None
    }
    return [
        item if isinstance(item, LoadReport) else (item[0], item[1])
        for item in items
        if isinstance(item, LoadReport)
        or os.path.basename(item[0]) == "manifest.toml"
        or item[2] not in claimed
    ]


def _files(kept: list[tuple[str, str] | LoadReport]) -> list[tuple[str, str]]:
    return [item for item in kept if not isinstance(item, LoadReport)]


def _reload(path: str, shown: str, environ: Mapping[str, str] | None) -> list[ToolSpec]:
    return load_file(Path(path), display=shown, environ=environ).tools


def _load_shown(path: Path, shown: str, environ: Mapping[str, str] | None) -> LoadReport:
    return load_file(path, display=shown, environ=environ)
