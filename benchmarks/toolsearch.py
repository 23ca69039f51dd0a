"""Tool-retrieval quality of SearchIndex on every benchmark set, against the best plain BM25.

    .venv/bin/python benchmarks/toolsearch.py [--bench-dir DIR ...] [--sets NAME ...]
        [--tools tools.jsonl --queries queries.jsonl] [--half 1|2] [--grid full|classic]
        [--stemmer pystemmer|snowballstemmer|suffix|none]
        [--without clauses|abbreviations|courtesies|siblings|groups|semantic ...]
        [--names exact|identifiers|anywhere] [--columns all]

Every folder of each ``--bench-dir`` (default: ``../shared/toolsearch-bench`` beside the
repository, or beside the nearest folder above it that has ``shared/``, and this repository's
``benchmarks/sets``) that holds ``tools.jsonl`` and ``queries-dev.jsonl`` is a set; ``--sets``
picks some by folder name, ``--tools``/``--queries`` run one pair of files instead. A tool row
has ``id``, ``name``, ``description``, ``parameters`` and, where the set groups its tools, the
group (the first of ``namespace``, ``server``, ``service``, ``category``), which becomes the
tool's namespace as a manifest's folder would.

Per set, measured in the same process with the same analyzer: SearchIndex, and plain BM25 (one
field: split name, namespace, description, parameter texts) in the standard variants of
``bm25_baselines.BM25_VARIANTS`` (the name once or twice, a k1/b grid; ``--grid classic``: only
k1 1.5, b 0.75). The baseline is the best variant per metric, so the margin is against the
strongest BM25 on each metric. Metrics in %, k = 10: Recall@1/5/10, Hit@1 (all and one-tool
queries), MRR, binary nDCG@10, Complete@10 (every gold tool in the top 10); query latency
p50/p99 and build time for the product. A summary table closes the run.

``--half 1`` / ``--half 2`` keep every other query (the 1st, 3rd, ... or the 2nd, 4th, ...):
two halves with the same mix of one-tool and several-tool queries, for tuning on one and
reporting on the other. ``--without`` switches parts of the search off (ablations; the
baseline shares the analyzer, so ``abbreviations`` changes it too; ``groups`` ignores the
sets' group fields, for product and baseline alike; ``semantic`` leaves the semantic leg
out, so the product ranks lexically alone). ``--names`` picks which
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
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bm25_baselines import BM25_VARIANTS, PlainBM25  # noqa: E402
from benchmarks.stemmers import analyzer_for  # noqa: E402
from mcp_toolbridge.catalog import index as search_module  # noqa: E402
from mcp_toolbridge.catalog import ranking_config  # noqa: E402
from mcp_toolbridge.catalog import text as text_module  # noqa: E402
from mcp_toolbridge.catalog.index import SearchIndex  # noqa: E402
from mcp_toolbridge.model import BuiltinTransport, Format, Source, ToolSpec  # noqa: E402
from mcp_toolbridge.names import sanitize_name  # noqa: E402

BENCH_DIR = next(
    (d / "shared" / "toolsearch-bench" for d in ROOT.parents if (d / "shared").is_dir()),
    ROOT.parent / "shared" / "toolsearch-bench",
)
"""``../shared/toolsearch-bench`` beside the repository (or beside a folder above it, for a
git worktree kept elsewhere)."""
OWN_SETS = ROOT / "benchmarks" / "sets"
"""Sets kept with the code: ``languages`` (Chinese, Japanese, Korean, accented Latin)."""
BENCH = BENCH_DIR / "seal-tools"
K = 10
GROUP_FIELDS = ["namespace", "server", "service", "category"]


def read_jsonl(path: Path) -> list[dict[str, object]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def tool_specs(path: Path) -> list[ToolSpec]:
    """ToolSpecs straight from a tools.jsonl (id, name, description, parameters, group)."""
    specs = []
    for i, row in enumerate(read_jsonl(path)):
        tool_id = str(row["id"])
        schema = row.get("parameters") or {"type": "object"}
        assert isinstance(schema, dict)
        group = next((str(row[f]) for f in GROUP_FIELDS if row.get(f)), "")
        specs.append(
            ToolSpec(
                name=sanitize_name(tool_id),
                id=tool_id,
                namespace=group,
                description=str(row.get("description") or ""),
                input_schema=schema,
                runtime_input_schema=schema,
                transport=BuiltinTransport(name=tool_id),
                source=Source(path=str(path), index=i, format=Format.BUILTIN),
            )
        )
    return specs


def discover(bench_dir: Path) -> list[tuple[str, Path, Path]]:
    """(name, tools, queries) of every set folder under ``bench_dir``, by name."""
    found = []
    for folder in sorted(p for p in bench_dir.iterdir() if p.is_dir()):
        tools, queries = folder / "tools.jsonl", folder / "queries-dev.jsonl"
        if tools.is_file() and queries.is_file():
            found.append((folder.name, tools, queries))
    return found


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
        from mcp_toolbridge.catalog import mentions

        def named_anywhere(text: str) -> list[int]:
            found: list[list[int]] = [[], [], []]
            for token in dict.fromkeys([text, *text.split()]):
                strip = mentions.STRIP
                form = token.strip(strip).rstrip(".").strip(strip).lower()
                for klass, docs in enumerate(index._name_matches(form) if form else ()):
                    found[klass] += docs
            return list(dict.fromkeys(d for docs in found for d in docs))

        setattr(index, "_named_in", named_anywhere)  # noqa: B010


COLUMNS = ["R@1", "R@5", "R@10", "Hit@1", "Hit@1 single", "MRR", "nDCG@10", "Complete@10"]
SUMMARY = ["nDCG@10", "Complete@10", "R@5"]
Metrics = dict[str, float]


def run_set(
    name: str, tools: Path, queries_path: Path, args: argparse.Namespace
) -> tuple[Metrics, Metrics]:
    """Measure one set, print its table; the product's metrics and the best BM25 per metric."""
    specs = tool_specs(tools)
    queries = read_jsonl(queries_path)
    if args.half:
        queries = queries[args.half - 1 :: 2]
    start = time.perf_counter()
    index = SearchIndex.build(specs, analyzer=analyzer_for(args.stemmer))
    build = time.perf_counter() - start
    set_name_rule(index, args.names)
    ours = evaluate(lambda q: [h.name for h in index.search(q, K)], queries)

    variants = [v for v in BM25_VARIANTS if args.grid == "full" or v[1:] == (1.5, 0.75)]
    rows: dict[str, Metrics] = {}
    for names in sorted({v[0] for v in variants}):
        plain = PlainBM25(specs, analyzer_for(args.stemmer), names=names)
        for _, k1, b in (v for v in variants if v[0] == names):
            rows[f"BM25 name×{names} k1 {k1} b {b}"] = evaluate(
                plain.with_params(k1, b).searcher(K), queries
            )
    best = {c: max(m[c] for m in rows.values()) for c in COLUMNS}
    top_label = max(rows, key=lambda label: (rows[label]["nDCG@10"], rows[label]["Complete@10"]))

    print(f"\n## {name}: {len(specs)} tools, {len(queries)} queries, stemmer {args.stemmer}")
    cols = COLUMNS if args.columns == "all" else SUMMARY
    print(" | ".join([f"{'':32}", *cols, "p50 ms", "p99 ms", "build s"]))
    latency = [f"{ours['p50 ms']:.2f}", f"{ours['p99 ms']:.2f}", f"{build:.2f}"]
    print(" | ".join([f"{'SearchIndex':32}", *(f"{ours[c]:.1f}" for c in cols), *latency]))
    print(" | ".join([f"{top_label:32}", *(f"{rows[top_label][c]:.1f}" for c in cols)]))
    print(" | ".join([f"{'best BM25 per metric':32}", *(f"{best[c]:.1f}" for c in cols)]))
    print(" | ".join([f"{'margin':32}", *(f"{ours[c] - best[c]:+.1f}" for c in cols)]))
    return ours, best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench-dir", type=Path, nargs="+", default=[BENCH_DIR, OWN_SETS])
    parser.add_argument("--sets", nargs="+", help="folder names under --bench-dir (default: all)")
    parser.add_argument("--tools", type=Path, help="one set's tools.jsonl (with --queries)")
    parser.add_argument("--queries", type=Path, help="one set's queries.jsonl (with --tools)")
    parser.add_argument("--stemmer", default="pystemmer")
    parser.add_argument("--half", type=int, choices=[1, 2], help="every other query only")
    parser.add_argument("--grid", default="full", choices=["full", "classic"])
    parser.add_argument("--columns", default="summary", choices=["summary", "all"])
    parser.add_argument(
        "--without",
        nargs="+",
        default=[],
        choices=["clauses", "abbreviations", "courtesies", "siblings", "groups", "semantic"],
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
    if "siblings" in args.without:
        ranking_config.SIBLING_WEIGHT = 0.0
    if "semantic" in args.without:
        ranking_config.SEMANTIC_MODEL = ""
    if "groups" in args.without:
        GROUP_FIELDS[:] = []

    if args.tools or args.queries:
        tools = args.tools or BENCH / "tools.jsonl"
        queries = args.queries or tools.with_name("queries-dev.jsonl")
        sets = [(tools.parent.name, tools, queries)]
    else:
        sets = [s for folder in args.bench_dir if folder.is_dir() for s in discover(folder)]
        if args.sets:
            sets = [s for s in sets if s[0] in args.sets]
        if not sets:
            raise SystemExit(f"no benchmark sets under {', '.join(map(str, args.bench_dir))}")
    results = {name: run_set(name, tools, queries, args) for name, tools, queries in sets}

    print("\n## summary: SearchIndex vs the best BM25 variant per metric")
    head = ["set"] + [f"{c} ours / BM25 / margin" for c in SUMMARY]
    print(" | ".join(head))
    for name, (ours, best) in results.items():
        cells = [f"{ours[c]:.1f} / {best[c]:.1f} / {ours[c] - best[c]:+.1f}" for c in SUMMARY]
        print(" | ".join([name, *cells]))


if __name__ == "__main__":
    main()
