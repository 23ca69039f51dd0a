"""The text side of edit: literal replacement, line endings, diagnostics and a short diff.

Pure functions, no I/O. Matching is exact (``str.count`` / ``str.replace``, never a regular
expression). The one normalisation is the line ending: in a CRLF file an LF ``old_string`` is
matched as CRLF and ``new_string`` is written with CRLF (and the reverse in an LF file), because
read shows lines without their ``\\r``. When nothing matches, :func:`replace` raises
:class:`NotFound`, and :func:`not_found_message` shows the closest lines of the file with
whitespace made visible and says what probably differs.

The diagnostics are bounded: they stop at a deadline (the caller's, checked between lines), look
at most ``MAX_SCANNED_LINES`` lines and ``MAX_COMPARED_CHARS`` of each, and in a file of more
than ``FUZZY_POOL`` lines run difflib only on the lines sharing the most words with old_string
(a C-speed set intersection per line). Without that, a 15 MB file took 39 s of difflib.
"""

from __future__ import annotations

import difflib
import heapq
import itertools
import math
import re
import time
from dataclasses import dataclass
from typing import Literal

from mcp_toolbridge.builtins.fs.paths import FileProblem

Style = Literal["lf", "crlf", "mixed", "none"]
BOM = b"\xef\xbb\xbf"
MAX_DIFF_LINES = 60
MAX_SHOWN_CHARS = 240
MAX_LINE_NUMBERS = 10
MAX_CANDIDATES = 3
MAX_SCANNED_LINES = 500_000
MAX_COMPARED_CHARS = 1000
"""Similarity is scored on the first this many characters of each (stripped) line."""
FUZZY_POOL = 500
"""Files with more lines than this preselect the lines difflib scores (see the module doc)."""
DEADLINE_CHECK_LINES = 4096
"""How often the word preselection looks at the clock (difflib scoring does every line)."""
CANDIDATE_CUTOFF = 0.5
_WORD = re.compile(r"\w+")
_READ_PREFIX = re.compile(r"^ *\d+\t")
_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")
_QUOTES = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"'})


@dataclass(frozen=True, slots=True)
class Decoded:
    text: str
    bom: bool
    style: Style


class NotFound(FileProblem):
    """old_string occurs nowhere; :func:`not_found_message` explains (it can take a while on
    a large file, so the caller runs it outside any lock and within a deadline)."""

    def __init__(self, decoded: Decoded, old: str, shown: str) -> None:
        super().__init__(f"old_string was not found in {shown}")
        self.decoded = decoded
        self.old = old
        self.shown = shown


@dataclass(frozen=True, slots=True)
class Replaced:
    text: str
    count: int
    lines: tuple[int, ...]
    converted: bool
    """True when old/new were adapted to the file's line endings."""


def decode(data: bytes) -> Decoded:
    """Text of a file (undecodable bytes kept as surrogates, so they survive the round trip)."""
    bom = data.startswith(BOM)
    text = (
        data[len(BOM) :].decode("utf-8", "surrogateescape")
        if bom
        else data.decode("utf-8", "surrogateescape")
    )
    crlf = text.count("\r\n")
    lf = text.count("\n")
    style: Style = "none" if lf == 0 else "crlf" if crlf == lf else "lf" if crlf == 0 else "mixed"
    return Decoded(text, bom, style)


def encode(decoded: Decoded, text: str) -> bytes:
    body = text.encode("utf-8", "surrogateescape")
    return BOM + body if decoded.bom else body


def to_crlf(value: str) -> str:
    return value.replace("\r\n", "\n").replace("\n", "\r\n")


def to_lf(value: str) -> str:
    return value.replace("\r\n", "\n")


def lf_lines(text: str, chunk: int = 1 << 18) -> list[str]:
    """``to_lf(text).split("\n")``, done a few hundred KB at a time: one split of a 16 MB text
    holds the GIL (and so the event loop) for tens of milliseconds."""
    lines: list[str] = []
    start = 0
    while True:
        end = text.find("\n", start + chunk)
        if end < 0:
            lines.extend(to_lf(text[start:]).split("\n"))
            return lines
        part = to_lf(text[start:end]).split("\n")
        part[-1] = part[-1].removesuffix("\r")  # its CR LF straddles the cut
        lines.extend(part)
        start = end + 1


def replace(decoded: Decoded, old: str, new: str, *, replace_all: bool, shown: str) -> Replaced:
    """Replace ``old`` by ``new`` in the file's text; FileProblem explains any failure."""
    text = decoded.text
    variants: list[tuple[str, str, bool]] = []
    if decoded.style == "crlf":
        variants.append((to_crlf(old), to_crlf(new), to_crlf(old) != old or to_crlf(new) != new))
    elif decoded.style == "lf":
        variants.append((to_lf(old), to_lf(new), to_lf(old) != old or to_lf(new) != new))
    else:
        variants.append((old, new, False))
        if decoded.style == "mixed" and "\n" in old:
            variants.append((to_crlf(old), to_crlf(new), True))
    for find, put, converted in variants:
        starts = _starts(text, find)
        if not starts:
            continue
        if len(starts) > 1 and not replace_all:
            raise FileProblem(
                f"old_string matches {len(starts)} times in {shown} (at lines "
                f"{_line_list(text, starts)}); include more surrounding lines to make it "
                "unique, or set replace_all to true to replace every occurrence"
            )
        if replace_all:
            result = text.replace(find, put)
        else:
            result = text[: starts[0]] + put + text[starts[0] + len(find) :]
        lines = tuple(_line_numbers(text, starts))
        return Replaced(result, len(starts), lines, converted)
    raise NotFound(decoded, old, shown)


