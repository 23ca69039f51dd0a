"""The semantic leg of tool search: static token embeddings, averaged per text.

A text's vector is the mean of its tokens' vectors (BERT's uncased WordPiece, ``wordpiece.py``;
the 29,525 x 128 table of ``model/``, distilled from the sentence model all-MiniLM-L6-v2),
scaled to unit length, so a tool and a request that say the same thing in other words
("tenant rights" and "relevant laws") still score by cosine. The model ships with the
package (``semantic_model.py``: what it is, its licence, how it was made); the leg needs
numpy, the ``semantic`` extra.

The model (3.9 MB) is read once per process, on first use (``embedder``); a catalog's vectors
are made when its index first needs them (``vectors.py``), so a server that never searches
never imports numpy nor reads the model. This is the only module that touches numpy.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from itertools import islice
from pathlib import Path

import numpy as np
import numpy.typing as npt

from mcp_toolbridge.catalog.semantic_model import model_files
from mcp_toolbridge.catalog.wordpiece import WordPiece

_BATCH = 64
"""Texts per step: the token vectors of one batch are held at once (64 texts of 200 tokens:
6.5 MB)."""

Matrix = npt.NDArray[np.float32]


class Embedder:
    """Texts -> unit vectors (float32, one row per text; a text with no known token gives
    zeros)."""

    def __init__(self, table: Path, vocab: Path) -> None:
        with np.load(table, allow_pickle=False) as stored:
            # int8 rows and a scale per row in the file (3.9 MB); float32 here (15 MB)
            self._table = stored["table"].astype(np.float32) * stored["scale"][:, None]
        self._tokenizer = WordPiece(vocab)
        if len(self._tokenizer) != self._table.shape[0]:
            raise ValueError(f"{vocab} does not match {table}")
        self.dims = int(self._table.shape[1])

    def embed(self, texts: Iterable[str], count: int | None = None) -> Matrix:
        """``count`` texts (all of them when None): only a batch is held at a time."""
        if count is None:
            texts = list(texts)
            count = len(texts)
        items = iter(texts)
        out = np.zeros((count, self.dims), dtype=np.float32)
        unknown = self._tokenizer.unknown
        for start in range(0, count, _BATCH):
            chunk = list(islice(items, _BATCH))
            encoded = [[i for i in self._tokenizer.ids(text) if i != unknown] for text in chunk]
            sizes = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
            ids = np.fromiter((i for e in encoded for i in e), dtype=np.int64, count=sizes.sum())
            if not ids.size:
                continue
            rows = self._table[ids]
            filled = np.flatnonzero(sizes)
            starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))[filled]
            out[start + filled] = np.add.reduceat(rows, starts, axis=0) / sizes[filled, None]
        norms = np.sqrt(np.einsum("ij,ij->i", out, out))[:, None]  # no temporary copy of out
        np.divide(out, norms, out=out, where=norms > 0)
        return out


_lock = threading.Lock()
_model: list[Embedder] = []


def embedder() -> Embedder:
    """The process's one Embedder, read from the model files on first use."""
    with _lock:
        if not _model:
            files = model_files()
            if isinstance(files, str):
                raise RuntimeError(f"the semantic leg cannot run: {files}")
            _model.append(Embedder(*files))
        return _model[0]


def to_bytes(matrix: Matrix) -> bytes:
    """A catalog's vectors as stored in the cache (float32, rows in order: exact)."""
    return np.ascontiguousarray(matrix, dtype=np.float32).tobytes()


def from_bytes(data: bytes, rows: int) -> Matrix | None:
    """Vectors stored by :func:`to_bytes`, or None when ``data`` is not ``rows`` of this
    model's vectors."""
    dims = embedder().dims
    if len(data) != rows * dims * 4:
        return None
    return np.frombuffer(data, dtype=np.float32).reshape(rows, dims)  # read-only, no copy


def cosines(tools: Matrix, queries: Matrix) -> Matrix:
    """``queries @ tools.T`` (unit rows, so cosines; one row per query) by numpy's own
    vectorised loop, on this thread: a matrix product would go to the BLAS, whose worker
    threads wait on each other on a busy machine (15 ms instead of 0.4 for 4,000 tools and
    two clauses, measured)."""
    out: Matrix = np.einsum("ij,kj->ki", tools, queries)
    return out


def fuse(
    lexical: list[tuple[float, int]],
    cosines: Matrix,
    semantic: list[int],
    weight: float,
    n: int,
) -> list[tuple[float, int]]:
    """The ``n`` best of the lexical and the semantic candidates, best first: each leg's
    scores z-normalised over the union of both candidate lists (a lexical score of a doc the
    lexical leg did not list counts 0), then ``(1 - weight) × lexical + weight × semantic``.
    Ties break by doc id (name order)."""
    docs = list(dict.fromkeys([d for _, d in lexical] + semantic))
    if not docs:
        return []
    own = {d: s for s, d in lexical}
    lex = np.fromiter((own.get(d, 0.0) for d in docs), dtype=np.float64, count=len(docs))
    sem = cosines[docs].astype(np.float64)
    mixed = (1.0 - weight) * _z(lex) + weight * _z(sem)
    ranked = sorted(
        (-score, doc)
        for score, doc, matched in zip(mixed.tolist(), docs, lex > 0, strict=True)
        if matched or score > 0.0
    )
    return [(-negative, doc) for negative, doc in ranked[:n]]


def _z(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    spread = float(values.std())
    centred: npt.NDArray[np.float64] = values - values.mean()
    return centred / (spread or 1.0)


def best(cosines: Matrix, n: int) -> list[int]:
    """The docs of the ``n`` highest cosines, best first (ties by doc id)."""
    if n <= 0:
        return []
    if n < len(cosines):
        picked = np.argpartition(-cosines, n - 1)[:n]
    else:
        picked = np.arange(len(cosines))
    return sorted(picked.tolist(), key=lambda d: (-float(cosines[d]), d))
