"""The search index kept between runs, keyed on the ranking configuration.

A cached index is only right for the ranking that built it. :func:`ranking` is the key:
``ranking_config.RANKING_CONFIG`` (the one value naming the fields, constants, analysis and
``RANKING_REVISION`` of the ranking), the stemmer's version, and the source of the modules
that build and query an index (``index.py``, ``index_build.py``, ``text.py``,
``scripts.py``, ``mentions.py``, ``needs.py``, ``evidence.py``), so a change there
invalidates every cached index even when nobody thought to raise ``RANKING_REVISION``.

What is stored is the index's own state (name tables, term ids, posting arrays), without the
analyzer, which a restored index gets fresh; its big tables of names are stored compacted
(``cache.compact``: 100,000 names as one text, not 100,000 pickled strings); see
``cache/folder.py`` for how the file is authenticated.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import anyio
import Stemmer

from mcp_toolbridge.cache import CacheFolder, Compact, compact, digest, expand
from mcp_toolbridge.catalog.index import SearchIndex
from mcp_toolbridge.catalog.ranking_config import RANKING_CONFIG
from mcp_toolbridge.catalog.text import Analyzer, default_analyzer
from mcp_toolbridge.catalog.vectors import VectorStore

__all__ = [
    "DeferredIndex",
    "index_key",
    "is_stored",
    "load_index",
    "ranking",
    "store_index",
    "vector_store",
]

_RANKING_SOURCES = (
    "index.py",
    "index_build.py",
    "ranking_config.py",
    "text.py",
    "scripts.py",
    "mentions.py",
    "needs.py",
    "evidence.py",
)
KIND = "search-index/2"


@cache
def ranking() -> bytes:
    """The ranking configuration, as one digest (see the module docstring)."""
    here = Path(__file__).parent
    sources = []
    for name in _RANKING_SOURCES:
        try:
            sources.append((here / name).read_bytes())
        except OSError:  # installed without sources: the version and constants still count
            sources.append(b"")
    return digest(RANKING_CONFIG, f"PyStemmer {Stemmer.version()}", *sources)


def index_key(catalog_key: bytes) -> str:
    """The cache file of the index of the catalog that ``catalog_key`` identifies."""
    return "index-" + digest(catalog_key, ranking()).hex()[:32] + ".bin"


_NOT_STORED = ("_analyzer", "_vectors")
"""A restored index gets a fresh analyzer, and its vectors from its tools (``embed_from``)."""


def _state(index: SearchIndex) -> dict[str, Any]:
    return {k: v for k, v in vars(index).items() if k not in _NOT_STORED}


def _stored(state: dict[str, Any]) -> dict[str, Compact]:
    return {name: compact(value) for name, value in state.items()}


def load_index(
    folder: CacheFolder, catalog_key: bytes, analyzer: Analyzer | None = None
) -> SearchIndex | None:
    """The index stored for ``catalog_key`` under the current ranking, or None (its semantic
    leg is given by the caller, who has the tools: :meth:`SearchIndex.embed_from`)."""
    stored = folder.read(index_key(catalog_key), KIND)
    if not isinstance(stored, dict):
        return None
    index = SearchIndex(analyzer or default_analyzer())
    if set(stored) != set(_state(index)):  # a layout this code does not know: never guess
        return None
    vars(index).update({name: expand(value) for name, value in stored.items()})
    return index


VECTORS_KIND = "search-vectors/1"


def vector_store(folder: CacheFolder, catalog_key: bytes) -> VectorStore:
    """Where the semantic leg's vectors of this catalog's index are kept: beside the index,
    under the same key, written once they are made (the first search)."""
    name = "vectors-" + index_key(catalog_key).removeprefix("index-")

    def read() -> bytes | None:
        stored = folder.read(name, VECTORS_KIND)
        return stored if isinstance(stored, bytes) else None

    def write(data: bytes) -> None:
        if folder.write(name, VECTORS_KIND, data):
            folder.prune("vectors-", keep=[name], most=8)

    return VectorStore(read, write)


def is_stored(folder: CacheFolder, catalog_key: bytes) -> bool:
    """Whether the cache has a file for this index (whether it is authentic is checked when
    it is read)."""
    return folder.path(index_key(catalog_key)).is_file()


class DeferredIndex:
    """A search index made by ``make()`` in a background thread, so that a server answers
    its first requests while a big index is read back from the cache (0.2 s of CPU at
    100,000 tools): only a tool_search waits for it (:meth:`ready`)."""

    def __init__(self, make: Callable[[], SearchIndex]) -> None:
        self._done = threading.Event()
        self._index: SearchIndex | None = None
        self._error: BaseException | None = None
        threading.Thread(target=self._run, args=(make,), name="search-index", daemon=True).start()

    def _run(self, make: Callable[[], SearchIndex]) -> None:
        try:
            self._index = make()
        except BaseException as exc:  # handed to whoever asks for the index
            self._error = exc
        finally:
            self._done.set()

    async def ready(self) -> SearchIndex:
        """The index, once made (waiting in a worker thread, never on the event loop)."""
        if not self._done.is_set():
            await anyio.to_thread.run_sync(self._done.wait, abandon_on_cancel=True)
        return self.result()

    def result(self) -> SearchIndex:
        """The index, waiting for it here."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._index is not None
        return self._index


def store_index(folder: CacheFolder, catalog_key: bytes, index: SearchIndex) -> None:
    name = index_key(catalog_key)
    folder.write(name, KIND, _stored(_state(index)))
    folder.prune("index-", keep=[name], most=8)
