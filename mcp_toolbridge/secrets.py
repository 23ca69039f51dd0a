"""Secret values: where they come from, how tools receive them, and how they are kept out of text.

Sources, in order of precedence (the first that has a non-empty value wins):

1. **Environment.** Secret ``ID`` is read from ``TOOLBRIDGE_SECRET_<NORM>``, where ``NORM`` is
   :func:`secret_env_name` of the id: the id upper-cased, with every run of characters outside
   ``[A-Z0-9]`` replaced by one ``_``. ``runloop/mail/smtp_api_key`` is read from
   ``TOOLBRIDGE_SECRET_RUNLOOP_MAIL_SMTP_API_KEY``; ``mail.smtp.key`` from
   ``TOOLBRIDGE_SECRET_MAIL_SMTP_KEY``. The environment wins so that one secret can be overridden
   for a single run without editing the file.
2. **Secrets file** (``--secrets FILE``), TOML. Both layouts are accepted, and may be mixed::

       "runloop/mail/smtp_api_key" = "..."   # top-level pairs

       [secrets]                              # or a [secrets] table
       "mail.smtp.key" = "..."

   Every value must be a string. Ids holding dots or slashes must be quoted (TOML reads a bare
   ``mail.smtp.key`` as nested tables). The file must not be readable or writable by group or
   others (``chmod 600``); otherwise it is refused.

An empty value counts as not set. Error messages name ids, variable names and files, never a
value. Exec tools receive each secret in their environment under :func:`secret_env_name` of its
id (without the ``TOOLBRIDGE_SECRET_`` prefix).
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import stat
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

from mcp_toolbridge.errors import ConfigError, ErrorCode, SecretError

ENV_PREFIX = "TOOLBRIDGE_SECRET_"
_NOT_ALNUM = re.compile(r"[^A-Z0-9]+")


def secret_env_name(secret_id: str) -> str:
    """The id upper-cased, every run of characters outside [A-Z0-9] replaced by ``_``."""
    return _NOT_ALNUM.sub("_", secret_id.upper())


FIXED_ENV_NAMES = ("PATH", "HOME")
"""What every child gets from the server (executors/exec_tool.py): no secret may set them."""
SERVER_ENV_PREFIXES = ("TOOLBRIDGE_", "MCP_TOOLBRIDGE_")
"""The server's own variables: its bearer token, console and state keys, every secret
(``TOOLBRIDGE_SECRET_*``), its settings. None reaches a tool by its manifest: a secret reaches
only the tools that declare it (found by the red-team pass of 2026-11-29, 4th:
``envPassthrough: ["TOOLBRIDGE_TOKEN"]`` handed the tool the token)."""


def secret_env_clash(secret_id: str) -> str | None:
    """Why a tool may not declare ``secret_id`` (a secret reaches a tool in the variable
    :func:`secret_env_name` names, after PATH and HOME), or None: ``path`` would replace the
    tool's PATH with the secret's value, ``home`` its HOME, ``toolbridge_x`` a variable of the
    server's own."""
    name = secret_env_name(secret_id)
    if name in FIXED_ENV_NAMES:
        return (
            f"the secret {secret_id!r} would reach the tool as {name}, replacing the {name} "
            f"every tool gets from the server; give it another id"
        )
    if name.startswith(SERVER_ENV_PREFIXES):
        return (
            f"the secret {secret_id!r} would reach the tool as {name}, a name of the server's "
            "own variables; give it another id"
        )
    return None


MIN_LINE_CHARS = 8
"""A line of a secret of several lines this long or longer is redacted on its own too."""
MIN_ENCODED_CHARS = 8
"""A value this long or longer is redacted encoded too (base64, hex, reversed), and an
encoded form only this long or longer: shorter ones would redact ordinary text."""
BASE64_LINE_CHARS = 76
"""``base64`` (coreutils) and MIME wrap their output at this width."""
_B64_LINE = r"(?:[A-Za-z0-9+/_-]|\[redacted:[^\]\n]*\]){40,}"
_WRAPPED = re.compile(rf"(?m)^{_B64_LINE}\r?\n(?:{_B64_LINE}\r?\n)*{_B64_LINE[:-5]}+={{0,2}}$")
"""Two or more lines of base64 (40 characters or more but the last; a marker counts as one)."""
_BLOCK_START = r"(?m)^[A-Za-z0-9+/_-]{40,}\r?\n[A-Za-z0-9+/_-]"
_LEAD = re.compile(r"[A-Za-z0-9+/_-]{8,}")
_TRAIL = re.compile(r"[A-Za-z0-9+/_-]{8,}$")
_MARKER = re.compile(r"\[redacted:[^\]\n]*\]")


