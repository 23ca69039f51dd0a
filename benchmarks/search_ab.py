"""What round 3's ranking additions cost per query, in one process against round 2's knobs.

    .venv/bin/python benchmarks/search_ab.py CATALOG_FOLDER [--reps 3] [--against interleave]
        [--semantic]

CATALOG_FOLDER is a catalog made by ``catalog_gen.py`` (``search_scale.py`` leaves one in
``/tmp/tb-scale/catalog-N``). The lexical index of it answers ``search_scale.py``'s 400 mixed
queries ``--reps`` times, each query twice in turn: with round 3's knobs (the whole request
first, evidence, prose names ``distinct``) and with round 2's (none of them, prose suffixes),
so both see the same machine load. Prints p50 and p99 of each and their ratio.
``--against interleave`` compares the shipped knobs with the same but round 2's rank-by-rank
clause interleaving (with the whole request's best first) instead of covering;
``--against unexpanded`` with the same but no query expansion (``expansion.py``);
``--against bisect`` with the same but every term left after max-score pruning found by
binary search per kept doc (before the fifth pass's walk over short posting lists), and
checks that both give the same hits; ``--against nokinds`` with the same but no kinds of
value (``text.value_kinds``). ``--semantic`` uses the index with the semantic leg.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.search_scale import make_queries
from mcp_toolbridge.catalog import index as index_module
from mcp_toolbridge.catalog import ranking_config
from mcp_toolbridge.catalog.catalog import Catalog
from mcp_toolbridge.catalog.index import SearchIndex
from mcp_toolbridge.loaders.discovery import load_paths

AGAINST = "round2"
EXPANSION = ranking_config.EXPANSION_WEIGHT
WALK_RATIO = index_module._WALK_RATIO
KINDS = ranking_config.VALUE_KIND_WEIGHT


def knobs(round3: bool) -> None:
    if AGAINST == "nokinds":
        ranking_config.VALUE_KIND_WEIGHT = KINDS if round3 else 0.0
        return
    if AGAINST == "bisect":
        index_module._WALK_RATIO = WALK_RATIO if round3 else 0
        return
    if AGAINST == "unexpanded":
        ranking_config.EXPANSION_WEIGHT = EXPANSION if round3 else 0.0
        return
    if AGAINST == "interleave":
        ranking_config.CLAUSE_MERGE = "cover" if round3 else "interleave"
        return
    ranking_config.WHOLE_FIRST = round3
    ranking_config.EVIDENCE_MIN = 0.0 if round3 else -1.0
    ranking_config.PROSE_NAMES = "distinct" if round3 else "suffix"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument(
        "--against",
        choices=["round2", "interleave", "unexpanded", "bisect", "nokinds"],
        default="round2",
    )
    parser.add_argument("--semantic", action="store_true", help="with the semantic leg")
    args = parser.parse_args()
    global AGAINST
    AGAINST = args.against
    specs = Catalog.build(load_paths([args.folder]).tools)[0].specs()
    index = SearchIndex.build(specs, semantic=args.semantic)
    index.warm_up()
    queries = make_queries([s.name for s in specs], 400, random.Random(1))
    for query in queries[:20]:
        index.search(query, 10)
    times: dict[bool, list[float]] = {True: [], False: []}
    differing = 0
    for rep in range(args.reps):
        for i, query in enumerate(queries):
            found = {}
            for round3 in (True, False) if (i + rep) % 2 else (False, True):
                knobs(round3)
                start = time.perf_counter()
                found[round3] = index.search(query, 10)
                times[round3].append(time.perf_counter() - start)
            differing += found[True] != found[False]
    knobs(True)
    cells = {}
    for round3, values in times.items():
        values.sort()
        cells[round3] = (statistics.median(values), values[int(0.99 * len(values))])
    print(f"{len(specs)} tools | shipped p50 / p99 ms | --against {AGAINST} p50 / p99 ms | ratio")
    (a50, a99), (b50, b99) = cells[True], cells[False]
    print(
        f"{len(specs)} | {1000 * a50:.3f} / {1000 * a99:.2f} | {1000 * b50:.3f} / "
        f"{1000 * b99:.2f} | {a50 / b50:.2f} / {a99 / b99:.2f}"
    )
    print(f"queries answered differently: {differing} of {args.reps * len(queries)}")


if __name__ == "__main__":
    main()
