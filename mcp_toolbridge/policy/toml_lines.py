"""Where each key of a TOML document is written: tomllib returns values without positions, so
policy errors find their line by scanning the text.

:func:`key_lines` maps key paths as pydantic reports them (``("rules", 2, "action")``,
``("requires", "fs", "read", 0)``) to 1-based line numbers: table headers, ``[[array]]``
elements (counted per array), dotted keys, and the elements of arrays written as a value
(``shell = [ {...}, {...} ]`` over several lines). Keys inside an inline table are not listed:
:func:`line_of` falls back to the longest listed prefix, which is the line the table is on.
The scan only has to be right for documents tomllib accepted.
"""

from __future__ import annotations

from collections.abc import Sequence

KeyPath = tuple[str | int, ...]
KeyLines = dict[KeyPath, int]


def _split_key(text: str) -> list[str]:
    """``a."b.c".d`` -> ``["a", "b.c", "d"]`` (quotes removed, whitespace around dots)."""
    parts: list[str] = []
    current: list[str] = []
    quote: str | None = None
    for ch in text:
        if quote is not None:
            if ch == quote:
                quote = None
            else:
                current.append(ch)
        elif ch in "\"'":
            quote = ch
        elif ch == ".":
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    parts.append("".join(current).strip())
    return parts


def _assignment(line: str) -> int:
    """The index of the ``=`` of ``key = value`` (outside quoted keys), or -1."""
    quote: str | None = None
    for index, ch in enumerate(line):
        if quote is not None:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch == "=":
            return index
    return -1


class _ValueScanner:
    """Follows one value over as many lines as it takes (arrays, inline tables, multi-line
    strings) and records the line each element of a top-level array starts on."""

    def __init__(self, path: KeyPath, lines: KeyLines) -> None:
        self.path = path
        self.lines = lines
        self.stack: list[str] = []
        self.string: str | None = None  # the open string's delimiter
        self.element = 0
        self.expecting = False  # the next token at array depth 1 starts an element
        self.started = False

    def open(self) -> bool:
        return bool(self.stack) or self.string is not None or not self.started

    def feed(self, text: str, lineno: int) -> None:
        i = 0
        while i < len(text):
            if self.string is not None:
                i = self._in_string(text, i)
                continue
            ch = text[i]
            if ch == "#":
                return
            if ch.isspace():
                i += 1
                continue
            if self.stack == ["["] and self.expecting and ch not in ",]":
                self.lines[(*self.path, self.element)] = lineno
                self.element += 1
                self.expecting = False
            self.started = True
            if ch in "\"'":
                triple = text[i : i + 3] == ch * 3
                self.string = ch * 3 if triple else ch
                i += 3 if triple else 1
                continue
            if ch in "[{":
                self.stack.append(ch)
                self.expecting = self.stack == ["["]
            elif ch in "]}" and self.stack:
                self.stack.pop()
            elif ch == "," and self.stack == ["["]:
                self.expecting = True
            i += 1

    def _in_string(self, text: str, i: int) -> int:
        delimiter = self.string
        assert delimiter is not None
        if text[i] == "\\" and delimiter[0] == '"':
            return i + 2
        if text.startswith(delimiter, i):
            self.string = None
            return i + len(delimiter)
        return i + 1

    def end_of_line(self) -> None:
        if self.string in ('"', "'"):
            self.string = None  # a one-line string cannot continue (tomllib said it is valid)


def key_lines(text: str) -> KeyLines:
    """Every key path written in ``text`` -> the line it is written on (1-based)."""
    lines: KeyLines = {}
    counts: dict[KeyPath, int] = {}
    table: KeyPath = ()
    source = text.splitlines()
    n = 0
    while n < len(source):
        lineno = n + 1
        stripped = source[n].strip()
        n += 1
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("[["):
            name = tuple(_split_key(stripped[2 : stripped.find("]]")]))
            index = counts.get(name, 0)
            counts[name] = index + 1
            lines.setdefault(name, lineno)
            table = (*name, index)
            lines[table] = lineno
            continue
        if stripped.startswith("["):
            table = tuple(_split_key(stripped[1 : stripped.find("]")]))
            lines[table] = lineno
            continue
        equals = _assignment(stripped)
        if equals < 0:
            continue
        path: KeyPath = (*table, *_split_key(stripped[:equals]))
        lines[path] = lineno
        scanner = _ValueScanner(path, lines)
        scanner.feed(stripped[equals + 1 :], lineno)
        scanner.end_of_line()
        while scanner.open() and n < len(source):
            scanner.feed(source[n], n + 1)
            scanner.end_of_line()
            n += 1
    return lines


def line_of(lines: KeyLines, path: Sequence[str | int]) -> int | None:
    """The line of ``path``, or of its longest written prefix; None when nothing matches."""
    for end in range(len(path), 0, -1):
        found = lines.get(tuple(path[:end]))
        if found is not None:
            return found
    return None
