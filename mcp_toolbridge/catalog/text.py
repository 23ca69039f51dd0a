"""Text analysis for tool search: identifier-aware word splitting, folding and the scripts
written without spaces (``scripts.py``), stop words, English stemming and splitting a request
into clauses. Pure functions; no I/O.

The same ``Analyzer`` turns tool texts (at index time) and queries (at search time) into terms,
so both sides always agree on what a term is.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable

import Stemmer

from mcp_toolbridge.catalog.scripts import fold, grams, runs

# Inside an ASCII run: acronyms before a capitalised word ("HTTPServer" -> HTTP, Server),
# capitalised or lowercase words, bare acronyms; a trailing digit run stays with its word
# ("base64", "utf8", "S3") because those digits are part of the name, not a separate word.
_CAMEL = re.compile(r"[A-Z]+\d*(?=[A-Z][a-z])|[A-Z]?[a-z]+\d*|[A-Z]+\d*|\d+")

# Function words carry no intent. Dropping them keeps queries about what the user wants, keeps
# the postings walked per query short (a word in every description would otherwise cost a full
# scan of the catalog) and tells us when a clause has no content of its own. The verbs a person
# frames a request with ("can you help me", "give me", "tell me", "show me", "suggest",
# "recommend", "do you know") say that something is asked, not what: they match every
# description that happens to use them. Verbs that name tool actions (get, find, list, search,
# create, ...) are deliberately NOT here.
STOP_WORDS: frozenset[str] = frozenset(
    """
    a about after again against all am an and any are as at be because been before being
    between both but by can could did do does doing during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its
    itself just me more most my myself no nor not of once only or other our ours
    ourselves own same she should so some such than that the their theirs them
    themselves then there these they this those through to too until very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    also please want need able e g eg ie etc let us s t may might must shall via per
    additionally afterward afterwards finally firstly furthermore lastly moreover secondly
    subsequently thirdly
    help provide give tell show suggest recommend know
    """.split()
)

# Short forms that identifiers use for common English words (getUserInfo, list_repos,
# db_stats, AppConfig). Each is mapped to its full word before stemming, on both sides, so
# "information about the user" meets getUserInfo and "list repos" meets "list repositories".
# Only abbreviations with one dominant meaning in software English are listed; ambiguous ones
# ("min": minimum or minute, "temp": temperature or temporary) are left alone.
ABBREVIATIONS: dict[str, str] = {
    "info": "information",
    "stats": "statistics",
    "stat": "statistic",
    "config": "configuration",
    "configs": "configurations",
    "cfg": "configuration",
    "app": "application",
    "apps": "applications",
    "db": "database",
    "dbs": "databases",
    "repo": "repository",
    "repos": "repositories",
    "msg": "message",
    "msgs": "messages",
    "img": "image",
    "imgs": "images",
    "pic": "picture",
    "pics": "pictures",
    "doc": "document",
    "docs": "documents",
    "dir": "directory",
    "dirs": "directories",
    "env": "environment",
    "num": "number",
    "param": "parameter",
    "params": "parameters",
    "arg": "argument",
    "args": "arguments",
    "desc": "description",
    "calc": "calculate",
    "org": "organization",
    "orgs": "organizations",
    "dept": "department",
    "addr": "address",
    "admin": "administrator",
    "lib": "library",
    "libs": "libraries",
    "src": "source",
    "dest": "destination",
    "max": "maximum",
    "ad": "advertisement",
    "ads": "advertisements",
    "auth": "authentication",
    "pwd": "password",
    "del": "delete",
    "pref": "preference",
    "prefs": "preferences",
    "spec": "specification",
    "specs": "specifications",
    "qty": "quantity",
    "tmp": "temporary",
    "txt": "text",
}


# English contractions: "I'm", "we've", "you'll", "they're", "I'd" would leave a word "m",
# "ve", "ll", "re" or "d" (and "m" is metres in a physics tool's text), and "don't", "can't",
# "isn't" a word "don", "ca", "isn": the contracted part is a function word, so it goes ("'s"
# and "'t" alone give "s" and "t", stop words). Only after a letter, so a quoted name ('m')
# is left alone.
_CONTRACTION = re.compile(r"(?<=[A-Za-z])['’](?:m|ve|ll|re|d)\b|\b[A-Za-z]+n['’]t\b", re.IGNORECASE)


def split_words(text: str) -> list[str]:
    """Lowercase words of ``text``, splitting identifiers as well as prose.

    ``getUserName``, ``get_user_name``, ``get-user-name`` and ``get.user.name`` all give
    ``["get", "user", "name"]``; "I'm" gives ``["i"]`` and "don't" nothing (contractions).
    Text that is not ASCII is folded first (``café`` -> ``cafe``, ``ＡＰＩ`` -> ``API``), and a
    run of a script written without spaces gives its character bigrams, then its characters.
    Other non-ASCII words are kept whole, case-folded.
    """
    if not text.isascii():
        text = fold(text)
    if "'" in text or "’" in text:
        text = _CONTRACTION.sub(" ", text)
    if text.isascii():  # the common case: one regex pass over the whole text
        words = _CAMEL.findall(text)
        return "\0".join(words).lower().split("\0") if words else []
    out: list[str] = []
    for run, unspaced in runs(text):
        if unspaced:
            out += grams(run)
        elif run.isascii() and not run.islower():
            out.extend(part.lower() for part in _CAMEL.findall(run))
        else:
            out.append(run.casefold())
    return out


def snowball_english() -> Callable[[list[str]], list[str]]:
    """The Snowball English (Porter 2) stemmer over a list of words (PyStemmer, C speed)."""
    stemmer = Stemmer.Stemmer("english", 50_000)
    stem_words: Callable[[list[str]], list[str]] = stemmer.stemWords
    return stem_words


class Analyzer:
    """Text -> index terms: split words, drop stop words, expand abbreviations, stem.

    ``stem`` maps a list of words to their stems (``None``: no stemming). Stems are memoised
    per word, so the analyzer costs one dict lookup per word once the vocabulary is warm, and
    equal terms share one string object in memory. The memo stops growing at ``max_memo``
    words, so a long-running server fed endless novel query words (ids, hashes) stays bounded.
    """

    def __init__(
        self,
        stem: Callable[[list[str]], list[str]] | None = None,
        stop_words: frozenset[str] = STOP_WORDS,
        max_memo: int = 500_000,
    ) -> None:
        self._stem = stem
        self._stop = stop_words
        self._max = max_memo
        self._memo: dict[str, str] = {}

    def terms(self, text: str) -> list[str]:
        words = split_words(text)
        memo = self._memo
        try:
            return list(filter(None, map(memo.__getitem__, words)))
        except KeyError:
            fresh = self._analyze({w for w in words if w not in memo})
            if len(memo) + len(fresh) <= self._max:
                memo.update(fresh)
            return [t for w in words if (t := memo.get(w) or fresh.get(w, ""))]

    def _analyze(self, words: Iterable[str]) -> dict[str, str]:
        """Word -> term ("" for a stop word)."""
        out = dict.fromkeys(self._stop.intersection(words), "")
        content = sorted(w for w in words if w not in out)
        full = [ABBREVIATIONS.get(w, w) for w in content]
        stems = self._stem(full) if self._stem else full
        out.update(zip(content, map(sys.intern, stems), strict=True))
        return out


def default_analyzer() -> Analyzer:
    return Analyzer(snowball_english())


# Courtesy and framing phrases of a request that are not about what is requested: the "like"
# of "I would like to", "thank you", and the words a person frames a wish with ("I'm
# interested in", "looking for", "curious", "wondering", "planning / trying / hoping / going
# to"). Removed from queries before analysis so that "I would like to know the weather" does
# not look for tools about likes, nor "I'm interested in a music event" for compound interest.
# Only in those phrases: "interest rate", "look up" and "plan a trip" keep their words.
_COURTESY = re.compile(
    r"(?<=\bwould )like\b|(?<=['’]d )like\b|\bthank(?:s|\s+you)\b"
    r"|\binterested(?=\s+in\b)|\blooking(?=\s+(?:for|to)\b)|\bcurious\b|\bwondering\b"
    r"|\b(?:planning|trying|going|hoping)(?=\s+to\b)",
    re.IGNORECASE,
)


_COURTESY_WORDS = (
    "like", "thank", "interest", "looking", "curious", "wondering", "planning", "trying",
    "going", "hoping",
)  # fmt: skip
"""A word each phrase of ``_COURTESY`` has: a request without any is not scanned (a dozen
substring tests cost a third of the scan, most requests have none)."""


def strip_courtesies(query: str) -> str:
    """``query`` without courtesy and framing phrases ("would like", "thank you", "interested
    in", "looking for"); other words untouched."""
    lower = query.lower()
    if not any(word in lower for word in _COURTESY_WORDS):
        return query
    return _COURTESY.sub(" ", query)


# The values a request gives rather than what it asks for: quoted literals ("reverse the string
# 'Hello, World!'", "the 'Asia/Tokyo' timezone") and numbers with what is written on them
# ("$200", "2020-12-25", "25th", "40.7128"). Left out of the text the semantic leg embeds: an
# averaged vector of "Hello, World" or of a date points at tools about greetings or calendars.
_VALUES = re.compile(
    r"""(?<!\w)(?:'[^'\n]{1,80}?'|"[^"\n]{1,80}?"|‘[^’\n]{1,80}?’|“[^”\n]{1,80}?”)(?!\w)"""
    r"|\b\d[\d.,:/-]*\w*"
)
_LETTER = re.compile(r"[^\W\d_]")


def without_values(text: str) -> str:
    """``text`` without its quoted literals and numbers (``_VALUES``); ``text`` itself when
    nothing with a letter would be left (a request that is only a value is about it)."""
    left = _VALUES.sub(" ", text)
    return left if _LETTER.search(left) else text


# What kind of value a request gives, when it has one of a kind a parameter is named for: a
# date ("2024-12-25", "12/25/2024", "March 3rd", "3 March"), a time of day ("15:30", "3 pm"),
# an e-mail address, a URL. A request that gives a date asks for a tool that takes one,
# whether or not it says "date".
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_VALUE_KINDS = (
    (
        "date",
        re.compile(
            rf"\b\d{{4}}-\d{{1,2}}-\d{{1,2}}\b|\b\d{{1,2}}/\d{{1,2}}/\d{{2,4}}\b"
            rf"|\b{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b"
            rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b",
            re.IGNORECASE,
        ),
    ),
    ("time", re.compile(r"\b(?:[01]?\d|2[0-3]):[0-5]\d\b|\b\d{1,2}\s*[ap]\.?m\b", re.IGNORECASE)),
    ("email", re.compile(r"\b[\w.+-]+@[\w-]+\.[\w.]+\b")),
    ("url", re.compile(r"\bhttps?://\S+", re.IGNORECASE)),
)


def value_kinds(text: str) -> list[str]:
    """The kinds of value ``text`` gives (``date``, ``time``, ``email``, ``url``), in that
    order; a text without a digit, an ``@`` or a ``://`` has none (no scan)."""
    if not any(c.isdigit() for c in text) and "@" not in text and "://" not in text:
        return []
    return [kind for kind, pattern in _VALUE_KINDS if pattern.search(text)]


# Where one request turns into the next: sentence ends (closing quotes and brackets may follow
# the stop), semicolons and line breaks, and sequencing connectives ("then", "also",
# "additionally", "after that", "in addition", "first,", "next,", ...) when they open a clause
# (at a sentence start, after a comma or after "and"). A bare "and" is not a boundary: "search
# and replace" is one intent. Dots inside identifiers ("mail.send") and decimals are not
# sentence ends because a sentence end must be followed by white space or the end. Ordinals
# and "next" count only when a comma follows ("Next, ..."), so "next week" stays a phrase.
# The full stops of Chinese and Japanese (。！？；) end a sentence with no space after them.
_CONNECTIVE = (
    r"(?:and\s+)?(?:then|also|additionally|afterwards?|after\s+that|finally|furthermore|"
    r"moreover|lastly|plus|as\s+well\s+as|in\s+addition|besides|subsequently|"
    r"(?:first|second|third|next)(?:ly)?(?=\s*,))\b"
)
# A full stop after a title or an initial ("Mr. X", "Dr. Smith", "Washington, D.C. in
# miles", "e.g. a file") ends no sentence.
_NOT_AN_END = (
    "".join(rf"(?<!\b{a})" for a in ("mr", "mrs", "ms", "dr", "st", "jr", "sr", "vs", "no", "prof"))
    + r"(?<!\.[a-z])"
)
_CLAUSE_BREAK = re.compile(
    rf"(?:(?:[!?;]|{_NOT_AN_END}\.)[.!?;]*[\"'’”)\]]*(?:\s+|$)|[。！？；]+[」』”）]*\s*|\n+|^\s*)(?:{_CONNECTIVE})?"
    rf"|(?:,|\band\b)\s*{_CONNECTIVE}|\bas\s+well\s+as\b",
    re.IGNORECASE,
)


def split_clauses(query: str) -> list[str]:
    """The clauses of a request that may ask for several things, in order; empty parts dropped.

    ``"find X, then Y; also Z"`` -> ``["find X", "Y", "Z"]``.
    """
    return [part.strip(" ,") for part in _CLAUSE_BREAK.split(query) if part.strip(" ,")]
