"""The argv scanning core of the path-operand rules: what an operand is, and GNU getopt.

:class:`Operand` is one path named by a command, with how it is used (:data:`Access`).
:func:`scan` reads an argv the way GNU getopt does, driven by a program's :class:`Syntax`:
options that take a value are skipped, options whose value is a path name it, and options
that read path names from a file make the command uncheckable. The per-program handlers
(:mod:`mcp_toolbridge.policy.shell.handlers`, :mod:`mcp_toolbridge.policy.shell.programs`,
:mod:`mcp_toolbridge.policy.shell.git`) build on it; :mod:`mcp_toolbridge.policy.shell.operands`
holds the table.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Access = Literal["read", "write", "remove"]
Links = Literal["at", "under"] | None
"""Where a write may leave symbolic links: ``at`` the path itself (``mv link y``, ``ln -s``,
``cp -a``), or only ``under`` it (tar extraction, a git checkout of the work tree)."""


@dataclass(frozen=True, slots=True)
class Operand:
    """A path named by one argument of a command."""

    index: int | None
    """The argv index the text comes from (None: implied, such as the working directory of
    ``grep -r x``)."""
    text: str
    access: Access
    whole: bool = True
    """True when ``text`` is the whole argument (so shell quoting and globbing apply to it)."""
    links: Links = None
    """A written path that may become (or hold) a symbolic link (see :data:`Links`): another
    command's path through it cannot be checked before the line runs."""
    follows: bool = True
    """False when the program never follows symbolic links in it (git pathspecs)."""


@dataclass(slots=True)
class Found:
    paths: list[Operand] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Syntax:
    """How a program's options are read."""

    values: str = ""
    """Short options that take a value (``-n 5`` or ``-n5``), skipped."""
    long_values: frozenset[str] = frozenset()
    """Long options that take a value (``--lines 5`` or ``--lines=5``), skipped."""
    paths: Mapping[str, Access] = field(default_factory=dict)
    """Options whose value is a path (``-o``, ``--output``). Long names also match by prefix
    (``--outp``), as getopt accepts unambiguous abbreviations."""
    attached: str = ""
    """Short options whose value, if any, is attached (``sed -i.bak``)."""
    names_from: frozenset[str] = frozenset()
    """Options that read path names from a file: the command cannot be checked."""


@dataclass(slots=True)
class Scan:
    operands: list[tuple[int, str]] = field(default_factory=list)
    """(argv index, text) of every operand, in order."""
    options: set[str] = field(default_factory=set)
    """Every option seen, as ``-x`` or ``--name`` (values stripped)."""
    paths: list[Operand] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    ended: bool = False
    """A ``--`` ended the options (every word after it is an operand)."""


def scan(argv: tuple[str, ...], syntax: Syntax, start: int = 1) -> Scan:
    """Read ``argv[start:]`` as GNU getopt does (options may follow operands, ``--`` ends
    them)."""
    found = Scan()
    i = start
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            found.operands.extend((k, argv[k]) for k in range(i + 1, len(argv)))
            found.ended = True
            break
        if arg.startswith("--"):
            i = _long(argv, i, syntax, found)
        elif arg.startswith("-") and len(arg) > 1:
            i = _short(argv, i, syntax, found)
        else:
            found.operands.append((i, arg))
            i += 1
    return found


def _long(argv: tuple[str, ...], i: int, syntax: Syntax, found: Scan) -> int:
    name, eq, value = argv[i].partition("=")
    found.options.add(name)
    access = syntax.paths.get(name)
    if access is None and len(name) > 2:  # any abbreviation: sort --o=F is sort --output=F
        hits = {a for known, a in syntax.paths.items() if known.startswith(name) and "--" in known}
        access = "write" if "write" in hits else (hits.pop() if hits else None)
    names_from = name in syntax.names_from or any(
        known.startswith(name) for known in syntax.names_from if len(name) > 2
    )
    if names_from:
        found.reasons.append(f"{name} reads file names from a file, which cannot be checked")
    takes_value = name in syntax.long_values or (
        len(name) > 2 and any(known.startswith(name) for known in syntax.long_values)
    )  # --excl is --exclude: the word after it is its value, a ``--`` too
    if access is not None or names_from or takes_value:
        if eq:
            if access is not None:
                found.paths.append(Operand(i, value, access, whole=False))
            return i + 1
        if i + 1 < len(argv) and access is not None:
            found.paths.append(Operand(i + 1, argv[i + 1], access))
        return i + 2
    return i + 1


def _short(argv: tuple[str, ...], i: int, syntax: Syntax, found: Scan) -> int:
    letters = argv[i][1:]
    for k, ch in enumerate(letters):
        option = "-" + ch
        found.options.add(option)
        rest = letters[k + 1 :]
        if ch in syntax.attached:
            return i + 1
        access = syntax.paths.get(option)
        if option in syntax.names_from:
            found.reasons.append(f"{option} reads file names from a file, which cannot be checked")
            return i + (1 if rest else 2)
        if access is not None:
            if rest:
                found.paths.append(Operand(i, rest, access, whole=False))
                return i + 1
            if i + 1 < len(argv):
                found.paths.append(Operand(i + 1, argv[i + 1], access))
            return i + 2
        if ch in syntax.values:
            return i + (1 if rest else 2)
    return i + 1


def found_of(s: Scan) -> Found:
    """The paths and reasons a scan found by itself (path-valued options)."""
    return Found(list(s.paths), list(s.reasons))


def in_directory(directory: str, text: str) -> str:
    """``text`` relative to ``directory`` (a ``-C DIR`` in force), or as is when there is none."""
    return os.path.join(directory, text) if directory else text