def secret_forms(value: str) -> set[str]:
    """The texts a secret value is written as: the value; JSON-escaped, with non-ASCII kept
    and as ``\\uXXXX`` (a tool that logs JSON, an error object quoted whole); for a value
    of several lines (a private key, a service account's JSON), each line of at least
    :data:`MIN_LINE_CHARS` characters, since a tool's log lines are sent one by one;
    :func:`percent_forms`; and, for a value of at least :data:`MIN_ENCODED_CHARS`
    characters, :func:`encoded_forms`."""
    forms = _escaped(value)
    lines = value.splitlines()
    if len(lines) > 1:
        forms.update(line.strip() for line in lines if len(line.strip()) >= MIN_LINE_CHARS)
    forms.update(percent_forms(value))
    if len(value) >= MIN_ENCODED_CHARS:
        forms.update(encoded_forms(value))
    return {form for form in forms if form}


def _escaped(text: str) -> set[str]:
    """``text``, and JSON-escaped with non-ASCII kept and as ``\\uXXXX``."""
    return {text, json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1]}


def encoded_forms(value: str) -> set[str]:
    """The value as a tool prints it encoded: base64 (standard and URL-safe) at each of the
    three byte alignments, so it is found inside a longer encoded text (only the characters
    its own bytes decide), and whole with its padding, and in the 76-character lines
    ``base64`` wraps it in; hex (lower- and upper-case); and reversed (``rev``), as written and
    JSON-escaped."""
    data = value.encode("utf-8")
    whole = base64.b64encode(data).decode("ascii")
    encoded = {whole}
    if len(whole) > BASE64_LINE_CHARS:
        step = BASE64_LINE_CHARS
        encoded.update(whole[i : i + step] for i in range(0, len(whole), step))
    encoded |= {form.replace("+", "-").replace("/", "_") for form in encoded}
    forms = encoded | _cores(data) | {data.hex().upper()} | _escaped(value[::-1])
    return {form for form in forms if len(form) >= MIN_ENCODED_CHARS}


