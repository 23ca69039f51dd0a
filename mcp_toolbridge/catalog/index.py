"""SearchIndex: ranked keyword search over the tool catalog for ``tool_search``. Pure, no I/O.

How a query is answered (docs/search.md has the measurements behind each choice):

1. ``select:a,b`` returns exactly the named tools (MCP name or manifest id), in that order.
2. Tools the query names come first (``mentions.py``: ``get_time``, ``github.create_issue``,
   ``create_issue`` for a tool whose id ends in it, and in prose a word that is exactly one
   tool's name and no other tool's word): a model that already knows the name wants that
   tool.
3. The rest is ranked by BM25F over six fields of each tool (the name split into words, title,
   namespace, description, parameters, tags), each with its own weight and length
   normalisation, after identifier splitting, stop-word removal, abbreviation expansion and
   English stemming; a tool's score is then mixed with its namespace's (sibling evidence:
   the request terms the tools of its server cover together).
4. With the optional semantic leg, each clause is also embedded (``embedding.py``: MiniLM
   static token vectors, averaged) and compared with every tool's text by cosine; the lexical
   and the semantic candidates are fused by z-normalised scores (``config.SEMANTIC_WEIGHT``).
5. A request that asks for several things ("find X, then Y; also Z") is split into clauses;
   the request's own best tool leads, then each clause's lists are interleaved rank by rank,
   so every clause's best tool comes before any clause's second best (and, when switched on,
   the tools that give what those need, ``needs.py``).
6. A tool is returned only with evidence (``evidence.py``): a word in common with its clause,
   or a cosine above noise; with none, the search finds nothing and ``find`` keeps the
   closest names as a hint.

Ties are broken by name, so equal input always gives equal output. ``visible(name)`` False
hides a tool from every path, ``select:`` included.
"""

from __future__ import annotations

import heapq
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Iterator

from mcp_toolbridge.catalog import ranking_config as config
from mcp_toolbridge.catalog.evidence import Evidence, Found
from mcp_toolbridge.catalog.evidence import SearchHit as SearchHit
from mcp_toolbridge.catalog.index_build import K1, build_postings, semantic_text
from mcp_toolbridge.catalog.mentions import QUOTES, Mentions
from mcp_toolbridge.catalog.merge import cover, interleave
from mcp_toolbridge.catalog.needs import Needs
from mcp_toolbridge.catalog.semantic_model import english, semantic_ready
from mcp_toolbridge.catalog.text import (
    Analyzer,
    default_analyzer,
    split_clauses,
    strip_courtesies,
    value_kinds,
    without_values,
)
from mcp_toolbridge.catalog.vectors import CatalogVectors, VectorStore
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.progress import Meter

Visible = Callable[[str], bool]


_BOUND = (K1 + 1.0) * 1.000001
"""No stored weight exceeds this (saturation keeps tf·(k1+1)/(k1+tf) under k1+1; the margin
covers float32 rounding), so ``idf × _BOUND`` bounds what one query term adds to any score."""
CLOSEST = 3
"""At most this many closest names when nothing matches."""
_PRUNE_FROM = 1024
"""Posting lists shorter than this are always walked; pruning only pays on long ones."""
_WALK_RATIO = 8
"""A walk over a posting list costs about an eighth of a binary search per element."""


