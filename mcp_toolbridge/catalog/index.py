"""SearchIndex: ranked keyword search over the tool catalog for ``tool_search``. Pure, no I/O.

How a query is answered (docs/performance.md has the measurements behind each choice):

1. ``select:a,b`` returns exactly the named tools (MCP name or manifest id), in that order.
2. Tools the query names come first (``get_time``, ``github.create_issue``, ``create_issue``
   for a tool whose id ends in it, ``encrypt`` for a tool named exactly that): a model that
   already knows the name wants that tool.
3. The rest is ranked by BM25F over six fields of each tool (the name split into words, title,
   namespace, description, parameters, tags), each with its own weight and length
   normalisation, after identifier splitting, stop-word removal, abbreviation expansion and
   English stemming; a tool's score is then mixed with its namespace's (sibling evidence:
   the request terms the tools of its server cover together).
4. Each clause of the request is also embedded (``embedding.py``: WordLlama static token
   vectors, averaged) and compared with every tool's text by cosine; the lexical and the
   semantic candidates are fused by z-normalised scores (``SEMANTIC_WEIGHT``), so a tool
   that shares no word with the request can still rank.
5. A request that asks for several things ("find X, then Y; also Z") is split into clauses;
   each clause is ranked on its own and the lists are interleaved rank by rank, so every
   clause's best tool comes before any clause's second best.

Ties are broken by name, so equal input always gives equal output. ``visible(name)`` False
hides a tool from every path, ``select:`` included.
"""

from __future__ import annotations

import heapq
import re
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from mcp_toolbridge.catalog.index_build import K1, build_postings, semantic_text
from mcp_toolbridge.catalog.ranking_config import SEMANTIC_MODEL as SEMANTIC_MODEL
from mcp_toolbridge.catalog.ranking_config import SEMANTIC_POOL, SEMANTIC_WEIGHT, SIBLING_POOL
from mcp_toolbridge.catalog.ranking_config import SIBLING_WEIGHT as SIBLING_WEIGHT
from mcp_toolbridge.catalog.text import Analyzer, default_analyzer, split_clauses, strip_courtesies
from mcp_toolbridge.catalog.vectors import CatalogVectors, VectorStore
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.progress import Meter

Visible = Callable[[str], bool]


@dataclass(frozen=True, slots=True)
class SearchHit:
    name: str
    score: float


_BOUND = (K1 + 1.0) * 1.000001
"""No stored weight exceeds this (saturation keeps tf·(k1+1)/(k1+tf) under k1+1; the margin
covers float32 rounding), so ``idf × _BOUND`` bounds what one query term adds to any score."""
_PRUNE_FROM = 1024
"""Posting lists shorter than this are always walked; pruning only pays on long ones."""

_QUOTES = "`'\""
_STRIP = _QUOTES + "()[]{}<>,;:!?*"
_IDENT_MARK = re.compile(r"[_\-./:0-9]|[a-z][A-Z]")
_SUFFIX_SEP = re.compile(r"[./:]|__")


