"""The benchmark sets of ``tool_search`` and per-query scoring, shared by
``benchmarks/search_protocol.py`` (the protocol) and its helpers.

A set is a folder with ``tools.jsonl`` and ``queries-dev.jsonl`` (the format of
``../shared/toolsearch-bench``). Visible sets are those of ``../shared/toolsearch-bench``: the
ranking may be chosen on them. ``benchmarks/sets/languages`` is a check kept with the code.
``benchmarks/heldout`` holds sets of other origins (``heldout_sets.py`` builds them from their
upstream snapshots) that nothing is ever chosen on.

Scores are kept per query, so any subset (a half, the several-tool queries) is aggregated
from one run. A query's ``equivalent`` (gold id -> ids that serve it as well) counts a hit on
any of those as a hit on that gold tool, once.
"""

from __future__ import annotations

import math
import random
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.toolsearch import BENCH_DIR, OWN_SETS, discover, read_jsonl, tool_specs
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.names import sanitize_name

HELDOUT_DIR = Path(__file__).resolve().parent / "heldout"
K = 10
VISIBLE = ("seal-tools", "metatool", "bfcl")
"""The sets a configuration may be chosen on (each is also reported left out)."""
CHECKS = ("languages",)
"""Kept with the code: reported, never used to choose."""

Search = Callable[[str], list[str]]


@dataclass
class BenchSet:
    name: str
    kind: str
    """``visible``, ``check`` or ``heldout``."""
    specs: list[ToolSpec]
    queries: list[dict[str, object]]
    gold: list[list[set[str]]] = field(default_factory=list)
    """Per query, per gold tool: the names that count as finding it."""

    def __post_init__(self) -> None:
        for q in self.queries:
            equivalent = q.get("equivalent") or {}
            assert isinstance(equivalent, dict)
            per = []
            for g in q["relevant"]:  # type: ignore[attr-defined]
                names = {sanitize_name(str(g))}
                names |= {sanitize_name(str(e)) for e in equivalent.get(g, ())}
                per.append(names)
            self.gold.append(per)


def load_sets(names: Sequence[str] | None = None) -> list[BenchSet]:
    """Every set found, visible first, then the checks, then the held-out ones."""
    found: list[tuple[str, str, Path, Path]] = []
    for folder, kind in ((BENCH_DIR, "visible"), (OWN_SETS, "check"), (HELDOUT_DIR, "heldout")):
        if folder.is_dir():
            found += [(kind, n, t, q) for n, t, q in discover(folder)]
    out = []
    for kind, name, tools, queries in found:
        if names and name not in names:
            continue
        out.append(BenchSet(name, kind, tool_specs(tools), read_jsonl(queries)))
    return out


@dataclass(frozen=True, slots=True)
class QueryScore:
    ndcg: float
    complete: bool
    hit: bool
    """Any gold tool in the top ``K``."""
    recall5: float
    empty: bool
    """Nothing returned."""


def score(ranked: list[str], gold: list[set[str]]) -> QueryScore:
    ranked = ranked[:K]
    found = [False] * len(gold)
    gains = []
    for name in ranked:
        gain = 0.0
        for i, names in enumerate(gold):
            if not found[i] and name in names:
                found[i] = True
                gain = 1.0
                break
        gains.append(gain)
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(gold), K)))
    top5 = [False] * len(gold)
    for name in ranked[:5]:
        for i, names in enumerate(gold):
            if not top5[i] and name in names:
                top5[i] = True
                break
    return QueryScore(
        ndcg=dcg / ideal,
        complete=all(found),
        hit=any(found),
        recall5=sum(top5) / len(gold),
        empty=not ranked,
    )


def run(search: Search, bench: BenchSet) -> list[QueryScore]:
    return [
        score(search(str(q["query"])), gold)
        for q, gold in zip(bench.queries, bench.gold, strict=True)
    ]


def subset(scores: list[QueryScore], which: str) -> list[QueryScore]:
    """``all``, ``h1`` (queries 1, 3, 5, ...), ``h2`` (2, 4, 6, ...)."""
    if which == "h1":
        return scores[0::2]
    if which == "h2":
        return scores[1::2]
    return scores


def metrics(scores: list[QueryScore]) -> dict[str, float]:
    n = max(len(scores), 1)
    return {
        "nDCG@10": 100 * sum(s.ndcg for s in scores) / n,
        "Complete@10": 100 * sum(s.complete for s in scores) / n,
        "Hit@10": 100 * sum(s.hit for s in scores) / n,
        "R@5": 100 * sum(s.recall5 for s in scores) / n,
        "empty": 100 * sum(s.empty for s in scores) / n,
    }


# -- queries that must find nothing ---------------------------------------------------------

NEGATIVES_PER_SOURCE = 300
"""Cross-set negatives: at most this many queries of each other set, spread evenly."""
OOV_QUERIES = 200


def oov_queries(seed: str, vocabulary: set[str], count: int = OOV_QUERIES) -> list[str]:
    """``count`` queries of random letter strings (1 to 3 words of 5 to 12 letters, some
    with a digit or an underscore, as a mistyped id would have) that are not words of
    ``vocabulary`` (the catalog's lowercase words)."""
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < count:
        words = []
        for _ in range(rng.randint(1, 3)):
            word = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(5, 12)))
            if rng.random() < 0.2:
                word += rng.choice(["_", ""]) + str(rng.randint(0, 99))
            words.append(word)
        if not any(w in vocabulary for w in words):
            out.append(" ".join(words))
    return out


def cross_queries(target: BenchSet, sources: Sequence[BenchSet]) -> list[str]:
    """Requests for tools ``target``'s catalog lacks: the queries of the other ``sources``,
    up to ``NEGATIVES_PER_SOURCE`` of each, spread evenly."""
    out = []
    for other in sources:
        if other.name == target.name:
            continue
        step = max(1, len(other.queries) // NEGATIVES_PER_SOURCE)
        out += [str(q["query"]) for q in other.queries[::step][:NEGATIVES_PER_SOURCE]]
    return out


def no_match_rate(search: Search, queries: list[str]) -> float:
    """% of ``queries`` that return nothing."""
    if not queries:
        return float("nan")
    return 100 * sum(not search(q) for q in queries) / len(queries)
