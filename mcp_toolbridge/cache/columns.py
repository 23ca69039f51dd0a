"""Big tables in a form that pickles and unpickles fast, for the start-up caches.

Unpickling 100,000 small objects one by one (the names of a catalog, the keys of its lookup
tables) is what makes a restored catalog or index slow; the same tables as one joined text and
integer arrays read back several times faster, and equal.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from typing import Any

__all__ = ["Compact", "compact", "expand"]

Compact = tuple[Any, ...]
"""A value as :func:`compact` stores it: a tag and its parts."""


def compact(value: Any) -> Compact:
    """``value`` in a form that unpickles several times faster when it is a big table of
    strings: a list of strings, a set of strings, or a dict from strings to ints, to tuples of
    ints or to strings becomes joined text and integer arrays (unpickling 100,000 small objects
    one by one is what makes a restored index slow). Anything else is kept as it is.
    :func:`expand` gives back an equal value."""
    if isinstance(value, list) and _texts(value):
        return ("texts", "\0".join(value), len(value))
    if isinstance(value, set | frozenset) and _texts(value):
        return ("text-set", "\0".join(value), len(value), type(value) is frozenset)
    if isinstance(value, dict) and _texts(value):
        keys, values = "\0".join(value), list(value.values())
        if all(type(v) is int for v in values):
            return ("text-int", keys, len(values), array("q", values))
        if all(type(v) is str and "\0" not in v for v in values):
            return ("text-text", keys, len(values), "\0".join(values))
        if all(type(v) is tuple and all(type(x) is int for x in v) for v in values):
            flat, ends = array("q"), array("q")
            for item in values:
                flat.extend(item)
                ends.append(len(flat))
            return ("text-ints", keys, len(values), flat, ends)
    return ("as-is", value)


def _texts(items: Iterable[object]) -> bool:
    found = False
    for item in items:
        if type(item) is not str or "\0" in item:
            return False
        found = True
    return found


def _split(text: str, count: int) -> list[str]:
    parts = text.split("\0")
    if len(parts) != count:
        raise ValueError("a compacted table does not have its length")
    return parts


def expand(packed: Compact) -> Any:
    """The value :func:`compact` was given."""
    tag = packed[0]
    if tag == "texts":
        return _split(packed[1], packed[2])
    if tag == "text-set":
        parts = _split(packed[1], packed[2])
        return frozenset(parts) if packed[3] else set(parts)
    if tag == "text-int":
        return dict(zip(_split(packed[1], packed[2]), packed[3].tolist(), strict=True))
    if tag == "text-text":
        return dict(zip(_split(packed[1], packed[2]), _split(packed[3], packed[2]), strict=True))
    if tag == "text-ints":
        flat, ends = packed[3].tolist(), packed[4].tolist()
        tuples = [tuple(flat[a:b]) for a, b in zip([0, *ends], ends, strict=False)]
        return dict(zip(_split(packed[1], packed[2]), tuples, strict=True))
    return packed[1]
