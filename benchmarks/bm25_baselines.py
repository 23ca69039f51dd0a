"""Plain BM25 baselines for benchmarks/toolsearch.py: one field per tool, scored exhaustively.

Each tool is one document: its split name (once or twice), its namespace, description and
parameter texts, analysed by the same ``Analyzer`` as the product. ``BM25_VARIANTS`` are the
standard settings reported against: the name once or twice, k1 in {0.9, 1.2, 1.5, 2.0}, b in
{0.5, 0.75, 0.9}; a set's baseline is the best of them, per metric.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from itertools import product

from mcp_toolbridge.catalog.index_build import field_texts
from mcp_toolbridge.catalog.text import Analyzer
from mcp_toolbridge.model import ToolSpec

BM25_VARIANTS: list[tuple[int, float, float]] = [
    (names, k1, b) for names, k1, b in product((1, 2), (0.9, 1.2, 1.5, 2.0), (0.5, 0.75, 0.9))
]
"""(times the name is repeated, k1, b)."""


class PlainBM25:
    """Okapi BM25 over one field, scored exhaustively per query term."""

    def __init__(
        self,
        specs: list[ToolSpec],
        analyzer: Analyzer,
        k1: float = 1.5,
        b: float = 0.75,
        names: int = 1,
    ) -> None:
        self.analyzer, self.k1, self.b = analyzer, k1, b
        self.names = [s.name for s in specs]
        self.postings: dict[str, list[tuple[int, int]]] = {}
        self.lengths: list[int] = []
        for doc, spec in enumerate(specs):
            name, _, namespace, description, params, _ = field_texts(spec)
            text = "\n".join([*[name] * names, namespace, description, params])
            terms = analyzer.terms(text)
            self.lengths.append(len(terms))
            for term, tf in Counter(terms).items():
                self.postings.setdefault(term, []).append((doc, tf))
        self.avg = sum(self.lengths) / max(len(self.lengths), 1)

    def with_params(self, k1: float, b: float) -> PlainBM25:
        """The same postings scored with other ``k1`` and ``b``."""
        other = object.__new__(PlainBM25)
        other.__dict__.update(self.__dict__)
        other.k1, other.b = k1, b
        return other

    def searcher(self, k: int) -> Callable[[str], list[str]]:
        return lambda query: self.search(query, k)

    def search(self, query: str, k: int) -> list[str]:
        n = len(self.names)
        scores: dict[int, float] = {}
        for term, qtf in Counter(self.analyzer.terms(query)).items():
            posting = self.postings.get(term, [])
            idf = math.log(1 + (n - len(posting) + 0.5) / (len(posting) + 0.5))
            for doc, tf in posting:
                norm = self.k1 * (1 - self.b + self.b * self.lengths[doc] / self.avg)
                scores[doc] = scores.get(doc, 0.0) + qtf * idf * tf * (self.k1 + 1) / (tf + norm)
        best = sorted(scores.items(), key=lambda ds: (-ds[1], ds[0]))[:k]
        return [self.names[d] for d, _ in best]