def _starts(text: str, find: str) -> list[int]:
    starts: list[int] = []
    index = text.find(find)
    while index != -1:
        starts.append(index)
        index = text.find(find, index + len(find))
    return starts


def _line_numbers(text: str, starts: list[int]) -> list[int]:
    numbers: list[int] = []
    line, pos = 1, 0
    for start in starts:
        line += text.count("\n", pos, start)
        pos = start
        numbers.append(line)
    return numbers


def _line_list(text: str, starts: list[int]) -> str:
    numbers = _line_numbers(text, starts[:MAX_LINE_NUMBERS])
    more = f" and {len(starts) - MAX_LINE_NUMBERS} more" if len(starts) > MAX_LINE_NUMBERS else ""
    return ", ".join(str(n) for n in numbers) + more


def visible(line: str) -> str:
    """Whitespace made visible: tab →, trailing space ·, CR ␍, no-break space ⍽."""
    body = line.rstrip(" ")
    trailing = "·" * (len(line) - len(body))
    shown = body.replace("\t", "→").replace("\r", "␍").replace("\u00a0", "⍽") + trailing
    if len(shown) > MAX_SHOWN_CHARS:
        shown = shown[:MAX_SHOWN_CHARS] + "…"
    return shown


def not_found_message(decoded: Decoded, old: str, shown: str, *, deadline: float = math.inf) -> str:
    """The no-match error: hints and the closest lines, found before ``deadline`` (monotonic
    seconds; past it the lines found so far are shown and the message says it stopped)."""
    text = decoded.text
    parts = [
        f"old_string was not found in {shown}. It must match the file exactly, whitespace and "
        "indentation included (matching is literal, never a regular expression)."
    ]
    hints = _hints(decoded, old)
    if hints:
        parts.append("Hints: " + " ".join(hints))
    search = closest_lines(text, old, deadline=deadline)
    candidates = search.candidates
    old_lines = to_lf(old).split("\n")
    if candidates:
        parts.append("Closest lines in the file (tab →, trailing space ·):")
        for number, lines, ratio in candidates:
            similar = "same text apart from whitespace" if ratio == 1 else f"{ratio:.0%} similar"
            parts.append(f"  at line {number} ({similar}):")
            parts.extend(f"    {number + i:>6} | {visible(line)}" for i, line in enumerate(lines))
        parts.append("Your old_string (same notation):")
        parts.extend(f"    {'':>6} | {visible(line)}" for line in old_lines[:8])
        if len(old_lines) > 8:
            parts.append(f"    ({len(old_lines) - 8} more lines)")
    elif search.complete:
        parts.append("No similar lines were found; read the file again to see its current content.")
    if not search.complete:
        parts.append(
            f"(The search for similar lines stopped after {search.scanned} of {search.total} "
            "lines; read the file around the place you meant to edit.)"
        )
    return "\n".join(parts)


def _contains_ignoring_whitespace(text: str, needle: str, chunk: int = 1 << 18) -> bool:
    """Whether ``needle`` (whitespace runs collapsed to one space) occurs in ``text`` with its
    whitespace runs collapsed too. Done in chunks of whole lines: one ``split`` of a 15 MB text
    holds the GIL for tens of milliseconds, and the event loop waits for it meanwhile."""
    if not needle:
        return False
    tail = ""
    start = 0
    while start < len(text):
        end = text.find("\n", start + chunk)
        end = len(text) if end < 0 else end + 1
        part = " ".join(text[start:end].split())
        start = end
        if not part:
            continue
        joined = f"{tail} {part}" if tail else part
        if needle in joined:
            return True
        tail = joined[-len(needle) :]
    return False


def _hints(decoded: Decoded, old: str) -> list[str]:
    text = decoded.text
    hints: list[str] = []
    old_lines = to_lf(old).split("\n")
    if any(_READ_PREFIX.match(line) for line in old_lines if line):
        hints.append(
            "old_string seems to contain line-number prefixes copied from read output "
            "('     12<TAB>'); remove them."
        )
    if _contains_ignoring_whitespace(text, " ".join(old.split())):
        hints.append(
            "The text exists if whitespace is ignored: compare indentation, tabs versus spaces "
            "and trailing spaces with the lines below."
        )
    if "\t" in old and "\t" not in text:
        hints.append("old_string contains tabs but the file has none (it indents with spaces).")
    elif (
        "\t" not in old
        and (text.startswith("\t") or "\n\t" in text)
        and re.search(r"^ {2,}\S", to_lf(old), re.MULTILINE)
    ):
        hints.append("The file indents with tabs (→ below) but old_string uses spaces.")
    # `in` first: translating a 15 MB text holds the GIL (and the event loop) for long
    if any(q in old or q in text for q in "‘’“”"):
        if old.translate(_QUOTES) in text.translate(_QUOTES):
            hints.append("Quotes differ: the file and old_string mix curly and straight quotes.")
    if decoded.style in ("crlf", "mixed"):
        hints.append(
            f"The file uses {'CRLF' if decoded.style == 'crlf' else 'mixed'} line endings; "
            "LF line breaks in old_string are matched as CRLF automatically, so the "
            "difference is elsewhere."
        )
    return hints


