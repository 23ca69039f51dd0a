"""The postings of SearchIndex: each tool's six fields turned into BM25F-weighted posting
lists, in two passes, and on two cores for a big catalog.

Pass 1 turns each tool's fields into term ids, kept in two flat arrays for the whole catalog
(ids, and each field's length): no per-tool Python objects survive it, so the cyclic garbage
collector has nothing to rescan during a 100k build, and pass 2 neither splits strings nor
looks terms up again. A field is analysed piece by piece (a parameter's name, its
description, a tag) and each distinct piece once: the namespace, parameter names and their
descriptions repeat across a catalog. Pass 2 needs every field's average length, so it starts
when pass 1 is over, and adds up each tool's length-normalised term frequencies into one
posting (doc, weight) per term.

From ``PARALLEL_FROM`` tools on, where forking is safe (``forking.fork_allowed``), a forked
child does both passes for the second part of the catalog while this process does the first
part and ``alongside`` (the index's name tables): the child sends its new terms and field
totals, gets back the global ids of its terms and the averages, and sends its postings, which
are appended to this process's (its docs come after). Term ids are given in first-seen order
either way, so the result is identical to the one-process build; if the child fails, the whole
build is done again in process.
"""

from __future__ import annotations

import logging
import math
import re
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from mcp_toolbridge.catalog.scripts import fold
from mcp_toolbridge.catalog.text import split_words
from mcp_toolbridge.forking import ChildGone, Connection, Forked, fork_allowed
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.progress import Meter

log = logging.getLogger("mcp_toolbridge")

TermsOf = Callable[[str], list[str]]
Shape = tuple[float, float, float]
"""A field's (weight, b, average length) in pass 2."""
Tick = Callable[[int], None]
"""Progress inside a pass: called with the docs done so far, every ``_TICK`` docs."""
_TICK = 512


@dataclass(frozen=True, slots=True)
class Field:
    """One BM25F field: ``weight`` scales its term frequencies, ``b`` is how strongly a long
    field is discounted against the field's average length (0: not at all, 1: fully)."""

    weight: float
    b: float


# The name is the tool's most specific, hand-picked description, so a word there counts three
# times a word of prose; the title is a human rendering of the name. Parameter texts describe
# inputs rather than purpose, so they count half. The namespace is shared by every tool of a
# manifest and only needs to separate manifests. Short fields (name, title, tags) are barely
# length-normalised: their length says little about focus. These are the classic BM25F shape
# (name > body > auxiliary text), not values fitted to any benchmark.
FIELDS: dict[str, Field] = {
    "name": Field(3.0, 0.3),
    "title": Field(2.0, 0.3),
    "namespace": Field(1.0, 0.0),
    "description": Field(1.0, 0.75),
    "params": Field(0.5, 0.75),
    "tags": Field(1.5, 0.3),
}
K1 = 1.2
"""BM25 term-frequency saturation (the usual 1.2)."""
MAX_ENUM_VALUES = 20
PARALLEL_FROM = 4_000
"""Catalogs smaller than this are indexed in process (≈ 50 µs a tool; a child costs ≈ 10 ms)."""
PARENT_SHARE = 0.45
"""This process's part of the catalog: it also fills the name tables and merges."""

_NON_ALNUM = re.compile(r"[^a-z0-9]+")


@dataclass
class Postings:
    """What SearchIndex ranks with: each term's id, and per term id its docs, their weights and
    the term's idf."""

    term_ids: dict[str, int]
    docs: list[array[int]]
    """Per term id, the docs that have it, ascending."""
    weights: list[array[float]]
    """Per term id, the saturated pseudo term frequency of each of those docs."""
    idf: list[float]


def _ticks(meter: Meter | None, total: int, mine: int) -> tuple[Tick | None, Tick | None]:
    """Progress of the two passes over the ``mine`` docs done in this process, shown as an
    estimate of all ``total`` docs done (a child, if any, keeps about the same pace)."""
    if meter is None or not mine:
        return None, None

    def tick(second: int, done: int) -> None:
        if meter.due():
            fraction = (second + done / mine) / 2
            meter.update(int(fraction * total), fraction * meter.total_work)

    return partial(tick, 0), partial(tick, 1)


