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

import json
import os
import re
import stat
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mcp_toolbridge.errors import ConfigError, ErrorCode, SecretError

ENV_PREFIX = "TOOLBRIDGE_SECRET_"
_NOT_ALNUM = re.compile(r"[^A-Z0-9]+")


def secret_env_name(secret_id: str) -> str:
    """The id upper-cased, every run of characters outside [A-Z0-9] replaced by ``_``."""
    return _NOT_ALNUM.sub("_", secret_id.upper())


MIN_LINE_CHARS = 8
"""A line of a secret of several lines this long or longer is redacted on its own too."""
_MARKER = re.compile(r"\[redacted:[^\]\n]*\]")


def secret_forms(value: str) -> set[str]:
    """The texts a secret value is written as: the value; JSON-escaped, with non-ASCII kept
    and as ``\\uXXXX`` (a tool that logs JSON, an error object quoted whole); and, for a value
    of several lines (a private key, a service account's JSON), each line of at least
    :data:`MIN_LINE_CHARS` characters, since a tool's log lines are sent one by one."""
    forms = {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
    lines = value.splitlines()
    if len(lines) > 1:
        forms.update(line.strip() for line in lines if len(line.strip()) >= MIN_LINE_CHARS)
    return {form for form in forms if form}


def redact(text: str, secrets: Mapping[str, str]) -> str:
    """Replace every occurrence of each non-empty secret value, in each of its
    :func:`secret_forms`, with ``[redacted:<id>]``.

    Longer texts are matched first, in one pass, so a value that contains another is
    redacted whole and a replacement marker is never redacted again.
    """
    by_form: dict[str, str] = {}
    for secret_id, value in secrets.items():
        if value:
            for form in secret_forms(value):
                by_form.setdefault(form, secret_id)
    if not by_form or not text:
        return text
    ordered = sorted(by_form, key=len, reverse=True)
    pattern = re.compile("|".join(re.escape(form) for form in ordered))
    return pattern.sub(lambda match: f"[redacted:{by_form[match.group(0)]}]", text)


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
