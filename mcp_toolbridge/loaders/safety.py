"""The safety facts a manifest declares, fail-closed for everything it does not.

None of the three formats has a field for "this tool only reads" or "this tool deletes
things". What each does declare (docs/manifests.md, "Safety facts"):

- Runloop: ``requires_confirmation``; an http transport and ``net:`` capability families reach
  the network (open world); ``fs.write:`` families write (not read-only); the http method
  (RFC 9110: GET, HEAD and OPTIONS are safe, so read-only; PUT and DELETE are idempotent;
  DELETE removes; POST and PATCH change state).
- Every format: the optional ``annotations`` object, named as MCP publishes it
  (``readOnlyHint``, ``destructiveHint``, ``idempotentHint``, ``openWorldHint``, ``title``).
  agentcli's, AgentPM's and Runloop's own loaders ignore keys they do not know, so a manifest
  that carries it still loads there. What it states wins over what is derived.

A fact neither gives takes the cautious value (destructive, not read-only, not idempotent,
open world) and is listed in ``Safety.inferred``; the default policy asks before running a
tool whose destructiveness is inferred.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from mcp_toolbridge.loaders.report import ProblemLog, json_quote
from mcp_toolbridge.model import SAFETY_FACTS, Safety

__all__ = ["ANNOTATION_FACTS", "Declared", "declared_safety", "http_method_facts"]

ANNOTATION_FACTS = {
    "readOnlyHint": "read_only",
    "destructiveHint": "destructive",
    "idempotentHint": "idempotent",
    "openWorldHint": "open_world",
}
"""The MCP ToolAnnotations hints an ``annotations`` object may hold -> Safety fields."""

_KNOWN_KEYS = (*ANNOTATION_FACTS, "title")


class Declared:
    """What a manifest entry declares: safety facts and a title."""

    __slots__ = ("safety", "title")

    def __init__(self, safety: Safety, title: str | None) -> None:
        self.safety = safety
        self.title = title


def http_method_facts(method: str) -> dict[str, bool]:
    """What an http method declares about the call, by RFC 9110's method semantics."""
    method = method.upper()
    if method in ("GET", "HEAD", "OPTIONS"):
        return {"read_only": True}
    if method == "PUT":
        return {"read_only": False, "idempotent": True}
    if method == "DELETE":
        return {"read_only": False, "idempotent": True, "destructive": True}
    if method in ("POST", "PATCH"):
        return {"read_only": False}
    return {}


def _annotations(value: object, log: ProblemLog, locator: str) -> tuple[dict[str, Any], bool]:
    """The facts (and ``title``) an ``annotations`` object states, and whether it was valid."""
    if value is None:
        return {}, True
    if not isinstance(value, dict):
        log.error(
            "annotations must be an object like "
            '{"readOnlyHint": true, "openWorldHint": false} (MCP tool annotations)',
            locator,
        )
        return {}, False
    stated: dict[str, Any] = {}
    ok = True
    for key, flag in value.items():
        if key == "title":
            if isinstance(flag, str):
                stated["title"] = flag
            else:
                log.error("annotations.title must be a string", locator)
                ok = False
            continue
        fact = ANNOTATION_FACTS.get(key)
        if fact is None:
            import difflib  # a typo's: not imported by a start without one

            close = difflib.get_close_matches(str(key), _KNOWN_KEYS, n=1, cutoff=0.6)
            hint = f'did you mean "{close[0]}"? ' if close else ""
            log.error(
                f"annotations.{key}: unknown annotation; {hint}known: {', '.join(_KNOWN_KEYS)}",
                locator,
            )
            ok = False
        elif not isinstance(flag, bool):
            shown = json_quote(str(flag))
            log.error(f"annotations.{key} must be true or false, got {shown}", locator)
            ok = False
        else:
            stated[fact] = flag
    if stated.get("read_only") is True and stated.get("destructive") is True:
        log.error(
            "annotations: readOnlyHint and destructiveHint cannot both be true "
            "(a read-only tool changes nothing)",
            locator,
        )
        ok = False
    return stated, ok


@functools.lru_cache(maxsize=64)
def _safety(facts: frozenset[tuple[str, bool]]) -> Safety:
    """One shared frozen record per distinct set of facts (a 100,000-tool catalog has a
    handful), not one per tool."""
    declared = dict(facts)
    return Safety(**declared, inferred=frozenset(SAFETY_FACTS) - declared.keys())


def declared_safety(
    annotations: object,
    log: ProblemLog,
    locator: str = "",
    derived: Mapping[str, bool] | None = None,
) -> Declared | None:
    """The Safety record of one manifest entry: ``derived`` (what its format's fields imply)
    overlaid with its ``annotations``. None when ``annotations`` is invalid (logged)."""
    stated, ok = _annotations(annotations, log, locator)
    if not ok:
        return None
    title = stated.pop("title", None)
    facts = {**(derived or {}), **stated}
    if facts.get("read_only") and facts.get("destructive"):
        if "read_only" in stated:  # what the annotations state wins over what is derived
            del facts["destructive"]
        else:
            facts["read_only"] = False
    if facts.get("read_only"):
        facts.setdefault("destructive", False)  # a read-only tool changes nothing,
        facts.setdefault("idempotent", True)  # so calling it again changes nothing either
    return Declared(_safety(frozenset(facts.items())), title)