class SearchIndex:
    """An immutable inverted index over a catalog; build once, query from any thread."""

    def __init__(self, analyzer: Analyzer) -> None:
        self._analyzer = analyzer
        self._names: list[str] = []
        self._namespaces: list[str] = []
        self._by_name: dict[str, int] = {}
        self._by_id: dict[str, int] = {}
        # name form -> docs; tuples of ints, which the garbage collector stops tracking.
        # Lower-cased forms for identifier-shaped, quoted or whole-query mentions; the exact
        # (case-sensitive) forms that are plain words, for mentions inside prose.
        self._exact: dict[str, tuple[int, ...]] = {}
        self._suffix: dict[str, tuple[int, ...]] = {}
        self._word_exact: dict[str, tuple[int, ...]] = {}
        self._word_suffix: dict[str, tuple[int, ...]] = {}
        self._ns_set: set[str] = set()
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
        index._fill(specs, semantic and bool(SEMANTIC_MODEL), meter)
        return index

    def __len__(self) -> int:
        return len(self._names)

    # -- building -------------------------------------------------------------------------

    def _fill(self, specs: list[ToolSpec], semantic: bool, meter: Meter | None = None) -> None:
        def register_all() -> None:
            for doc, spec in enumerate(specs):
                self._register_names(doc, spec)

        postings = build_postings(specs, self._analyzer.terms, alongside=register_all, meter=meter)
        self._term_ids = postings.term_ids
        self._docs, self._weights, self._idf = postings.docs, postings.weights, postings.idf
        if semantic and specs:  # vectors and model on first use (vectors.py)
            self._vectors = CatalogVectors(lambda: map(semantic_text, specs), len(specs))

    def embed_from(self, spec_of: Callable[[str], ToolSpec | None]) -> None:
        """Give an index read back from the cache (which keeps no vectors) its semantic leg:
        its tools' texts are found by name when the vectors are first needed."""
        if SEMANTIC_MODEL and self._names:
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
        """Whether a search runs without first making the catalog's vectors (see ``warm_up``)."""
        return self._vectors is None or self._vectors.ready

    def warm_up(self) -> None:
        """Make the catalog's vectors now (reads the model on first use in the process): a
        second or more for a big catalog, so an async caller runs it in a worker thread."""
        if self._vectors is not None:
            self._vectors.matrix()

    def _register_names(self, doc: int, spec: ToolSpec) -> None:
        self._names.append(spec.name)
        namespace = spec.namespace.lower()
        self._namespaces.append(namespace)
        if namespace:
            self._ns_set.add(namespace)
        self._by_name.setdefault(spec.name, doc)
        self._by_id.setdefault(spec.id, doc)
        exact = {spec.name, spec.id}
        forms = {form.lower() for form in exact}
        for form in forms:
            self._exact[form] = (*self._exact.get(form, ()), doc)
        for form in exact:
            if form.isalpha() and not _IDENT_MARK.search(form):  # a plain word
                self._word_exact[form] = (*self._word_exact.get(form, ()), doc)
        for suffix in short_suffixes(spec) - exact:
            lowered = suffix.lower()
            if lowered not in forms:
                self._suffix[lowered] = (*self._suffix.get(lowered, ()), doc)
            if suffix.isalpha() and not _IDENT_MARK.search(suffix):
                self._word_suffix[suffix] = (*self._word_suffix.get(suffix, ()), doc)

    # -- searching ------------------------------------------------------------------------

    def search(self, query: str, k: int = 5, *, visible: Visible | None = None) -> list[SearchHit]:
        """The ``k`` best tools for ``query``, best first; ``visible(name)`` False hides a tool.

        ``select:a,b`` returns exactly the named tools that exist and are visible, in the order
        given, however many there are (``k`` does not cut it).
        """
        text = query.strip()
        if text[:7].lower() == "select:":
            return self._select(text[7:], visible)
        if k <= 0 or not text:
            return []
        pinned = [d for d in self._named_in(text) if visible is None or visible(self._names[d])]
        want = k + len(pinned)
        request = strip_courtesies(text)
        parts = [(p, t) for p in split_clauses(request) if (t := self._analyzer.terms(p))]
        if len(parts) <= 1:
            parts = [(request, self._analyzer.terms(request))]
        ranked = interleave(self._ranked(parts, want, visible), want)
        taken = set(pinned)
        rest = [(score, d) for score, d in ranked if d not in taken]
        top = rest[0][0] if rest else 0.0
        hits = [SearchHit(self._names[d], top + len(pinned) - i) for i, d in enumerate(pinned)]
        hits += [SearchHit(self._names[d], score) for score, d in rest]
        return hits[:k]

    def _select(self, names: str, visible: Visible | None) -> list[SearchHit]:
        hits: list[SearchHit] = []
        seen: set[int] = set()
        for raw in names.split(","):
            doc = self._lookup(raw.strip().strip(_QUOTES))
            if doc is None or doc in seen:
                continue
            seen.add(doc)
            if visible is None or visible(self._names[doc]):
                hits.append(SearchHit(self._names[doc], 1.0))
        return hits

    def _lookup(self, name: str) -> int | None:
        doc = self._by_name.get(name, self._by_id.get(name))
        if doc is None:
            matches = self._exact.get(name.lower(), ())
            doc = matches[0] if len(matches) == 1 else None
        return doc

    def _named_in(self, text: str) -> list[int]:
        """Tools the query names: full names first, then namespace-qualified names, then short
        suffixes; within a class in the order the query mentions them.

        A token names a tool when it is the tool's name, id, namespace-qualified id or short
        suffix. Tool names are case-sensitive (MCP SEP-986), so a plain word inside prose must
        match exactly ("encrypt" names the tool ``encrypt``; "Encrypt" and "copyediting" do not
        name ``encrypt`` and ``copyEditing``) and name one tool only; case is ignored for
        tokens that can only be a reference: identifier-shaped ones (get_time, getTime,
        mail.send, s3-put), quoted ones, and a query that is nothing but the name.
        """
        found: list[list[int]] = [[], [], []]
        whole = text.strip(_STRIP).rstrip(".").lower()
        for token in dict.fromkeys([text, *text.split()]):
            quoted = token[:1] in _QUOTES or token[-1:] in _QUOTES
            raw = token.strip(_STRIP).rstrip(".").strip(_STRIP)
            form = raw.lower()
            if not form:
                continue
            if quoted or form == whole or _IDENT_MARK.search(raw):
                for klass, docs in enumerate(self._name_matches(form)):
                    found[klass] += docs
            else:
                # A plain word several tools answer to ("send" for mail.send and sms.send)
                # names none of them; ranking sorts them out.
                named = self._word_exact.get(raw, ())
                if not named:
                    suffixed = self._word_suffix.get(raw, ())
                    found[2] += suffixed if len(suffixed) == 1 else ()
                elif len(named) == 1:
                    found[0] += named
        return list(dict.fromkeys(d for docs in found for d in docs))

    def _name_matches(self, form: str) -> Iterator[Sequence[int]]:
        yield self._exact.get(form, ())
        qualified: list[int] = []
        for sep in (".", "/", ":", "__", "_", "-"):
            at = form.find(sep)
            while at > 0:
                head, tail = form[:at], form[at + len(sep) :]
                if head in self._ns_set:
                    qualified += [
                        d for d in self._exact.get(tail, ()) if self._namespaces[d] == head
                    ]
                at = form.find(sep, at + 1)
        yield qualified
        yield self._suffix.get(form, ())

    def _ranked(
        self, parts: list[tuple[str, list[str]]], n: int, visible: Visible | None
    ) -> list[list[tuple[float, int]]]:
        """Per clause (its text and terms), its ``n`` best tools: lexical, fused with the
        semantic leg when the index has one."""
        if self._vectors is None:
            return [self._top(terms, n, visible) for _, terms in parts]
        from mcp_toolbridge.catalog.embedding import best, fuse

        pool = max(n, SEMANTIC_POOL)
        cosines = self._vectors.cosines([text for text, _ in parts])
        out = []
        for column, (_, terms) in enumerate(parts):
            near = best(cosines[column], pool if visible is None else pool_size(pool))
            if visible is not None:
                near = [d for d in near if visible(self._names[d])][:pool]
            if terms:  # a clause of stop words alone asks for nothing
                lexical = self._top(terms, n, visible, depth=pool)
                out.append(fuse(lexical, cosines[column], near, SEMANTIC_WEIGHT, n))
        return out

    def _top(
        self, terms: list[str], n: int, visible: Visible | None, depth: int = 0
    ) -> list[tuple[float, int]]:
        """The ``n`` best visible docs for ``terms``, best first (sibling evidence included),
        then the plain ranking of the others down to ``depth`` docs in all."""
        pool = n * SIBLING_POOL if SIBLING_WEIGHT else n
        wide = max(pool, depth)
        scores, complete = self._scores(terms, pool_size(wide))
        ranked = top_visible(scores, wide, self._names, visible, complete)
        if ranked is None:  # hidden tools ate the pool: score everything
            ranked = top_visible(self._scores(terms, None)[0], wide, self._names, visible)
        assert ranked is not None
        head = self._with_siblings(terms, ranked[:pool])[:n] if SIBLING_WEIGHT else ranked[:n]
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
                ((1.0 - SIBLING_WEIGHT) * score + SIBLING_WEIGHT * cover[group], -doc)
                for (score, doc), group in zip(ranked, groups, strict=True)
            ),
            reverse=True,
        )
        return [(score, -neg) for (score, _), (_, neg) in zip(ranked, mixed, strict=True)]

    def _scores(self, terms: list[str], keep: int | None) -> tuple[dict[int, float], bool]:
        """BM25F score of every doc matching at least one of ``terms``; with ``keep``, only of
        the docs that can still be among the ``keep`` best (the flag is False when others
        were left out).

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
        """The docs scoring at least ``cut`` so far, with the ``rest`` terms added."""
        kept = {doc: score for doc, score in scores.items() if score >= cut}
        for factor, tid in rest:
            docs, weights = self._docs[tid], self._weights[tid]
            size = len(docs)
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


def interleave(lists: list[list[tuple[float, int]]], n: int) -> list[tuple[float, int]]:
    """Merge the ranked lists of a request's clauses so each clause gets its tools.

    Rank by rank: first every clause's best tool, then every clause's second best, and so on;
    within a rank, tools in order of their score for their clause. A tool already listed is
    skipped and its clause does not reach deeper to replace it, so a sentence that only
    restates an earlier request (and finds the same tools) costs no slot. A request for three
    things shows each thing's best tool in the first three places. Scores keep their clause's
    BM25F units, capped so they never increase down the list.
    """
    out: list[tuple[float, int]] = []
    taken: set[int] = set()
    depth = max(map(len, lists), default=0)
    for rank in range(depth):
        offered = sorted(
            ((lst[rank][0], -lst[rank][1]) for lst in lists if rank < len(lst)), reverse=True
        )
        for score, neg in offered:
            if -neg not in taken:
                taken.add(-neg)
                out.append((min(score, out[-1][0]) if out else score, -neg))
        if len(out) >= n:
            break
    return out[:n]


def short_suffixes(spec: ToolSpec) -> set[str]:
    """Shorter names a user may call the tool by, in their original case: the last segment of
    a dotted, slashed or ``__``-joined id or name, and the name without its namespace prefix."""
    out: set[str] = set()
    for full in (spec.id, spec.name):
        tail = _SUFFIX_SEP.split(full)[-1]
        if tail and tail != full:
            out.add(tail)
    namespace = spec.namespace.lower()
    lowered = spec.name.lower()
    for sep in ("_", "-", "."):
        if namespace and lowered.startswith(namespace + sep) and len(lowered) > len(namespace) + 1:
            out.add(spec.name[len(namespace) + 1 :])
    return out
