"""How runs of scripts written without spaces are cut into terms, compared per language.

    .venv/bin/python benchmarks/segmenters.py [--set benchmarks/sets/languages]

The set's queries carry a ``lang`` field (zh, ja, ko, latin, en); each variant's SearchIndex
is measured per language (nDCG@10, R@1, MRR in %; k = 10). The variants change only what a run
of Han, kana, Hangul, Thai... becomes (``scripts.bigrams``); folding and everything else stay:

- ``whole``: the run is one term (what the analyzer did before it knew these scripts)
- ``unigrams``: each character is a term
- ``bigrams``: overlapping character bigrams, index text also gets each character (shipped)
- ``bigrams+uni``: as ``bigrams``, and queries get each character too
- ``jieba``: the words of jieba's search mode (``rjieba``, the Rust jieba, where installed:
  ``pip install rjieba``; benchmark use only)
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.toolsearch import K, evaluate, read_jsonl, tool_specs  # noqa: E402
from mcp_toolbridge.catalog import scripts as scripts_module  # noqa: E402
from mcp_toolbridge.catalog import text as text_module  # noqa: E402
from mcp_toolbridge.catalog.index import SearchIndex  # noqa: E402
from mcp_toolbridge.catalog.text import default_analyzer  # noqa: E402

Cut = Callable[..., list[str]]
SHIPPED: Cut = scripts_module.bigrams


def whole(run: str, *, unigrams: bool) -> list[str]:
    return [run]


def characters(run: str, *, unigrams: bool) -> list[str]:
    return list(run)


def with_query_unigrams(run: str, *, unigrams: bool) -> list[str]:
    return SHIPPED(run, unigrams=True)


def jieba_cut() -> Cut | None:
    try:
        import rjieba  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None

    def cut(run: str, *, unigrams: bool) -> list[str]:
        return [w for w in rjieba.cut_for_search(run) if w.strip()]

    return cut


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", type=Path, default=ROOT / "benchmarks" / "sets" / "languages")
    args = parser.parse_args()
    specs = tool_specs(args.set / "tools.jsonl")
    queries = read_jsonl(args.set / "queries-dev.jsonl")
    by_lang: dict[str, list[dict[str, object]]] = defaultdict(list)
    for query in queries:
        by_lang[str(query.get("lang", "?"))].append(query)
    variants: dict[str, Cut | None] = {
        "whole": whole,
        "unigrams": characters,
        "bigrams": SHIPPED,
        "bigrams+uni": with_query_unigrams,
        "jieba": jieba_cut(),
    }
    langs = sorted(by_lang)
    print(f"{len(specs)} tools, {len(queries)} queries; nDCG@10 / R@1 / MRR per language")
    print(" | ".join(["variant", *(f"{lang} ({len(by_lang[lang])})" for lang in langs)]))
    for name, cut in variants.items():
        if cut is None:
            print(f"{name} | not installed")
            continue
        text_module.bigrams = cut  # type: ignore[attr-defined]
        try:
            index = SearchIndex.build(specs, analyzer=default_analyzer())

            def search(query: str, index: SearchIndex = index) -> list[str]:
                return [hit.name for hit in index.search(query, K)]

            cells = []
            for lang in langs:
                m = evaluate(search, by_lang[lang])
                cells.append(f"{m['nDCG@10']:.1f} / {m['R@1']:.1f} / {m['MRR']:.1f}")
        finally:
            text_module.bigrams = SHIPPED  # type: ignore[attr-defined]
        print(" | ".join([name, *cells]))


if __name__ == "__main__":
    main()
