"""A focused .gitignore matcher: what glob and grep need, written from the gitignore(5) rules.

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
    anchored = "/" in line
    line = line.lstrip("/")
    body = _translate(line)
    prefix = "" if anchored or line.startswith("**/") else "(?:.*/)?"
    return IgnoreRule(re.compile(prefix + body + r"\Z", re.DOTALL), negate, dir_only)


def _trim_trailing_spaces(line: str) -> str:
    end = len(line)
    while end > 0 and line[end - 1] == " " and not (end > 1 and line[end - 2] == "\\"):
        end -= 1
    return line[:end]


def _translate(pattern: str) -> str:
    parts = pattern.split("/")
    out: list[str] = []
    for index, part in enumerate(parts):
        first, last = index == 0, index == len(parts) - 1
        if part == "**":
            if last:
                out.append(".*" if first else "/.*")
            elif first:
                out.append("(?:.*/)?")
            else:
                out.append("/(?:.*/)?")
            continue
        if not first and not (index > 0 and parts[index - 1] == "**"):
            out.append("/")
        out.append(_component(part))
    return "".join(out)


def _component(part: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(part):
        ch = part[i]
        if ch == "\\" and i + 1 < len(part):
            out.append(re.escape(part[i + 1]))
            i += 2
            continue
        if ch == "*":
            while i + 1 < len(part) and part[i + 1] == "*":
                i += 1
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = part.find("]", i + 2 if part[i + 1 : i + 2] in ("!", "^", "]") else i + 1)
            if end == -1:
                out.append(re.escape(ch))
            else:
                body = part[i + 1 : end]
                negate = body[:1] in ("!", "^")
                body = body[1:] if negate else body
                escaped = "".join("\\" + c if c in "\\[&~|^" else c for c in body)
                out.append(f"[{'^/' if negate else ''}{escaped}]")
                i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


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
