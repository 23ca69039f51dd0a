"""When a tool is a match at all: the evidence a ranked tool must have to be returned
(``Evidence``, a part of ``SearchIndex``), and what a search gives back (``Found``).

Ranking always finds a best tool, however poor: a request for something the catalog does
not have still shares a word or two with some description, and the semantic leg always has
a nearest neighbour. Returning those makes a model call something irrelevant. So a tool is
returned only with evidence, per clause of the request:

- lexical: the share of the clause's specificity the tool's text covers, each distinct term
  counted at its idf; a term no tool has counts at the highest idf there is (it is the most
  specific thing asked, and nothing has it); numbers beside words are values the request
  gives, not what it asks for, and count for nothing (a request of numbers alone is about
  them). ``zzqx_42`` covers nothing; "current temperature in
  Paris" against a weather tool covers "current" and "temperature". A tool must cover more
  than ``ranking_config.EVIDENCE_MIN``.
- near words: a word of the tool's text near a word of the clause that no tool has
  (``expansion.py``: "movies" and a tool about films; ``_expanded``). The word for a kind of
  value the clause gives (a date, a time, an e-mail address, a URL: ``text.value_kinds``)
  weighs in the ranking but is no evidence: a tool that takes a date is not a match for any
  request that gives one.
- semantic: the cosine of the clause and the tool above what held-out data shows noise
  reaches (``ranking_config.SEMANTIC_MIN``).

A tool the request names, and a tool that gives what a match needs (``needs.py``), need no
evidence of their own. When nothing has evidence the search finds nothing, and the tools
that ranked first are kept aside as the closest names (``Found.closest``): a hint, not a
match.
"""

from __future__ import annotations

import math
import re
from array import array
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, field

from mcp_toolbridge.catalog import ranking_config as config
from mcp_toolbridge.catalog.expansion import expand, loaded, neighbours

_WORD = re.compile(r"[^\W\d_]")
"""A term with a letter in it (any script)."""


@dataclass(frozen=True, slots=True)
class SearchHit:
    name: str
    score: float


@dataclass(frozen=True, slots=True)
class Found:
    """What a search found: ``hits``, best first; when there are none, ``closest`` holds the
    names that ranked first without evidence enough to be a match."""

    hits: list[SearchHit]
    closest: list[str] = field(default_factory=list)


class Evidence:
    """Lexical evidence of docs for a clause (mixed into ``SearchIndex``)."""

    _term_ids: dict[str, int]
    _docs: list[array[int]]
    _idf: list[float]
    _names: list[str]

    def _expansion_ready(self, load: bool = False) -> bool:
        """Whether expansion runs without first reading its table (off, or read); with
        ``load``, read it now."""
        if load and config.EXPANSION_WEIGHT > 0.0:
            neighbours()
        return config.EXPANSION_WEIGHT <= 0.0 or loaded()

    def _expanded(self, terms: list[str], kinds: Iterable[str] = ()) -> dict[str, float]:
        """The terms near ``terms`` (``expansion.py``) that the catalog has, at their weights;
        a term the catalog has itself is expanded at ``config.EXPANSION_KNOWN`` of that (its
        tools already match it). ``kinds``: the terms of the kinds of value the clause gives
        (``text.value_kinds``: a date asks for a tool that takes one), at
        ``config.VALUE_KIND_WEIGHT``."""
        out: dict[str, float] = {}
        common = max(config.EXPANSION_COMMON * len(self._names), config.EXPANSION_MANY)
        if config.VALUE_KIND_WEIGHT > 0.0:
            for term in kinds:
                tid = self._term_ids.get(term)
                if tid is not None and term not in terms and len(self._docs[tid]) <= common:
                    out[term] = config.VALUE_KIND_WEIGHT
        if config.EXPANSION_WEIGHT <= 0.0:
            return out
        known = [t for t in terms if t in self._term_ids]
        unknown = [t for t in terms if t not in self._term_ids]
        for group, factor in ((known, config.EXPANSION_KNOWN), (unknown, 1.0)):
            weight = config.EXPANSION_WEIGHT * factor
            found = expand(group, config.EXPANSION_TOP, config.EXPANSION_MIN, weight)
            for term, value in found.items():
                tid = self._term_ids.get(term)
                if tid is None or term in terms or value <= out.get(term, 0.0):
                    continue
                if len(self._docs[tid]) > common:
                    continue
                out[term] = value
        return out

    def _coverage(self, terms: list[str], docs: list[int]) -> dict[int, float]:
        """Per doc of ``docs``, the share of the idf of ``terms`` (each distinct term once) that
        its text has; a term the catalog lacks counts at the highest idf there is."""
        n = len(self._names)
        unknown = math.log(1.0 + (n + 0.5) / 0.5)
        mass = 0.0
        out = dict.fromkeys(docs, 0.0)
        distinct = set(terms)
        worded = any(_WORD.search(term) for term in distinct)
        for term in distinct:
            if worded and not _WORD.search(term):  # a number beside words is a value given
                continue
            tid = self._term_ids.get(term)
            if tid is None:
                mass += unknown
                continue
            idf = self._idf[tid]
            mass += idf
            postings = self._docs[tid]
            for doc in docs:
                at = bisect_left(postings, doc)
                if at < len(postings) and postings[at] == doc:
                    out[doc] += idf
        if mass <= 0.0:
            return dict.fromkeys(docs, 0.0)
        return {doc: value / mass for doc, value in out.items()}
