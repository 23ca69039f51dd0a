"""The marker that stands for a redacted secret, ``[REDACTED:<rule-id>]``, and finding it.

What a tool returns reaches the model with each secret replaced by its marker (scan.py). A
model that writes such text back into a file would put the marker where the secret was: the
file tools count the markers in what they are given (:func:`markers_in`) against those the
file already holds as text (:func:`count_markers`), so a marker is never written over a
secret. The engine never takes a marker for a secret (:func:`only_markers`): a redacted text
redacted again stays as it was.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

MAX_RULE_CHARS = 64
"""The longest rule id a marker can hold (betterleaks' longest is 43 characters)."""
MARKER = re.compile(rf"\[REDACTED:[A-Za-z0-9][A-Za-z0-9._-]{{0,{MAX_RULE_CHARS - 1}}}\]")
_MARKER_BYTES = re.compile(MARKER.pattern.encode("ascii"))
MAX_MARKER_BYTES = len("[REDACTED:]") + MAX_RULE_CHARS


def marker(rule: str) -> str:
    """What stands for a secret the rule ``rule`` found."""
    return f"[REDACTED:{rule}]"


def only_markers(value: str) -> bool:
    """Whether ``value`` is nothing but markers (and spaces): a secret already redacted, never
    a secret itself."""
    return "[REDACTED:" in value and not MARKER.sub("", value).strip()


def markers_in(text: str) -> Counter[str]:
    """How many times each marker occurs in ``text``."""
    return Counter(MARKER.findall(text))


def count_markers(chunks: Iterable[bytes], wanted: Iterable[str]) -> Counter[str]:
    """How many times each of the ``wanted`` markers occurs in the bytes ``chunks`` hold (a
    file read piece by piece: a marker cut between two pieces is counted once)."""
    wanted_bytes = {item.encode("ascii") for item in wanted}
    found: Counter[str] = Counter()
    carry = b""
    for chunk in chunks:
        data = carry + chunk
        limit = max(0, len(data) - MAX_MARKER_BYTES)  # a match starting later may be cut
        end = 0
        for match in _MARKER_BYTES.finditer(data):
            if match.start() >= limit:
                break
            if match.group() in wanted_bytes:
                found[match.group().decode("ascii")] += 1
            end = match.end()
        carry = data[max(limit, end) :]
    for match in _MARKER_BYTES.finditer(carry):
        if match.group() in wanted_bytes:
            found[match.group().decode("ascii")] += 1
    return found
