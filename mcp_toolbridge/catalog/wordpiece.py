"""BERT's uncased WordPiece tokenizer (Devlin et al. 2019; Wu et al. 2016), the one the
semantic leg's model was distilled with: text -> token ids of ``model/vocab.txt``. Pure
Python, no I/O but reading the vocabulary once.

The steps are BERT's ``BasicTokenizer`` and ``WordpieceTokenizer``, as the reference
implementation (Hugging Face ``tokenizers``' ``BertNormalizer``, ``BertPreTokenizer`` and
``WordPiece`` with the vocabulary's settings) does them, and ``tests/catalog`` checks the ids
against it: control characters dropped, CJK ideographs set apart, lowercase, accents
stripped (NFD, combining marks dropped), words split at white space and at every
punctuation character, then each word cut greedily into the longest pieces the vocabulary
has (``##`` before a piece inside a word); a word with no such cut is ``[UNK]``. Written
here rather than taken from ``tokenizers``, whose wheel pulls huggingface-hub, hf-xet,
fsspec and tqdm for nothing this needs.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

UNK = "[UNK]"
MAX_WORD = 100
"""A longer word is ``[UNK]`` whole (BERT's ``max_input_chars_per_word``)."""
_CJK = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)
_ASCII_CONTROL = dict.fromkeys(
    c for c in range(128) if chr(c) not in "\t\n\r" and (c < 32 or c == 127)
)


class WordPiece:
    """Text -> ids of the vocabulary in ``vocab`` (one token a line, ids in line order)."""

    def __init__(self, vocab: Path) -> None:
        tokens = vocab.read_text(encoding="utf-8").split("\n")
        self._ids = {token: i for i, token in enumerate(tokens) if token}
        self.unknown = self._ids[UNK]
        self._words: dict[str, tuple[int, ...]] = {}

    def __len__(self) -> int:
        return len(self._ids)

    def ids(self, text: str) -> list[int]:
        """The ids of ``text``'s pieces, in order (``[UNK]`` included)."""
        out: list[int] = []
        memo = self._words
        for word in _words(text):
            pieces = memo.get(word)
            if pieces is None:
                pieces = self._pieces(word)
                if len(memo) < 200_000:  # bounded: a server may see endless novel words
                    memo[word] = pieces
            out += pieces
        return out

    def _pieces(self, word: str) -> tuple[int, ...]:
        if len(word) > MAX_WORD:
            return (self.unknown,)
        out: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                found = self._ids.get(piece)
                if found is not None:
                    out.append(found)
                    break
                end -= 1
            else:
                return (self.unknown,)
            start = end
        return tuple(out)


def _words(text: str) -> list[str]:
    """BERT's basic tokenization: normalized, lowercase, accentless words and punctuation."""
    if text.isascii():
        cleaned = text.translate(_ASCII_CONTROL).lower()
    else:
        chars: list[str] = []
        for char in text:
            code = ord(char)
            if code in (0, 0xFFFD) or (_is_control(char)):
                continue
            if _is_cjk(code):
                chars += (" ", char, " ")
            else:
                chars.append(" " if char.isspace() else char)
        cleaned = unicodedata.normalize("NFD", "".join(chars).lower())
        cleaned = "".join(c for c in cleaned if unicodedata.category(c) != "Mn")
    out: list[str] = []
    for chunk in cleaned.split():
        word: list[str] = []
        for char in chunk:
            if _is_punctuation(char):
                if word:
                    out.append("".join(word))
                    word = []
                out.append(char)
            else:
                word.append(char)
        if word:
            out.append("".join(word))
    return out


def _is_control(char: str) -> bool:
    if char in "\t\n\r":
        return False
    return unicodedata.category(char) in ("Cc", "Cf")


def _is_cjk(code: int) -> bool:
    return any(lo <= code <= hi for lo, hi in _CJK)


def _is_punctuation(char: str) -> bool:
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")
