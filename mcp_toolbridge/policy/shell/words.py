"""Shell words as text: what bash makes of a word's quoting, and what it leaves special.

:func:`literal_text` removes quotes and applies escapes, :func:`glob_pattern` keeps the glob
characters bash expands (quoted ones escaped), :func:`unquoted_text` keeps only what is outside
quotes (where ``~``, ``*`` and ``{a,b}`` are special), :func:`invisible_character` finds
control and zero-width characters, and :func:`prepare` rewrites what bashlex cannot parse
(quoted heredoc delimiters, the ``time`` keyword) without moving any offset. What a word can
become: :func:`expands` (bash replaces it with file names), :func:`may_begin_with_dash` (one
of them can begin with ``-``, so the program may read it as an option). Pure text work, used
by the walker of :mod:`mcp_toolbridge.policy.shell.walk`.
"""

from __future__ import annotations

import re
import unicodedata

TILDE = re.compile(r"^~|[=:]~")
_QUOTED_HEREDOC = re.compile(
    r"<<(-?)[ \t]*(?:'([A-Za-z0-9_.-]+)'|\"([A-Za-z0-9_.-]+)\"|\\([A-Za-z0-9_]+))"
)
_TIME_KEYWORD = re.compile(r"(?:^|(?<=[;&|(!\n]))([ \t]*)time(?:[ \t]+-p)?(?=[ \t])")
GLOB = re.compile(r"[*?]|\[.*\]")
_GLOB_CHARACTER = re.compile(r"[*?[]")
BRACE_EXPANSION = re.compile(r"\{[^{}]*(?:,|\.\.)[^{}]*\}")
_EXPANSION_START = re.compile(r"\$[A-Za-z0-9_{('\"@*#?$!-]")


def whole(command: str) -> tuple[str, str, str]:
    """The argv that really runs: what an uncheckable command is matched as."""
    return ("bash", "-c", command)


def invisible_character(text: str) -> str | None:
    """The first control, format (zero-width, bidi) or unusual space character, described."""
    for index, ch in enumerate(text):
        if ch in "\n\t ":
            continue
        category = unicodedata.category(ch)
        if category in ("Cc", "Cf", "Zl", "Zp", "Zs"):
            return f"U+{ord(ch):04X} at offset {index}"
    return None


def literal_text(raw: str) -> str | None:
    """What bash makes of a word with no expansions: quotes removed, escapes applied. None
    when the word is not plain (unbalanced quotes, or an expansion the parser missed)."""
    out: list[str] = []
    i, n = 0, len(raw)
    while i < n:
        ch = raw[i]
        if ch == "\\":
            if i + 1 >= n:
                out.append(ch)  # a trailing backslash stays
            elif raw[i + 1] != "\n":  # backslash-newline is a line continuation
                out.append(raw[i + 1])
            i += 2
        elif ch == "'":
            end = raw.find("'", i + 1)
            if end < 0:
                return None
            out.append(raw[i + 1 : end])
            i = end + 1
        elif ch == '"':
            i += 1
            while i < n and raw[i] != '"':
                if raw[i] == "\\" and i + 1 < n and raw[i + 1] in '$`"\\\n':
                    out.append("" if raw[i + 1] == "\n" else raw[i + 1])
                    i += 2
                    continue
                if raw[i] == "`" or _EXPANSION_START.match(raw, i):
                    return None
                out.append(raw[i])
                i += 1
            if i >= n:
                return None
            i += 1
        elif ch == "`" or _EXPANSION_START.match(raw, i):
            return None
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def glob_pattern(raw: str) -> str | None:
    """The glob bash expands for a word: unquoted ``*?[`` stay special, quoted or escaped ones
    become ``[*]``, ``[?]``, ``[[]``. None when the word is not plain."""
    out: list[str] = []

    def literal(ch: str) -> None:
        out.append(f"[{ch}]" if ch in "*?[" else ch)

    i, n = 0, len(raw)
    while i < n:
        ch = raw[i]
        if ch == "\\":
            if i + 1 < n and raw[i + 1] != "\n":
                literal(raw[i + 1])
            elif i + 1 >= n:
                out.append(ch)
            i += 2
        elif ch == "'":
            end = raw.find("'", i + 1)
            if end < 0:
                return None
            for quoted in raw[i + 1 : end]:
                literal(quoted)
            i = end + 1
        elif ch == '"':
            i += 1
            while i < n and raw[i] != '"':
                if raw[i] == "\\" and i + 1 < n and raw[i + 1] in '$`"\\':
                    i += 1
                literal(raw[i])
                i += 1
            if i >= n:
                return None
            i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def unquoted_text(raw: str) -> str:
    """The characters of a shell word that are outside quotes and not backslash-escaped."""
    out: list[str] = []
    quote: str | None = None
    i = 0
    while i < len(raw):
        ch = raw[i]
        if quote == "'":
            quote = None if ch == "'" else quote
        elif quote == '"':
            if ch == "\\":
                i += 1
            elif ch == '"':
                quote = None
        elif ch == "\\":
            i += 1
        elif ch in "'\"":
            quote = ch
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def prepare(text: str) -> tuple[str, set[int], list[tuple[int, int]]]:
    """Rewrite what bashlex cannot parse, keeping every offset: quoted heredoc delimiters
    (``<<'EOF'`` becomes ``<< EOF `` and is remembered as quoted) and the ``time``
    keyword (blanked). The walk checks afterwards that each rewrite hit what it meant to."""
    chars = list(text)
    heredocs: set[int] = set()
    for match in _QUOTED_HEREDOC.finditer(text):
        group = next(g for g in (2, 3, 4) if match.group(g) is not None)
        start, end = match.start(group), match.end(group)
        opener = start - 1
        closer = end if group != 4 else None
        chars[opener] = " "
        if closer is not None:
            chars[closer] = " "
        heredocs.add(start)
    times: list[tuple[int, int]] = []
    for match in _TIME_KEYWORD.finditer("".join(chars)):
        start = match.start() + len(match.group(1))
        for k in range(start, match.end()):
            chars[k] = " "
        times.append((start, match.end()))
    return "".join(chars), heredocs, times


