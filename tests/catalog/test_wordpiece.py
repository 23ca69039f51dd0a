"""catalog/wordpiece.py gives the ids the reference WordPiece tokenizer gives (Hugging Face
``tokenizers``, a dev dependency) for the model's vocabulary, on prose, identifiers, accents,
CJK, control characters and words longer than the limit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcp_toolbridge.catalog.semantic_model import VOCAB
from mcp_toolbridge.catalog.wordpiece import WordPiece

tokenizers = pytest.importorskip("tokenizers", reason="tokenizers (the reference) is a dev tool")

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "sets" / "languages"
TEXTS = [
    "What is the weather like in Paris tomorrow?",
    "getUserName mail.smtp_send fs_read_file HTTPServer base64",
    "Café ÅNGSTRÖM naïve façade Straße",
    "翻译文本到中文 天気予報 파일을 열어",
    "tab\there\nnew line\x00\x07ctrl\x7f zero\u200bwidth\u00a0nbsp",
    "emoji 🎉 and full-width ＡＰＩ",
    "x" * 150 + " short",
    "",
]


def reference() -> Any:
    vocab = {t: i for i, t in enumerate(VOCAB.read_text(encoding="utf-8").split("\n")) if t}
    model = tokenizers.models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100)
    tokenizer = tokenizers.Tokenizer(model)
    tokenizer.normalizer = tokenizers.normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True
    )
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    return tokenizer


def test_ids_match_the_reference_tokenizer() -> None:
    texts = list(TEXTS)
    for name in ("tools.jsonl", "queries-dev.jsonl"):
        for line in (BENCH / name).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            texts.append(str(row.get("query") or f"{row['name']} {row['description']}"))
    ref = reference()
    ours = WordPiece(VOCAB)
    for text in texts:
        assert ours.ids(text) == ref.encode(text, add_special_tokens=False).ids, text


def test_an_unknown_word_is_one_unknown_token() -> None:
    ours = WordPiece(VOCAB)
    assert ours.ids("x" * 150) == [ours.unknown]
    assert len(ours) == VOCAB.read_text(encoding="utf-8").count("\n")
