"""What a step needs that another step gives: the references among a tool's required
parameters, and the tools that can give them (``Needs``, a part of ``SearchIndex``).

A required parameter named ``<thing>_id`` (``playlist_id``, ``personId``, ``order_ids``,
``reservation_uuid``) refers to something the caller must already know: a request that calls
the tool usually calls another one first to get it ("add the song to my chill playlist" needs
the playlist's id, from a tool that lists or searches playlists). A tool that gives it is one
whose text talks about that thing and that does not itself require it: the best such tool
by BM25F over the thing's words, in the consumer's namespace when that has one (a server's
tools refer to each other), the request's own words deciding between near equals
(``find_user_id_by_email`` or ``find_user_id_by_name_zip`` for a request that gives a zip
code). Nothing here is specific to a catalog: it reads parameter names only.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable

from mcp_toolbridge.catalog.text import Analyzer, split_words
from mcp_toolbridge.model import ToolSpec

REFERENCE_WORDS = frozenset({"id", "ids", "uuid", "uuids", "identifier", "identifiers"})
"""The last word of a parameter name that makes it a reference to a thing."""
CLOSE = 0.8
"""Producers whose score for the thing is within this share of the best are told apart by
the request's own words."""
DEPTH = 2
"""A producer's own references are followed once more (the order's id comes from the user's
details, which need the user's id, which a search by e-mail gives)."""

Visible = Callable[[str], bool]
Scores = Callable[[list[str], int | None], tuple[dict[int, float], bool]]


def references(spec: ToolSpec, terms: Callable[[str], list[str]]) -> list[str]:
    """The things ``spec``'s required parameters refer to, each as its analysed words joined
    by spaces (``order_id`` -> ``order``, ``paymentMethodId`` -> ``payment method``)."""
    schema = spec.input_schema
    required = schema.get("required")
    props = schema.get("properties")
    if not isinstance(required, list) or not isinstance(props, dict):
        return []
    out = []
    for name in required:
        if not isinstance(name, str) or name not in props:
            continue
        words = split_words(name)
        if len(words) >= 2 and words[-1] in REFERENCE_WORDS:
            thing = " ".join(terms(" ".join(words[:-1])))
            if thing and thing not in out:
                out.append(thing)
    return out


class Needs:
    """Reference tables and producer lookup (mixed into ``SearchIndex``)."""

    _analyzer: Analyzer
    _names: list[str]
    _namespaces: list[str]
    _term_ids: dict[str, int]
    _docs: list[array[int]]
    _weights: list[array[float]]
    _idf: list[float]
    _scores: Scores

    def _init_needs(self) -> None:
        self._wants: list[str] = []
        """Per doc, the things its required parameters refer to, joined by newlines."""
        self._consumers: dict[str, tuple[int, ...]] = {}
        """Per thing, the docs that require a reference to it."""

    def _register_needs(self, doc: int, spec: ToolSpec) -> None:
        things = references(spec, self._analyzer.terms)
        self._wants.append("\n".join(things))
        for thing in things:
            self._consumers[thing] = (*self._consumers.get(thing, ()), doc)

    def _dependencies(
        self, docs: list[int], terms: list[str], taken: set[int], visible: Visible | None
    ) -> list[int]:
        """The producers of what ``docs`` need, in their order, and of what those need
        (``DEPTH``); none already ``taken``."""
        out: list[int] = []
        seen = set(taken) | set(docs)
        frontier = docs
        for _ in range(DEPTH):
            found = []
            for doc in frontier:
                for thing in filter(None, self._wants[doc].split("\n")):
                    pick = self._producer(doc, thing, terms, seen, visible)
                    if pick is not None:
                        seen.add(pick)
                        found.append(pick)
            out += found
            frontier = found
        return out

    def _producer(
        self, doc: int, thing: str, terms: list[str], seen: set[int], visible: Visible | None
    ) -> int | None:
        scores, _ = self._scores(thing.split(), None)
        skip = set(self._consumers.get(thing, ()))
        namespace = self._namespaces[doc]
        candidates = [
            (score, d)
            for d, score in scores.items()
            if d not in skip and d not in seen and (visible is None or visible(self._names[d]))
        ]
        if namespace:
            same = [(s, d) for s, d in candidates if self._namespaces[d] == namespace]
            candidates = same or candidates
        if not candidates:
            return None
        best = max(s for s, _ in candidates)
        close = [(s, d) for s, d in candidates if s >= CLOSE * best]
        asked = self._partial_scores(terms, [d for _, d in close])
        return max(close, key=lambda sd: (asked[sd[1]], sd[0], -sd[1]))[1]

    def _partial_scores(self, terms: list[str], docs: list[int]) -> dict[int, float]:
        """BM25F scores of ``terms`` for ``docs`` only (binary search in the postings)."""
        out = dict.fromkeys(docs, 0.0)
        for term, count in Counter(terms).items():
            tid = self._term_ids.get(term)
            if tid is None:
                continue
            postings, weights, factor = self._docs[tid], self._weights[tid], self._idf[tid] * count
            for doc in docs:
                at = bisect_left(postings, doc)
                if at < len(postings) and postings[at] == doc:
                    out[doc] += factor * weights[at]
        return out
