"""Loaded manifests kept between runs: one entry per manifest file, reused while every input
of that file is unchanged.

A file's inputs are what loading it looked at, recorded while it loads
(``report.recording_reads``): the bytes of every file read (the manifest, a bundle's pinned
tools.json, schema files), whether each file probed for exists, and the environment
variables read (AgentPM checks that required variables are set). An entry is reused only
when all of them are as recorded, checked by hashing the files again (BLAKE3), so a changed,
added or removed manifest or schema file is always loaded afresh, and alone. A file that had
settled when it was read (unchanged for 2 s) is not hashed again while its inode, size,
modification and change times are the same (a write always moves the change time, which
cannot be set back); git decides "unchanged" the same way. The entry holds
the file's problems and manifests as objects, and its tools pickled: a big catalog whose
serving state is cached too (runtime) never unpickles the tools it does not use.

The entries of one set of paths given to the loader live in one file of the cache folder
(``specs-<digest of the paths>.bin``); see ``cache/folder.py`` for how it is authenticated.
"""

from __future__ import annotations

import os
import pickle
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_toolbridge.cache import BlobPlace, Blobs, CacheFolder, digest, unchanged_file
from mcp_toolbridge.errors import Problem
from mcp_toolbridge.loaders.report import LoadReport, Read, recording_reads
from mcp_toolbridge.model import ToolSpec

__all__ = ["FileLoad", "Manifests", "Probed", "load_recorded", "read_pack", "unchanged"]

KIND = "manifest-specs/1"
FileKey = tuple[str, str]
"""(absolute path, display): what names a file's entry."""
EnvRead = tuple[str, str | None]
"""An environment variable a load read, and its value then (None: unset)."""


class Probed(Mapping[str, str]):
    """An environment that remembers which variables were read, and their values."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ
        self.read: dict[str, str | None] = {}
        self.listed = False
        """True when the whole environment was walked: the load depends on all of it."""

    def __getitem__(self, name: str) -> str:
        value = self._environ.get(name)
        self.read[name] = value
        if value is None:
            raise KeyError(name)
        return value

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        value = self._environ.get(name)
        self.read[name] = value
        return value is not None

    def __iter__(self) -> Iterator[str]:
        self.listed = True
        return iter(self._environ)

    def __len__(self) -> int:
        self.listed = True
        return len(self._environ)


@dataclass
class FileLoad:
    """One manifest file loaded (or taken from the cache): what it yields and what it read."""

    key: FileKey
    reads: tuple[Read, ...]
    env: tuple[EnvRead, ...]
    problems: list[Problem]
    manifests: list[str]
    count: int
    """How many tools it yields."""
    cacheable: bool
    _tools: list[ToolSpec] | None = None
    _blob: bytes | None = field(default=None, repr=False)
    """Its tools pickled, as a forked loader sends them back."""
    fingerprint: bytes = b""
    """What its tools are a function of: the file, everything it read, the environment."""
    place: BlobPlace | None = None
    """Where its pickled tools are in the cache file it was read from."""
    _blobs: Blobs | None = field(default=None, repr=False)
    _reload: Callable[[], list[ToolSpec]] | None = field(default=None, repr=False)
    """Loads the file again, should its stored tools fail their integrity check."""
    sources: tuple[tuple[str, int], ...] = ()
    """How many of its tools each source file (as its tools name it) gave."""

    def __post_init__(self) -> None:
        if not self.fingerprint:
            parts: list[bytes | str] = [*self.key]
            for kind, path, value, _ in self.reads:
                parts += [kind, path, repr(value)]
            for name, env_value in self.env:
                parts += [name, repr(env_value)]
            self.fingerprint = digest(*parts)

    def tools(self) -> list[ToolSpec]:
        """Its tools, unpickled on first use."""
        if self._tools is None:
            data = self._stored()
            if data is not None:
                self._tools = pickle.loads(data)
            else:
                assert self._reload is not None
                self._tools = self._reload()
        return self._tools

    def _stored(self) -> bytes | None:
        if self._blob is not None:
            return self._blob
        if self._blobs is not None and self.place is not None:
            return self._blobs.get(self.place)
        return None

    def report(self) -> LoadReport:
        return LoadReport(self.tools(), list(self.problems), list(self.manifests))

    def blob(self) -> bytes:
        """Its tools pickled (for the cache file)."""
        data = self._stored() if self._tools is None else self._blob
        if data is None:
            data = self._blob = pickle.dumps(self.tools(), protocol=pickle.HIGHEST_PROTOCOL)
        return data

    def stored_at(self, place: BlobPlace) -> FileLoad:
        """This entry as a cache file holds it: its tools at ``place`` in the blob area."""
        return FileLoad(
            self.key,
            self.reads,
            self.env,
            self.problems,
            self.manifests,
            self.count,
            self.cacheable,
            fingerprint=self.fingerprint,
            place=place,
            sources=self.sources,
        )

    def __getstate__(self) -> dict[str, Any]:
        """Pickled with its tools pickled on their own (so that reading it back does not
        unpickle them), or, as a cache file holds it, with their place only."""
        state = dict(self.__dict__)
        state["_blob"] = None if self.place is not None else self.blob()
        state["_tools"] = state["_blobs"] = state["_reload"] = None
        return state


LoadOne = Callable[[Path, str], LoadReport]


def absolute(path: str | Path) -> str:
    """``os.path.abspath``, skipped for a path that is already absolute and normal (as the
    folder walk gives them): the key of a file's entry."""
    text = os.fspath(path)
    if os.sep == "/" and text.startswith("/") and "/." not in text and "//" not in text:
        return text
    return os.path.abspath(text)


