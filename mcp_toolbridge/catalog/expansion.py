"""Query expansion for the lexical leg: each query term's nearest terms, without numpy.

A request and its tool often share no word ("tenant rights" and a tool about "laws"). The
shipped static model (``semantic_model.py``) knows which words are near, but reading it needs
numpy; ``model/neighbours.tsv.gz`` holds what the lexical leg needs of it, made once by
``benchmarks/neighbour_table.py``: per stem of the model's whole-word vocabulary (analysed as
the index analyses text), its nearest stems by cosine. A query term's neighbours are added
to its clause's terms with a lower weight (``config.EXPANSION_WEIGHT`` × cosine), so a tool
that has the request's own words still comes first. Pure Python; the table is read on first
use (``neighbours``).
"""

from __future__ import annotations

import gzip
import sys
from functools import cache
from pathlib import Path

TABLE = Path(__file__).resolve().parent / "model" / "neighbours.tsv.gz"

Neighbours = dict[str, tuple[str | float, ...]]
"""Stem -> its nearest stems and their cosines, alternating, nearest first (one flat tuple
per stem, each stem string and cosine value one shared object: 4.1 MB in memory)."""


@cache
def neighbours() -> Neighbours:
    """The table (empty when its file is missing: search is then lexical without
    expansion). Read once per process: about 0.4 s of CPU, which ``SearchIndex.warm_up``
    spends off the event loop."""
    out: Neighbours = {}
    try:
        text = gzip.decompress(TABLE.read_bytes()).decode("utf-8")
    except OSError:
        return out
    cosines: dict[str, float] = {}
    for line in text.splitlines():
        stem, _, rest = line.partition("\t")
        words = rest.split(" ")
        row: list[str | float] = []
        for i in range(0, len(words) - 1, 2):
            row.append(sys.intern(words[i]))
            row.append(cosines.setdefault(words[i + 1], float(words[i + 1])))
        out[sys.intern(stem)] = tuple(row)
    return out


def loaded() -> bool:
    """Whether the table has been read in this process."""
    return neighbours.cache_info().currsize > 0


def expand(terms: list[str], top: int, floor: float, weight: float) -> dict[str, float]:
    """The terms near ``terms`` (not among them), each with its weight relative to a query
    term: ``weight`` × the best cosine any query term has with it, for the ``top`` nearest
    of each term at ``floor`` or above."""
    if weight <= 0.0 or top <= 0:
        return {}
    table = neighbours()
    have = set(terms)
    out: dict[str, float] = {}
    for term in have:
        row = table.get(term, ())
        for i in range(0, min(len(row), 2 * top), 2):
            near, cosine = str(row[i]), float(row[i + 1])
            if cosine < floor:
                break
            if near not in have and weight * cosine > out.get(near, 0.0):
                out[near] = weight * cosine
    return out
