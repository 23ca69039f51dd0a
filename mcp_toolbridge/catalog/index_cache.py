"""The search index kept between runs, and the ranking configuration it is keyed on.

A cached index is only right for the ranking that built it. :data:`RANKING` names everything
an index's content depends on besides the tools: the BM25F fields and constants, the text
analysis (stop words, abbreviations, the stemmer and its version), and the source of the
modules that build and query it (``index.py``, ``index_build.py``, ``text.py``), so any
change there, deliberate or not, invalidates every cached index without anyone remembering to
bump a number. ``RANKING_VERSION`` is there for a change the source digest cannot see (a new
dependency's behaviour, say).

What is stored is the index's own state (name tables, term ids, posting arrays), without the
analyzer, which a restored index gets fresh; its big tables of names are stored compacted
(``cachefile.compact``: 100,000 names as one text, not 100,000 pickled strings); see
``cachefile`` for how the file is authenticated.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import Stemmer

from mcp_toolbridge.cachefile import CacheFolder, Compact, compact, digest, expand
from mcp_toolbridge.catalog.index import SearchIndex
from mcp_toolbridge.catalog.index_build import FIELDS, K1, MAX_ENUM_VALUES
from mcp_toolbridge.catalog.text import ABBREVIATIONS, STOP_WORDS, Analyzer, default_analyzer

__all__ = ["RANKING_VERSION", "index_key", "load_index", "ranking", "store_index"]

RANKING_VERSION = 1
"""Bump for a ranking change that the digests below cannot see."""
_RANKING_SOURCES = ("index.py", "index_build.py", "text.py")
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
    return digest(
        str(RANKING_VERSION),
        repr(sorted((name, f.weight, f.b) for name, f in FIELDS.items())),
        repr((K1, MAX_ENUM_VALUES)),
        repr(sorted(STOP_WORDS)),
        repr(sorted(ABBREVIATIONS.items())),
        f"PyStemmer {Stemmer.version()}",
        *sources,
    )


def index_key(catalog_key: bytes) -> str:
    """The cache file of the index of the catalog that ``catalog_key`` identifies."""
    return "index-" + digest(catalog_key, ranking()).hex()[:32] + ".bin"


def _state(index: SearchIndex) -> dict[str, Any]:
    return {k: v for k, v in vars(index).items() if k != "_analyzer"}


def _stored(state: dict[str, Any]) -> dict[str, Compact]:
    return {name: compact(value) for name, value in state.items()}


def load_index(
    folder: CacheFolder, catalog_key: bytes, analyzer: Analyzer | None = None
) -> SearchIndex | None:
    """The index stored for ``catalog_key`` under the current ranking, or None."""
    stored = folder.read(index_key(catalog_key), KIND)
    if not isinstance(stored, dict):
        return None
    index = SearchIndex(analyzer or default_analyzer())
    if set(stored) != set(_state(index)):  # a layout this code does not know: never guess
        return None
    vars(index).update({name: expand(value) for name, value in stored.items()})
    return index


def store_index(folder: CacheFolder, catalog_key: bytes, index: SearchIndex) -> None:
    name = index_key(catalog_key)
    folder.write(name, KIND, _stored(_state(index)))
    folder.prune("index-", keep=[name], most=8)