# -- what a word can become ------------------------------------------------------------------

_CLASSES_WITHOUT_DASH = frozenset(
    {"alnum", "alpha", "blank", "cntrl", "digit", "lower", "space", "upper", "word", "xdigit"}
)
_CLASSES_WITH_DASH = frozenset({"punct", "graph", "print", "ascii"})


def expands(raw: str) -> bool:
    """Whether bash replaces the word with the names of matching files (an unquoted ``*``,
    ``?`` or bracket expression). Brace expansion and ``$`` are refused on their own."""
    return _GLOB_CHARACTER.search(raw) is not None and GLOB.search(unquoted_text(raw)) is not None


def may_begin_with_dash(raw: str) -> bool:
    """Whether the names bash puts in place of the word can begin with ``-`` although the
    word is not written as an option: ``*``, ``?*``, ``[-a]*``, ``*.txt``, ``*/x`` and ``-*``
    can (a file may be named ``-delete``), ``./*``, ``dir/*``, ``/abs/*`` and ``"*"`` cannot.
    A word written as a long option with its value (``--include=*.py``) stays that option.
    Decided from the text alone: what the folder holds at decision time plays no part."""
    if not expands(raw):
        return False
    pattern = glob_pattern(raw)
    if pattern is None:
        return True  # not plain: fail closed
    prefix, first = _fixed_prefix(pattern)
    if prefix:
        return prefix.startswith("-") and not (prefix.startswith("--") and "=" in prefix)
    if first is None:
        return True
    return first


def _fixed_prefix(pattern: str) -> tuple[str, bool | None]:
    """(the literal start of a glob, whether its first wildcard can match ``-``; None when
    the pattern has no wildcard)."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch in "*?":
            return "".join(out), True
        if ch == "[":
            bracket = _bracket(pattern, i)
            if bracket is not None:
                end, single, dash = bracket
                if single is None:
                    return "".join(out), dash
                out.append(single)
                i = end
                continue
        out.append(ch)
        i += 1
    return "".join(out), None


def _bracket(pattern: str, i: int) -> tuple[int, str | None, bool] | None:
    """The bracket expression at ``pattern[i]``: (the index after it, its one character when
    it matches exactly one (``[*]``, ``[-]``), whether it matches ``-``). None when the ``[``
    is a literal character (no closing ``]``). Ranges are by code point (bash's default
    ``globasciiranges``); with an unknown class, an equivalence class or a collating symbol
    it counts as matching ``-``."""
    n = len(pattern)
    j = i + 1
    negated = j < n and pattern[j] in "!^"
    j += int(negated)
    start = j
    members: list[str] = []
    dash = unsure = False
    while j < n:
        ch = pattern[j]
        if ch == "]" and j > start:
            single = members[0] if len(members) == 1 and not negated else None
            return j + 1, single, unsure or dash != negated
        if ch == "[" and j + 1 < n and pattern[j + 1] in ":=.":
            close = pattern.find(pattern[j + 1] + "]", j + 2)
            if close >= 0:
                name = pattern[j + 2 : close]
                known = pattern[j + 1] == ":" and name in _CLASSES_WITHOUT_DASH
                dash = dash or (pattern[j + 1] == ":" and name in _CLASSES_WITH_DASH)
                unsure = unsure or not (known or name in _CLASSES_WITH_DASH)
                members += ["", ""]  # not one plain character
                j = close + 2
                continue
        if ch == "\\" and j + 1 < n:
            j += 1
            ch = pattern[j]
        if j + 2 < n and pattern[j + 1] == "-" and pattern[j + 2] != "]":
            dash = dash or ch <= "-" <= pattern[j + 2]
            members += ["", ""]
            j += 3
            continue
        dash = dash or ch == "-"
        members.append(ch)
        j += 1
    return None
