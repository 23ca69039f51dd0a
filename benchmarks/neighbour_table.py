"""Make the core install's term neighbours (``mcp_toolbridge/catalog/model/neighbours.tsv.gz``)
from the shipped static model, so lexical search can bridge vocabulary without numpy.

    .venv/bin/python benchmarks/neighbour_table.py [--top 16] [--min 0.4]

Every whole-word token of the model's WordPiece vocabulary (letters only, three or more) is
analysed as the index analyses text (stop words out, abbreviations read, Snowball stems); the
words of one stem share the mean of their unit vectors. Each stem then keeps its ``--top``
nearest other stems by cosine, those at ``--min`` or above, as a line
``stem<TAB>neighbour cosine neighbour cosine ...`` (cosines to two decimals). Only the model
is read: no benchmark set, no query. numpy is needed here (the ``semantic`` extra), never
where the table is used (``catalog/expansion.py``).
"""

from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcp_toolbridge.catalog.expansion import TABLE  # noqa: E402
from mcp_toolbridge.catalog.semantic_model import TABLE as MODEL  # noqa: E402
from mcp_toolbridge.catalog.semantic_model import VOCAB  # noqa: E402
from mcp_toolbridge.catalog.text import default_analyzer  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=16)
    parser.add_argument("--min", type=float, default=0.4)
    parser.add_argument("--out", type=Path, default=TABLE)
    args = parser.parse_args()
    with np.load(MODEL, allow_pickle=False) as stored:
        table = stored["table"].astype(np.float32) * stored["scale"][:, None]
    words = VOCAB.read_text(encoding="utf-8").splitlines()
    analyzer = default_analyzer()
    rows: dict[str, list[int]] = {}
    for i, word in enumerate(words):
        if len(word) < 3 or not word.isascii() or not word.isalpha():
            continue
        terms = analyzer.terms(word)
        if len(terms) == 1 and terms[0].isalpha() and len(terms[0]) >= 3:
            rows.setdefault(terms[0], []).append(i)
    stems = sorted(rows)
    unit = table / np.maximum(np.linalg.norm(table, axis=1, keepdims=True), 1e-9)
    vectors = np.stack([unit[rows[s]].mean(axis=0) for s in stems])
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)
    lines = []
    for start in range(0, len(stems), 1024):
        sims = vectors[start : start + 1024] @ vectors.T
        for r, row in enumerate(sims):
            row[start + r] = -1.0
            best = np.argpartition(-row, args.top)[: args.top]
            best = best[np.argsort(-row[best], kind="stable")]
            near = [f"{stems[j]} {row[j]:.2f}" for j in best if row[j] >= args.min]
            if near:
                lines.append(f"{stems[start + r]}\t{' '.join(near)}")
    data = ("\n".join(lines) + "\n").encode()
    args.out.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    size = args.out.stat().st_size
    print(f"{len(lines)} of {len(stems)} stems with neighbours, {size / 1e6:.2f} MB: {args.out}")


if __name__ == "__main__":
    main()