def build_postings(
    specs: Sequence[ToolSpec],
    terms_of: TermsOf,
    *,
    alongside: Callable[[], None],
    meter: Meter | None = None,
) -> Postings:
    """The postings of ``specs`` (docs numbered in their order); ``alongside()`` is run once,
    in this process, while a child (if there is one) works."""
    split = int(len(specs) * PARENT_SHARE)
    child = None
    if len(specs) >= PARALLEL_FROM and fork_allowed():
        child = _start_child(specs, split, terms_of)
    if child is None:
        alongside()
    else:
        try:
            alongside()
            ticks = _ticks(meter, len(specs), split)
            return _build_with_child(child, specs, split, terms_of, ticks)
        except ChildGone as exc:
            log.warning("building the search index in one process: %s", exc)
        finally:
            child.close()
    first, second = _ticks(meter, len(specs), len(specs))
    term_ids: dict[str, int] = {}
    tokens, lengths, totals = _tokenize(specs, 0, len(specs), terms_of, term_ids, first)
    shapes = _shapes(totals, len(specs))
    docs, weights = _weigh(tokens, lengths, shapes, 0, len(term_ids), second)
    return _finish(term_ids, docs, weights, len(specs))


def _start_child(specs: Sequence[ToolSpec], split: int, terms_of: TermsOf) -> Forked | None:
    """A child doing both passes for ``specs[split:]`` (it inherits them), talking to
    :func:`_build_with_child`; None when the system would not fork."""

    def child(conn: Connection) -> None:
        local: dict[str, int] = {}
        tokens, lengths, totals = _tokenize(specs, split, len(specs), terms_of, local)
        conn.send((list(local), totals))
        remap, shapes, nterms = conn.recv()
        tokens = array("I", map(remap.__getitem__, tokens))
        docs, weights = _weigh(tokens, lengths, shapes, split, nterms)
        conn.send([(tid, docs[tid], weights[tid]) for tid in range(nterms) if docs[tid]])

    try:
        return Forked(child)
    except OSError as exc:  # out of processes or memory: do it here
        log.warning("building the search index in one process: cannot fork (%s)", exc)
        return None


def _build_with_child(
    child: Forked,
    specs: Sequence[ToolSpec],
    split: int,
    terms_of: TermsOf,
    ticks: tuple[Tick | None, Tick | None] = (None, None),
) -> Postings:
    term_ids: dict[str, int] = {}
    tokens, lengths, totals = _tokenize(specs, 0, split, terms_of, term_ids, ticks[0])
    their_terms, their_totals = child.recv()
    # Their terms not seen here get the next ids, in the order they first appear there: the
    # ids a one-process build gives.
    remap = array("I", (term_ids.setdefault(t, len(term_ids)) for t in their_terms))
    totals = [a + b for a, b in zip(totals, their_totals, strict=True)]
    shapes = _shapes(totals, len(specs))
    child.send((remap, shapes, len(term_ids)))
    docs, weights = _weigh(tokens, lengths, shapes, 0, len(term_ids), ticks[1])
    for tid, their_docs, their_weights in child.recv():
        docs[tid] += their_docs
        weights[tid] += their_weights
    return _finish(term_ids, docs, weights, len(specs))


def _tokenize(
    specs: Sequence[ToolSpec],
    lo: int,
    hi: int,
    terms_of: TermsOf,
    term_ids: dict[str, int],
    tick: Tick | None = None,
) -> tuple[array[int], array[int], list[int]]:
    """Pass 1 over ``specs[lo:hi]``: every field's term ids in one array, each field's length
    in another, and the total length per field. New terms get the next ids of ``term_ids``."""
    tokens = array("I")
    lengths = array("I")
    totals = [0] * len(FIELDS)
    analysed: dict[str, array[int]] = {}
    for n, spec in enumerate(specs[lo:hi]):
        if tick is not None and not n % _TICK:
            tick(n)
        for f, parts in enumerate(field_parts(spec)):
            size = 0
            for part in parts:
                ids = analysed.get(part)
                if ids is None:
                    ids = analysed[part] = array("I")
                    for term in terms_of(part):
                        tid = term_ids.get(term)
                        if tid is None:
                            tid = term_ids[term] = len(term_ids)
                        ids.append(tid)
                tokens += ids
                size += len(ids)
            lengths.append(size)
            totals[f] += size
    return tokens, lengths, totals


