"""Whether a request-level cut can tell a request for a tool the catalog lacks from a real one
(issue 28 §3, round 3's seventh pass). Needs the semantic extra.

    .venv/bin/python benchmarks/search_refusal.py [--sets NAME ...] [--bags 1 10]
        [--quantile 0.9] [--resamples 4] [--twin 0.8]

Per set (its catalog as the target), over the shipped ranking (``SearchIndex.search``, k 10):

- its own queries: Hit@10, and per query the request's signals;
- ``cross``: the queries of the other sets (``search_sets.cross_queries``), whether the
  shipped gate already returns nothing, the same signals, and the request's **twin**: the
  highest cosine between the text of its own gold tool (in its own set) and any tool of the
  target catalog. A request whose gold tool has a twin at ``--twin`` or more (BFCL holds
  Schema-Guided Dialogue's services; both BFCL and Seal-Tools convert currencies) is not a
  request for a tool the catalog lacks; the rest are **foreign**;
- ``noise``: 1,500 bags of ``--bags`` whole words of the model's WordPiece vocabulary.

Signals of a request (text without courtesies; its cosine made of the text without values):
``s6`` the largest, over the tools returned, of the request's lexical coverage of the tool
(``Evidence._coverage``) times its cosine with the request (the sixth pass's signal);
``cov`` and ``cos`` each alone. A request the model cannot read (``english`` False) is never
refused: its cosine is 0.

Two reports:

1. The cut ``c × q`` of the catalog's noise (``q``: the ``--quantile`` of ``s6`` over the
   bags), ``c`` chosen leave-one-set-out as the largest that costs no other visible set more
   than 0.5 points of Hit@10 (the gate's rule); the held-out sets under ``c`` chosen on all
   three. Then the same with half of the bags drawn at random (``--resamples`` times): a cut
   that passes only for some draws of its noise is not a cut to ship.
2. The ceiling: per set, with each signal, the Hit@10 a set's own best cut costs to refuse
   50%, 80% and 95% of the cross requests, and of the foreign ones alone.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.search_sets import (
    NEGATIVES_PER_SOURCE,
    VISIBLE,
    BenchSet,
    load_sets,
    score,
)
from mcp_toolbridge.catalog.embedding import embedder
from mcp_toolbridge.catalog.index import SearchIndex
from mcp_toolbridge.catalog.index_build import semantic_text
from mcp_toolbridge.catalog.semantic_model import english, model_files
from mcp_toolbridge.catalog.text import strip_courtesies, without_values
from mcp_toolbridge.names import sanitize_name

SIGNALS = ("s6", "cov", "cos")
MAX_HIT_DROP = 0.5
NOISE_BAGS = 1500
HELD_OUT = ("sgd", "tau-bench")


@dataclass
class Query:
    signals: dict[str, float]
    english: bool
    found: bool
    """Own query: a gold tool in the top ten. Cross query: anything returned."""
    twin: float = 0.0


def signals(index: SearchIndex, query: str) -> tuple[list[str], dict[str, float], bool]:
    names = [h.name for h in index.search(query, 10)]
    request = strip_courtesies(query.strip())
    terms = index._analyzer.terms(request)
    assert index._vectors is not None
    cos = index._vectors.cosines([without_values(request)])[0]
    readable = english(request)
    doc_of = {n: i for i, n in enumerate(index._names)}
    docs = [doc_of[n] for n in names]
    cover = index._coverage(terms, docs) if terms else {}
    rows = [(cover.get(d, 0.0), float(cos[d]) if readable else 0.0) for d in docs]
    values = {
        "s6": max((c * s for c, s in rows), default=0.0),
        "cov": max((c for c, _ in rows), default=0.0),
        "cos": max((s for _, s in rows), default=0.0),
    }
    return names, values, readable


def sources_of(bench: BenchSet, sets: list[BenchSet]) -> list[BenchSet]:
    """The sets whose queries ask ``bench``'s catalog for what it lacks (as the gate does)."""
    if bench.name in VISIBLE:
        return [s for s in sets if s.name in VISIBLE and s.name != bench.name]
    return [s for s in sets if s.kind != "check" and s.name != bench.name]