def load_recorded(
    path: Path,
    shown: str,
    load: Callable[..., LoadReport],
    environ: Mapping[str, str] | None,
    record: bool = True,
) -> FileLoad:
    """``load(path, display=shown, environ=...)`` with its inputs recorded (unless not
    ``record``: the result is then not cacheable)."""
    main = absolute(path)
    if not record:
        report = load(path, display=shown, environ=environ)
        return FileLoad(
            (main, shown),
            (),
            (),
            report.problems,
            report.manifests,
            len(report.tools),
            False,
            _tools=report.tools,
            sources=_sources(report.tools),
        )
    probed = Probed(os.environ if environ is None else environ)
    with recording_reads() as reads:
        report = load(path, display=shown, environ=probed)
    # Only a file that was read can be cached: its digest is what says it is unchanged.
    cacheable = not probed.listed and any(
        kind == "read" and where == main and value is not None for kind, where, value, _ in reads
    )
    return FileLoad(
        key=(main, shown),
        reads=tuple(reads),
        env=tuple(sorted(probed.read.items())),
        problems=report.problems,
        manifests=report.manifests,
        count=len(report.tools),
        cacheable=cacheable,
        _tools=report.tools,
        sources=_sources(report.tools),
    )


def _sources(tools: Sequence[ToolSpec]) -> tuple[tuple[str, int], ...]:
    return tuple(Counter(spec.source.path for spec in tools).items())


def unchanged(entry: FileLoad, environ: Mapping[str, str]) -> bool:
    """Whether every input ``entry`` recorded is still as it was."""
    for name, set_to in entry.env:
        if environ.get(name) != set_to:
            return False
    for kind, path, value, settled in entry.reads:
        if kind == "read":
            if not unchanged_file(path, value, settled):
                return False
        elif os.path.isfile(path) != value:
            return False
    return True


def pack_name(paths: Sequence[Path]) -> str:
    """The cache file of the manifests of ``paths`` (as given, made absolute)."""
    return "specs-" + digest(*(os.path.abspath(p) for p in paths)).hex()[:24] + ".bin"


def read_pack(cache: CacheFolder, paths: Sequence[Path]) -> dict[FileKey, FileLoad]:
    """The entries stored for ``paths``; their tools are read from the file when used."""
    found = cache.read_with_blobs(pack_name(paths), KIND)
    if found is None or not isinstance(found[0], dict):
        return {}
    entries: dict[FileKey, FileLoad] = found[0]
    for entry in entries.values():
        entry._blobs = found[1]
    return entries


@dataclass
class Manifests:
    """The manifests of the paths given, in order: a loaded (or cached) file, or the problem
    found instead of one (a folder without manifests, an unpinned tools.json)."""

    items: list[FileLoad | LoadReport]
    paths: list[Path]
    reused: int
    """How many files came from the cache."""
    dirty: bool
    """Whether the cache differs from what is current (a file was loaded, or one it held is
    gone)."""

    def files(self) -> list[FileLoad]:
        return [item for item in self.items if isinstance(item, FileLoad)]

    def report(self) -> LoadReport:
        """Everything, as :func:`load_paths` gives it (every tool unpickled)."""
        return LoadReport.merge(
            [item.report() if isinstance(item, FileLoad) else item for item in self.items]
        )

    @property
    def problems(self) -> list[Problem]:
        return [p for item in self.items for p in item.problems]

    @property
    def manifests(self) -> list[str]:
        return [m for item in self.items for m in item.manifests]

    def declared_sources(self) -> Counter[str]:
        """How many tools each source file (as tools name it) gave, without reading them."""
        found: Counter[str] = Counter()
        get = found.get
        for item in self.items:
            pairs = item.sources if isinstance(item, FileLoad) else _sources(item.tools)
            for path, count in pairs:
                found[path] = get(path, 0) + count
        return found

    @property
    def tool_count(self) -> int:
        return sum(
            item.count if isinstance(item, FileLoad) else len(item.tools) for item in self.items
        )

    def fingerprint(self) -> bytes | None:
        """What the tools and problems are a function of (with this package's version); None
        when some file cannot be cached (its inputs were not all recorded)."""
        parts: list[bytes | str] = []
        for item in self.items:
            if isinstance(item, FileLoad):
                if not item.cacheable:
                    return None
                parts.append(item.fingerprint)
            else:
                parts.append(repr(item.problems))
        return digest(*parts)

    def store(self, cache: CacheFolder) -> None:
        """Write the cache of these paths, when it differs from what is current."""
        if not self.dirty:
            return
        name = pack_name(self.paths)
        files = [f for f in self.files() if f.cacheable]
        blobs = [f.blob() for f in files]
        places = cache.blob_places(blobs)
        if places is None:
            return
        entries = {f.key: f.stored_at(place) for f, place in zip(files, places, strict=True)}
        cache.write(name, KIND, entries, blobs)
        cache.prune("specs-", keep=[name], most=8)
