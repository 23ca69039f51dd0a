"""Whether the semantic leg of tool search can run here, and where its model files are.

The leg is optional. It needs the ``semantic`` extra (numpy, safetensors, tokenizers) and
WordLlama's model files, which mcp-toolbridge does not ship: WordLlama's weights are MIT, but
its tokenizer (and, as a distillation of Llama 2's input embeddings, arguably the weights)
come from Llama 2, whose Community License puts conditions on every redistribution. The files
are read from the folder ``TOOLBRIDGE_SEMANTIC_MODEL`` names, or else from an installed
``wordllama`` distribution (located, never imported). Without them search is lexical. Nothing
here imports numpy or reads a file.
"""

from __future__ import annotations

import importlib.util
import os
from functools import cache
from pathlib import Path

MODEL = "l2_supercat_256"
WEIGHTS = f"{MODEL}.safetensors"
TOKENIZER = "l2_supercat_tokenizer_config.json"
MODEL_ENV = "TOOLBRIDGE_SEMANTIC_MODEL"
"""A folder holding ``WEIGHTS`` and ``TOKENIZER`` (WordLlama's files)."""
EXTRA = ("numpy", "safetensors", "tokenizers")


def model_files() -> tuple[Path, Path] | str:
    """(weights, tokenizer) of the semantic leg, or why there are none."""
    folder = os.environ.get(MODEL_ENV)
    if folder:
        root = Path(folder)
        weights, tokenizer = root / WEIGHTS, root / TOKENIZER
        if weights.is_file() and tokenizer.is_file():
            return weights, tokenizer
        return f"{MODEL_ENV}={folder} does not hold {WEIGHTS} and {TOKENIZER}"
    spec = importlib.util.find_spec("wordllama")
    if spec is not None and spec.origin is not None:
        root = Path(spec.origin).parent
        weights, tokenizer = root / "weights" / WEIGHTS, root / "tokenizers" / TOKENIZER
        if weights.is_file() and tokenizer.is_file():
            return weights, tokenizer
    return f"no model files: set {MODEL_ENV} to a folder with WordLlama's {WEIGHTS} and {TOKENIZER}"


@cache
def semantic_status() -> str:
    """ "on (...)" when the semantic leg can run in this process, else "off: <why and how>"."""
    missing = [name for name in EXTRA if importlib.util.find_spec(name) is None]
    if missing:
        return (
            f"off: {', '.join(missing)} not installed (pip install 'mcp-toolbridge[semantic]', "
            f"and WordLlama's model files, see docs/search.md); search is lexical"
        )
    files = model_files()
    if isinstance(files, str):
        return f"off: {files}; search is lexical"
    return f"on: WordLlama {MODEL} from {files[0].parent}"


def semantic_ready() -> bool:
    return semantic_status().startswith("on")