class SearchIndex(Mentions, Needs, Evidence):
    """An immutable inverted index over a catalog; build once, query from any thread."""

    def __init__(self, analyzer: Analyzer) -> None:
        self._analyzer = analyzer
        self._init_names()
        self._init_needs()
        self._term_ids: dict[str, int] = {}
        self._docs: list[array[int]] = []
        self._weights: list[array[float]] = []
        self._idf: list[float] = []
        self._vectors: CatalogVectors | None = None

    @classmethod
    def build(
        cls,
        tools: Iterable[ToolSpec],
        *,
        analyzer: Analyzer | None = None,
        meter: Meter | None = None,
        semantic: bool = True,
    ) -> SearchIndex:
        """The index of ``tools``; ``semantic`` False leaves the semantic leg out (lexical
        ranking only)."""
        index = cls(analyzer or default_analyzer())
        specs = sorted(tools, key=lambda spec: spec.name)
        semantic = semantic and bool(config.SEMANTIC_MODEL) and semantic_ready()
        index._fill(specs, semantic, meter)
        return index

    def __len__(self) -> int:
        return len(self._names)

    # -- building -------------------------------------------------------------------------

    def _fill(self, specs: list[ToolSpec], semantic: bool, meter: Meter | None = None) -> None:
        def register_all() -> None:
            for doc, spec in enumerate(specs):
                self._register_names(doc, spec)
                self._register_needs(doc, spec)

        postings = build_postings(specs, self._analyzer.terms, alongside=register_all, meter=meter)
        self._term_ids = postings.term_ids
        self._docs, self._weights, self._idf = postings.docs, postings.weights, postings.idf
        if semantic and specs:  # vectors and model on first use (vectors.py)
            self._vectors = CatalogVectors(lambda: map(semantic_text, specs), len(specs))

    def embed_from(self, spec_of: Callable[[str], ToolSpec | None]) -> None:
        """Give an index read back from the cache (which keeps no vectors) its semantic leg:
        its tools' texts are found by name when the vectors are first needed."""
        if config.SEMANTIC_MODEL and self._names and semantic_ready():
            names = self._names

            def texts() -> Iterator[str]:
                for name in names:
                    spec = spec_of(name)
                    yield semantic_text(spec) if spec is not None else name

            self._vectors = CatalogVectors(texts, len(names))

    def keep_vectors(self, store: VectorStore) -> None:
        """Read the catalog's vectors from ``store`` when they are first needed, and store
        them there once made (the start-up cache: a restart does not embed again)."""
        if self._vectors is not None:
            self._vectors.store = store

    @property
    def warm(self) -> bool:
        """Whether a search runs without first reading the expansion table or making the
        catalog's vectors (see ``warm_up``)."""
        return self._expansion_ready() and (self._vectors is None or self._vectors.ready)

    def warm_up(self) -> None:
        """Read the expansion table and make the catalog's vectors now (reads the model on
        first use in the process): a second or more for a big catalog, so an async caller
        runs it in a worker thread."""
        self._expansion_ready(load=True)
        if self._vectors is not None:
            self._vectors.matrix()

    # -- searching ------------------------------------------------------------------------

    def search(self, query: str, k: int = 5, *, visible: Visible | None = None) -> list[SearchHit]:
        """The ``k`` best tools for ``query``, best first; ``visible(name)`` False hides a tool.

        ``select:a,b`` returns exactly the named tools that exist and are visible, in the order
        given, however many there are (``k`` does not cut it). A tool is returned only with
        evidence of a match (``evidence.py``); see :meth:`find` for the closest names when
        there is none.
        """
        return self.find(query, k, visible=visible).hits

    def find(self, query: str, k: int = 5, *, visible: Visible | None = None) -> Found:
        """:meth:`search`, and when nothing matches, the names that ranked first anyway."""
        text = query.strip()
        if text[:7].lower() == "select:":
            return Found(self._select(text[7:], visible))
        if k <= 0 or not text:
            return Found([])
        pinned = [d for d in self._named_in(text) if visible is None or visible(self._names[d])]
        want = k + len(pinned)
        request = strip_courtesies(text)
        parts = [(p, t) for p in split_clauses(request) if (t := self._analyzer.terms(p))]
        if len(parts) <= 1:
            parts = [(request, self._analyzer.terms(request))]
        lists, closest, tops = self._ranked(parts, want, visible)
        ranked = self._merged(request, parts, lists, tops, want, visible)
        if config.DEPENDENCIES and (ranked or pinned):
            terms = [term for _, clause in parts for term in clause]
            ranked = self._with_dependencies(ranked, lists, pinned, terms, visible)[:want]
        taken = set(pinned)
        rest = [(score, d) for score, d in ranked if d not in taken]
        top = rest[0][0] if rest else 0.0
        hits = [SearchHit(self._names[d], top + len(pinned) - i) for i, d in enumerate(pinned)]
        hits += [SearchHit(self._names[d], score) for score, d in rest]
        if hits:
            return Found(hits[:k])
        return Found([], [self._names[d] for d in closest[: min(k, CLOSEST)]])

    def _merged(
        self,
        request: str,
        parts: list[tuple[str, list[str]]],
        lists: list[list[tuple[float, int]]],
        tops: list[float],
        n: int,
        visible: Visible | None,
    ) -> list[tuple[float, int]]:
        """One list from the clauses' ``lists`` (``merge.py``): covering them with the whole
        request's ranking, or rank by rank with the whole request's best first."""
        if len(parts) <= 1:
            return interleave(lists, n)
        whole = [term for _, clause in parts for term in clause]
        if config.CLAUSE_MERGE == "cover":
            # how strongly each clause matches, as its best keyword score over the whole
            # request's: fused scores are z-scores, the same size for any clause's best
            wholes, _, best = self._ranked([(request, whole)], n, visible)
            strengths = [min(1.0, top / best[0]) if best[0] > 0 else 0.0 for top in tops]
            return cover(wholes[0], lists, n, strengths)
        if not config.WHOLE_FIRST:
            return interleave(lists, n)
        # The tool the request as a whole asks for leads: context and detail sentences
        # ("Return them as a dictionary") are clauses too, and must not come first.
        lead = self._ranked([(request, whole)], 1, visible)[0][0][:1]
        ranked = interleave([lead, *lists], n)
        if lead:
            ranked = [(ranked[0][0], lead[0][1]), *(hit for hit in ranked if hit[1] != lead[0][1])]
        return ranked

    def _with_dependencies(
        self,
        ranked: list[tuple[float, int]],
        lists: list[list[tuple[float, int]]],
        pinned: list[int],
        terms: list[str],
        visible: Visible | None,
    ) -> list[tuple[float, int]]:
        """``ranked`` with the producers of what its first round needs (``needs.py``) right
        after that round (each clause's best tool): the steps a request implies come before
        any clause's second choice."""
        first = len({lst[0][1] for lst in lists if lst})
        head = ranked[:first]
        taken = {doc for _, doc in head} | set(pinned)
        deps = self._dependencies([*pinned, *(d for _, d in head)], terms, taken, visible)
        if not deps:
            return ranked
        floor = head[-1][0]
        added = set(deps)
        return (
            head
            + [(floor, d) for d in deps]
            + [hit for hit in ranked[first:] if hit[1] not in added]
        )

    def _select(self, names: str, visible: Visible | None) -> list[SearchHit]:
        hits: list[SearchHit] = []
        seen: set[int] = set()
        for raw in names.split(","):
            doc = self._lookup(raw.strip().strip(QUOTES))
            if doc is None or doc in seen:
                continue
            seen.add(doc)
            if visible is None or visible(self._names[doc]):
                hits.append(SearchHit(self._names[doc], 1.0))
        return hits

    def _ranked(
        self, parts: list[tuple[str, list[str]]], n: int, visible: Visible | None
    ) -> tuple[list[list[tuple[float, int]]], list[int], list[float]]:
        """Per clause (its text and terms), its ``n`` best tools with evidence of a match:
        lexical, fused with the semantic leg when the index has one; the tools that ranked
        first without that evidence, best first; and per clause its best keyword score."""
        lists: list[list[tuple[float, int]]] = []
        tops: list[float] = []
        cosines = None
        # the words for the kinds of value a clause gives rank, but are no evidence alone
        terms_of = self._analyzer.terms
        kinds = [{t for k in value_kinds(text) for t in terms_of(k)} for text, _ in parts]
        near_terms = [
            self._expanded(terms, kind) for (_, terms), kind in zip(parts, kinds, strict=True)
        ]
        if self._vectors is None:
            lists = [
                self._top(terms, n, visible, extra=extra)
                for (_, terms), extra in zip(parts, near_terms, strict=True)
            ]
            tops = [ranked[0][0] if ranked else 0.0 for ranked in lists]
        else:
            from mcp_toolbridge.catalog.embedding import best, fuse

            pool = max(n, config.SEMANTIC_POOL)
            # the values a request gives (quoted literals, numbers) are not what it asks for
            embedded = [without_values(t) if config.SEMANTIC_VALUES_OUT else t for t, _ in parts]
            cosines = self._vectors.cosines(embedded)
            for column, (text, terms) in enumerate(parts):
                if not english(text):  # the model reads English: the lexical leg alone
                    cosines[column] = 0.0
                    lists.append(self._top(terms, n, visible, extra=near_terms[column]))
                    tops.append(lists[-1][0][0] if lists[-1] else 0.0)
                    continue
                near = best(cosines[column], pool if visible is None else pool_size(pool))
                if visible is not None:
                    near = [d for d in near if visible(self._names[d])][:pool]
                # a clause of stop words alone asks for nothing
                lexical = self._top(terms, n, visible, depth=pool, extra=near_terms[column])
                tops.append(lexical[0][0] if lexical else 0.0)
                fused = fuse(
                    lexical,
                    cosines[column],
                    near,
                    config.SEMANTIC_WEIGHT,
                    n,
                )
                lists.append(fused if terms else [])
        kept: list[list[tuple[float, int]]] = []
        dropped: list[tuple[int, int]] = []
        for column, ((_, terms), ranked) in enumerate(zip(parts, lists, strict=True)):
            cover = self._coverage(terms, [d for _, d in ranked])
            bridged = self._coverage(
                [t for t in near_terms[column] if t not in kinds[column]],
                [d for d, c in cover.items() if not c],
            )
            sure = [
                hit
                for hit in ranked
                if cover[hit[1]] > config.EVIDENCE_MIN
                or bridged.get(hit[1], 0.0) > 0.0
                or (cosines is not None and float(cosines[column][hit[1]]) >= config.SEMANTIC_MIN)
            ]
            kept.append(sure)
            if not sure:  # a hint shares a word at least: a nearest vector alone is noise
                dropped += [(rank, d) for rank, (_, d) in enumerate(ranked) if cover[d] > 0.0]
        closest = list(dict.fromkeys(d for _, d in sorted(dropped)))
        return kept, closest, tops

    def _top(
        self,
        terms: list[str],
        n: int,
        visible: Visible | None,
        depth: int = 0,
        extra: dict[str, float] | None = None,
    ) -> list[tuple[float, int]]:
        """The ``n`` best visible docs for ``terms`` (and the ``extra`` terms near them, each
        at its weight), best first (sibling evidence included), then the plain ranking of the
        others down to ``depth`` docs in all."""
        pool = n * config.SIBLING_POOL if config.SIBLING_WEIGHT else n
        wide = max(pool, depth)
        scores, complete = self._scores(terms, pool_size(wide), extra)
        ranked = top_visible(scores, wide, self._names, visible, complete)
        if ranked is None:  # hidden tools ate the pool: score everything
            ranked = top_visible(self._scores(terms, None, extra)[0], wide, self._names, visible)
        assert ranked is not None
        head = (
            self._with_siblings(terms, ranked[:pool])[:n] if config.SIBLING_WEIGHT else ranked[:n]
        )
        if depth <= n:
            return head
        taken = {doc for _, doc in head}
        return head + [hit for hit in ranked if hit[1] not in taken][: depth - len(head)]

    def _with_siblings(
        self, terms: list[str], ranked: list[tuple[float, int]]
    ) -> list[tuple[float, int]]:
        """``ranked`` reordered by each tool's own score mixed with its group's: the query
        terms its namespace covers, each counted once at the best weight any of its tools in
        ``ranked`` has (cluster-based smoothing). A tool without a namespace is its own group,
        so its evidence is its own score; a catalog with one namespace keeps its order. The
        scores down the list stay those of the plain ranking, so clause interleaving compares
        the same units."""
        if len(ranked) < 2:
            return ranked
        found = []
        for term, count in Counter(terms).items():
            tid = self._term_ids.get(term)
            if tid is not None:
                found.append((self._idf[tid] * count, tid))
        best: dict[object, list[float]] = {}
        groups: list[object] = []
        for _, doc in ranked:
            group: object = self._namespaces[doc] or doc
            groups.append(group)
            row = best.setdefault(group, [0.0] * len(found))
            for i, (factor, tid) in enumerate(found):
                docs = self._docs[tid]
                at = bisect_left(docs, doc)
                if at < len(docs) and docs[at] == doc:
                    row[i] = max(row[i], factor * self._weights[tid][at])
        cover = {group: sum(row) for group, row in best.items()}
        mixed = sorted(
            (
                ((1.0 - config.SIBLING_WEIGHT) * score + config.SIBLING_WEIGHT * cover[group], -doc)
                for (score, doc), group in zip(ranked, groups, strict=True)
            ),
            reverse=True,
        )
        return [(score, -neg) for (score, _), (_, neg) in zip(ranked, mixed, strict=True)]

    def _scores(
        self, terms: list[str], keep: int | None, extra: dict[str, float] | None = None
    ) -> tuple[dict[int, float], bool]:
        """BM25F score of every doc matching at least one of ``terms`` (or of the ``extra``
        terms, each counted at its weight); with ``keep``, only of the docs that can still be
        among the ``keep`` best (the flag is False when others were left out).

        When some posting list is long, terms are added rarest first, and before each long
        list: if the terms left could add less to a doc than the ``keep``-th best score so
        far, no doc outside the table can reach the top any more, and nor can a doc in it
        that is further below that score than the terms left could add (max-score pruning,
        Turtle and Flood 1995). The docs that still can get the remaining terms by binary
        search in the posting lists instead of a walk over them. Each doc's terms are added
        in the same order either way, so the kept scores are exactly those of the full walk.
        With only short lists, the longest one seeds the table in one comprehension (the
        bulk of the work) and the others are added to it.
        """
        found = []
        for term, count in Counter(terms).items():
            tid = self._term_ids.get(term)
            if tid is not None:
                found.append((self._idf[tid] * count, tid))
        for term, weight in (extra or {}).items():
            tid = self._term_ids.get(term)
            if tid is not None:
                found.append((self._idf[tid] * weight, tid))
        if not found:
            return {}, True
        if any(len(self._docs[tid]) >= _PRUNE_FROM for _, tid in found):
            found.sort(key=lambda ft: (-ft[0], ft[1]))
        else:
            keep = None
            found.sort(key=lambda ft: (-len(self._docs[ft[1]]), ft[1]))
        left = sum(factor for factor, _ in found) * _BOUND
        scores: dict[int, float] = {}
        get = scores.get
        for i, (factor, tid) in enumerate(found):
            docs, weights = self._docs[tid], self._weights[tid]
            if keep is not None and len(docs) >= _PRUNE_FROM and len(scores) >= keep:
                floor = heapq.nlargest(keep, scores.values())[-1]
                if left < floor:
                    return self._complete(scores, found[i:], floor - left), False
            if scores:
                for doc, weight in zip(docs, weights, strict=True):
                    scores[doc] = get(doc, 0.0) + factor * weight
            else:
                scores = {d: factor * w for d, w in zip(docs, weights, strict=True)}
                get = scores.get
            left -= factor * _BOUND
        return scores, True

    def _complete(
        self, scores: dict[int, float], rest: list[tuple[float, int]], cut: float
    ) -> dict[int, float]:
        """The docs scoring at least ``cut`` so far, with the ``rest`` terms added: by binary
        search for each kept doc, or, when the term's posting list is shorter than
        ``_WALK_RATIO`` times the kept docs (the semantic leg's lexical pool of 100 keeps most
        of what it scored), by one walk over the list: the same sums in the same order."""
        kept = {doc: score for doc, score in scores.items() if score >= cut}
        for factor, tid in rest:
            docs, weights = self._docs[tid], self._weights[tid]
            size = len(docs)
            if size < _WALK_RATIO * len(kept):
                for doc, weight in zip(docs, weights, strict=True):
                    if doc in kept:
                        kept[doc] += factor * weight
                continue
            for doc in kept:
                at = bisect_left(docs, doc)
                if at < size and docs[at] == doc:
                    kept[doc] += factor * weights[at]
        return kept


