"""How runs of scripts written without spaces are cut into terms, compared per language.

    .venv/bin/python benchmarks/segmenters.py [--set benchmarks/sets/languages]
        [--distractors N] [--latency]

The set's queries carry a ``lang`` field (zh, ja, ko, latin, en); each variant's SearchIndex
is measured per language (nDCG@10, R@1, MRR in %; k = 10). The variants change only what a run
of Han, kana, Hangul, Thai... becomes (``scripts.grams``); folding and everything else stay:

- ``whole``: the run is one term (what the analyzer did before it knew these scripts)
- ``characters``: each character is a term
- ``bigrams``: overlapping character bigrams (a one-character run is itself)
- ``bigrams, chars indexed``: bigrams; the index also gets each character, for queries of one
  character (queries of more get only bigrams)
- ``bigrams+chars``: bigrams and characters, on both sides (shipped)
- ``jieba``: the words of jieba's search mode (``rjieba``, the Rust jieba, where installed:
  ``pip install rjieba``; benchmark use only)

``--distractors N`` adds N tools whose descriptions are random pieces (four characters) of the
set's Chinese and Japanese descriptions: the same words in meaningless order, so a variant that
matches loosely pays for it as a catalog grows. ``--latency`` times every query five times
(after a warm-up) and prints p50 and p99 per variant.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
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
from mcp_toolbridge.model import BuiltinTransport, Format, Source, ToolSpec  # noqa: E402

Cut = Callable[[str], list[str]]
SHIPPED: Cut = scripts_module.grams


def whole(run: str) -> list[str]:
    return [run]


def characters(run: str) -> list[str]:
    out = SHIPPED(run)  # n - 1 bigrams, then n characters
    return out[len(out) // 2 :]


def bigrams(run: str) -> list[str]:
    out = SHIPPED(run)  # n - 1 bigrams, then n characters
    return out[: len(out) // 2] or out


def jieba_cut() -> Cut | None:
    try:
        import rjieba  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None

    def cut(run: str) -> list[str]:
        return [w for w in rjieba.cut_for_search(run) if w.strip()]

    return cut


def distractors(specs: list[ToolSpec], count: int) -> list[ToolSpec]:
    texts = [s.description for s in specs if not s.description.isascii()]
    pieces = [text[i : i + 4] for text in texts for i in range(0, len(text), 3)]
    rng = random.Random(7)
    schema = {"type": "object"}
    return [
        ToolSpec(
            name=f"distractor_{i}",
            id=f"distractor_{i}",
            namespace=f"noise_{i % 40}",
            description="".join(rng.choice(pieces) for _ in range(rng.randint(4, 10))),
            input_schema=schema,
            runtime_input_schema=schema,
            transport=BuiltinTransport(name="noise"),
            source=Source(path="noise", index=i, format=Format.BUILTIN),
        )
        for i in range(count)
    ]


def latency(index: SearchIndex, queries: list[str]) -> str:
    for query in queries:
        index.search(query, K)
    times = []
    for _ in range(5):
        for query in queries:
            start = time.perf_counter()
            index.search(query, K)
            times.append(time.perf_counter() - start)
    times.sort()
    p99 = times[int(0.99 * (len(times) - 1))]
    return f"p50 {1000 * statistics.median(times):.2f} ms, p99 {1000 * p99:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", type=Path, default=ROOT / "benchmarks" / "sets" / "languages")
    parser.add_argument("--distractors", type=int, default=0)
    parser.add_argument("--latency", action="store_true")
    args = parser.parse_args()
    specs = tool_specs(args.set / "tools.jsonl")
    specs += distractors(specs, args.distractors)
    queries = read_jsonl(args.set / "queries-dev.jsonl")
    by_lang: dict[str, list[dict[str, object]]] = defaultdict(list)
    for query in queries:
        by_lang[str(query.get("lang", "?"))].append(query)
    jieba = jieba_cut()
    # name -> (what index text gets, what queries get)
    variants: dict[str, tuple[Cut, Cut] | None] = {
        "whole": (whole, whole),
        "characters": (characters, characters),
        "bigrams": (bigrams, bigrams),
        "bigrams, chars indexed": (SHIPPED, bigrams),
        "bigrams+chars (shipped)": (SHIPPED, SHIPPED),
        "jieba": (jieba, jieba) if jieba else None,
    }
    langs = sorted(by_lang)
    print(f"{len(specs)} tools, {len(queries)} queries; nDCG@10 / R@1 / MRR per language")
    head = ["variant", *(f"{lang} ({len(by_lang[lang])})" for lang in langs)]
    print(" | ".join(head + (["latency"] if args.latency else [])))
    for name, cuts in variants.items():
        if cuts is None:
            print(f"{name} | not installed")
            continue
        try:
            text_module.grams = cuts[0]  # type: ignore[attr-defined,assignment]
            index = SearchIndex.build(specs, analyzer=default_analyzer())
            text_module.grams = cuts[1]  # type: ignore[attr-defined,assignment]

            def search(query: str, index: SearchIndex = index) -> list[str]:
                return [hit.name for hit in index.search(query, K)]

            cells = []
            for lang in langs:
                m = evaluate(search, by_lang[lang])
                cells.append(f"{m['nDCG@10']:.1f} / {m['R@1']:.1f} / {m['MRR']:.1f}")
            if args.latency:
                cells.append(latency(index, [str(q["query"]) for q in queries]))
        finally:
            text_module.grams = SHIPPED  # type: ignore[attr-defined,assignment]
        print(" | ".join([name, *cells]))


if __name__ == "__main__":
    main()
