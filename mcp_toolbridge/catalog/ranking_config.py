"""The ranking configuration of ``tool_search``: the constants a ranking depends on beyond
the fields (``index_build.FIELDS``) and the analysis (``text.py``), and ``RANKING_CONFIG``,
the one value that names all of them (the index cache keys on it)."""

from __future__ import annotations

import hashlib

from mcp_toolbridge.catalog.index_build import FIELDS, K1, MAX_ENUM_VALUES
from mcp_toolbridge.catalog.scripts import UNSPACED
from mcp_toolbridge.catalog.text import ABBREVIATIONS, STOP_WORDS

PROSE_NAMES = "distinct"
"""Which plain words inside prose name a tool (``mentions.py``): ``distinct`` (exactly one
tool's full name, a word no other tool's text uses), ``exact`` (exactly one tool's full name)
or ``suffix`` (that, or one tool's short suffix: round 2's rule). Kept switchable to measure."""
WHOLE_FIRST = True
"""With ``CLAUSE_MERGE = "interleave"``: whether the best tool for a request as a whole comes
first when it has several clauses (round 3's first pass: BFCL +0.9 nDCG@10, MetaTool +0.2,
Seal-Tools -0.1, within one query)."""
CLAUSE_MERGE = "cover"
"""How a request's clause rankings become one list (``merge.py``): ``cover`` (every clause
covered before near-duplicates, with the whole request's ranking) or round 2's
``interleave`` (rank by rank). Taken by ``benchmarks/search_protocol.py`` on every visible
set: BFCL +0.3 nDCG@10 / +1.4 Complete@10, MetaTool +0.2 / +0.4, Seal-Tools +0.4 / +1.0."""
CLAUSE_SHARE = 0.9
"""With ``cover``: the clauses' share of a tool's value (the whole request has the rest).
This and the two below are the best of a 4 × 3 × 3 grid on the visible sets (docs/search.md
gives them chosen leave-one-set-out too)."""
CLAUSE_SHARPNESS = 3.0
"""With ``cover``: P(tool | clause) is its score over the clause's best, to this power."""
CLAUSE_TRUST = 0.3
"""With ``cover``: how much of a clause its chosen tool covers, times P(tool | clause)."""
DEPENDENCIES = False
"""Whether the tools that give what a request's first choices need (their required
``<thing>_id`` parameters, ``needs.py``) follow those choices. Off: measured, not taken (it
costs BFCL and Seal-Tools a query or two, and the held-out tau-bench 2.9 points of
Complete@10 it was meant to raise: its many-sentence requests have many first choices)."""
SIBLING_WEIGHT = 0.15
"""How much a tool's score leans on its namespace's: gold tools of one request are often
siblings (tools of one server), so a tool whose siblings cover the rest of the request rises."""
SIBLING_POOL = 3
"""Sibling evidence is gathered from the ``SIBLING_POOL × n`` best tools of a clause."""
SEMANTIC_MODEL = "minilm-l6 static 128 int8, wordpiece, mean of token vectors"
"""The semantic leg's model ("" switches the leg off); see ``embedding.py``."""
SEMANTIC_WEIGHT = 0.5
"""The semantic leg's share of a fused score (both legs z-normalised over their candidates):
the largest of 0.4 / 0.5 / 0.6 / 0.7 that keeps every first-half benchmark set at or above
the lexical ranking (docs/search.md)."""
SEMANTIC_POOL = 100
"""Each leg offers its ``SEMANTIC_POOL`` best tools (or ``k`` if more) to the fusion."""
SEMANTIC_VALUES_OUT = True
"""Whether the values a request gives (quoted literals, numbers: ``text.without_values``) are
left out of the text the semantic leg embeds (round 3's fifth pass, docs/search.md: Seal-Tools
+0.5 nDCG@10 / +0.7 Complete@10, BFCL +0.1, no visible set lower by a query)."""
EVIDENCE_MIN = 0.0
"""The share of a clause's specificity (its terms' idf) a tool's text must cover, more than
this, to be a lexical match (``evidence.py``): chosen leave-one-set-out as the strictest that
costs no visible set more than half a point of Hit@10 (``benchmarks/search_gate.py``); any
stricter one costs MetaTool's paraphrased requests real matches (0.05: -1.2, 0.1: -8.6)."""
SEMANTIC_MIN = 0.7
"""The cosine of a clause and a tool that makes the tool a match without lexical evidence:
the lowest of 0.55 / 0.6 / 0.65 / 0.7 above which no more than 5% of nonsense queries find a
tool on every visible set (``benchmarks/search_gate.py --semantic``; the static MiniLM
table's cosines run high: nonsense reaches 0.66 on BFCL at the 95th percentile). Paraphrases
below it are lost too: MetaTool's Hit@10 83.9 -> 80.9 with the leg."""
EXPANSION_WEIGHT = 0.5
"""A query term's nearest terms (``expansion.py``: the shipped model's neighbours, no numpy)
join its clause at this weight × their cosine, and a tool's near word is evidence of a match
(0: no expansion). This and the three below were chosen by ``benchmarks/search_protocol.py``
on the visible sets (left out: BFCL +0.3 nDCG@10, MetaTool +1.9, Seal-Tools +0.1)."""
EXPANSION_KNOWN = 0.0
"""The share of ``EXPANSION_WEIGHT`` at which a query term the catalog has itself is
expanded: none (its tools already match it; only the words no tool has are bridged)."""
EXPANSION_TOP = 8
"""With expansion: how many nearest terms of each query term."""
EXPANSION_MIN = 0.4
"""With expansion: the least cosine of a nearest term (the table holds none below it)."""
EXPANSION_COMMON = 0.05
"""With expansion: a near word in more than this share of the catalog's tools, and in more
than ``EXPANSION_MANY`` of them, is left out: it tells few tools apart, and its long posting
list was most of what expansion cost (p99 at 100k tools 3.4x the unexpanded query's without
this cap, 2.0x with it). Set for cost, not quality: the visible sets are identical with and
without it (docs/search.md gives the held-out ones)."""
EXPANSION_MANY = 1000
"""See ``EXPANSION_COMMON``: a small catalog keeps every near word (the cap is for cost)."""
VALUE_KIND_WEIGHT = 1.0
"""The weight, as a word of the request, of the word for a kind of value a clause gives
(``text.value_kinds``: date, time, email, url); it ranks, but is no evidence of a match
alone (0: none). Chosen by ``benchmarks/search_protocol.py`` from 0 / 0.3 / 0.5 / 1 on the
visible sets (round 3's fifth pass, docs/search.md)."""
RANKING_REVISION = 11
"""Raised whenever ranking or analysis code changes in a way the constants below miss
(9: contractions and framing phrases dropped from requests; clause strengths in keyword
units with the semantic leg; 10: values left out of the semantic leg's text; 11: kinds of
value)."""
RANKING_CONFIG = hashlib.sha256(
    repr(
        (
            RANKING_REVISION,
            [(name, field.weight, field.b) for name, field in FIELDS.items()],
            K1,
            MAX_ENUM_VALUES,
            sorted(STOP_WORDS),
            sorted(ABBREVIATIONS.items()),
            UNSPACED,
            PROSE_NAMES,
            WHOLE_FIRST,
            CLAUSE_MERGE,
            CLAUSE_SHARE,
            CLAUSE_SHARPNESS,
            CLAUSE_TRUST,
            DEPENDENCIES,
            SIBLING_WEIGHT,
            SIBLING_POOL,
            SEMANTIC_MODEL,
            SEMANTIC_WEIGHT,
            SEMANTIC_POOL,
            SEMANTIC_VALUES_OUT,
            EVIDENCE_MIN,
            SEMANTIC_MIN,
            EXPANSION_WEIGHT,
            EXPANSION_TOP,
            EXPANSION_MIN,
            EXPANSION_KNOWN,
            EXPANSION_COMMON,
            EXPANSION_MANY,
            VALUE_KIND_WEIGHT,
        )
    ).encode()
).hexdigest()[:16]
"""One value naming everything a built index's postings and rankings depend on (field weights,
saturation, analysis and the scripts read as bigrams, sibling evidence, the semantic leg): a
cache of built indexes keys on it, so a change to any of them invalidates what was cached."""