def _cores(data: bytes) -> set[str]:
    """The encodings of ``data`` a longer encoded text holds whatever surrounds it: base64's
    characters its bytes alone decide, at each alignment, standard and URL-safe; hex."""
    cores = {data.hex()}
    for skip in range(3):
        aligned = base64.b64encode(bytes(skip) + data).decode("ascii")
        first = -(-8 * skip // 6)  # the first character no byte before the value decides
        last = (8 * (skip + len(data))) // 6  # the characters the value's bytes alone decide
        cores.add(aligned[first:last])
        cores.add(aligned[first:last].replace("+", "-").replace("/", "_"))
    return cores


def percent_forms(value: str) -> set[str]:
    """The value percent-encoded as a URL's query or path carries it: every reserved character,
    ``/`` kept, ``+`` for a space: those that differ from the value and escape a character,
    or are :data:`MIN_ENCODED_CHARS` long (``a+b`` for a short ``a b`` would redact noise)."""
    forms = {quote(value, safe=""), quote(value), quote_plus(value, safe="")}
    return {form for form in forms - {value} if "%" in form or len(form) >= MIN_ENCODED_CHARS}


def redact(text: str, secrets: Mapping[str, str]) -> str:
    """Replace every occurrence of each non-empty secret value, in each of its
    :func:`secret_forms`, with ``[redacted:<id>]``.

    Longer texts are matched first, in one pass, so a value that contains another is
    redacted whole and a replacement marker is never redacted again.
    """
    if not text or not secrets:
        return text
    matcher = _matcher(tuple(sorted((k, v) for k, v in secrets.items() if v)))
    if matcher is None or matcher.gate.search(text) is None:
        return text
    by_form = matcher.ids
    return _sub(matcher.pattern, lambda match: f"[redacted:{by_form[match.group(0)]}]", text)


def redact_line(line: str, secrets: Mapping[str, str]) -> str:
    """:func:`redact`, for one line of a tool's live log: also the start or end of a value
    that an encoder's wrap (``base64`` at 76 columns, ``xxd -p`` at 60) left at the line's end
    or carried to the next line's start, :data:`MIN_ENCODED_CHARS` characters or more (the
    lines are sent one by one, so neither holds the value whole)."""
    line = redact(line, secrets)
    key = tuple(sorted((k, v) for k, v in secrets.items() if len(v) >= MIN_ENCODED_CHARS))
    if not key or len(line) < MIN_ENCODED_CHARS:
        return line
    starts, ends, longest = _pieces(key)
    lead = _LEAD.match(line[:longest])  # no piece is longer: each search is bounded
    if lead is not None:
        run = lead.group(0)
        for k in range(len(run), MIN_ENCODED_CHARS - 1, -1):
            if run[:k] in starts:
                line = f"[redacted:{starts[run[:k]]}]{line[k:]}"
                break
    trail = _TRAIL.search(line[-longest:])
    if trail is not None:
        run = trail.group(0)
        for k in range(len(run), MIN_ENCODED_CHARS - 1, -1):
            if run[-k:] in ends:
                line = f"{line[: len(line) - k]}[redacted:{ends[run[-k:]]}]"
                break
    return line


@functools.lru_cache(maxsize=128)
def _pieces(
    secrets: tuple[tuple[str, str], ...],
) -> tuple[dict[str, str], dict[str, str], int]:
    """(each end of an encoded value that can start a line, each start that can end one, of
    at least :data:`MIN_ENCODED_CHARS` characters, with the id of each; the longest)."""
    starts: dict[str, str] = {}
    ends: dict[str, str] = {}
    for secret_id, value in secrets:
        for core in _cores(value.encode("utf-8")):
            for k in range(MIN_ENCODED_CHARS, len(core)):
                starts.setdefault(core[-k:], secret_id)
                ends.setdefault(core[:k], secret_id)
    return starts, ends, max(map(len, starts), default=0)


def replace_forms(text: str, values: Iterable[str], replacement: str) -> str:
    """``text`` with each of the :func:`secret_forms` of ``values`` replaced by
    ``replacement`` (the audit line's ``***``), in one pass as :func:`redact`."""
    matcher = _matcher(tuple(sorted((value, value) for value in set(values) if value)))
    if matcher is None or not text or matcher.gate.search(text) is None:
        return text
    return _sub(matcher.pattern, lambda _: replacement, text)


def _sub(pattern: re.Pattern[str], marker: Callable[[re.Match[str]], str], text: str) -> str:
    """``pattern.sub(marker, text)``, then each block of base64 lines left (``base64`` wraps
    at 76 columns, PEM at 64) searched joined: a value the wrap cut in two is found, and its
    block is given back as one line."""

    def joined(block: re.Match[str]) -> str:
        whole = block.group(0)
        flat = whole.replace("\r", "").replace("\n", "")
        if pattern.search(flat) is None:
            return whole
        return pattern.sub(marker, flat) + ("\n" if whole.endswith("\n") else "")

    text = pattern.sub(marker, text)
    return _WRAPPED.sub(joined, text) if "\n" in text else text


@dataclass(frozen=True, slots=True)
class _Matcher:
    gate: Any
    """RE2: any form, or the start of a block of base64 lines; one linear pass, and the only
    one over a text that holds neither (the common path)."""
    pattern: re.Pattern[str]
    """Every form, longest first (Python's ``re``: the replacement needs its leftmost-longest
    order and a function per match)."""
    ids: dict[str, str]
    """The id of each form."""


@functools.lru_cache(maxsize=128)
def _matcher(secrets: tuple[tuple[str, str], ...]) -> _Matcher | None:
    """The forms of every secret of a set, built once per set (a call's; the same set on the
    next call of the tool finds it here)."""
    ids: dict[str, str] = {}
    for secret_id, value in secrets:
        for form in secret_forms(value):
            ids.setdefault(form, secret_id)
    if not ids:
        return None
    import re2  # here, not before a server's first list (what a call needs: 3 ms)

    ordered = sorted(ids, key=len, reverse=True)
    gate = re2.compile("|".join([_BLOCK_START, *(re2.escape(form) for form in ordered)]))
    return _Matcher(gate, re.compile("|".join(re.escape(form) for form in ordered)), ids)


def whole_markers(text: str, start: int, end: int) -> tuple[int, int]:
    """``[start, end)`` widened so that it cuts no ``[redacted:<id>]`` marker of ``text`` in
    two: a redacted text is cut after its secrets were replaced, never before (a cut that
    split a secret would show the part of it no exact match finds)."""
    for match in _MARKER.finditer(text):
        if match.start() < start < match.end():
            start = match.start()
        if match.start() < end < match.end():
            end = match.end()
    return start, end


def redact_value(value: object, secrets: Mapping[str, str]) -> object:
    """:func:`redact` applied to every string (keys included) of a JSON-like structure."""
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, Mapping):
        return {
            (redact(key, secrets) if isinstance(key, str) else key): redact_value(item, secrets)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_value(item, secrets) for item in value]
    return value


