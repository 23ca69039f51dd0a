"""Queries that must find nothing: the evidence thresholds of ``ranking_config`` (``evidence.py``),
chosen the way ``search_protocol.py`` chooses the ranking, and measured per set.

    .venv/bin/python benchmarks/search_gate.py [--sets NAME ...] [--semantic]
    .venv/bin/python benchmarks/search_gate.py --noise [--sets NAME ...]

Per set (its catalog as the target):

- ``oov``: 200 queries of random letter strings that are not words of the catalog;
- ``cross``: the queries of every other set (up to 300 of each), which ask for tools this
  catalog does not have (visible targets take the other visible sets' queries, the held-out
  and check sets take every other set's);
- the set's own queries: Hit@10 with the gate, and its drop against no gate.

A threshold is chosen on the visible sets as the strictest one that costs no tuning set more
than ``MAX_HIT_DROP`` points of Hit@10; each visible set is reported under the threshold
chosen on the others (left out), the others under the one chosen on all visible sets.

``--noise`` measures what a cut made from the catalog alone would be (round 3's sixth pass):
per catalog, the best lexical coverage (``Evidence._coverage``) any tool has of random bags
of 3 to 8 words of the near-word table (requests about nothing in particular), as quantiles.
"""

from __future__ import annotations

import argparse
import ast
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.search_sets import (
    VISIBLE,
    BenchSet,
    cross_queries,
    metrics,
    no_match_rate,
    oov_queries,
    run,
)
from mcp_toolbridge.catalog import ranking_config
from mcp_toolbridge.catalog.expansion import neighbours
from mcp_toolbridge.catalog.index import SearchIndex
from mcp_toolbridge.catalog.text import split_words

LEXICAL = [-1.0, 0.0, 0.05, 0.1, 0.15, 0.2, 0.3]
"""-1: no gate (the reference); 0: a tool must share a word with the clause."""
SEMANTIC = [0.5, 0.55, 0.6, 0.65, 0.7]
MAX_HIT_DROP = 0.5
"""Points of Hit@10 a threshold may cost a tuning set ("the real queries' Hit@10 does not
drop", within one query in two hundred)."""

Result = dict[str, float]


def measure(bench: BenchSet, index: SearchIndex, negatives: list[str]) -> Result:
    def search(query: str) -> list[str]:
        return [h.name for h in index.search(query, 10)]

    vocabulary = {w for s in bench.specs for w in split_words(f"{s.name} {s.description}")}
    return {
        "hit": metrics(run(search, bench))["Hit@10"],
        "oov": no_match_rate(search, oov_queries(bench.name, vocabulary)),
        "cross": no_match_rate(search, negatives),
    }


def sweep(benches: list[BenchSet], semantic: bool) -> dict[tuple[float, float], dict[str, Result]]:
    out: dict[tuple[float, float], dict[str, Result]] = {}
    visible = [b for b in benches if b.name in VISIBLE]
    for bench in benches:
        index = SearchIndex.build(bench.specs, semantic=semantic)
        index.warm_up()
        negatives = cross_queries(bench, visible if bench.name in VISIBLE else benches)
        for lex in LEXICAL:
            for sem in SEMANTIC if semantic else [1.0]:
                ranking_config.EVIDENCE_MIN, ranking_config.SEMANTIC_MIN = lex, sem
                out.setdefault((lex, sem), {})[bench.name] = measure(bench, index, negatives)
                print(
                    f"  {bench.name:11} {lex:.2f} {sem:.2f}",
                    out[(lex, sem)][bench.name],
                    file=sys.stderr,
                )
    return out


def choose(
    results: dict[tuple[float, float], dict[str, Result]], names: list[str]
) -> tuple[float, float]:
    open_gate = min(results)  # the lowest thresholds: the reference for Hit@10

    def fits(key: tuple[float, float]) -> bool:
        return all(
            results[open_gate][n]["hit"] - results[key][n]["hit"] <= MAX_HIT_DROP for n in names
        )

    def strictness(key: tuple[float, float]) -> tuple[float, float]:
        rates = [results[key][n]["cross"] + results[key][n]["oov"] for n in names]
        return min(rates), sum(rates)

    candidates = [k for k in results if fits(k)] or [open_gate]
    return max(candidates, key=strictness)


NOISE = 95.0
"""% of nonsense (out-of-vocabulary) queries a cosine cut must leave with nothing on every
tuning set: "a semantic match alone, below what held-out data shows is noise, is not a hit"."""


def choose_cosine(
    results: dict[tuple[float, float], dict[str, Result]], names: list[str], lexical: float
) -> tuple[float, float]:
    """The lowest cosine cut (with the lexical cut ``lexical``) above the noise of every
    tuning set (``NOISE``); the highest one swept if none is."""
    cuts = sorted(sem for lex, sem in results if lex == lexical)
    for cut in cuts:
        if all(results[(lexical, cut)][n]["oov"] >= NOISE for n in names):
            return lexical, cut
    return lexical, cuts[-1]