def _shapes(totals: list[int], count: int) -> list[Shape]:
    averages = [max(total / max(count, 1), 1.0) for total in totals]
    return [(fd.weight, fd.b, avg) for fd, avg in zip(FIELDS.values(), averages, strict=True)]


def _weigh(
    tokens: array[int],
    lengths: array[int],
    shapes: list[Shape],
    first_doc: int,
    nterms: int,
    tick: Tick | None = None,
) -> tuple[list[array[int]], list[array[float]]]:
    """Pass 2: the postings of the docs whose pass-1 arrays are given, numbered from
    ``first_doc``; one (maybe empty) list per term id below ``nterms``."""
    nfields = len(shapes)
    all_docs: list[array[int]] = [array("I") for _ in range(nterms)]
    all_weights: list[array[float]] = [array("f") for _ in range(nterms)]
    at = 0
    saturate = K1 + 1.0
    for i in range(len(lengths) // nfields):
        if tick is not None and not i % _TICK:
            tick(i)
        doc = first_doc + i
        pseudo_tf: dict[int, float] = {}
        get = pseudo_tf.get
        for f in range(nfields):
            size = lengths[i * nfields + f]
            if size:
                weight, b, average = shapes[f]
                scale = weight / (1.0 - b + b * size / average)
                for tid in tokens[at : at + size]:
                    pseudo_tf[tid] = get(tid, 0.0) + scale
                at += size
        for tid, tf in pseudo_tf.items():
            all_docs[tid].append(doc)
            all_weights[tid].append(tf * saturate / (K1 + tf))
    return all_docs, all_weights


def _finish(
    term_ids: dict[str, int], docs: list[array[int]], weights: list[array[float]], n: int
) -> Postings:
    idf = [math.log(1.0 + (n - len(d) + 0.5) / (len(d) + 0.5)) for d in docs]
    return Postings(term_ids, docs, weights, idf)


def field_parts(spec: ToolSpec) -> tuple[tuple[str, ...], ...]:
    """The texts of the six ``FIELDS``, in their order, each as the pieces it is made of
    (words never run across two pieces)."""
    same = _bare(spec.id) == _bare(spec.name)
    return (
        (spec.id,) if same else (spec.id, spec.name),
        (spec.title,) if spec.title else (),
        (spec.namespace,) if spec.namespace else (),
        (spec.description,),
        tuple(schema_texts(spec.input_schema, 2)),
        spec.tags,
    )


def _bare(name: str) -> str:
    """A name's letters and digits, lowercase and folded: equal for an id and the MCP name
    sanitizing made of it (``mail.send``, ``mail_send``; ``café_menu``, ``cafe_menu``)."""
    return _NON_ALNUM.sub("", (name if name.isascii() else fold(name)).lower())


def field_texts(spec: ToolSpec) -> tuple[str, ...]:
    """The texts of the six ``FIELDS``, in their order."""
    return tuple(" ".join(parts) for parts in field_parts(spec))


def semantic_text(spec: ToolSpec) -> str:
    """What the semantic leg reads of a tool: its name as words, title, description and
    parameter texts."""
    parts = [" ".join(split_words(spec.id)), spec.title, spec.description]
    return ". ".join(p for p in [*parts, *schema_texts(spec.input_schema, 2)] if p)


def schema_texts(schema: Any, depth: int) -> list[str]:
    """Property names, titles, descriptions and string enum values of an object schema,
    following nested objects and array items ``depth`` levels down."""
    out: list[str] = []
    _collect(schema, depth, out)
    return out


def _collect(schema: Any, depth: int, out: list[str]) -> None:
    if not isinstance(schema, dict) or depth <= 0:
        return
    items = schema.get("items")
    if isinstance(items, dict):
        _collect(items, depth, out)
    props = schema.get("properties")
    if not isinstance(props, dict):
        return
    for prop, sub in props.items():
        out.append(str(prop))
        if not isinstance(sub, dict):
            continue
        for key in ("title", "description"):
            text = sub.get(key)
            if isinstance(text, str):
                out.append(text)
        enum = sub.get("enum")
        if isinstance(enum, list):
            out.extend(v for v in enum[:MAX_ENUM_VALUES] if isinstance(v, str))
        if depth > 1 and ("properties" in sub or "items" in sub):
            _collect(sub, depth - 1, out)
