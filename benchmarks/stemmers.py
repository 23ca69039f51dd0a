"""Stemmer choices compared in docs/performance.md (benchmark use only)."""

from __future__ import annotations

from collections.abc import Callable

from mcp_toolbridge.catalog.text import Analyzer, snowball_english

# A deliberately tiny English suffix stripper (plural and common verb endings only), the
# "no dependency" option of the comparison.
_SUFFIXES = ("ies", "ing", "ed", "es", "s")


def strip_suffixes(words: list[str]) -> list[str]:
    out = []
    for w in words:
        for suffix in _SUFFIXES:
            if len(w) > len(suffix) + 2 and w.endswith(suffix) and not w.endswith("ss"):
                w = w[: -len(suffix)] + ("y" if suffix == "ies" else "")
                break
        out.append(w)
    return out


def snowballstemmer_english() -> Callable[[list[str]], list[str]]:
    import snowballstemmer  # type: ignore[import-not-found]

    stem: Callable[[list[str]], list[str]] = snowballstemmer.stemmer("english").stemWords
    return stem


def analyzer_for(name: str) -> Analyzer:
    if name == "pystemmer":
        return Analyzer(snowball_english())
    if name == "snowballstemmer":
        return Analyzer(snowballstemmer_english())
    if name == "suffix":
        return Analyzer(strip_suffixes)
    if name == "none":
        return Analyzer(None)
    raise SystemExit(f"unknown stemmer {name!r}: use pystemmer, snowballstemmer, suffix or none")
