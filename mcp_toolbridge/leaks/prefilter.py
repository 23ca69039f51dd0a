"""Which texts the engine cannot find anything in, told in process without calling it.

Calling the engine costs far more than its work on a short text: its rule tables go cold
between the calls of a server (10 µs back to back, 65 µs after 5 ms of other work), and every
call into its Go runtime wakes the runtime's monitor thread, which then polls for up to 10 ms
(docs/performance.md, "Secret scan"). Most texts of a trivial call (``{"text": "hello"}``, a
tool's path in its argv) cannot match any rule, and the engine itself would only find that
out after those costs. :class:`Prefilter` says so first, exactly: it never skips a text the
engine could find something in, because it asks the engine's own two gates, from the engine's
own rules (its embedded default config, read out of its library, and our own_rules.toml):

- **Keywords.** A rule's regex runs only where one of its keywords occurs (ASCII case ignored,
  and the two runes that fold to ASCII letters, ``ſ`` and ``K``, taken as ``s`` and ``k``).
  One RE2 pattern of every keyword of the enabled rules finds any of them (RE2's ``(?i)``
  folds exactly those runes too). Rules marked ``skipReport`` never report by themselves,
  only as a component of the rule that found its own keyword, so their keywords are left out
  (``aws-secret-access-key``'s ``key``/``secret``/``token``, ``generic-username``'s
  ``user``), and so are those of rules that only look at files of a given path
  (``kubernetes-secret-yaml``: ``secret``): a text given to the engine has no path. A rule
  with a regex and no keyword runs on every text: then there is no prefilter at all.
- **Decoding.** Where no keyword occurs, the engine still decodes what looks encoded and
  looks again: ``%XX``, ``U+XXXX`` and ``\\uXXXX`` escapes, runs of 32 hex digits, and runs
  of 16 or more characters of the base64 alphabets. A base64 run is decoded only when its
  decoding is printable ASCII: a run whose first four characters decode to a byte that is
  not (``/tmp/...``, ``src/...``: any run that starts with ``/``, a digit or ``g``-``z``) is
  left as it is, by the engine and here. Any other candidate goes to the engine.

A text longer than the engine's piece (:data:`engine.CHUNK_CHARS`) is cut into pieces, and a
base64 run cut in two starts elsewhere in the second piece: there (``whole=False``) any run of
16 goes to the engine. Texts joined by a line end are judged at once: a line end is in no
keyword and ends every run, so the joined text can hold something only where one of them
can. The equivalence is tested on the clean corpus and every planted secret (tests/leaks/).
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import re2

MIN_BASE64_RUN = 16
MIN_HEX_RUN = 32

_ENCODED = (
    rf"%[0-9A-Fa-f]{{2}}|U\+[0-9A-Fa-f]{{4}}|\\[uU][0-9A-Fa-f]{{4}}|[0-9A-Fa-f]{{{MIN_HEX_RUN}}}"
)
"""Encoded text the engine decodes whatever it holds."""
_DECODABLE_RUN = rf"(?:^|[^A-Za-z0-9_/+\-])[A-Za-f][A-Za-z0-9_/+\-]{{{MIN_BASE64_RUN - 1}}}"
"""A run whose first character can start a printable decoding: the first byte is the first
character's 6 bits and 2 more, so its value must be under 32 (``A``-``Z``, ``a``-``f``) in
either alphabet. A run that starts with ``/``, a digit or ``g``-``z`` (paths, words) cannot."""
_ANY_RUN = re2.compile(rb"[A-Za-z0-9_/+\-]{%d}" % MIN_BASE64_RUN)
_LETTERS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_RUN_BYTES = bytes(b if b in _LETTERS + b"+/-_" else 0x20 for b in range(256))
"""Every byte of either base64 alphabet kept, every other one a space: what the engine calls
a run is then a word (it looks at bytes too; a non-ASCII byte ends a run)."""
_ALPHABETS = (
    {c: i for i, c in enumerate(_LETTERS + b"+/")},  # standard
    {c: i for i, c in enumerate(_LETTERS + b"-_")},  # URL-safe
)
_MAX_MEM = 64 << 20
"""RE2's memory for the keyword pattern (~540 keywords): enough for its DFA to stay a DFA."""


