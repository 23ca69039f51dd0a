"""Text beyond ASCII, for the analyzer: folding, and the scripts written without spaces.

Folding makes the forms a person may type of one word equal: compatibility forms (full-width
``ＡＰＩ``, ligatures, half-width kana) become their plain forms, the accents of Latin, Greek
and Cyrillic letters go (``café`` -> ``cafe``), and the few Latin letters with no decomposition
are spelled out (``ß`` -> ``ss``, ``ø`` -> ``o``). Marks that are part of a letter in other
scripts stay: kana voicing (``が`` is not ``か``), Thai vowels, Indic vowel signs.

Han, kana, Hangul, Thai, Lao, Khmer, Myanmar and Yi are written without spaces between words,
so a run of them becomes its overlapping character bigrams and its characters (``翻译文本`` ->
翻译, 译文, 文本, 翻, 译, 文, 本): a query's bigrams meet the words it shares with a text
wherever they stand, and its characters the words it shares only in part (下雨 "to rain" and
降雨 "rainfall"), at a lower weight since characters are common (the n-gram indexing of
Chinese IR: Kwok 1997, Nie et al. 2000; docs/search.md has the comparison with bigrams alone
and with a word segmenter). Korean separates phrases with spaces but attaches particles to
words (``파일을``), so the same cut serves it.

Everything here runs only on text that is not ASCII. Pure functions; no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from functools import cache
from itertools import pairwise

# Combining marks that NFKD splits off Latin, Greek and Cyrillic letters (accents, tonos,
# breve): the Combining Diacritical Marks blocks. Other scripts' marks are not in them.
_ACCENTS = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+")
_LETTERS = str.maketrans(
    {
        "ß": "ss",
        "ẞ": "SS",
        "Æ": "AE",
        "æ": "ae",
        "Œ": "OE",
        "œ": "oe",
        "Ø": "O",
        "ø": "o",
        "Ł": "L",
        "ł": "l",
        "Đ": "D",
        "đ": "d",
        "Ð": "D",
        "ð": "d",
        "Þ": "TH",
        "þ": "th",
        "ı": "i",
    }
)

UNSPACED = (
    "\u0e00-\u0eff"  # Thai, Lao
    "\u1000-\u109f"  # Myanmar
    "\u1100-\u11ff"  # Hangul Jamo
    "\u1780-\u17ff"  # Khmer
    "\u3005-\u3007"  # 々 〆 〇
    "\u3040-\u30fa\u30fc-\u30ff"  # Hiragana, Katakana (not the middle dot)
    "\u3100-\u312f\u3131-\u318f\u31a0-\u31bf\u31f0-\u31ff"  # Bopomofo, compatibility Jamo
    "\u3400-\u4dbf\u4e00-\u9fff"  # CJK ideographs, extension A
    "\ua000-\ua48f"  # Yi
    "\ua960-\ua97f\uac00-\ud7ff"  # Hangul
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\U00020000-\U0003134f"  # CJK ideographs, extensions B to H
)
"""The scripts written without spaces between words, as a regex character class body."""


def fold(text: str) -> str:
    """``text`` with compatibility forms replaced, Latin, Greek and Cyrillic accents removed
    and letters with no decomposition spelled out; case is kept (identifier splitting needs
    it)."""
    bare = _ACCENTS.sub("", unicodedata.normalize("NFKD", text))
    # Recomposed: Hangul syllables and kana with voicing marks come back whole.
    return unicodedata.normalize("NFC", bare).translate(_LETTERS)


@cache
def _marks() -> str:
    """Every combining mark (Unicode categories Mn, Mc, Me), as a character class body.
    Python's ``\\w`` leaves them out, which would cut Thai and Indic words apart. Built on the
    first text that needs it (about 30 ms), not at import."""
    ranges: list[tuple[int, int]] = []
    for code in (*range(0x300, 0x20000), *range(0xE0100, 0xE01F0)):
        if unicodedata.category(chr(code))[0] == "M":
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1] = (ranges[-1][0], code)
            else:
                ranges.append((code, code))
    return "".join(chr(lo) if lo == hi else f"{chr(lo)}-{chr(hi)}" for lo, hi in ranges)


@cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    marks = _marks()
    # An unspaced run, or a word: letters and digits of other scripts, with their marks. One
    # big class repeated is about 4x faster in ``re`` than a class and its marks repeated.
    runs = re.compile(
        rf"([{UNSPACED}][{UNSPACED}{marks}]*)|([^\W_{UNSPACED}](?:[^\W_{UNSPACED}]+|[{marks}]+)*)"
    )
    return runs, re.compile(rf".[{marks}]*", re.DOTALL)


def runs(text: str) -> Iterator[tuple[str, bool]]:
    """The runs of letters and digits (with their marks) of ``text``, in order, each with
    whether it is in a script written without spaces; where such a script meets another, one
    run ends and the next begins."""
    pattern = _patterns()[0]
    for match in pattern.finditer(text):
        unspaced = match.group(1)
        yield (unspaced, True) if unspaced else (match.group(2), False)


def grams(run: str) -> list[str]:
    """The overlapping character bigrams of a run of an unspaced script, then its characters;
    a one-character run is itself. A character keeps its marks (Thai vowels)."""
    # Without marks (Han, kana and Hangul have none once composed) a character is a unit.
    units = list(run) if run.isalnum() else _patterns()[1].findall(run)
    if len(units) == 1:
        return units
    return [a + b for a, b in pairwise(units)] + units
