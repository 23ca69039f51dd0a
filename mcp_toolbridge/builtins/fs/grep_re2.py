"""grep's linear-time engine: a Python ``re`` pattern, with Python's meaning, run by RE2.

RE2 (google-re2) matches in time linear in the text, whatever the pattern, and releases the
GIL while it matches: a catastrophic pattern such as ``(a+)+$`` over a long line costs what
the line costs, and the event loop keeps running beside it. Its syntax is not Python's, so the
pattern is never handed over as written. Python's own parser (``re._parser``) reads it, and
the tree is written out again for RE2 with the same meaning, every literal as ``\\x{HEX}``:

- ``\\d``, ``\\w``, ``\\s`` and their negations become the Unicode classes Python means
  (``\\p{Nd}``, ``[\\p{L}\\p{N}_]``, the characters ``str.isspace`` accepts), or the ASCII ones
  under ``(?a)``; ``x{,n}`` becomes ``x{0,n}``; ``\\Z`` becomes ``\\z``;
- ``.``, ``^`` and ``$`` are written out for the flags in force where they stand (MULTILINE,
  DOTALL, scoped ``(?i:...)`` and ``(?-m:...)`` included);
- ``\\b`` and ``\\B`` are ASCII word boundaries in RE2 and Unicode ones in Python: the same on
  ASCII text only, so a pattern with one is run by RE2 on ASCII files only (``ascii_only``);
- what RE2 cannot express (backreferences, look-around, atomic groups, possessive
  repeats, conditionals, a repeat count over 1000, a class union with a negated category)
  raises :class:`Unexpressible`; those patterns run on Python's ``re`` in a child process that
  is killed at the deadline (:mod:`grep_child`).

Two ways of searching: per line (a match never spans a line break: RE2's ``never_nl``, and
``^``/``$``/``\\A``/``\\Z`` mean the line's start and end, as when each line is searched
alone), and ``multiline`` (the whole text, MULTILINE and DOTALL set, as ``re`` does it).
"""

from __future__ import annotations

import importlib
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import re2

_parser: Any = importlib.import_module("re._parser")
sre: Any = importlib.import_module("re._constants")
"""Python's own regular-expression parser and its node names (Python 3.11+; not in typeshed)."""

_WORD = r"\p{L}\p{N}_"
_SPACE = (
    "".join(
        f"\\x{{{code:x}}}"
        for code in (
            *range(0x9, 0xE),
            *range(0x1C, 0x21),
            0x85,
            0xA0,
            0x1680,
            *range(0x2000, 0x200B),
        )
    )
    + r"\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}"
)
"""Every character ``str.isspace`` accepts (what ``\\s`` means in a ``str`` pattern)."""
_ASCII_WORD = "0-9A-Za-z_"
_ASCII_SPACE = r"\t\n\x{b}\x{c}\r "
_MAX_COUNT = 1000
"""RE2's largest repeat count."""


class Unexpressible(Exception):
    """RE2 cannot run this pattern with Python's meaning; the backtracking engine must."""


@dataclass(frozen=True, slots=True)
class Re2Pattern:
    regex: Any
    """The compiled RE2 pattern (over UTF-8 bytes)."""
    source: str
    """The pattern written for RE2 (for tests and debugging)."""
    ascii_only: bool
    """True when the pattern has ``\\b`` or ``\\B``: run it only on ASCII text."""


def translate(pattern: str, *, ignore_case: bool, multiline: bool) -> Re2Pattern:
    """``pattern`` (already known to compile with ``re``) for RE2, or :class:`Unexpressible`."""
    flags = re.IGNORECASE if ignore_case else 0
    if multiline:
        flags |= re.MULTILINE | re.DOTALL
    try:
        with warnings.catch_warnings():  # re.compile has already shown them
            warnings.simplefilter("ignore")
            parsed = _parser.parse(pattern, flags)
    except (re.error, RecursionError) as exc:
        raise Unexpressible(str(exc)) from None
    writer = _Writer(line_mode=not multiline)
    try:
        body = writer.write(list(parsed), int(parsed.state.flags))
    except RecursionError:
        raise Unexpressible("the pattern is nested too deeply") from None
    options = re2.Options()
    options.never_nl = not multiline
    options.log_errors = False
    try:
        compiled = re2.compile(body.encode("utf-8"), options)
    except re2.error as exc:
        raise Unexpressible(f"RE2: {exc}") from None
    return Re2Pattern(compiled, body, writer.ascii_only)


def _char(code: int) -> str:
    return f"\\x{{{code:x}}}"


