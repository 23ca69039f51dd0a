"""How a request's clause rankings become one list: rank by rank (``interleave``), or by
covering every clause before anyone's near-duplicates, with the whole request's ranking
(``cover``; ``ranking_config.CLAUSE_MERGE`` picks). Pure functions over (score, doc) lists,
best first; docs are ids in name order, so ``-doc`` breaks ties by name."""

from __future__ import annotations

from mcp_toolbridge.catalog import ranking_config as config


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


def cover(
    whole: list[tuple[float, int]],
    lists: list[list[tuple[float, int]]],
    n: int,
    strengths: list[float] | None = None,
) -> list[tuple[float, int]]:
    """A request's tools from its whole ranking (``whole``) and its clauses' (``lists``),
    chosen one at a time so that every clause is covered before anyone's near-duplicates,
    and a tool that serves several clauses counts for each (explicit query-aspect
    diversification, xQuAD: Santos, Macdonald and Ounis 2010).

    A tool's value is ``(1 - CLAUSE_SHARE) × P(tool | request)`` plus, per clause,
    ``CLAUSE_SHARE × strength × P(tool | clause) × what of the clause is still uncovered``.
    Each P is the tool's score over its list's best, to the power ``CLAUSE_SHARPNESS`` for
    clauses (negative fused scores count 0); a clause's strength is its best score over the
    whole request's best: a detail or context sentence ("Format it as a ratio", "Today is
    March 10") matches weakly and weighs little, while each of "find the flight, book the
    hotel" matches as strongly as the whole. Choosing a tool leaves ``1 - CLAUSE_TRUST ×
    P(tool | clause)`` of each clause uncovered: a clause's best tool is not always the one
    it needs, so its second still counts for something. ``strengths`` (per clause, 0 to 1)
    replace the strengths read from the lists' scores: with the semantic leg those are
    z-scores, whose best is about the same for any clause, so the index passes each clause's
    best keyword score over the whole request's instead. Values are returned as the scores,
    capped so they never increase down the list."""
    share, sharp, trust = config.CLAUSE_SHARE, config.CLAUSE_SHARPNESS, config.CLAUSE_TRUST
    rel = _relative(whole, 1.0)
    per = [_relative(lst, sharp) for lst in lists]
    best = (
        whole[0][0]
        if whole and whole[0][0] > 0
        else max((lst[0][0] for lst in lists if lst), default=0.0)
    )
    if strengths is None:
        strengths = [
            min(1.0, max(0.0, lst[0][0]) / best) if lst and best > 0 else 0.0 for lst in lists
        ]
    weights = [
        share * strength if lst else 0.0 for lst, strength in zip(lists, strengths, strict=True)
    ]
    left = [1.0] * len(per)
    # per doc, the clauses that list it: most docs are in one or two lists of many (a doc
    # listed with a score of 0 is still a candidate, valued 0: it matched)
    listed_docs = {doc for _, doc in whole}.union(*({doc for _, doc in lst} for lst in lists))
    clauses: dict[int, list[tuple[int, float]]] = {doc: [] for doc in listed_docs}
    for c, scores in enumerate(per):
        for doc, value in scores.items():
            clauses[doc].append((c, value))
    out: list[tuple[float, int]] = []
    while clauses and len(out) < n:
        value, neg = max(
            (
                (1.0 - share) * rel.get(doc, 0.0)
                + sum(weights[c] * left[c] * p for c, p in listed),
                -doc,
            )
            for doc, listed in clauses.items()
        )
        doc = -neg
        for c, p in clauses.pop(doc):
            left[c] *= 1.0 - trust * p
        out.append((min(value, out[-1][0]) if out else value, doc))
    return out


def _relative(ranked: list[tuple[float, int]], power: float) -> dict[int, float]:
    """Each doc's score over the best of ``ranked`` (0 for a negative one), to ``power``."""
    if not ranked or ranked[0][0] <= 0:
        return {}
    top = ranked[0][0]
    return {doc: (max(score, 0.0) / top) ** power for score, doc in ranked}