def collect(sets: list[BenchSet], bags: tuple[int, int]) -> dict[str, dict[str, list[Query]]]:
    model = embedder()
    vectors = {b.name: model.embed([semantic_text(s) for s in b.specs]) for b in sets}
    doc_of = {b.name: {sanitize_name(s.name): i for i, s in enumerate(b.specs)} for b in sets}
    vocab = model_files()
    assert not isinstance(vocab, str), vocab
    words = [w for w in vocab[1].read_text().split("\n") if w.isascii() and w.isalpha()]
    words = [w for w in words if len(w) >= 3]
    out: dict[str, dict[str, list[Query]]] = {}
    for bench in sets:
        index = SearchIndex.build(bench.specs, semantic=True)
        index.warm_up()
        own = []
        for q, gold in zip(bench.queries, bench.gold, strict=True):
            names, values, readable = signals(index, str(q["query"]))
            own.append(Query(values, readable, score(names, gold).hit))
        cross = []
        for other in sources_of(bench, sets):
            step = max(1, len(other.queries) // NEGATIVES_PER_SOURCE)
            for q in other.queries[::step][:NEGATIVES_PER_SOURCE]:
                names, values, readable = signals(index, str(q["query"]))
                wanted = q["relevant"]
                assert isinstance(wanted, list)
                ids = [doc_of[other.name].get(sanitize_name(str(g))) for g in wanted]
                tools = [i for i in ids if i is not None]
                near = vectors[other.name][tools] @ vectors[bench.name].T if tools else None
                twin = float(near.max()) if near is not None else 0.0
                cross.append(Query(values, readable, bool(names), twin))
        rng = random.Random(7)
        noise = []
        for _ in range(NOISE_BAGS):
            bag = " ".join(rng.sample(words, rng.randint(*bags)))
            _, values, readable = signals(index, bag)
            noise.append(Query(values, readable, False))
        out[bench.name] = {"own": own, "cross": cross, "noise": noise}
        print(f"  {bench.name}: {len(own)} own, {len(cross)} cross", file=sys.stderr)
    return out


Rule = Callable[[Query], bool]
"""True: the request is refused (nothing matches)."""


def measure(data: dict[str, list[Query]], refuse: Rule, foreign: float = 2.0) -> tuple[float, ...]:
    """(Hit@10 without the cut, with it, cross no-match with it, without it), %, over the
    cross requests whose twin is below ``foreign``."""
    own, cross = data["own"], [q for q in data["cross"] if q.twin < foreign]

    def refused(q: Query) -> bool:
        return q.english and refuse(q)

    base = 100 * np.mean([q.found for q in own])
    hit = 100 * np.mean([q.found and not refused(q) for q in own])
    before = 100 * np.mean([not q.found for q in cross])
    after = 100 * np.mean([not q.found or refused(q) for q in cross])
    return float(base), float(hit), float(after), float(before)


def noise_cut(data: dict[str, list[Query]], quantile: float, keep: list[bool] | None) -> float:
    values = [q.signals["s6"] for i, q in enumerate(data["noise"]) if keep is None or keep[i]]
    return float(np.quantile(values, quantile))


def loso(
    data: dict[str, dict[str, list[Query]]], quantile: float, keep: dict[str, list[bool]] | None
) -> list[str]:
    """Report 1: per set, ``c`` chosen without it, its cut, cross no-match, Hit@10 cost."""
    cuts = {n: noise_cut(d, quantile, keep[n] if keep else None) for n, d in data.items()}

    def rule(name: str, c: float) -> Rule:
        return lambda q: q.signals["s6"] < c * cuts[name]

    def choose(names: list[str]) -> float:
        chosen = 0.0
        for c in np.arange(0.0, 3.0001, 0.02):
            results = [measure(data[n], rule(n, float(c))) for n in names]
            if all(base - hit <= MAX_HIT_DROP for base, hit, _, _ in results):
                chosen = float(c)
        return chosen

    visible = [n for n in data if n in VISIBLE]
    rows = []
    for name in data:
        how = "left out" if name in VISIBLE else "held out"
        if name not in VISIBLE and name not in HELD_OUT:
            how = "check"
        c = choose([v for v in visible if v != name] if name in VISIBLE else visible)
        base, hit, after, before = measure(data[name], rule(name, c))
        over = " **(over 0.5)**" if base - hit > MAX_HIT_DROP else ""
        rows.append(
            f"| {name}, {how} | {c:.2f} | {c * cuts[name]:.3f} | {after:.1f} ({before:.1f}) | "
            f"{hit - base:+.2f}{over} |"
        )
    return rows


def cost_to_refuse(d: dict[str, list[Query]], signal: str, goal: float, foreign: float) -> str:
    """The Hit@10 cost (points) of the least cut on ``signal`` that leaves ``goal`` % of the
    cross requests (twin below ``foreign``) with nothing."""
    cross = [q for q in d["cross"] if q.twin < foreign]
    needed = int(np.ceil(goal / 100 * len(cross))) - sum(not q.found for q in cross)
    open_ = sorted(q.signals[signal] for q in cross if q.found and q.english)
    if needed > len(open_):
        return "n/a"
    if needed <= 0:
        return "+0.0"
    cut = open_[needed - 1]
    lost = sum(q.found and q.english and q.signals[signal] <= cut for q in d["own"])
    return f"{-100 * lost / len(d['own']):+.1f}"


def ceiling(data: dict[str, dict[str, list[Query]]], twin: float) -> list[str]:
    """Report 2: per set and signal, the Hit@10 cost of refusing 50 / 80 / 95%."""
    rows = []
    for name, d in data.items():
        cells = [
            " / ".join(cost_to_refuse(d, signal, goal, foreign) for goal in (50.0, 80.0, 95.0))
            for foreign in (2.0, twin)
            for signal in SIGNALS
        ]
        share = np.mean([q.twin >= twin for q in d["cross"]]) * 100
        shipped = [measure(d, lambda q: False, foreign)[3] for foreign in (2.0, twin)]
        cells = [f"{shipped[0]:.1f} / {shipped[1]:.1f}", *cells]
        rows.append(f"| {name} | {share:.0f}% | " + " | ".join(cells) + " |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+")
    parser.add_argument("--bags", type=int, nargs=2, default=(1, 10), metavar=("MIN", "MAX"))
    parser.add_argument("--quantile", type=float, default=0.9)
    parser.add_argument("--resamples", type=int, default=4)
    parser.add_argument("--twin", type=float, default=0.8)
    args = parser.parse_args()
    sets = [s for s in load_sets(args.sets) if s.kind != "check"]
    data = collect(sets, tuple(args.bags))
    print(
        f"\n## A cut c × q{args.quantile} of the noise (bags of {args.bags[0]}-{args.bags[1]}"
        " words), c chosen leave-one-set-out\n"
    )
    head = "| set | c | cut | cross no-match, % (shipped) | Hit@10 cost |\n|---|---|---|---|---|"
    print(head)
    print("\n".join(loso(data, args.quantile, None)))
    rng = random.Random(1)
    for i in range(args.resamples):
        keep = {n: [rng.random() < 0.5 for _ in d["noise"]] for n, d in data.items()}
        print(f"\nhalf of the bags, draw {i + 1}:\n\n{head}")
        print("\n".join(loso(data, args.quantile, keep)))
    print(
        "\n## Ceiling: Hit@10 cost of each set's own best cut refusing 50 / 80 / 95%\n\n"
        f"| set | cross requests with a twin (≥ {args.twin}) | shipped no-match, all / foreign | "
        + " | ".join(f"{s}, all cross" for s in SIGNALS)
        + " | "
        + " | ".join(f"{s}, foreign only" for s in SIGNALS)
        + " |\n|---|---|---|"
        + "---|" * (2 * len(SIGNALS))
    )
    print("\n".join(ceiling(data, args.twin)))


if __name__ == "__main__":
    main()
