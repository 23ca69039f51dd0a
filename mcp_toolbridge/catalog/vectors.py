"""A catalog's tool vectors for the semantic leg, made on first use (``embedding.py`` and
numpy are imported then, not before: building an index costs nothing more)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp_toolbridge.catalog.embedding import Matrix


class CatalogVectors:
    """The unit vectors of a catalog's tool texts (rows in doc order), made once, by the
    first thread that needs them; the texts are dropped then."""

    def __init__(self, texts: Callable[[], Iterable[str]], count: int) -> None:
        """``texts()`` gives the ``count`` tool texts in doc order, one at a time."""
        self._texts: Callable[[], Iterable[str]] | None = texts
        self._count = count
        self._matrix: Matrix | None = None
        self._lock = threading.Lock()

    @property
    def ready(self) -> bool:
        return self._matrix is not None

    def matrix(self) -> Matrix:
        with self._lock:
            if self._matrix is None:
                from mcp_toolbridge.catalog.embedding import embedder

                assert self._texts is not None
                self._matrix = embedder().embed(self._texts(), self._count)
                self._texts = None
            return self._matrix

    def cosines(self, texts: Sequence[str]) -> Matrix:
        """One row per text: its cosine with every tool."""
        from mcp_toolbridge.catalog.embedding import cosines, embedder

        return cosines(self.matrix(), embedder().embed(texts))
