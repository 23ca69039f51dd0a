"""Finding and redacting secrets nobody declared, in text and in JSON-like values.

:class:`SecretScan` is built from the policy's ``[secret_scan]`` table. It finds secrets with
the engine (engine.py), drops the findings the allow-list matches, and replaces each remaining
secret, wherever it occurs, with ``[REDACTED:<rule-id>]``: the rest of the text is kept. What
it reports is a count per rule id, never a value or a digest of one.

A JSON-like value (structured content, a tool's failure details) is scanned once, as its JSON
text, so that a rule sees the key beside the value (``"aws_secret_access_key": "..."``); each
secret found is then replaced inside the strings (keys included) it came from, so every string
stays a string and the shape stays what it was.

Texts longer than :data:`INLINE_CHARS` are scanned in a worker thread (the engine releases the
GIL), shorter ones on the event loop, where a thread's round trip would cost more than the scan.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from mcp_toolbridge.leaks.engine import Engine, Found
from mcp_toolbridge.leaks.markers import marker
from mcp_toolbridge.leaks.settings import AllowEntry, SecretScanSettings

log = logging.getLogger("mcp_toolbridge")
INLINE_CHARS = 16_384
"""Up to this many characters are scanned on the event loop (about 0.3 ms at worst)."""
SHORT_VALUE_CHARS = 12
"""A secret shorter than this is replaced only where it stands as a whole word (a short
password found in one URL must not eat the same letters elsewhere)."""
MEMO_SIZE = 256
_T = TypeVar("_T")


def summary(counts: Mapping[str, int]) -> str:
    """``github-pat ×2, private-key ×1``: rule ids and counts, for logs and messages."""
    return ", ".join(f"{rule} ×{n}" for rule, n in sorted(counts.items()))


@dataclass(frozen=True, slots=True)
class _Allow:
    tool: str | None
    rule: str | None
    pattern: re.Pattern[str] | None

    @classmethod
    def of(cls, entry: AllowEntry) -> _Allow:
        pattern = re.compile(entry.pattern) if entry.pattern is not None else None
        return cls(entry.tool, entry.rule, pattern)

    def matches(self, tool: str, found: Found) -> bool:
        return (
            (self.tool is None or fnmatchcase(tool, self.tool))
            and (self.rule is None or fnmatchcase(found.rule, self.rule))
            and (self.pattern is None or self.pattern.search(found.value) is not None)
        )


@dataclass(frozen=True, slots=True)
class _Swap:
    """Replace ``needle`` by the marker of ``rule``."""

    needle: str
    rule: str
    word: re.Pattern[str] | None

    @classmethod
    def of(cls, needle: str, rule: str) -> _Swap:
        word = None
        if len(needle) < SHORT_VALUE_CHARS:
            word = re.compile(rf"(?<![A-Za-z0-9]){re.escape(needle)}(?![A-Za-z0-9])")
        return cls(needle, rule, word)

    def apply(self, text: str, counts: Counter[str]) -> str:
        if self.needle not in text:
            return text
        if self.word is not None:
            text, n = self.word.subn(marker(self.rule), text)
        else:
            n = text.count(self.needle)
            text = text.replace(self.needle, marker(self.rule))
        if n:
            counts[self.rule] += n
        return text


def _swaps(found: Iterable[Found], *, json_text: bool) -> list[_Swap]:
    """What to replace, longest first (a secret inside a longer one goes with it). Found in
    JSON text, a value may hold escapes (``\\n`` in a PEM block): its decoded form is replaced
    in the strings too."""
    needles: dict[str, str] = {}
    for item in found:
        needles.setdefault(item.value, item.rule)
        if json_text and "\\" in item.value:
            try:
                decoded = json.loads(f'"{item.value}"')
            except ValueError:
                continue
            if isinstance(decoded, str) and decoded:
                needles.setdefault(decoded, item.rule)
    ordered = sorted(needles.items(), key=lambda pair: len(pair[0]), reverse=True)
    return [_Swap.of(needle, rule) for needle, rule in ordered]


def _walk(value: Any, swaps: list[_Swap], counts: Counter[str]) -> Any:
    if isinstance(value, str):
        for swap in swaps:
            value = swap.apply(value, counts)
        return value
    if isinstance(value, Mapping):
        return {_walk(k, swaps, counts): _walk(v, swaps, counts) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_walk(item, swaps, counts) for item in value]
    return value


_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)


def _json(value: Any) -> str:
    return _ENCODER.encode(value)


def scanned_text(value: Any) -> str | None:
    """The text a scan of ``value`` reads: a string itself, a JSON-like value its JSON text;
    None for anything else (a number, None: not scanned)."""
    if isinstance(value, str):
        return value
    if type(value) is dict or isinstance(value, Mapping | list | tuple):  # the ABC check last
        return _json(value)
    return None


class SecretScan:
    """The scan of one policy (see the module doc)."""

    def __init__(self, settings: SecretScanSettings, engine: Engine | None = None) -> None:
        self.settings = settings
        self.enabled = settings.mode == "on"
        if engine is None and self.enabled:
            engine = Engine(settings.disabled())
        self._engine = engine
        self._allow = tuple(_Allow.of(entry) for entry in settings.allow)
        self._memo: OrderedDict[bytes, Counter[str]] = OrderedDict()
        self._loaded = engine is None
        self._loading: anyio.Lock | None = None

    def warm(self) -> None:
        """Load the engine now (blocks for ~0.1 s: call it from a worker thread)."""
        if self._engine is not None:
            self._engine.warm()
        self._loaded = True

    async def loaded(self) -> None:
        """Return once the engine is loaded, loading it in a worker thread the first time (one
        load however many calls wait for it). A server starts it once it has answered its
        first tools/list (``Runtime.warm_up``); a call that comes first waits here."""
        if self._loaded:
            return
        if self._loading is None:
            self._loading = anyio.Lock()
        async with self._loading:
            if not self._loaded:  # a waiter cancelled (a server stopping) does not wait on
                await anyio.to_thread.run_sync(self.warm, abandon_on_cancel=True)

    def findings(self, text: str, tool: str) -> list[Found]:
        """The secrets in ``text`` that the allow-list does not let through for ``tool``."""
        if self._engine is None or not text:
            return []
        found = self._engine.scan(text)
        if self._allow:
            found = [f for f in found if not any(a.matches(tool, f) for a in self._allow)]
        return found

    def redact_text(self, text: str, tool: str) -> tuple[str, Counter[str]]:
        """``text`` with every secret replaced by its marker, and the count per rule."""
        counts: Counter[str] = Counter()
        found = self.findings(text, tool)
        for swap in _swaps(found, json_text=False):
            text = swap.apply(text, counts)
        return text, counts

    def redact_value(self, value: Any, tool: str) -> tuple[Any, Counter[str]]:
        """A JSON-like ``value`` with every secret replaced inside its strings (keys
        included), and the count per rule; ``value`` itself when there is none."""
        if isinstance(value, str):
            return self.redact_text(value, tool)
        counts: Counter[str] = Counter()
        if not isinstance(value, Mapping | list | tuple):
            return value, counts
        found = self.findings(_json(value), tool)
        if not found:
            return value, counts
        return _walk(value, _swaps(found, json_text=True), counts), counts

    def redact_values(self, values: list[Any], tool: str) -> list[tuple[Any, Counter[str]]]:
        """:meth:`redact_value` of each of ``values`` (JSON-like, not strings), found in one
        scan of them together (one call of the engine): each secret found is replaced
        wherever it occurs in any of them, each counted where it was replaced."""
        found = self.findings(_json(values), tool)
        if not found:
            return [(value, Counter()) for value in values]
        swaps = _swaps(found, json_text=True)
        done = []
        for value in values:
            counts: Counter[str] = Counter()
            done.append((_walk(value, swaps, counts), counts))
        return done

    async def may_find(self, texts: Iterable[str]) -> bool:
        """False only when no scan of any of ``texts`` could find a secret, told in one pass
        of the engine's prefilter, without calling it (engine.py)."""
        if self._engine is None:
            return False
        await self.loaded()
        return self._engine.may_find(texts)

    def in_arguments(self, arguments: Mapping[str, Any], tool: str) -> Counter[str]:
        """The secrets a call's arguments carry, per rule."""
        return Counter(f.rule for f in self.findings(_json(arguments), tool))

    async def off_loop(self, size: int, work: Callable[[], _T]) -> _T:
        """``work()``, in a worker thread when it scans more than :data:`INLINE_CHARS`."""
        if size <= INLINE_CHARS:
            return work()
        return await anyio.to_thread.run_sync(work)

    async def text(self, text: str, tool: str) -> tuple[str, Counter[str]]:
        await self.loaded()
        return await self.off_loop(len(text), lambda: self.redact_text(text, tool))

    async def value(self, value: Any, tool: str, size: int) -> tuple[Any, Counter[str]]:
        await self.loaded()
        return await self.off_loop(size, lambda: self.redact_value(value, tool))

    async def values(
        self, values: list[Any], tool: str, size: int
    ) -> list[tuple[Any, Counter[str]]]:
        """:meth:`redact_values`, off the loop when long."""
        await self.loaded()
        return await self.off_loop(size, lambda: self.redact_values(values, tool))

    async def arguments(self, arguments: Mapping[str, Any], tool: str) -> Counter[str]:
        """:meth:`in_arguments`, remembered for the same tool and arguments (the gate and the
        audit line ask about the same call), off the loop when they are long."""
        if self._engine is None:
            return Counter()
        text = _json(arguments)
        key = hashlib.blake2b(f"{tool}\0{text}".encode(errors="replace"), digest_size=16).digest()
        counts = self._memo.get(key)
        if counts is not None:
            self._memo.move_to_end(key)
            return counts
        await self.loaded()
        counts = await self.off_loop(
            len(text), lambda: Counter(f.rule for f in self.findings(text, tool))
        )
        if counts:
            log.info("secret scan: the arguments of %s carry %s", tool, summary(counts))
        self._memo[key] = counts
        while len(self._memo) > MEMO_SIZE:
            self._memo.popitem(last=False)
        return counts


OFF = SecretScan(SecretScanSettings(mode="off"))
"""A scan that finds nothing (``mode = "off"``, and where no policy applies)."""
