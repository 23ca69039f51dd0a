"""Path canonicalization and component-wise containment, shared by the policy and the fs tools.

Every path a call touches goes through :func:`canonicalize` before it is compared with a
granted scope or a permission pattern:

- NUL, other C0 control characters, DEL and C1 controls are refused (a NUL has been used to
  make one check see ``attacker\\x00.allowed`` while the OS sees ``attacker``);
- a relative path is joined to ``base`` (the workspace), never to the process working directory;
- the whole path goes through ``os.path.realpath``: ``..`` is applied after each symlink is
  resolved, dangling links are followed to where they point, and a missing leaf is placed under
  the real path of its nearest existing ancestor;
- a path that still ends in a symlink after that (a link loop) is refused.

:func:`is_within` compares path components, so ``/srv/app_evil`` is not inside ``/srv/app``.
:func:`glob_regex` turns a path glob (``**`` across directories, ``*`` and ``?`` within one)
into a compiled regular expression over absolute POSIX paths. It is built on the one glob
translator of the package: :func:`glob_pattern` (path globs; .gitignore rules are a layer on
it) over :func:`wildcard_pattern` (``*``, ``?``, ``[...]`` in one piece of text; the rules'
plain-text globs use it directly).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from mcp_toolbridge.errors import ArgumentsError

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
GLOB_CHARS = frozenset("*?[")
PATH_MAX = 4_096
"""The longest path, in bytes, the system looks up (Linux's PATH_MAX, the terminating NUL
included): a longer one is refused before it is resolved, since resolving it component by
component costs time that grows with the square of its length."""


class PathRejectedError(ArgumentsError):
    """A path argument that can never be valid: control characters, empty, a symlink loop."""


def has_control(value: str) -> bool:
    """Whether ``value`` holds a character :func:`check_text` refuses (C0, DEL or C1)."""
    return _CONTROL.search(value) is not None


def check_text(value: str, *, what: str) -> None:
    """Refuse NUL and other control characters in a path, host or command argument."""
    match = _CONTROL.search(value)
    if match is not None:
        code = ord(match.group())
        raise PathRejectedError(
            f"{what} contains the control character U+{code:04X} at offset {match.start()}; "
            "remove it (NUL and control characters are never accepted)"
        )


def canonicalize(path: str, *, base: Path) -> Path:
    """The real, absolute path ``path`` names, resolved against ``base`` when relative.

    Raises :class:`PathRejectedError` for an empty path, control characters or a symlink loop.
    The result contains no symlinks and no ``.``/``..`` components.
    """
    if not path:
        raise PathRejectedError("the path is empty; give a file or directory path")
    check_text(path, what="the path")
    joined = os.path.join(os.fspath(base), path)
    size = len(os.fsencode(joined))
    if size >= PATH_MAX:
        raise PathRejectedError(
            f"the path {joined[:200]!r}... is {size:,} bytes long, and the system looks up "
            f"no path of {PATH_MAX:,} bytes or more; give a shorter path"
        )
    try:
        real = Path(os.path.realpath(joined))
    except OSError as exc:  # a link the server may not read (/proc/1/root as root, EACCES)
        shown = joined if len(joined) <= 200 else f"{joined[:200]}..."
        raise PathRejectedError(f"the path {shown!r} cannot be resolved: {exc.strerror}") from None
    _refuse_loops(real)
    return real


def _refuse_loops(real: Path) -> None:
    """After realpath, an existing symlink left in the result means resolution gave up (loop).
    A path the system cannot look up at all (``ENAMETOOLONG``: a name over 255 bytes, a path
    over 4,096) is refused here too, saying why, rather than failing inside a tool."""
    for candidate in (real, *real.parents):
        try:
            if candidate.is_symlink():
                raise PathRejectedError(
                    f"the path {str(real)!r} goes through a symlink loop at {str(candidate)!r}"
                )
            if candidate.exists():
                return
        except OSError as exc:
            shown = str(real) if len(str(real)) <= 200 else f"{str(real)[:200]}..."
            raise PathRejectedError(
                f"the path {shown!r} ({len(str(real))} characters) cannot be looked up: "
                f"{exc.strerror}"
            ) from None


def canonical_root(root: Path) -> Path:
    """A scope root as compared with canonical paths: absolute and symlink-free."""
    return Path(os.path.realpath(os.fspath(root)))


def is_within(path: Path, root: Path) -> bool:
    """True when ``path`` is ``root`` or below it, compared component by component.

    Both paths must already be canonical (see :func:`canonicalize`, :func:`canonical_root`).
    """
    root_parts = root.parts
    return path.parts[: len(root_parts)] == root_parts


def escape_glob(text: str) -> str:
    """``text`` as a glob that matches it literally: ``*``, ``?`` and ``[`` each wrapped in
    brackets (``w[1]?`` -> ``w[[]1][?]``). A path substituted into a pattern (``{workspace}``)
    is escaped so that its own characters are never read as wildcards."""
    return "".join(f"[{ch}]" if ch in GLOB_CHARS else ch for ch in text)


def glob_literal(pattern: str) -> str | None:
    """The text ``pattern`` matches when it has no wildcard, else None.

    A bracket expression of one character (``[*]``, ``[[]``) is that character, as written by
    :func:`escape_glob`; an unclosed ``[`` is itself. ``*``, ``?`` and any other bracket
    expression make the pattern a glob.
    """
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch in "*?":
            return None
        if ch == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "]") else i + 1)
            if end != -1:
                body = pattern[i + 1 : end]
                if len(body) != 1 or body == "!":
                    return None
                out.append(body)
                i = end + 1
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def has_glob(pattern: str) -> bool:
    """Whether ``pattern`` has a wildcard (an escaped character like ``[*]`` is none)."""
    return any(ch in GLOB_CHARS for ch in pattern) and glob_literal(pattern) is None


def split_glob(pattern: str) -> tuple[str, str]:
    """Split an absolute pattern into its leading literal directory and the glob remainder.

    ``/w/src/**/*.py`` -> (``/w/src``, ``**/*.py``); a pattern without glob characters is all
    literal: (``pattern``, ``""``). Escaped characters in the literal part are unescaped
    (``/w[[]1]/*`` -> (``/w[1]``, ``*``)).
    """
    parts = pattern.split("/")
    literal: list[str] = []
    for index, part in enumerate(parts):
        text = glob_literal(part)
        if text is None:
            return "/".join(literal) or "/", "/".join(parts[index:])
        literal.append(text)
    return "/".join(literal), ""


def glob_regex(pattern: str) -> re.Pattern[str]:
    """Compile a path glob over absolute POSIX paths.

    ``**`` as a whole component matches zero or more components; ``*`` matches within one
    component (dot files included); ``?`` one character other than ``/``; ``[abc]`` and
    ``[!abc]`` a character class. A trailing ``/**`` also matches the directory itself.
    """
    return re.compile(glob_pattern(pattern) + r"\Z", re.DOTALL)


def glob_pattern(
    pattern: str,
    *,
    tail_matches_dir: bool = True,
    backslash_escapes: bool = False,
    caret_negates: bool = False,
) -> str:
    """The regular expression (text, not anchored) for a path glob, absolute or relative: the
    one path-glob translator (policy patterns, the glob tool, .gitignore rules).

    ``**`` as a whole component matches zero or more components (a run of them counts as
    one): leading, ``(?:.*/)?``; inside, ``/(?:.*/)?``; trailing, everything below, and the
    directory itself when ``tail_matches_dir``. Other components go through
    :func:`wildcard_pattern` with ``/`` as the separator.
    """
    parts: list[str] = []
    for part in pattern.split("/"):
        if not (part == "**" and parts[-1:] == ["**"]):
            parts.append(part)
    out: list[str] = []
    for index, part in enumerate(parts):
        first, last = index == 0, index == len(parts) - 1
        if part == "**":
            if first:
                out.append(".*" if last else "(?:.*/)?")
            elif last:
                out.append("(?:/.*)?" if tail_matches_dir else "/.*")
            else:
                out.append("/(?:.*/)?")
            continue
        if not first and parts[index - 1] != "**":
            out.append("/")
        out.append(
            wildcard_pattern(part, backslash_escapes=backslash_escapes, caret_negates=caret_negates)
        )
    return "".join(out)


def wildcard_pattern(
    glob: str,
    *,
    separator: str = "/",
    backslash_escapes: bool = False,
    caret_negates: bool = False,
) -> str:
    """The regular expression (text) for ``glob``'s wildcards, every other character literal.

    ``*`` is any run of characters other than ``separator`` (any characters at all when it is
    empty), ``?`` one such character, ``[abc]`` a class and ``[!abc]`` its negation (never
    matching ``separator`` either). ``backslash_escapes``: ``\\x`` is a literal ``x``;
    ``caret_negates``: ``[^abc]`` negates as well (both as in .gitignore).
    """
    other = f"[^{re.escape(separator)}]" if separator else "."
    out: list[str] = []
    i = 0
    while i < len(glob):
        ch = glob[i]
        if backslash_escapes and ch == "\\" and i + 1 < len(glob):
            out.append(re.escape(glob[i + 1]))
            i += 2
            continue
        if ch == "*":
            while i + 1 < len(glob) and glob[i + 1] == "*":
                i += 1
            out.append(other + "*")
        elif ch == "?":
            out.append(other)
        elif ch == "[" and (end := glob.find("]", i + 2)) != -1:
            body = glob[i + 1 : end]
            negate = body[:1] == "!" or (caret_negates and body[:1] == "^")
            body = body[1:] if negate else body
            escaped = "".join("\\" + c if c in "\\^[&~|" else c for c in body)
            out.append(f"[{'^' + separator if negate else ''}{escaped}]")
            i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)
