"""The names a query mentions: the name tables of ``SearchIndex`` and the rules that make a
token a reference to a tool (``Mentions``, a part of ``SearchIndex``; its state lives on the
index, so the index cache stores it with the rest)."""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterator, Sequence

from mcp_toolbridge.catalog import ranking_config as config
from mcp_toolbridge.catalog.text import Analyzer
from mcp_toolbridge.model import ToolSpec

QUOTES = "`'\""
_PUNCT = "()[]{}<>,;:!?*."
STRIP = QUOTES + _PUNCT[:-1]
IDENT_MARK = re.compile(r"[_\-./:0-9]|[a-z][A-Z]")
_SUFFIX_SEP = re.compile(r"[./:]|__")


class Mentions:
    """Name tables and the lookups over them (mixed into ``SearchIndex``)."""

    _analyzer: Analyzer
    _term_ids: dict[str, int]
    _docs: list[array[int]]

    def _init_names(self) -> None:
        self._names: list[str] = []
        self._namespaces: list[str] = []
        self._by_name: dict[str, int] = {}
        self._by_id: dict[str, int] = {}
        # name form -> docs; tuples of ints, which the garbage collector stops tracking.
        # Lower-cased forms for identifier-shaped, quoted or whole-query mentions; the exact
        # (case-sensitive) forms that are plain words, for mentions inside prose.
        self._exact: dict[str, tuple[int, ...]] = {}
        self._suffix: dict[str, tuple[int, ...]] = {}
        self._word_exact: dict[str, tuple[int, ...]] = {}
        self._word_suffix: dict[str, tuple[int, ...]] = {}
        self._ns_set: set[str] = set()

    def _register_names(self, doc: int, spec: ToolSpec) -> None:
        self._names.append(spec.name)
        namespace = spec.namespace.lower()
        self._namespaces.append(namespace)
        if namespace:
            self._ns_set.add(namespace)
        self._by_name.setdefault(spec.name, doc)
        self._by_id.setdefault(spec.id, doc)
        exact = {spec.name, spec.id}
        forms = {form.lower() for form in exact}
        for form in forms:
            self._exact[form] = (*self._exact.get(form, ()), doc)
        for form in exact:
            if form.isalpha() and not IDENT_MARK.search(form):  # a plain word
                self._word_exact[form] = (*self._word_exact.get(form, ()), doc)
        for suffix in short_suffixes(spec) - exact:
            lowered = suffix.lower()
            if lowered not in forms:
                self._suffix[lowered] = (*self._suffix.get(lowered, ()), doc)
            if suffix.isalpha() and not IDENT_MARK.search(suffix):
                self._word_suffix[suffix] = (*self._word_suffix.get(suffix, ()), doc)

    def _lookup(self, name: str) -> int | None:
        doc = self._by_name.get(name, self._by_id.get(name))
        if doc is None:
            matches = self._exact.get(name.lower(), ())
            doc = matches[0] if len(matches) == 1 else None
        return doc

    def _named_in(self, text: str) -> list[int]:
        """Tools the query names: full names first, then namespace-qualified names, then short
        suffixes; within a class in the order the query mentions them.

        A token names a tool when it is the tool's name, id, namespace-qualified id or short
        suffix, written as a reference: identifier-shaped (get_time, getTime, mail.send,
        s3-put), quoted, or the whole query; case is ignored there. A plain word inside prose
        is a reference only when it is exactly one tool's full name (case-sensitive, MCP
        SEP-986: "Encrypt" and "copyediting" do not name ``encrypt`` and ``copyEditing``) and
        no other tool's text uses that word (``config.PROSE_NAMES``): "encrypt the forecast"
        names the one tool about encrypting, while "the temperature in Paris" does not name
        a tool called ``temperature`` among thirty weather tools that mention temperatures,
        and "list" does not name ``products.list``.
        """
        found: list[list[int]] = [[], [], []]
        whole = text.strip(STRIP).rstrip(".").lower()
        rule = config.PROSE_NAMES
        for token in dict.fromkeys([text, *text.split()]):
            core = token.strip(_PUNCT)
            # quoted on both sides: a quote that opens or closes a phrase quotes no name
            quoted = len(core) > 2 and core[0] in QUOTES and core[-1] in QUOTES
            raw = token.strip(STRIP).rstrip(".").strip(STRIP)
            form = raw.lower()
            if not form:
                continue
            if quoted or form == whole or IDENT_MARK.search(raw):
                for klass, docs in enumerate(self._name_matches(form)):
                    found[klass] += docs
                continue
            named = self._word_exact.get(raw, ())
            if len(named) == 1 and (rule != "distinct" or self._only_in(raw, named[0])):
                found[0] += named
            elif not named and rule == "suffix":  # round 2's rule, kept to measure it
                suffixed = self._word_suffix.get(raw, ())
                found[2] += suffixed if len(suffixed) == 1 else ()
        return list(dict.fromkeys(d for docs in found for d in docs))

    def _only_in(self, word: str, doc: int) -> bool:
        """Whether ``word`` is a term of ``doc``'s text and of no other tool's."""
        terms = self._analyzer.terms(word)
        tid = self._term_ids.get(terms[0]) if len(terms) == 1 else None
        return tid is not None and len(self._docs[tid]) == 1 and self._docs[tid][0] == doc

    def _name_matches(self, form: str) -> Iterator[Sequence[int]]:
        yield self._exact.get(form, ())
        qualified: list[int] = []
        for sep in (".", "/", ":", "__", "_", "-"):
            at = form.find(sep)
            while at > 0:
                head, tail = form[:at], form[at + len(sep) :]
                if head in self._ns_set:
                    qualified += [
                        d for d in self._exact.get(tail, ()) if self._namespaces[d] == head
                    ]
                at = form.find(sep, at + 1)
        yield qualified
        suffixed = self._suffix.get(form, ())
        yield suffixed if len(suffixed) == 1 else ()  # "get" ends many ids: it names none


def short_suffixes(spec: ToolSpec) -> set[str]:
    """Shorter names a user may call the tool by, in their original case: the last segment of
    a dotted, slashed or ``__``-joined id or name, and the name without its namespace prefix."""
    out: set[str] = set()
    for full in (spec.id, spec.name):
        tail = _SUFFIX_SEP.split(full)[-1]
        if tail and tail != full:
            out.add(tail)
    namespace = spec.namespace.lower()
    lowered = spec.name.lower()
    for sep in ("_", "-", "."):
        if namespace and lowered.startswith(namespace + sep) and len(lowered) > len(namespace) + 1:
            out.add(spec.name[len(namespace) + 1 :])
    return out
