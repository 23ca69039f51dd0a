"""Hypothesis strategies and the settings every fuzz test shares.

The settings are deterministic (derandomized, no example database), so CI sees the same
examples on every run, and bounded so each test takes a few seconds. Shrinking is off: a
failing example is reported as generated (and reproduces, being derandomized) instead of
spending minutes minimizing it.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

TEXT = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["", " ", "\u0000", "é", "名前", "🚀", "../..", "./tools/bin/x", "\ud7ff"]),
    st.builds(lambda c, n: c * n, st.sampled_from(["x", "é", "\n"]), st.integers(1000, 70_000)),
)
"""Short text, awkward unicode and the odd huge string."""

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
)


def json_values(max_leaves: int = 12) -> st.SearchStrategy[Any]:
    """Arbitrary JSON values: scalars, lists and objects, a few levels deep."""
    return st.recursive(
        SCALARS,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)
        ),
        max_leaves=max_leaves,
    )


def deeply_nested(depth: int) -> Any:
    """A list nested ``depth`` levels deep (past the recursion limit when depth is large)."""
    value: Any = "bottom"
    for _ in range(depth):
        value = [value]
    return value


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside ``doc`` (the root is the empty path)."""
    found = [prefix]
    if isinstance(doc, dict):
        for key, value in doc.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            found += _paths(value, (*prefix, i))
    return found


def _parent(doc: Any, path: tuple[Any, ...]) -> Any:
    for part in path[:-1]:
        doc = doc[part]
    return doc


@st.composite
def mutated(draw: st.DrawFn, valid: Any, max_edits: int = 4) -> Any:
    """``valid`` after a few edits: a key dropped, a value of the wrong type, a huge or odd
    string, a deep nest, a new key. The edits land anywhere in the document."""
    doc = copy.deepcopy(valid)
    for _ in range(draw(st.integers(1, max_edits))):
        paths = _paths(doc)
        path = draw(st.sampled_from(paths))
        edit = draw(st.sampled_from(["drop", "replace", "nest", "add"]))
        if not path:
            if edit == "replace":
                doc = draw(json_values())
            continue
        parent, key = _parent(doc, path), path[-1]
        if edit == "drop":
            del parent[key]
        elif edit == "replace":
            parent[key] = draw(json_values(6))
        elif edit == "nest":
            parent[key] = deeply_nested(draw(st.sampled_from([30, 400])))
        elif isinstance(parent, dict):
            parent[draw(TEXT)] = draw(json_values(4))
        else:
            parent.insert(0, draw(json_values(4)))
    return doc
