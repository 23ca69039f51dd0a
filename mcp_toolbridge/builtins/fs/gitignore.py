"""A focused .gitignore matcher: what glob and grep need, written from the gitignore(5) rules,
as a layer over the policy's path-glob translator (:func:`~mcp_toolbridge.policy.glob_pattern`).

Supported: blank lines and ``#`` comments, ``\\#`` / ``\\!`` / ``\\ `` escapes, trailing spaces
trimmed, ``!`` negation (the last matching line of a file wins), a trailing ``/`` for
directories only, a ``/`` at the start or in the middle anchoring the pattern to the folder of
its .gitignore (otherwise it matches a name at any depth below it), ``*``, ``?``, ``[...]``,
leading ``**/``, trailing ``/**`` and ``/**/``.

Precedence as in git: a deeper .gitignore beats a shallower one, and every .gitignore beats
``.git/info/exclude``. A file inside an ignored folder is ignored (the walkers never descend
into one), so a negation cannot bring it back, as in git.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mcp_toolbridge.policy import glob_pattern

MAX_IGNORE_FILE_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class IgnoreRule:
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool


@dataclass(frozen=True, slots=True)
class IgnoreFile:
    """The rules of one ignore file; ``base`` is its folder relative to the walk root ("" at
    the root), POSIX."""

    base: str
    rules: tuple[IgnoreRule, ...]

    def decide(self, rel: str, is_dir: bool) -> bool | None:
        """True ignored, False re-included, None when no rule of this file matches."""
        if self.base:
            if not rel.startswith(self.base + "/"):
                return None
            rel = rel[len(self.base) + 1 :]
        for rule in reversed(self.rules):
            if rule.dir_only and not is_dir:
                continue
            if rule.regex.match(rel):
                return not rule.negate
        return None


def parse(text: str, base: str = "") -> IgnoreFile:
    rules: list[IgnoreRule] = []
    for raw in text.splitlines():
        rule = _parse_line(raw)
        if rule is not None:
            rules.append(rule)
    return IgnoreFile(base, tuple(rules))


def load(path: Path, base: str) -> IgnoreFile | None:
    """The ignore file at ``path`` (a regular file, not followed through a symlink)."""
    try:
        if path.is_symlink() or not path.is_file():
            return None
        with path.open("rb") as handle:
            data = handle.read(MAX_IGNORE_FILE_BYTES)
    except OSError:
        return None
    return parse(data.decode("utf-8", "replace"), base)


def _parse_line(raw: str) -> IgnoreRule | None:
    line = raw.rstrip("\r")
    if not line or line.startswith("#"):
        return None
    line = _trim_trailing_spaces(line)
    if not line:
        return None
    negate = line.startswith("!")
    if negate:
        line = line[1:]
    elif line.startswith(("\\!", "\\#")):
        line = line[1:]
    dir_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    if "/" not in line:
        line = "**/" + line  # a name matches at any depth
    body = glob_pattern(
        line.lstrip("/"), tail_matches_dir=False, backslash_escapes=True, caret_negates=True
    )
    return IgnoreRule(re.compile(body + r"\Z", re.DOTALL), negate, dir_only)


def _trim_trailing_spaces(line: str) -> str:
    end = len(line)
    while end > 0 and line[end - 1] == " " and not (end > 1 and line[end - 2] == "\\"):
        end -= 1
    return line[:end]


class IgnoreStack:
    """The ignore files that apply in one folder, lowest precedence first."""

    def __init__(self, files: Sequence[IgnoreFile] = ()) -> None:
        self.files = tuple(files)

    def pushed(self, file: IgnoreFile | None) -> IgnoreStack:
        return self if file is None else IgnoreStack((*self.files, file))

    def ignored(self, rel: str, is_dir: bool) -> bool:
        for file in reversed(self.files):
            decision = file.decide(rel, is_dir)
            if decision is not None:
                return decision
        return False
