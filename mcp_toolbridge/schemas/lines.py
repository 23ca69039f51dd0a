"""What the other modules share: JSON pointers, one-line messages, the closest alternative of
a failed ``oneOf``/``anyOf``, RE2's search for a pattern, and jsonschema's own errors as sorted
lines (the schema checks of :mod:`.meta` keep jsonschema's wording: they are read by whoever
wrote the schema)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # jsonschema's errors only ever reach here once jsonschema is imported
    from jsonschema import exceptions as js_exceptions

MAX_MESSAGE = 300
_WEAK = ("anyOf", "oneOf")

JsonPath = tuple[str | int, ...]
Finding = tuple[JsonPath, str, bool]
"""An error's location, its message and whether it is a weak (oneOf/anyOf) error."""


def pointer(path: Iterable[str | int]) -> str:
    parts = [str(p).replace("~", "~0").replace("/", "~1") for p in path]
    return "/" + "/".join(parts)


def shorten(message: str) -> str:
    message = " ".join(message.split())
    if len(message) > MAX_MESSAGE:
        return message[: MAX_MESSAGE - 1] + "…"
    return message


def closest(error: js_exceptions.ValidationError) -> js_exceptions.ValidationError:
    """For a failed oneOf/anyOf, the error from the branch that came closest (fewest errors,
    then the earliest branch), descending as far as that goes."""
    from jsonschema.exceptions import relevance

    while error.context:
        branches: dict[int, list[js_exceptions.ValidationError]] = {}
        for sub in error.context:
            head = sub.relative_schema_path[0] if sub.relative_schema_path else 0
            branches.setdefault(head if isinstance(head, int) else 0, []).append(sub)
        _, nearest = min(branches.items(), key=lambda item: (len(item[1]), item[0]))
        error = max(nearest, key=relevance)
    return error


def rank(path: JsonPath, weak: bool) -> tuple[int, tuple[str, ...], bool]:
    """Shallow errors first, then in document order, weak ones last."""
    parts = tuple(f"{p:012d}" if isinstance(p, int) else p for p in path)
    return len(parts), parts, weak


def findings(errors: Iterable[js_exceptions.ValidationError]) -> list[Finding]:
    found: list[Finding] = []
    for error in errors:
        best = closest(error)
        found.append((tuple(best.absolute_path), best.message, error.validator in _WEAK))
    return found


def render(found: Iterable[Finding]) -> list[str]:
    """One line per error, in :func:`rank` order."""
    lines: list[str] = []
    for path, message, _ in sorted(found, key=lambda item: rank(item[0], item[2])):
        line = f"at {pointer(path)}: {shorten(message)}"
        if line not in lines:
            lines.append(line)
    return lines


@functools.lru_cache(maxsize=1024)
def linear(pattern: str) -> Callable[[str], object] | None:
    """RE2's search for ``pattern``; None when RE2 does not take it."""
    import re2  # here: 3 ms, for a schema with a pattern only

    options = re2.Options()
    options.log_errors = False  # a pattern RE2 does not take is said by the caller
    try:
        return re2.compile(pattern, options).search  # type: ignore[no-any-return]
    except re2.error:
        return None
