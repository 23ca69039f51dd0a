"""A catalog's tool vectors for the semantic leg, made on first use (``embedding.py`` and
numpy are imported then, not before: building an index costs nothing more)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp_toolbridge.catalog.embedding import Matrix


@dataclass(frozen=True)
class VectorStore:
    """Where a catalog's vectors are kept between runs (the start-up cache): ``read()``
    gives what was stored (or None), ``write(data)`` stores vectors just made."""

    read: Callable[[], bytes | None]
    write: Callable[[bytes], None]


class CatalogVectors:
    """The unit vectors of a catalog's tool texts (rows in doc order), made once, by the
    first thread that needs them; the texts are dropped then."""

    def __init__(self, texts: Callable[[], Iterable[str]], count: int) -> None:
        """``texts()`` gives the ``count`` tool texts in doc order, one at a time."""
        self._texts: Callable[[], Iterable[str]] | None = texts
        self._count = count
        self._matrix: Matrix | None = None
        self._lock = threading.Lock()
        self.store: VectorStore | None = None
        """Read before embedding, written after."""

    @property
    def ready(self) -> bool:
        return self._matrix is not None

    def matrix(self) -> Matrix:
        with self._lock:
            if self._matrix is None:
                from mcp_toolbridge.catalog.embedding import embedder, from_bytes, to_bytes

                stored = self.store.read() if self.store is not None else None
                if stored is not None:
                    self._matrix = from_bytes(stored, self._count)
                if self._matrix is None:
                    assert self._texts is not None
                    self._matrix = embedder().embed(self._texts(), self._count)
                    if self.store is not None:  # on this (worker) thread: 0.1 s at 100k
                        self.store.write(to_bytes(self._matrix))
                self._texts = None
            return self._matrix

    def cosines(self, texts: Sequence[str]) -> Matrix:
        """One row per text: its cosine with every tool."""
        from mcp_toolbridge.catalog.embedding import cosines, embedder

        return cosines(self.matrix(), embedder().embed(texts))