@dataclass(frozen=True, slots=True)
class Rule:
    """What the prefilter needs of one rule of the engine's config."""

    id: str
    keywords: tuple[str, ...]
    has_regex: bool
    reports: bool
    """False for ``skipReport`` rules (components of another rule only)."""
    has_path: bool = False
    """Whether it only looks at files whose path matches."""


def rules_of(config: str) -> list[Rule]:
    """The rules of a betterleaks TOML config. Raises ValueError when it does not parse."""
    data = tomllib.loads(config)
    rules: list[Any] = data.get("rules") or []
    return [_rule(item) for item in rules if isinstance(item, Mapping)]


def _rule(item: Mapping[str, Any]) -> Rule:
    keywords = item.get("keywords") or []
    return Rule(
        id=str(item.get("id", "")),
        keywords=tuple(str(k) for k in keywords),
        has_regex=bool(item.get("regex")),
        reports=not item.get("skipReport", False),
        has_path=bool(item.get("path")),
    )


def _printable(byte: int) -> bool:
    return 32 <= byte <= 126 or 9 <= byte <= 13


def _may_decode(run: bytes) -> bool:
    """Whether base64 ``run`` can decode to printable ASCII in either alphabet: its first
    three bytes (from its first four characters) must."""
    for alphabet in _ALPHABETS:
        values = [alphabet.get(c) for c in run[:4]]
        if None in values:
            continue  # a character outside this alphabet: its decoding fails
        a, b, c, d = (v or 0 for v in values)
        first = ((a << 2) | (b >> 4)) & 0xFF, ((b << 4) | (c >> 2)) & 0xFF, ((c << 6) | d) & 0xFF
        if all(_printable(byte) for byte in first):
            return True
    return False


class Prefilter:
    """Whether the engine could find anything in a text (see the module doc)."""

    def __init__(self, keywords: Iterable[str]) -> None:
        words = sorted({k.lower() for k in keywords if k})
        options = re2.Options()
        options.max_mem = _MAX_MEM
        self.keywords = tuple(words)
        any_keyword = "|".join(re2.escape(w) for w in words)
        # Bytes in, bytes out: the binding's own wrapper converts no offsets then.
        self._gates = re2.compile(f"(?i:{any_keyword})|{_ENCODED}".encode(), options)
        # Any keyword, encoded text or run that may decode: one pass tells a trivial text.
        anything = f"(?i:{any_keyword})|{_ENCODED}|{_DECODABLE_RUN}"
        self._anything = re2.compile(anything.encode(), options)

    @classmethod
    def of(cls, rules: Iterable[Rule], disabled: frozenset[str]) -> Prefilter | None:
        """The prefilter for ``rules`` with ``disabled`` off; None when an enabled rule
        could match without a keyword (there is then nothing to skip)."""
        keywords: list[str] = []
        for rule in rules:
            if rule.id in disabled:
                continue
            if rule.has_regex and not rule.keywords and not rule.has_path:
                return None
            if rule.reports and not rule.has_path:
                keywords.extend(rule.keywords)
        return cls(keywords) if keywords else None

    def may_find(self, text: str, *, whole: bool = True) -> bool:
        """False only when the engine cannot find anything in ``text`` (given to it ``whole``,
        or in pieces)."""
        data = text.encode("utf-8", "replace")
        if self._anything.search(data) is None:
            return not whole and _ANY_RUN.search(data) is not None
        if self._gates.search(data) is not None:  # a keyword, or text it decodes
            return True
        if not whole:  # then there is a run
            return True
        runs = data.translate(_RUN_BYTES).split()
        return any(len(run) >= MIN_BASE64_RUN and _may_decode(run) for run in runs)
