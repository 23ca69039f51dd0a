"""Tool-retrieval quality of SearchIndex on a JSONL benchmark (Seal-Tools shape).

    .venv/bin/python benchmarks/toolsearch.py [--tools tools.jsonl] [--queries queries.jsonl]
        [--stemmer pystemmer|snowballstemmer|suffix|none] [--half 1|2]
        [--without clauses|abbreviations|courtesies ...] [--names exact|identifiers|anywhere]

Prints, for a plain BM25 baseline (same analyzer, one field: split name + description +
parameter texts; k1 1.5, b 0.75) and for SearchIndex, measured in the same process:
Recall@1/5/10, Hit@1 (all and single-tool queries), MRR, binary nDCG@10, Complete@10 (every
gold tool in the top 10), query latency p50/p99 and index build time; then the deltas.

``--half 1`` / ``--half 2`` keep every other query (the 1st, 3rd, ... or the 2nd, 4th, ...):
two halves with the same mix of one-tool and several-tool queries, for tuning on one and
reporting on the other. ``--without`` switches parts of the search off (ablations; the
baseline shares the analyzer, so ``abbreviations`` changes it too). ``--names`` picks which
mentions of a tool's name rank it first: ``exact`` (shipped: identifier-shaped, quoted or
whole-query tokens in any case, plain words only when they are exactly one tool's name),
``identifiers`` (the earlier rule: never a plain word inside prose), ``anywhere`` (any token
equal to a name in any case).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.stemmers import analyzer_for
from mcp_toolbridge.catalog import index as search_module
from mcp_toolbridge.catalog import text as text_module
from mcp_toolbridge.catalog.index import SearchIndex
from mcp_toolbridge.catalog.index_build import field_texts
from mcp_toolbridge.catalog.text import Analyzer
from mcp_toolbridge.model import BuiltinTransport, Format, Source, ToolSpec
from mcp_toolbridge.names import sanitize_name

BENCH = Path("/work/shared/toolsearch-bench/seal-tools")
K = 10


def read_jsonl(path: Path) -> list[dict[str, object]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def tool_specs(path: Path) -> list[ToolSpec]:
    """ToolSpecs straight from a tools.jsonl (id, name, description, parameters)."""
    specs = []
    for i, row in enumerate(read_jsonl(path)):
        tool_id = str(row["id"])
        schema = row.get("parameters") or {"type": "object"}
        assert isinstance(schema, dict)
        specs.append(
            ToolSpec(
                name=sanitize_name(tool_id),
                id=tool_id,
                description=str(row.get("description") or ""),
                input_schema=schema,
                runtime_input_schema=schema,
                transport=BuiltinTransport(name=tool_id),
                source=Source(path=str(path), index=i, format=Format.BUILTIN),
            )
        )
    return specs


class PlainBM25:
    """Reference: Okapi BM25 over one field, scored exhaustively per query term."""

    def __init__(self, specs: list[ToolSpec], analyzer: Analyzer, k1: float = 1.5, b: float = 0.75):
        self.analyzer, self.k1, self.b = analyzer, k1, b
        self.names = [s.name for s in specs]
        self.postings: dict[str, list[tuple[int, int]]] = {}
        self.lengths: list[int] = []
        for doc, spec in enumerate(specs):
            name, _, _, description, params, _ = field_texts(spec)
            terms = analyzer.terms(f"{name}\n{description}\n{params}")
            self.lengths.append(len(terms))
            for term, tf in Counter(terms).items():
                self.postings.setdefault(term, []).append((doc, tf))
        self.avg = sum(self.lengths) / max(len(self.lengths), 1)

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


def evaluate(
    search: Callable[[str], list[str]], queries: list[dict[str, object]]
) -> dict[str, float]:
    sums: dict[str, float] = defaultdict(float)
    singles = 0
    latencies = []
    for q in queries:
        gold = {sanitize_name(str(g)) for g in q["relevant"]}  # type: ignore[attr-defined]
        start = time.perf_counter()
        ranked = search(str(q["query"]))[:K]
        latencies.append(time.perf_counter() - start)
        hits = [name in gold for name in ranked]
        for k in (1, 5, 10):
            sums[f"R@{k}"] += sum(hits[:k]) / len(gold)
        sums["Hit@1"] += bool(hits and hits[0])
        if len(gold) == 1:
            singles += 1
            sums["Hit@1 single"] += bool(hits and hits[0])
        sums["MRR"] += next((1 / (i + 1) for i, h in enumerate(hits) if h), 0.0)
        dcg = sum(1 / math.log2(i + 2) for i, h in enumerate(hits) if h)
        ideal = sum(1 / math.log2(i + 2) for i in range(min(len(gold), K)))
        sums["nDCG@10"] += dcg / ideal
        sums["Complete@10"] += sum(hits) == len(gold)
    out = {m: 100 * v / len(queries) for m, v in sums.items()}
    out["Hit@1 single"] = 100 * sums["Hit@1 single"] / max(singles, 1)
    latencies.sort()
    out["p50 ms"] = 1000 * statistics.median(latencies)
    out["p99 ms"] = 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]
    return out


def set_name_rule(index: SearchIndex, rule: str) -> None:
    """Benchmark only: swap which name mentions pin a tool (see ``--names``)."""
    if rule == "identifiers":
        index._word_exact.clear()
        index._word_suffix.clear()
    elif rule == "anywhere":

        def named_anywhere(text: str) -> list[int]:
            found: list[list[int]] = [[], [], []]
            for token in dict.fromkeys([text, *text.split()]):
                strip = search_module._STRIP
                form = token.strip(strip).rstrip(".").strip(strip).lower()
                for klass, docs in enumerate(index._name_matches(form) if form else ()):
                    found[klass] += docs
            return list(dict.fromkeys(d for docs in found for d in docs))

        setattr(index, "_named_in", named_anywhere)  # noqa: B010


COLUMNS = ["R@1", "R@5", "R@10", "Hit@1", "Hit@1 single", "MRR", "nDCG@10", "Complete@10"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", type=Path, default=BENCH / "tools.jsonl")
    parser.add_argument("--queries", type=Path, default=BENCH / "queries-dev.jsonl")
    parser.add_argument("--stemmer", default="pystemmer")
    parser.add_argument("--half", type=int, choices=[1, 2], help="every other query only")
    parser.add_argument(
        "--without",
        nargs="+",
        default=[],
        choices=["clauses", "abbreviations", "courtesies"],
        help="ablation: switch these parts off",
    )
    parser.add_argument("--names", default="exact", choices=["exact", "identifiers", "anywhere"])
    args = parser.parse_args()
    if "clauses" in args.without:
        search_module.split_clauses = lambda query: [query]  # type: ignore[attr-defined]
    if "abbreviations" in args.without:
        text_module.ABBREVIATIONS = {}
    if "courtesies" in args.without:
        search_module.strip_courtesies = lambda query: query  # type: ignore[attr-defined]
    specs = tool_specs(args.tools)
    queries = read_jsonl(args.queries)
    if args.half:
        queries = queries[args.half - 1 :: 2]

    start = time.perf_counter()
    baseline = PlainBM25(specs, analyzer_for(args.stemmer))
    base_build = time.perf_counter() - start
    start = time.perf_counter()
    index = SearchIndex.build(specs, analyzer=analyzer_for(args.stemmer))
    build = time.perf_counter() - start
    set_name_rule(index, args.names)

    rows = {
        "plain BM25": (evaluate(lambda q: baseline.search(q, K), queries), base_build),
        "SearchIndex": (evaluate(lambda q: [h.name for h in index.search(q, K)], queries), build),
    }
    print(f"{len(specs)} tools, {len(queries)} queries, stemmer {args.stemmer}")
    head = " | ".join([f"{'':12}", *COLUMNS, "p50 ms", "p99 ms", "build s"])
    print(head)
    for label, (m, secs) in rows.items():
        cells = [f"{m[c]:.1f}" for c in COLUMNS] + [f"{m['p50 ms']:.2f}", f"{m['p99 ms']:.2f}"]
        print(" | ".join([f"{label:12}", *cells, f"{secs:.2f}"]))
    base, ours = rows["plain BM25"][0], rows["SearchIndex"][0]
    print(" | ".join([f"{'delta':12}", *(f"{ours[c] - base[c]:+.1f}" for c in COLUMNS)]))


if __name__ == "__main__":
    main()
