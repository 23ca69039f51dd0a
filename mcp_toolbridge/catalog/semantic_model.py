"""Whether the semantic leg of tool search can run here, and its model.

The model ships with the package (``model/``): a static embedding table for the 29,525
tokens of BERT's uncased WordPiece vocabulary, 128 dimensions, int8 with a scale per row
(3.9 MB), distilled from the sentence model all-MiniLM-L6-v2 (Apache-2.0, sentence-transformers)
by embedding each token alone, reducing to 128 dimensions by PCA and weighting tokens by
frequency (Model2Vec's distillation, Tulkens and van Dongen 2024); ``benchmarks/distill_model.py``
made it, ``model/NOTICE`` says so under the Apache License 2.0 (``model/LICENSE``). The leg
needs numpy, the ``semantic`` extra; without it search is lexical. Nothing here imports numpy
or reads a file but to check that the model is there.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path

from mcp_toolbridge.catalog.scripts import runs

MODEL = "MiniLM-L6 static, 128 dimensions"
FOLDER = Path(__file__).resolve().parent / "model"
TABLE = FOLDER / "minilm_static_128.npz"
VOCAB = FOLDER / "vocab.txt"
EXTRA = ("numpy",)


def model_files() -> tuple[Path, Path] | str:
    """(table, vocabulary) of the semantic leg, or why there are none."""
    if TABLE.is_file() and VOCAB.is_file():
        return TABLE, VOCAB
    return f"the model files are missing from {FOLDER} (a broken install: reinstall mcp-toolbridge)"


@cache
def semantic_status() -> str:
    """ "on: ..." when the semantic leg can run in this process, else "off: <why and how>"."""
    missing = [name for name in EXTRA if importlib.util.find_spec(name) is None]
    if missing:
        return (
            f"off: {', '.join(missing)} not installed (pip install 'mcp-toolbridge[semantic]'); "
            "search is lexical"
        )
    files = model_files()
    if isinstance(files, str):
        return f"off: {files}; search is lexical"
    return f"on: {MODEL} ({files[0].name})"


def semantic_ready() -> bool:
    return semantic_status().startswith("on")


def english(text: str) -> bool:
    """Whether the semantic leg's model can read ``text``: none of it is in a script written
    without spaces (Chinese, Japanese, Thai, ...), where the lexical leg's bigrams do better
    than an English model's per-character tokens (docs/search.md, Languages)."""
    return text.isascii() or not any(unspaced for _, unspaced in runs(text))
