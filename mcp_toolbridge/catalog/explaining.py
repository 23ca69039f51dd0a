"""Why tool_search returned a tool where it did, leg by leg, for a person reading the ranking
(the console's search page): whether the query names the tool, its keyword (BM25F) score,
the query terms it matched and the share of the request's specificity they cover (the
lexical evidence, ``evidence.py``), and its semantic cosine with the query. The ranking
itself is :meth:`SearchIndex.search`'s; this only reads the same index."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from mcp_toolbridge.catalog.index import SearchIndex
from mcp_toolbridge.catalog.text import strip_courtesies


@dataclass(frozen=True, slots=True)
class Explained:
    """One hit's evidence: ``named`` (the query names it), ``keyword`` (its BM25F score over
    the whole request, 0 when no term matched), ``terms`` (the analysed query terms it
    matched, and as ``~word`` the near words of query words no tool has, ``expansion.py``),
    ``coverage`` (the share of the request's specificity they cover), ``semantic``
    (cosine with the request; None without the semantic leg), ``namespace`` (the group
    whose coverage of the terms mixes into its rank)."""

    name: str
    rank: int
    score: float
    named: bool
    keyword: float
    terms: tuple[str, ...]
    coverage: float
    semantic: float | None
    namespace: str


def explain(index: SearchIndex, query: str, k: int = 10) -> list[Explained]:
    """The ``k`` best tools for ``query`` as tool_search ranks them, each with its evidence."""
    hits = index.search(query, k)
    request = strip_courtesies(query.strip())
    terms = index._analyzer.terms(request)
    named = set(index._named_in(query.strip()))
    near = index._expanded(terms)
    scores, _ = index._scores(terms, None, near)
    cosines = None
    if index._vectors is not None and request:
        cosines = index._vectors.cosines([request])[0]
    found: list[Explained] = []
    docs = [index._by_name[hit.name] for hit in hits]
    covered = index._coverage(terms, docs) if terms else {}
    for rank, (hit, doc) in enumerate(zip(hits, docs, strict=True), start=1):
        matched = []
        for term in Counter(terms):
            tid = index._term_ids.get(term)
            if tid is not None and doc in index._docs[tid]:
                matched.append(term)
        for term in near:
            if doc in index._docs[index._term_ids[term]]:
                matched.append(f"~{term}")
        found.append(
            Explained(
                name=hit.name,
                rank=rank,
                score=hit.score,
                named=doc in named,
                keyword=scores.get(doc, 0.0),
                terms=tuple(matched),
                coverage=covered.get(doc, 0.0),
                semantic=float(cosines[doc]) if cosines is not None else None,
                namespace=index._namespaces[doc],
            )
        )
    return found