@dataclass(frozen=True, slots=True)
class Closest:
    candidates: list[tuple[int, list[str], float]]
    """Up to three (first line number, lines, similarity), most similar first."""
    scanned: int
    total: int
    complete: bool
    """False when the deadline or MAX_SCANNED_LINES stopped the search."""


def closest_lines(text: str, old: str, *, deadline: float = math.inf) -> Closest:
    """The windows of the file most like ``old``, scored by difflib on its longest line."""
    old_lines = to_lf(old).split("\n")
    stripped = [line.strip() for line in old_lines]
    anchor_index = max(range(len(stripped)), key=lambda i: len(stripped[i]))
    anchor = stripped[anchor_index][:MAX_COMPARED_CHARS]
    file_lines = lf_lines(text)
    if not anchor:
        return Closest([], 0, len(file_lines), True)
    limit = min(len(file_lines), MAX_SCANNED_LINES)
    pool, scanned = _pool(file_lines, limit, anchor, deadline)
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(anchor)
    scored: list[tuple[float, int]] = []
    for index in pool:
        if time.monotonic() > deadline:
            scanned = min(scanned, index)
            break
        matcher.set_seq1(file_lines[index].strip()[:MAX_COMPARED_CHARS])
        if matcher.real_quick_ratio() < CANDIDATE_CUTOFF:
            continue
        if matcher.quick_ratio() < CANDIDATE_CUTOFF:
            continue
        ratio = matcher.ratio()
        if ratio >= CANDIDATE_CUTOFF:
            scored.append((ratio, index))
    scored.sort(key=lambda item: (-item[0], item[1]))
    out: list[tuple[int, list[str], float]] = []
    for ratio, index in scored[:MAX_CANDIDATES]:
        first = max(0, index - anchor_index)
        window = file_lines[first : first + min(len(old_lines), 8)]
        out.append((first + 1, window, ratio))
    return Closest(out, scanned, len(file_lines), scanned == len(file_lines))


def _pool(lines: list[str], limit: int, anchor: str, deadline: float) -> tuple[list[int], int]:
    """The indexes of the lines to score, in file order, and how many lines were looked at.

    A short file: every line. A long one: the ``FUZZY_POOL`` lines sharing the most words and
    word pairs with the anchor, closest in length first (or, for an anchor without words,
    every line, left to the deadline)."""
    anchor_words = _WORD.findall(anchor)
    if limit <= FUZZY_POOL or not anchor_words:
        return list(range(limit)), limit
    words = set(anchor_words)
    pairs = set(itertools.pairwise(anchor_words))
    size = len(anchor)
    shared: list[tuple[int, int, int]] = []
    scanned = limit
    for index in range(limit):
        if index % DEADLINE_CHECK_LINES == 0 and time.monotonic() > deadline:
            scanned = index
            break
        found = _WORD.findall(lines[index], 0, MAX_COMPARED_CHARS * 2)
        common = len(words.intersection(found))
        if common:
            common += len(pairs.intersection(itertools.pairwise(found)))
            shared.append((common, -abs(len(lines[index].strip()) - size), -index))
    best = heapq.nlargest(FUZZY_POOL, shared)
    return sorted(-negative for _, _, negative in best), scanned


def _lines(text: str) -> list[str]:
    lines = to_lf(text).split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return lines


def short_diff(before: str, after: str, shown: str) -> str:
    """A unified diff of the changed region with three lines of context, bounded in size."""
    a = _lines(before)
    b = _lines(after)
    prefix = 0
    while prefix < min(len(a), len(b)) and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(a), len(b)) - prefix and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    low = max(0, prefix - 3)
    body = difflib.unified_diff(
        a[low : len(a) - suffix + 3],
        b[low : len(b) - suffix + 3],
        f"a/{shown}",
        f"b/{shown}",
        n=3,
        lineterm="",
    )
    out: list[str] = []
    total = 0
    for line in body:
        total += 1
        if len(out) >= MAX_DIFF_LINES:
            continue
        match = _HUNK.match(line)
        if match:
            line = (
                f"@@ -{int(match.group(1)) + low}{match.group(2) or ''} "
                f"+{int(match.group(3)) + low}{match.group(4) or ''} @@"
            )
        out.append(line if len(line) <= MAX_SHOWN_CHARS else line[:MAX_SHOWN_CHARS] + "…")
    if total > len(out):
        out.append(f"... ({total - len(out)} more diff lines not shown)")
    return "\n".join(out)