def pool_size(n: int) -> int:
    """How many top docs ``top_visible`` looks at before the visibility filter."""
    return 2 * n + 8


def top_visible(
    scores: dict[int, float],
    n: int,
    names: list[str],
    visible: Visible | None,
    complete: bool = True,
) -> list[tuple[float, int]] | None:
    """The ``n`` highest-scoring visible docs. Doc ids follow name order, so ``-doc`` in the
    key breaks score ties by name. None when ``scores`` is not ``complete`` (pruned to the
    best ``pool_size(n)``) and hidden docs leave fewer than ``n`` of those."""
    want = pool_size(n)
    if len(scores) > 4 * want:
        # Cut on the bare scores first (no tuple per scored doc); every doc tied with the
        # cut-off score stays in, so the tie-break by name below sees all of them.
        floor = heapq.nlargest(want, scores.values())[-1]
        pool = sorted(((s, -d) for d, s in scores.items() if s >= floor), reverse=True)
    else:
        pool = heapq.nlargest(want, ((s, -d) for d, s in scores.items()))
    out = [(s, -d) for s, d in pool if visible is None or visible(names[-d])]
    if len(out) < n and not complete:
        return None
    if len(out) < n and len(pool) < len(scores):
        pool = sorted(((s, -d) for d, s in scores.items()), reverse=True)
        out = [(s, -d) for s, d in pool if visible is None or visible(names[-d])]
    return out[:n]
