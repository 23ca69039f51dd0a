"""The in-house SearchIndex against off-the-shelf search libraries (docs/performance.md).

    PYTHONPATH=/tmp/searchlibs .venv/bin/python benchmarks/search_libraries.py \
        [--engines searchindex bm25s bm25s+clauses tantivy] [--sizes 100000] [--dir /tmp/tb-scale]

The libraries are not project dependencies: install them aside for the measurement, e.g.
``.venv/bin/pip install --target /tmp/searchlibs bm25s numpy scipy tantivy``. An engine whose
library is missing is skipped.

Every engine sees the same text per tool (split name, description, parameter texts: the plain
BM25 document of benchmarks/toolsearch.py) analysed by the same ``Analyzer`` (identifier
splitting, stop words, abbreviations, Snowball stemming), so the engines differ only in how
they index and score. ``searchindex`` is the product (BM25F fields, name pins, clause
interleaving); ``bm25s`` and ``tantivy`` are one-field BM25 (bm25s: k1 1.5, b 0.75, Lucene
idf; tantivy: its fixed k1 1.2, b 0.75); ``bm25s+clauses`` runs the product's clause splitting
and rank-by-rank interleaving on top of bm25s scores.

Each engine is measured in a fresh child process per catalog: on Seal-Tools dev (quality and
latency over its 700 queries) and on each synthetic catalog of ``--sizes`` (build time, query
latency over 400 mixed queries, memory). Memory is the RSS growth across the build and what
tracemalloc sees the built index hold (numpy reports its arrays to tracemalloc; tantivy's
Rust heap is invisible to it, so only RSS counts there).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import random
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.search_scale import make_queries  # noqa: E402
from benchmarks.toolsearch import BENCH, COLUMNS, evaluate, read_jsonl, tool_specs  # noqa: E402
from mcp_toolbridge.catalog.index import SearchIndex  # noqa: E402
from mcp_toolbridge.catalog.index_build import field_texts  # noqa: E402
from mcp_toolbridge.catalog.merge import interleave  # noqa: E402
from mcp_toolbridge.catalog.text import Analyzer, default_analyzer, split_clauses  # noqa: E402
from mcp_toolbridge.model import ToolSpec  # noqa: E402

ENGINES = ["searchindex", "bm25s", "bm25s+clauses", "tantivy"]
K = 10

Search = Callable[[str, int], list[str]]


def optional(module: str) -> ModuleType | None:
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


def document(spec: ToolSpec, analyzer: Analyzer) -> list[str]:
    name, _, _, description, params, _ = field_texts(spec)
    return analyzer.terms(f"{name}\n{description}\n{params}")


def build_searchindex(specs: list[ToolSpec]) -> Search:
    index = SearchIndex.build(specs, analyzer=default_analyzer())

    def search(query: str, k: int) -> list[str]:
        return [h.name for h in index.search(query, k)]

    search.keep = index  # type: ignore[attr-defined]
    return search


def build_bm25s(specs: list[ToolSpec], clauses: bool) -> Search:
    bm25s, np = importlib.import_module("bm25s"), importlib.import_module("numpy")
    analyzer = default_analyzer()
    names = [s.name for s in specs]
    retriever: Any = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    retriever.index([document(s, analyzer) for s in specs], show_progress=False)
    vocab = retriever.vocab_dict

    def ranked(terms: list[str], k: int) -> list[tuple[float, int]]:
        known = [t for t in terms if t in vocab]
        if not known:
            return []
        scores = retriever.get_scores(known)
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        # ties by doc id (specs are in name order), as SearchIndex breaks them by name
        return sorted(
            ((float(scores[d]), int(d)) for d in top if scores[d] > 0),
            key=lambda sd: (-sd[0], sd[1]),
        )

    def search(query: str, k: int) -> list[str]:
        parts = [t for t in map(analyzer.terms, split_clauses(query)) if t] if clauses else []
        if len(parts) > 1:
            hits = interleave([ranked(p, k) for p in parts], k)
        else:
            hits = ranked(analyzer.terms(query), k)
        return [names[d] for _, d in hits]

    search.keep = retriever  # type: ignore[attr-defined]
    return search


def build_tantivy(specs: list[ToolSpec]) -> Search:
    tantivy: Any = importlib.import_module("tantivy")
    analyzer = default_analyzer()
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("body", stored=False, tokenizer_name="whitespace")
    builder.add_integer_field("doc", stored=True)
    schema = builder.build()
    index = tantivy.Index(schema)  # in RAM
    writer = index.writer(heap_size=200_000_000, num_threads=1)
    for doc, spec in enumerate(specs):
        writer.add_document(tantivy.Document(doc=[doc], body=" ".join(document(spec, analyzer))))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    searcher = index.searcher()
    names = [s.name for s in specs]

    def search(query: str, k: int) -> list[str]:
        terms = analyzer.terms(query)
        if not terms:
            return []
        should = [
            (tantivy.Occur.Should, tantivy.Query.term_query(schema, "body", t))
            for t in dict.fromkeys(terms)
        ]
        hits = searcher.search(tantivy.Query.boolean_query(should), k).hits
        return [names[searcher.doc(address)["doc"][0]] for _, address in hits]

    search.keep = index  # type: ignore[attr-defined]
    return search


def build(engine: str, specs: list[ToolSpec]) -> Search:
    if engine == "searchindex":
        return build_searchindex(specs)
    if engine in ("bm25s", "bm25s+clauses"):
        return build_bm25s(specs, clauses=engine == "bm25s+clauses")
    if engine == "tantivy":
        return build_tantivy(specs)
    raise SystemExit(f"unknown engine {engine!r}")


def rss_mb() -> float:
    with open("/proc/self/status", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def load_synthetic(folder: Path) -> list[ToolSpec]:
    from mcp_toolbridge.catalog.catalog import Catalog
    from mcp_toolbridge.loaders import load_paths

    catalog, _ = Catalog.build(load_paths([folder]).tools)
    return sorted(catalog.specs(), key=lambda s: s.name)


def timed(engine: str, specs: list[ToolSpec], queries: list[str], quality: bool) -> dict[str, Any]:
    """Build time, RSS growth, latency and (on Seal-Tools) quality; the index is dropped on
    return."""
    gc.collect()
    rss_before = rss_mb()
    start = time.perf_counter()
    search = build(engine, specs)
    build_s = time.perf_counter() - start
    rss_growth = rss_mb() - rss_before
    for q in queries[:20]:
        search(q, K)
    times = []
    for q in queries:
        start = time.perf_counter()
        search(q, K)
        times.append(time.perf_counter() - start)
    times.sort()
    out: dict[str, Any] = {
        "build_s": build_s,
        "rss_growth_mb": rss_growth,
        "p50_ms": 1000 * statistics.median(times),
        "p99_ms": 1000 * times[int(0.99 * (len(times) - 1))],
    }
    if quality:
        metrics = evaluate(lambda q: search(q, K), read_jsonl(BENCH / "queries-dev.jsonl"))
        out.update({c: metrics[c] for c in COLUMNS})
    return out


def measure(engine: str, catalog: str) -> dict[str, Any]:
    """One engine on one catalog, in this (fresh) process."""
    if catalog == "seal":
        specs = sorted(tool_specs(BENCH / "tools.jsonl"), key=lambda s: s.name)
        queries = [str(q["query"]) for q in read_jsonl(BENCH / "queries-dev.jsonl")]
    else:
        specs = load_synthetic(Path(catalog))
        queries = make_queries([s.name for s in specs], 400, random.Random(3))
        queries = [q for q in queries if not q.startswith("select:")]  # SearchIndex only
    default_analyzer().terms("warm the stemmer import")
    out: dict[str, Any] = {"tools": len(specs), **timed(engine, specs, queries, catalog == "seal")}
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    kept = build(engine, specs)
    out["traced_mb"] = (tracemalloc.get_traced_memory()[0] - base) / 2**20
    tracemalloc.stop()
    del kept
    return out


def available(engine: str) -> bool:
    needs = {"bm25s": ["bm25s", "numpy"], "bm25s+clauses": ["bm25s", "numpy"]}
    needs["tantivy"] = ["tantivy"]
    return all(optional(m) is not None for m in needs.get(engine, []))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engines", nargs="+", default=ENGINES, choices=ENGINES)
    parser.add_argument("--sizes", type=int, nargs="*", default=[100_000])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/tb-scale"))
    parser.add_argument("--child", nargs=2, metavar=("ENGINE", "CATALOG"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(*args.child)))
        return
    catalogs = ["seal", *(str(args.dir / f"catalog-{n}") for n in args.sizes)]
    for catalog in catalogs:
        if catalog != "seal" and not Path(catalog).exists():
            print(f"# {catalog} missing: run benchmarks/search_scale.py first", file=sys.stderr)
            continue
        label = "Seal-Tools dev" if catalog == "seal" else Path(catalog).name
        print(f"\n{label}")
        quality = catalog == "seal"
        head = ["engine", "build s", "p50 ms", "p99 ms", "RSS growth MB", "traced MB"]
        if quality:
            head += ["nDCG@10", "Complete@10", "Hit@1 single", "R@5"]
        print(" | ".join(head))
        for engine in args.engines:
            if not available(engine):
                print(f"{engine} | (library not installed: skipped)")
                continue
            child = [sys.executable, __file__, "--child", engine, catalog]
            proc = subprocess.run(child, check=True, capture_output=True, text=True)
            m = json.loads(proc.stdout.strip().splitlines()[-1])
            cells = [
                engine,
                f"{m['build_s']:.2f}",
                f"{m['p50_ms']:.2f}",
                f"{m['p99_ms']:.2f}",
                f"{m['rss_growth_mb']:.0f}",
                f"{m['traced_mb']:.0f}",
            ]
            if quality:
                cells += [f"{m[c]:.1f}" for c in ("nDCG@10", "Complete@10", "Hit@1 single", "R@5")]
            print(" | ".join(cells))


if __name__ == "__main__":
    main()
