"""Redacting what a cut shows: scan with the text around it, redact, then cut.

Code that shows part of a longer text (a window of a file's lines, a line cut at 2,000
characters, the head and tail of a long output) would otherwise hand the scan a fragment: the
lines of a private key without its BEGIN and END lines, or the first 21 of a token's 36
characters, which no rule recognises. :func:`redact_cut` is given the text the code holds
around what it shows and the spans it shows; it scans the text around each *edge* of what is
shown (where shown text meets text that is not), up to ``CUT_MARGIN_CHARS`` on each side, and
replaces every part of a span that belongs to a secret found there, wherever the secret
occurs in the text, with the secret's marker: a secret the cut shows only part of becomes a
marker too. What lies wholly inside the spans, far from an edge, is left to the scan of the
finished result (bridge/screen.py), which sees it whole: each extra scan is bounded by the
margin, never the whole of an output.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence

from mcp_toolbridge.host import CUT_MARGIN_CHARS
from mcp_toolbridge.leaks.engine import Found
from mcp_toolbridge.leaks.markers import marker
from mcp_toolbridge.leaks.scan import SHORT_VALUE_CHARS, SecretScan


def _union(spans: Sequence[tuple[int, int]], size: int) -> list[tuple[int, int]]:
    """The shown parts of a text of ``size`` characters, merged where they touch."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted((max(0, s), min(size, e)) for s, e in spans):
        if end <= start:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def regions(
    spans: Sequence[tuple[int, int]], size: int, margin: int = CUT_MARGIN_CHARS
) -> list[tuple[int, int]]:
    """The parts of the text that are scanned: ``margin`` on each side of every edge of the
    shown parts (the text's own ends are not edges), merged where they overlap."""
    edges = []
    for start, end in _union(spans, size):
        if start > 0:
            edges.append(start)
        if end < size:
            edges.append(end)
    found: list[tuple[int, int]] = []
    for edge in edges:
        low, high = max(0, edge - margin), min(size, edge + margin)
        if found and low <= found[-1][1]:
            found[-1] = (found[-1][0], high)
        else:
            found.append((low, high))
    return found


def _occurrences(text: str, needle: str) -> Iterator[tuple[int, int]]:
    """Where ``needle`` stands in ``text`` (a short one only as a whole word, as scan.py
    replaces it)."""
    if len(needle) < SHORT_VALUE_CHARS:
        word = re.compile(rf"(?<![A-Za-z0-9]){re.escape(needle)}(?![A-Za-z0-9])")
        for match in word.finditer(text):
            yield match.start(), match.end()
        return
    at = text.find(needle)
    while at != -1:
        yield at, at + len(needle)
        at = text.find(needle, at + 1)


def _secrets(text: str, found: Iterable[Found]) -> list[tuple[int, int, str]]:
    """Where each secret found stands in ``text``: (start, end, rule), by start; a secret
    overlapping an earlier (or longer) one joins it."""
    places: list[tuple[int, int, str]] = []
    for item in found:
        places.extend((a, b, item.rule) for a, b in _occurrences(text, item.value))
    places.sort(key=lambda p: (p[0], -(p[1] - p[0])))
    merged: list[tuple[int, int, str]] = []
    for start, end, rule in places:
        if merged and start < merged[-1][1]:
            last = merged[-1]
            merged[-1] = (last[0], max(last[1], end), last[2])
        else:
            merged.append((start, end, rule))
    return merged


def _shown(text: str, start: int, end: int, secrets: list[tuple[int, int, str]]) -> str:
    parts: list[str] = []
    at = start
    for low, high, rule in secrets:
        if high <= start or low >= end:
            continue
        if low > at:
            parts.append(text[at:low])
        parts.append(marker(rule))
        at = max(at, min(high, end))
    parts.append(text[at:end])
    return "".join(parts)


def redact_cut(
    scan: SecretScan, text: str, spans: Sequence[tuple[int, int]], tool: str
) -> tuple[list[str], Counter[str]]:
    """``text[start:end]`` of each of ``spans``, every part of it that belongs to a secret
    found around an edge of the shown parts replaced by its marker, and the count per rule
    of the secrets replaced (see the module doc). Blocking: call it in a worker thread."""
    found: dict[str, Found] = {}
    for low, high in regions(spans, len(text)):
        for item in scan.findings(text[low:high], tool):
            found.setdefault(item.value, item)
    if not found:
        return [text[start:end] for start, end in spans], Counter()
    secrets = _secrets(text, found.values())
    shown = [_shown(text, start, end, secrets) for start, end in spans]
    counts: Counter[str] = Counter()
    for low, high, rule in secrets:
        if any(low < end and high > start for start, end in spans):
            counts[rule] += 1
    return shown, counts