def from_log(path: Path) -> dict[tuple[float, float], dict[str, Result]]:
    """The results a sweep printed on stderr (``2> FILE``), read back."""
    out: dict[tuple[float, float], dict[str, Result]] = {}
    for line in path.read_text().splitlines():
        name, lex, sem, rest = line.split(maxsplit=3)
        out.setdefault((float(lex), float(sem)), {})[name] = ast.literal_eval(rest)
    return out


def report(benches: list[BenchSet], semantic: bool | None = None, log: Path | None = None) -> None:
    if semantic is None:
        semantic = ranking_config.SEMANTIC_WEIGHT > 0
    results = from_log(log) if log else sweep(benches, semantic)
    open_gate = min(results)
    visible = [b.name for b in benches if b.name in VISIBLE]
    print(f"\n## No match (semantic leg {'on' if semantic else 'off'}), %\n")
    print(
        "| set, how | thresholds (lexical, cosine) | OOV no-match | cross-set no-match | "
        "Hit@10 with the gate (without) |"
    )
    print("|---|---|---|---|---|")

    def chosen(names: list[str]) -> tuple[float, float]:
        if not semantic:
            return choose(results, names)
        # the lexical cut as chosen without the leg (the shipped 0: a word in common), the
        # cosine cut above noise
        return choose_cosine(results, names, max(lex for lex, _ in results if lex <= 0.0))

    shipped = chosen(visible) if visible else open_gate
    for bench in benches:
        if bench.name in VISIBLE:
            key, how = chosen([v for v in visible if v != bench.name]), "left out"
        else:
            key, how = shipped, f"whole ({bench.kind})"
        r, base = results[key][bench.name], results[open_gate][bench.name]
        print(
            f"| {bench.name}, {how} | {key[0]:.2f}, {key[1]:.2f} | {r['oov']:.1f} | "
            f"{r['cross']:.1f} | {r['hit']:.1f} ({base['hit']:.1f}) |"
        )
    print(f"\nchosen on all visible sets: lexical {shipped[0]:.2f}, cosine {shipped[1]:.2f}")
    print("\nEvery threshold (set: OOV / cross / Hit@10):")
    for key, per in sorted(results.items()):
        cells = [f"{n} {r['oov']:.0f}/{r['cross']:.0f}/{r['hit']:.1f}" for n, r in per.items()]
        print(f"- {key[0]:.2f}, {key[1]:.2f}: " + "; ".join(cells))


NOISE_BAGS = 2000


def noise_cuts(benches: list[BenchSet]) -> None:
    """Per catalog, quantiles of the best coverage of ``NOISE_BAGS`` random word bags."""
    vocabulary = sorted(neighbours())
    quantiles = [0.5, 0.75, 0.9, 0.95]
    print("\n## Best lexical coverage of random word bags, per catalog\n")
    print(
        "| catalog | tools | table words it has | bags covering nothing | "
        + " | ".join(f"q{q}" for q in quantiles)
        + " |"
    )
    print("|---|---|---|---|" + "---|" * len(quantiles))
    for bench in benches:
        index = SearchIndex.build(bench.specs, semantic=False)
        rng = random.Random(7)
        best = []
        for _ in range(NOISE_BAGS):
            bag = rng.sample(vocabulary, rng.randint(3, 8))
            docs = sorted(
                {d for t in bag if t in index._term_ids for d in index._docs[index._term_ids[t]]}
            )
            best.append(max(index._coverage(bag, docs).values(), default=0.0))
        best.sort()
        known = sum(1 for t in vocabulary if t in index._term_ids) / len(vocabulary)
        zero = sum(1 for b in best if b == 0.0) / len(best)
        cells = " | ".join(f"{best[int(q * len(best)) - 1]:.3f}" for q in quantiles)
        print(f"| {bench.name} | {len(bench.specs)} | {known:.1%} | {zero:.0%} | {cells} |")


def main() -> None:
    from benchmarks.search_sets import load_sets

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+")
    parser.add_argument("--semantic", action="store_true", help="with the semantic leg")
    parser.add_argument("--lexical", type=float, nargs="+", help="lexical cuts to sweep")
    parser.add_argument("--cosine", type=float, nargs="+", help="cosine cuts to sweep")
    parser.add_argument("--from-log", type=Path, help="report a sweep's stderr, not a new one")
    parser.add_argument("--noise", action="store_true", help="cuts from random word bags only")
    args = parser.parse_args()
    if args.noise:
        noise_cuts(load_sets(args.sets))
        return
    if args.lexical:
        LEXICAL[:] = args.lexical
    if args.cosine:
        SEMANTIC[:] = args.cosine
    report(load_sets(args.sets), args.semantic, args.from_log)


if __name__ == "__main__":
    main()