def _invalid(path: Path, problem: str) -> ConfigError:
    return ConfigError(f"secrets file {path}: {problem}", code=ErrorCode.SECRETS_INVALID)


def _read_secrets_file(path: Path) -> dict[str, str]:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise _invalid(path, f"cannot open it: {exc.strerror or exc}") from exc
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(handle.fileno()).st_mode
        if not stat.S_ISREG(mode):
            raise _invalid(path, "is not a regular file")
        if mode & 0o077:
            raise _invalid(
                path,
                f"is accessible by group or others (mode {stat.S_IMODE(mode):04o}); "
                f"restrict it with: chmod 600 {path}",
            )
        try:
            document = tomllib.load(handle)
        except tomllib.TOMLDecodeError as exc:
            raise _invalid(path, f"is not valid TOML: {exc}") from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise _invalid(path, f"cannot read it: {exc}") from exc
    values: dict[str, str] = {}
    table = document.pop("secrets", {})
    if not isinstance(table, dict):
        raise _invalid(path, '"secrets" must be a table of "id" = "value" pairs')
    for where, entries in (("", document), ("secrets.", table)):
        for key, value in entries.items():
            if not isinstance(value, str):
                raise _invalid(
                    path,
                    f'{where}"{key}" must be a string; quote secret ids that contain dots, '
                    'e.g. "mail.smtp.key" = "..."',
                )
            if key in values:
                raise _invalid(path, f'secret "{key}" is defined twice')
            values[key] = value
    return values


@dataclass(frozen=True, slots=True)
class SecretResolver:
    """Resolves secret ids from the environment and an optional TOML file (see module doc)."""

    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    """The ``TOOLBRIDGE_SECRET_*`` variables, captured when the resolver was built."""
    file_values: Mapping[str, str] = field(default_factory=dict, repr=False)
    secrets_file: Path | None = None

    @classmethod
    def from_sources(cls, environ: Mapping[str, str], secrets_file: Path | None) -> SecretResolver:
        """Capture the secret variables of ``environ`` and read ``secrets_file``.

        Raises :class:`ConfigError` (``secrets.invalid``) when the file cannot be read, is not
        TOML of string pairs, or is accessible by group or others.
        """
        env = {name: value for name, value in environ.items() if name.startswith(ENV_PREFIX)}
        values = _read_secrets_file(secrets_file) if secrets_file is not None else {}
        return cls(env=env, file_values=values, secrets_file=secrets_file)

    def lookup(self, secret_id: str) -> str | None:
        """The value of one id, or None when no source has a non-empty value."""
        value = self.env.get(ENV_PREFIX + secret_env_name(secret_id)) or self.file_values.get(
            secret_id
        )
        return value or None

    def resolve(self, ids: Sequence[str], *, tool: str = "") -> dict[str, str]:
        """Values for every id, or :class:`SecretError` naming each missing id and where it
        was looked for."""
        resolved: dict[str, str] = {}
        missing: list[str] = []
        for secret_id in ids:
            value = self.lookup(secret_id)
            if value is None:
                missing.append(secret_id)
            else:
                resolved[secret_id] = value
        if missing:
            raise SecretError(self._missing_message(missing), tool=tool)
        return resolved

    def _missing_message(self, missing: Sequence[str]) -> str:
        where = (
            f"the secrets file {self.secrets_file}"
            if self.secrets_file is not None
            else "no secrets file (none given; pass --secrets FILE)"
        )
        names = ", ".join(f'"{secret_id}"' for secret_id in missing)
        variables = ", ".join(ENV_PREFIX + secret_env_name(secret_id) for secret_id in missing)
        if len(missing) == 1:
            return (
                f"secret {names} is not set: looked in environment variable {variables} "
                f"and in {where}"
            )
        return (
            f"secrets {names} are not set: looked in environment variables {variables} "
            f"and in {where}"
        )