class _Writer:
    def __init__(self, *, line_mode: bool) -> None:
        self.line_mode = line_mode
        self.ascii_only = False

    def write(self, items: list[tuple[Any, Any]], flags: int) -> str:
        return "".join(self._item(op, av, flags) for op, av in items)

    def _item(self, op: Any, av: Any, flags: int) -> str:
        if op is sre.LITERAL:
            return self._cased(_char(av), flags)
        if op is sre.NOT_LITERAL:
            return self._cased(f"[^{_char(av)}{self._nl()}]", flags)
        if op is sre.ANY:
            return "(?s:.)" if flags & re.DOTALL and not self.line_mode else "[^\\n]"
        if op is sre.IN:
            return self._cased(self._set(av, flags), flags)
        if op is sre.BRANCH:
            return "(?:" + "|".join(self.write(list(alt), flags) for alt in av[1]) + ")"
        if op is sre.SUBPATTERN:
            _group, add, remove, sub = av
            if (add | remove) & re.LOCALE:
                raise Unexpressible("LOCALE")
            return "(?:" + self.write(list(sub), (flags | add) & ~remove) + ")"
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            low, high, sub = av
            if low > _MAX_COUNT or (high is not sre.MAXREPEAT and high > _MAX_COUNT):
                raise Unexpressible("a repeat count over 1000")
            lazy = "?" if op is sre.MIN_REPEAT else ""
            return f"(?:{self.write(list(sub), flags)}){_count(low, high)}{lazy}"
        if op is sre.AT:
            return self._at(av, flags)
        raise Unexpressible(str(op))  # backreferences, look-around, atomic, possessive, ...

    def _nl(self) -> str:
        """What a negated class must also leave out per line: the line break."""
        return "\\n" if self.line_mode else ""

    @staticmethod
    def _cased(text: str, flags: int) -> str:
        return f"(?i:{text})" if flags & re.IGNORECASE else text

    def _at(self, where: Any, flags: int) -> str:
        if where in (sre.AT_BOUNDARY, sre.AT_NON_BOUNDARY):
            if not flags & re.ASCII:
                self.ascii_only = True
            return "\\b" if where is sre.AT_BOUNDARY else "\\B"
        if self.line_mode:
            starts = where in (sre.AT_BEGINNING, sre.AT_BEGINNING_STRING)
            return "(?m:^)" if starts else "(?m:$)"
        if where is sre.AT_BEGINNING:
            return "(?m:^)" if flags & re.MULTILINE else "\\A"
        if where is sre.AT_BEGINNING_STRING:
            return "\\A"
        if where is sre.AT_END_STRING:
            return "\\z"
        if where is sre.AT_END and flags & re.MULTILINE:
            return "(?m:$)"
        raise Unexpressible("$ without MULTILINE over the whole text")

    def _set(self, items: list[tuple[Any, Any]], flags: int) -> str:
        negate = False
        inside: list[str] = []
        outside: list[str] = []
        ascii_flag = bool(flags & re.ASCII)
        for op, av in items:
            if op is sre.NEGATE:
                negate = True
            elif op is sre.LITERAL:
                inside.append(_char(av))
            elif op is sre.RANGE:
                inside.append(f"{_char(av[0])}-{_char(av[1])}")
            elif op is sre.CATEGORY:
                positive, negated = _category(av, ascii_flag)
                if negated is None:
                    inside.append(positive)
                else:
                    outside.append(f"[^{negated}{self._nl()}]")
            else:
                raise Unexpressible(str(op))
        if negate:
            if outside:
                raise Unexpressible("a negated class with a negated category")
            return f"[^{''.join(inside)}{self._nl()}]"
        if not outside:
            return f"[{''.join(inside)}]" if inside else "[^\\x{0}-\\x{10ffff}]"
        parts = [f"[{''.join(inside)}]"] if inside else []
        return "(?:" + "|".join([*parts, *outside]) + ")"


def _category(category: Any, ascii_flag: bool) -> tuple[str, str | None]:
    """(class items, None) for a category; ("", the items it negates) for a negated one."""
    digit = "0-9" if ascii_flag else r"\p{Nd}"
    word = _ASCII_WORD if ascii_flag else _WORD
    space = _ASCII_SPACE if ascii_flag else _SPACE
    table: dict[Any, tuple[str, str | None]] = {
        sre.CATEGORY_DIGIT: (digit, None),
        sre.CATEGORY_NOT_DIGIT: ("", digit),
        sre.CATEGORY_WORD: (word, None),
        sre.CATEGORY_NOT_WORD: ("", word),
        sre.CATEGORY_SPACE: (space, None),
        sre.CATEGORY_NOT_SPACE: ("", space),
    }
    if category not in table:
        raise Unexpressible(str(category))
    return table[category]


def _count(low: int, high: Any) -> str:
    if high is sre.MAXREPEAT:
        return {0: "*", 1: "+"}.get(low, f"{{{low},}}")
    if (low, high) == (0, 1):
        return "?"
    return f"{{{low}}}" if low == high else f"{{{low},{high}}}"


def line_matches(pattern: Re2Pattern, data: bytes, *, first_only: bool) -> Iterator[int]:
    """The 0-based numbers of the lines of ``data`` (UTF-8) holding a match, per line."""
    line = 0
    counted_to = 0
    pos = 0
    end = len(data) - 1 if data.endswith(b"\n") else len(data)  # no line after the last \n
    while pos <= end:
        match = pattern.regex.search(data, pos)
        if match is None or match.start() > end:
            return
        start = match.start()
        line += data.count(b"\n", counted_to, start)
        counted_to = start
        yield line
        if first_only:
            return
        following = data.find(b"\n", start)
        if following < 0:
            return
        pos = following + 1


def span_matches(pattern: Re2Pattern, data: bytes, *, first_only: bool) -> Iterator[range]:
    """The line numbers (0-based) each match of a whole-text pattern spans."""
    last_line = data.count(b"\n") - (1 if data.endswith(b"\n") else 0)
    line = 0
    counted_to = 0
    pos = 0
    while pos <= len(data):
        match = pattern.regex.search(data, pos)
        if match is None:
            return
        start, stop = match.span()
        line += data.count(b"\n", counted_to, start)
        counted_to = start
        last = line + data.count(b"\n", start, max(start, stop - 1))
        yield range(min(line, last_line), min(last, last_line) + 1)
        if first_only:
            return
        pos = stop if stop > start else start + _char_length(data, start)


def _char_length(data: bytes, at: int) -> int:
    """The length of the UTF-8 character starting at ``at`` (1 at the end)."""
    if at >= len(data):
        return 1
    lead = data[at]
    return 1 if lead < 0xC0 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
