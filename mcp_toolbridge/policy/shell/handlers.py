"""Handler factories shared by many programs of the path-operand table.

A handler turns one argv into the paths it names (:class:`~mcp_toolbridge.policy.shell.scan.Found`).
Each factory here covers a family of programs that share an operand layout: every operand a
path (``cat``, ``rm``, ``ls``), a pattern or script first (``grep``, ``sed``), copy-like
(``cp``, ``mv``, ``ln``, ``install``), input then output (``uniq``, ``xxd``), and mode or
owner first (``chmod``, ``chown``). The table itself is :mod:`mcp_toolbridge.policy.shell.operands`.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable
from typing import Literal

from mcp_toolbridge.policy.shell.scan import (
    Access,
    Found,
    Links,
    Operand,
    Scan,
    Syntax,
    found_of,
    scan,
)

ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_CLAUSE = r"[ugoa]*(?:[-+=](?:[rwxXst]*|[ugo]))+"
_CHMOD_MODE = re.compile(rf"(?:[0-7]+|{_CLAUSE}(?:,{_CLAUSE})*)\Z")
_CHMOD_OPTION_MODE = re.compile(r"^-[rwxXst]+$")

Handler = Callable[[tuple[str, ...]], Found]
STDIO = frozenset({"-"})


def every_operand(
    syntax: Syntax,
    access: Access,
    *,
    implied: Callable[[Scan], bool] | None = None,
    skip: Callable[[str], bool] | None = None,
) -> Handler:
    """Every operand is a path used the same way; ``implied`` says when no operand means the
    working directory (``ls``, ``grep -r``)."""

    def handler(argv: tuple[str, ...]) -> Found:
        s = scan(argv, syntax)
        out = found_of(s)
        operands = [(k, t) for k, t in s.operands if t not in STDIO and not (skip and skip(t))]
        out.paths += [Operand(k, t, access) for k, t in operands]
        if not operands and implied is not None and implied(s):
            out.paths.append(Operand(None, ".", access))
        return out

    return handler


def always(s: Scan) -> bool:
    return True


def pattern_first(
    syntax: Syntax,
    given: frozenset[str],
    *,
    recursive: frozenset[str] = frozenset(),
    always_cwd: bool = False,
    no_pattern: frozenset[str] = frozenset(),
    writes_when: frozenset[str] = frozenset(),
    skip_assignments: bool = False,
) -> Handler:
    """grep, rg, sed, awk: the first operand is the pattern or script unless an option in
    ``given`` supplied it; the rest are files (written when an option of ``writes_when`` is
    present, as with ``sed -i``)."""

    def handler(argv: tuple[str, ...]) -> Found:
        s = scan(argv, syntax)
        out = found_of(s)
        operands = list(s.operands)
        if operands and not (s.options & (given | no_pattern)):
            operands = operands[1:]
        access: Access = "write" if s.options & writes_when else "read"
        for k, text in operands:
            if text in STDIO or (skip_assignments and ASSIGNMENT.match(text)):
                continue
            out.paths.append(Operand(k, text, access))
        if not operands and (always_cwd or s.options & recursive):
            out.paths.append(Operand(None, ".", "read"))
        return out

    return handler


_CP_KEEPS_LINKS = frozenset(
    {"-r", "-R", "-a", "-d", "-P", "--recursive", "--archive", "--no-dereference"}
)


def copy_like(syntax: Syntax, kind: Literal["cp", "mv", "ln", "install"]) -> Handler:
    """cp, mv, ln, install: the last operand (or ``-t DIR``) is written, the others are the
    sources (read, or removed for mv). A destination that may end up holding a symlink (mv,
    ln, cp -r/-a/-P/-d) is marked ``links``; a relative ``ln -s`` target is also checked from
    the link's directory, where it is resolved."""

    def handler(argv: tuple[str, ...]) -> Found:
        s = scan(argv, syntax)
        out = found_of(s)
        operands = list(s.operands)
        if kind == "install" and s.options & {"-d", "--directory"}:  # install -d DIR...
            out.paths += [Operand(k, t, "write") for k, t in operands]
            return out
        keeps = kind in ("mv", "ln") or bool(
            s.options & _CP_KEEPS_LINKS
            or any(o.startswith("--preserve") for o in s.options)  # --preserve=links
        )
        links: Links = "at" if keeps else None
        targets = list(out.paths)  # -t DIR / --target-directory: the only path options
        out.paths = [dataclasses.replace(p, links=links) for p in targets]
        if not targets and operands:
            if kind == "ln" and len(operands) == 1:
                k, text = operands[0]
                name = os.path.basename(text.rstrip("/")) or "."
                out.paths.append(Operand(k, name, "write", whole=name == text, links="at"))
            else:
                k, text = operands.pop()
                out.paths.append(Operand(k, text, "write", links=links))
        sources: Access = "remove" if kind == "mv" else "read"
        out.paths += [Operand(k, t, sources) for k, t in operands]
        symbolic = any(o in ("-s", "--symbolic") for o in s.options)
        if kind == "ln" and symbolic:
            places = [p.text for p in out.paths if p.access == "write"]
            for k, text in operands:
                if not text.startswith("/"):
                    for place in places:  # the link may be PLACE itself or PLACE/name
                        for folder in (os.path.dirname(place), place):
                            joined = os.path.join(folder, text)
                            out.paths.append(Operand(k, joined, "read", whole=joined == text))
        return out

    return handler


def second_written(syntax: Syntax) -> Handler:
    """uniq and xxd: ``PROG [INPUT [OUTPUT]]``; every operand after the first is written (so a
    misread option value can only make the check stricter)."""

    def handler(argv: tuple[str, ...]) -> Found:
        s = scan(argv, syntax)
        out = found_of(s)
        for n, (k, text) in enumerate(s.operands):
            if text not in STDIO:
                out.paths.append(Operand(k, text, "write" if n >= 1 else "read"))
        return out

    return handler


def mode_first(syntax: Syntax, *, chmod: bool) -> Handler:
    """chmod, chown, chgrp: the first operand is the mode or owner unless ``--reference``
    gave it. ``chmod -w f`` is a mode, not an option."""

    def handler(argv: tuple[str, ...]) -> Found:
        args = list(argv)
        mode_index: int | None = None
        if chmod:
            for k in range(1, len(args)):
                if args[k] == "--":
                    break
                if _CHMOD_OPTION_MODE.match(args[k]):
                    mode_index = k
                    args[k] = "m"  # hide it from the option scan
                    break
        s = scan(tuple(args), syntax)
        out = found_of(s)
        operands = [(k, t) for k, t in s.operands if k != mode_index]
        referenced = any(o.startswith("--ref") for o in s.options)
        if operands and mode_index is None and not referenced:
            k, text = operands[0]
            operands = operands[1:]
            if chmod and not _CHMOD_MODE.match(text):
                out.paths.append(Operand(k, text, "write"))  # not a mode: keep it as a path
        out.paths += [Operand(k, t, "write") for k, t in operands]
        return out

    return handler
