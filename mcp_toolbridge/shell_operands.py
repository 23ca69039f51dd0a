"""Which arguments of known file commands are paths, and whether they are read or written.

:func:`path_operands` is called by :mod:`mcp_toolbridge.shell_parse` on every simple command
(after wrappers are unwrapped). For a program it knows (``cat``, ``grep``, ``cp``, ``rm``,
``tar``, ``git``, ... see ``_HANDLERS``) it returns the arguments that name files, each with how
it is used: ``read``, ``write``, or ``remove`` (written without following a final symlink:
``rm link`` removes the link). The policy then checks them like redirect targets
(:mod:`mcp_toolbridge.shell_policy`).

Options that take a value are skipped, so ``head -n 5 f`` names only ``f``; an option whose
value is a file (``sort -o out``, ``git log --output=x``, ``tar -f a.tar``) names that file.
When the role of an operand is unclear it is a read target: nothing is silently dropped.
Options that read path names from a file (``wc --files0-from``, ``tar -T``) make the command
uncheckable. Programs not in the table are matched as text only.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from mcp_toolbridge.shell_argv import basename

Access = Literal["read", "write", "remove"]
Links = Literal["at", "under"] | None
"""Where a write may leave symbolic links: ``at`` the path itself (``mv link y``, ``ln -s``,
``cp -a``), or only ``under`` it (tar extraction, a git checkout of the work tree)."""
_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_CLAUSE = r"[ugoa]*(?:[-+=](?:[rwxXst]*|[ugo]))+"
_CHMOD_MODE = re.compile(rf"(?:[0-7]+|{_CLAUSE}(?:,{_CLAUSE})*)\Z")
_CHMOD_OPTION_MODE = re.compile(r"^-[rwxXst]+$")


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


def scan(argv: tuple[str, ...], syntax: Syntax, start: int = 1) -> Scan:
    """Read ``argv[start:]`` as GNU getopt does (options may follow operands, ``--`` ends
    them)."""
    found = Scan()
    i = start
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            found.operands.extend((k, argv[k]) for k in range(i + 1, len(argv)))
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
    if access is None and len(name) > 3:
        hits = {a for known, a in syntax.paths.items() if known.startswith(name) and "--" in known}
        access = "write" if "write" in hits else (hits.pop() if hits else None)
    names_from = name in syntax.names_from or any(
        known.startswith(name) for known in syntax.names_from if len(name) > 3
    )
    if names_from:
        found.reasons.append(f"{name} reads file names from a file, which cannot be checked")
    if access is not None or names_from or name in syntax.long_values:
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


def path_operands(argv: tuple[str, ...]) -> Found:
    """The paths ``argv`` names and how it uses them (empty for programs not in the table)."""
    handler = _HANDLERS.get(basename(argv[0]))
    return handler(argv) if handler is not None else Found()


# -- handlers ---------------------------------------------------------------------------------

Handler = Callable[[tuple[str, ...]], Found]
_STDIO = frozenset({"-"})


def _found(s: Scan) -> Found:
    return Found(list(s.paths), list(s.reasons))


def _all(
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
        out = _found(s)
        operands = [(k, t) for k, t in s.operands if t not in _STDIO and not (skip and skip(t))]
        out.paths += [Operand(k, t, access) for k, t in operands]
        if not operands and implied is not None and implied(s):
            out.paths.append(Operand(None, ".", access))
        return out

    return handler


def _always(s: Scan) -> bool:
    return True


def _pattern_first(
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
        out = _found(s)
        operands = list(s.operands)
        if operands and not (s.options & (given | no_pattern)):
            operands = operands[1:]
        access: Access = "write" if s.options & writes_when else "read"
        for k, text in operands:
            if text in _STDIO or (skip_assignments and _ASSIGN.match(text)):
                continue
            out.paths.append(Operand(k, text, access))
        if not operands and (always_cwd or s.options & recursive):
            out.paths.append(Operand(None, ".", "read"))
        return out

    return handler


_CP_KEEPS_LINKS = frozenset(
    {"-r", "-R", "-a", "-d", "-P", "--recursive", "--archive", "--no-dereference"}
)


def _copy(syntax: Syntax, kind: Literal["cp", "mv", "ln", "install"]) -> Handler:
    """cp, mv, ln, install: the last operand (or ``-t DIR``) is written, the others are the
    sources (read, or removed for mv). A destination that may end up holding a symlink (mv,
    ln, cp -r/-a/-P/-d) is marked ``links``; a relative ``ln -s`` target is also checked from
    the link's directory, where it is resolved."""

    def handler(argv: tuple[str, ...]) -> Found:
        s = scan(argv, syntax)
        out = _found(s)
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


def _second_written(syntax: Syntax) -> Handler:
    """uniq and xxd: ``PROG [INPUT [OUTPUT]]``; every operand after the first is written (so a
    misread option value can only make the check stricter)."""

    def handler(argv: tuple[str, ...]) -> Found:
        s = scan(argv, syntax)
        out = _found(s)
        for n, (k, text) in enumerate(s.operands):
            if text not in _STDIO:
                out.paths.append(Operand(k, text, "write" if n >= 1 else "read"))
        return out

    return handler


def _mode_first(syntax: Syntax, *, chmod: bool) -> Handler:
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
        out = _found(s)
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


def _find(argv: tuple[str, ...]) -> Found:
    """find: the start points before the expression (read, or written with ``-delete``), and
    the files that tests compare with (``-newer F``)."""
    out = Found()
    i = 1
    while i < len(argv):
        if argv[i] in ("-H", "-L", "-P") or (argv[i].startswith("-O") and len(argv[i]) > 2):
            i += 1
        elif argv[i] == "-D":
            i += 2
        else:
            break
    starts: list[tuple[int, str]] = []
    while i < len(argv) and not argv[i].startswith(("-", "(", "!", ")", ",")):
        starts.append((i, argv[i]))
        i += 1
    expression = argv[i:]
    access: Access = "write" if "-delete" in expression else "read"
    out.paths += [Operand(k, t, access) for k, t in starts]
    if not starts:
        out.paths.append(Operand(None, ".", access))
    for k in range(i, len(argv) - 1):
        test = argv[k]
        if test in ("-newer", "-anewer", "-cnewer", "-samefile") or (
            test.startswith("-newer") and len(test) == 8 and not test.endswith("t")
        ):
            out.paths.append(Operand(k + 1, argv[k + 1], "read"))
        elif test == "-files0-from":
            out.reasons.append("find -files0-from reads start points from a file")
    return out


def _dd(argv: tuple[str, ...]) -> Found:
    out = Found()
    for k, arg in enumerate(argv[1:], 1):
        key, eq, value = arg.partition("=")
        if eq and key in ("if", "of") and value:
            out.paths.append(Operand(k, value, "read" if key == "if" else "write", whole=False))
    return out


_TAR_MODES = {
    "c": "create", "x": "extract", "t": "list", "r": "append", "u": "append", "A": "append",
    "d": "list", "--create": "create", "--extract": "extract", "--get": "extract",
    "--list": "list", "--append": "append", "--update": "append", "--catenate": "append",
    "--concatenate": "append", "--diff": "list", "--compare": "list", "--delete": "append",
}  # fmt: skip
_TAR_VALUES = "bHKLNVg"
_TAR_LONG_PATHS = {
    "--file": "f", "--directory": "C", "--files-from": "T", "--exclude-from": "X",
    "--listed-incremental": "g", "--index-file": "g", "--volno-file": "g",
}  # fmt: skip
_TAR_LONG_VALUES = frozenset(
    {"--blocking-factor", "--format", "--starting-file", "--newer", "--after-date",
     "--label", "--tape-length", "--owner", "--group", "--mode", "--mtime", "--transform",
     "--xform", "--exclude", "--suffix", "--record-size", "--occurrence", "--strip-components",
     "--checkpoint", "--sort", "--hole-detection", "--quoting-style", "--atime-preserve"}
)  # fmt: skip


def _tar(argv: tuple[str, ...]) -> Found:
    """tar: the archive (-f) is read or written by mode; extraction writes under -C (or the
    working directory); files added are read, relative to the -C in force."""
    out = Found()
    words = list(argv[1:])
    pending: list[tuple[str, int]] = []  # bundled old-style letters waiting for their value
    mode = "list"
    directory = ""
    archives: list[tuple[int, str, bool]] = []
    members: list[tuple[int, str, bool]] = []
    directories: list[tuple[int, str, bool]] = []
    k = 0
    if words and not words[0].startswith("-"):  # old style: tar xzf a.tar ...
        for ch in words[0]:
            mode = _TAR_MODES.get(ch, mode)
            if ch in "fCTXg" or ch in _TAR_VALUES:
                pending.append((ch, 0))
        k = 1

    def take(letter: str, index: int, value: str, whole: bool) -> None:
        nonlocal directory
        if letter == "f":
            archives.append((index, value, whole))
        elif letter == "C":
            directories.append((index, value, whole))
            directory = os.path.join(directory, value) if directory else value
        elif letter == "T":
            out.reasons.append("tar -T reads the names of the files from a file")
        elif letter == "X":
            out.paths.append(Operand(index, value, "read", whole))
        elif letter == "g":
            out.paths.append(Operand(index, value, "write", whole))

    only_operands = False
    while k < len(words):
        index = k + 1
        arg = words[k]
        k += 1
        if pending:
            letter, _ = pending.pop(0)
            take(letter, index, arg, True)
            continue
        if only_operands or not arg.startswith("-") or arg == "-":
            members.append((index, _joined(directory, arg), not directory))
            continue
        if arg == "--":
            only_operands = True
            continue
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            mode = _TAR_MODES.get(name, mode)
            long_letter = _TAR_LONG_PATHS.get(name)
            if long_letter is not None:
                if eq:
                    take(long_letter, index, value, False)
                elif k < len(words):
                    take(long_letter, k + 1, words[k], True)
                    k += 1
            elif name in _TAR_LONG_VALUES and not eq:
                k += 1
            continue
        letters = arg[1:]
        for n, ch in enumerate(letters):
            mode = _TAR_MODES.get(ch, mode)
            if ch in "fCTXg" or ch in _TAR_VALUES:
                rest = letters[n + 1 :]
                if rest:
                    if ch in "fCTXg":
                        take(ch, index, rest, False)
                elif k < len(words):
                    if ch in "fCTXg":
                        take(ch, k + 1, words[k], True)
                    k += 1
                break
    archive_access: Access = {"create": "write", "append": "write"}.get(mode, "read")  # type: ignore[assignment]
    for index, text, whole in archives:
        host, colon, _ = text.partition(":")
        if colon and "/" not in host and "--force-local" not in argv:
            out.reasons.append(f"tar would open {text!r} as a remote archive (rsh)")
        if text != "-":
            out.paths.append(Operand(index, text, archive_access, whole))
    extract = mode == "extract"
    for index, text, whole in directories:
        links: Links = "under" if extract else None
        out.paths.append(Operand(index, text, "write" if extract else "read", whole, links))
    if extract:
        if not directories:
            out.paths.append(Operand(None, ".", "write", links="under"))
        out.paths += [Operand(k2, t, "write", False, "at") for k2, t, _ in members]
    elif mode in ("create", "append"):
        out.paths += [Operand(k2, t, "read", whole) for k2, t, whole in members]
    return out


def _joined(directory: str, text: str) -> str:
    return os.path.join(directory, text) if directory else text


# -- git ----------------------------------------------------------------------------------------

_GIT_GLOBAL_PATHS = {"-C": "write", "--git-dir": "write", "--work-tree": "write"}
_GIT_GLOBAL_VALUES = frozenset(
    {"-c", "--config-env", "--namespace", "--super-prefix", "--list-cmds", "--attr-source"}
)
_GIT_WRITE_OPTIONS = frozenset(
    {"--output", "--output-directory", "--separate-git-dir", "--export-marks", "--index-file"}
)
_GIT_READ_OPTIONS = frozenset(
    {"--file", "--template", "--reference", "--reference-if-able", "--import-marks",
     "--exclude-from", "--pathspec-from-file", "--rerere-autoupdate-file"}
)  # fmt: skip
_GIT_VALUES = frozenset(
    {"-m", "--message", "--author", "--committer", "--grep", "--format", "--pretty", "-S", "-G",
     "--since", "--until", "--after", "--before", "--date", "--trailer"}
)  # fmt: skip
"""Options whose value is free text. Other values are read as operands: a ref or a number
taken for a path stays inside the workspace, while a real path is never skipped."""
_GIT_SUB_WRITES = {
    "format-patch": frozenset({"-o"}),
    "archive": frozenset({"-o"}),
    "checkout-index": frozenset({"--prefix"}),
}
_GIT_CHECKOUTS = frozenset(
    {"checkout", "switch", "restore", "reset", "merge", "pull", "rebase", "cherry-pick",
     "revert", "stash", "apply", "am", "submodule", "read-tree", "checkout-index",
     "sparse-checkout", "bisect"}
)  # fmt: skip
_GIT_SUB_READS = {
    "commit": frozenset({"-F", "-t"}),
    "tag": frozenset({"-F"}),
    "notes": frozenset({"-F"}),
    "merge": frozenset({"-F"}),
}


def _git(argv: tuple[str, ...]) -> Found:
    """git: ``-C``/``--git-dir``/``--work-tree`` and options that write (``--output``,
    ``format-patch -o``, ``init DIR``, ``clone ... DIR``, ``worktree add DIR``,
    ``bundle create F``) name written paths; pathspecs, ``REV:path`` and files given to
    ``-F``/``--file`` name read paths. Relative paths follow ``-C``."""
    out = Found()
    base = ""
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if name in _GIT_GLOBAL_PATHS:
            text, index, whole = (value, i, False) if eq else (_at(argv, i + 1), i + 1, True)
            i += 1 if eq else 2
            if text:
                joined = _joined(base, text)
                out.paths.append(Operand(index, joined, "write", whole and not base))
                if name == "-C":
                    base = joined
            continue
        i += 2 if (name in _GIT_GLOBAL_VALUES and not eq) else 1
    if i >= len(argv):
        return out
    sub = argv[i]
    args = argv[i + 1 :]
    offset = i + 1

    def add(
        index: int | None,
        text: str,
        access: Access,
        whole: bool = True,
        links: Links = None,
        follows: bool = True,
    ) -> None:
        if text and text != "-":
            joined = _joined(base, text)
            exact = whole and joined == text
            out.paths.append(Operand(index, joined, access, exact, links, follows))

    writes = _GIT_SUB_WRITES.get(sub, frozenset())
    reads = _GIT_SUB_READS.get(sub, frozenset())
    operands: list[tuple[int, str]] = []
    dashdash = False
    k = 0
    while k < len(args):
        arg, index = args[k], offset + k
        k += 1
        if dashdash or not arg.startswith("-") or arg == "-":
            operands.append((index, arg))
            continue
        if arg == "--":
            dashdash = True
            continue
        name, eq, value = arg.partition("=")
        access: Access | None = None
        abbreviated = len(name) > 5 and name.startswith("--")  # parse-options abbreviations
        if (
            name in _GIT_WRITE_OPTIONS
            or name in writes
            or (abbreviated and any(o.startswith(name) for o in _GIT_WRITE_OPTIONS))
        ):
            access = "write"
        elif name in _GIT_READ_OPTIONS or name in reads:
            access = "read"
        if access is not None:
            if eq:
                add(index, value, access, whole=False)
            elif name.startswith("--") or len(name) == 2:
                if k < len(args):
                    add(offset + k, args[k], access)
                    k += 1
            continue
        if len(name) > 2 and not name.startswith("--") and name[:2] in writes | reads:
            add(index, name[2:], "write" if name[:2] in writes else "read", whole=False)
            continue
        bundled = len(name) > 2 and name[1] != "-" and name[-1] == "m"  # commit -am MSG
        if (name in _GIT_VALUES or bundled) and not eq and args[k : k + 1] != ("--",):
            k += 1
    texts = [t for _, t in operands]
    if sub in _GIT_CHECKOUTS:  # the work tree is rewritten, symlinks from history included
        add(None, ".", "write", links="under", follows=False)
    if sub == "init" and operands:
        add(*operands[-1], "write")
        operands = operands[:-1]
    elif sub == "clone" and operands:
        repository = operands[0]
        if len(operands) > 1:
            add(*operands[-1], "write", links="under")
        else:
            name = os.path.basename(repository[1].rstrip("/").removesuffix(".git")) or "."
            add(None, name.rsplit(":", 1)[-1], "write", links="under")
        operands = [repository]
    elif sub == "worktree" and texts[:1] == ["add"] and len(operands) > 1:
        add(*operands[1], "write", links="under")
        operands = operands[2:]
    elif sub == "bundle" and texts[:1] == ["create"] and len(operands) > 1:
        add(*operands[1], "write")
        operands = operands[2:]
    for index, text in operands:
        if "://" in text:
            continue
        _rev, colon, path = text.partition(":")
        if colon:
            if path and not path.startswith("/"):
                add(index, path, "read", whole=False, follows=False)
            continue
        add(index, text, "read", follows=False)  # git never follows a link in a pathspec
    return out


def _at(argv: tuple[str, ...], i: int) -> str:
    return argv[i] if i < len(argv) else ""


# -- the table ------------------------------------------------------------------------------------

_READ = Syntax()
_HEAD = Syntax("nc", frozenset({"--lines", "--bytes"}))
_TAIL = Syntax(
    "ncs", frozenset({"--lines", "--bytes", "--pid", "--sleep-interval", "--max-unchanged-stats"})
)
_LESS = Syntax(
    "bhjpPtTxyz#",
    frozenset({"--buffers", "--max-back-scroll", "--jump-target", "--pattern", "--prompt",
               "--tag", "--tag-file", "--tabs", "--window", "--max-forw-scroll", "--shift"}),
    {"-o": "write", "-O": "write", "--log-file": "write", "--LOG-FILE": "write",
     "-k": "read", "--lesskey-file": "read", "--lesskey-src": "read"},
)  # fmt: skip
_GREP = Syntax(
    "emABCdD",
    frozenset({"--regexp", "--max-count", "--after-context", "--before-context", "--context",
               "--label", "--include", "--exclude", "--exclude-dir", "--binary-files",
               "--devices", "--directories", "--group-separator", "--color", "--colour"}),
    {"-f": "read", "--file": "read", "--exclude-from": "read"},
)  # fmt: skip
_RG = Syntax(
    "eAgBCtTmjMrdE",
    frozenset({"--regexp", "--after-context", "--before-context", "--context", "--glob",
               "--iglob", "--type", "--type-not", "--type-add", "--type-clear", "--max-count",
               "--threads", "--max-columns", "--replace", "--max-depth", "--encoding",
               "--engine", "--sort", "--sortr", "--max-filesize", "--colors", "--color",
               "--path-separator", "--context-separator", "--field-context-separator",
               "--field-match-separator", "--dfa-size-limit", "--regex-size-limit",
               "--pre-glob", "--hyperlink-format", "--generate", "--max-columns-preview"}),
    {"-f": "read", "--file": "read", "--ignore-file": "read"},
)  # fmt: skip
_SED = Syntax(
    "el",
    frozenset({"--expression", "--line-length"}),
    {"-f": "read", "--file": "read"},
    attached="i",
)
_AWK = Syntax(
    "vFeil",
    frozenset({"--assign", "--field-separator", "--source", "--include", "--load"}),
    {"-f": "read", "--file": "read"},
    attached="dDLopM",
)
_SORT = Syntax(
    "kSt",
    frozenset({"--key", "--buffer-size", "--field-separator", "--batch-size", "--parallel"}),
    {"-o": "write", "--output": "write", "-T": "write", "--temporary-directory": "write",
     "--random-source": "read"},
    names_from=frozenset({"--files0-from"}),
)  # fmt: skip
_DIFF = Syntax(
    "CUFIxSLWD",
    frozenset({"--label", "--ignore-matching-lines", "--show-function-line", "--exclude",
               "--starting-file", "--width", "--ifdef", "--tabsize", "--horizontal-lines",
               "--line-format", "--old-line-format", "--new-line-format",
               "--unchanged-line-format", "--old-group-format", "--new-group-format",
               "--changed-group-format", "--unchanged-group-format", "--color", "--palette"}),
    {"-X": "read", "--exclude-from": "read", "--from-file": "read", "--to-file": "read"},
)  # fmt: skip
_LS = Syntax(
    "ITw",
    frozenset({"--ignore", "--hide", "--width", "--tabsize", "--block-size", "--time-style",
               "--quoting-style", "--indicator-style", "--format", "--sort", "--time"}),
)  # fmt: skip
_TREE = Syntax(
    "LPIHT",
    frozenset({"--filelimit", "--timefmt", "--sort", "--charset", "--hintro", "--houtro"}),
    {"-o": "write"},
    names_from=frozenset({"--fromfile"}),
)
_DU = Syntax(
    "dBt",
    frozenset({"--max-depth", "--block-size", "--threshold", "--exclude", "--time-style"}),
    {"-X": "read", "--exclude-from": "read"},
    names_from=frozenset({"--files0-from"}),
)
_WC = Syntax(names_from=frozenset({"--files0-from"}))
_FILE = Syntax(
    "FPe",
    frozenset({"--separator", "--parameter", "--exclude", "--exclude-quiet"}),
    {"-m": "read", "--magic-file": "read"},
    names_from=frozenset({"-f", "--files-from"}),
)
_STAT = Syntax("c", frozenset({"--format", "--printf"}))
_CUT = Syntax(
    "bcdf", frozenset({"--bytes", "--characters", "--delimiter", "--fields", "--output-delimiter"})
)
_OD = Syntax(
    "AjNStw",
    frozenset({"--address-radix", "--skip-bytes", "--read-bytes", "--strings", "--format",
               "--width", "--endian"}),
)  # fmt: skip
_MKDIR = Syntax("m", frozenset({"--mode", "--context"}))
_TOUCH = Syntax("dt", frozenset({"--date", "--time"}), {"-r": "read", "--reference": "read"})
_TRUNCATE = Syntax("s", frozenset({"--size"}), {"-r": "read", "--reference": "read"})
_SHRED = Syntax("ns", frozenset({"--iterations", "--size"}), {"--random-source": "read"})
_COPY = Syntax(
    "S",
    frozenset({"--suffix"}),
    {"-t": "write", "--target-directory": "write"},
)
_INSTALL = Syntax(
    "mogS",
    frozenset({"--mode", "--owner", "--group", "--suffix", "--strip-program"}),
    {"-t": "write", "--target-directory": "write"},
)
_CHMOD = Syntax(paths={"--reference": "read"})
_CHOWN = Syntax(long_values=frozenset({"--from"}), paths={"--reference": "read"})
_UNIQ = Syntax("fsw", frozenset({"--skip-fields", "--skip-chars", "--check-chars", "--group"}))
_XXD = Syntax("cglosn", frozenset({"-cols", "-groupsize", "-len", "-seek", "-name"}))
_MAKE = Syntax(
    "jlWo",
    frozenset({"--jobs", "--load-average", "--what-if", "--old-file", "--new-file"}),
    {"-C": "read", "--directory": "read", "-f": "read", "--file": "read", "--makefile": "read"},
)
_REALPATH = Syntax(paths={"--relative-to": "read", "--relative-base": "read"})
_NL = Syntax("bdfhilnsvw")
_PASTE = Syntax("d", frozenset({"--delimiters"}))
_FOLD = Syntax("w", frozenset({"--width"}))
_CMP = Syntax("in", frozenset({"--ignore-initial", "--bytes"}))
_STRINGS = Syntax("ntTeso", frozenset({"--bytes", "--radix", "--target", "--encoding"}))
_BASE64 = Syntax("w", frozenset({"--wrap"}))


def _recursive(s: Scan) -> bool:
    return bool(s.options & {"-r", "-R", "--recursive", "--dereference-recursive"})


def _plus_command(text: str) -> bool:
    return text.startswith("+")


_AWK_FILES = {"-d": "awkvars.out", "-o": "awkprof.out", "-p": "awkprof.out",
              "--dump-variables": "awkvars.out", "--pretty-print": "awkprof.out",
              "--profile": "awkprof.out"}  # fmt: skip
_awk_operands = _pattern_first(
    _AWK, frozenset({"-f", "--file", "-e", "--source"}), skip_assignments=True
)


def _awk(argv: tuple[str, ...]) -> Found:
    """awk: the program, then files (``var=value`` operands are assignments); gawk's
    ``-d``/``-o``/``-p`` write a file (attached name, or a default one)."""
    out = _awk_operands(argv)
    for k, arg in enumerate(argv[1:], 1):
        if arg == "--" or not arg.startswith("-"):
            break
        name, eq, value = arg.partition("=")
        if name in _AWK_FILES:
            text = value if eq else _AWK_FILES[name]
        elif arg[:2] in _AWK_FILES:
            text = arg[2:] or _AWK_FILES[arg[:2]]
        else:
            continue
        out.paths.append(Operand(k, text, "write", whole=False))
    return out


def _make(argv: tuple[str, ...]) -> Found:
    """make: only -C and -f name paths (operands are targets and VAR=value)."""
    return _found(scan(argv, _MAKE))


_SUMS = ("md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "cksum", "sum")
_READERS: dict[str, Syntax] = {
    "cat": _READ,
    "tac": Syntax("s", frozenset({"--separator"})),
    "nl": _NL,
    "head": _HEAD,
    "tail": _TAIL,
    "wc": _WC,
    "od": _OD,
    "hexdump": Syntax("ens", paths={"-f": "read"}),
    "strings": _STRINGS,
    "base64": _BASE64,
    "base32": _BASE64,
    **dict.fromkeys(_SUMS, _READ),
    "b2sum": Syntax("l"),
    "cut": _CUT,
    "paste": _PASTE,
    "fold": _FOLD,
    "fmt": Syntax("wpg"),
    "comm": Syntax(long_values=frozenset({"--output-delimiter"})),
    "cmp": _CMP,
    "diff": _DIFF,
    "file": _FILE,
    "stat": _STAT,
    "readlink": _READ,
    "realpath": _REALPATH,
    "zcat": _READ,
    "bzcat": _READ,
    "xzcat": _READ,
}

_HANDLERS: dict[str, Handler] = {
    **{name: _all(syntax, "read") for name, syntax in _READERS.items()},
    "less": _all(_LESS, "read", skip=_plus_command),
    "more": _all(Syntax("n"), "read", skip=_plus_command),
    "ls": _all(_LS, "read", implied=_always),
    "tree": _all(_TREE, "read", implied=_always),
    "du": _all(_DU, "read", implied=_always),
    "grep": _pattern_first(_GREP, frozenset({"-e", "--regexp", "-f", "--file"}),
                           recursive=frozenset({"-r", "-R", "--recursive",
                                                "--dereference-recursive"})),
    "rg": _pattern_first(_RG, frozenset({"-e", "--regexp", "-f", "--file"}), always_cwd=True,
                         no_pattern=frozenset({"--files", "--type-list"})),
    "sed": _pattern_first(_SED, frozenset({"-e", "--expression", "-f", "--file"}),
                          writes_when=frozenset({"-i", "--in-place"})),
    "awk": _awk,
    "sort": _all(_SORT, "read"),
    "uniq": _second_written(_UNIQ),
    "xxd": _second_written(_XXD),
    "rm": _all(Syntax(), "remove"),
    "unlink": _all(Syntax(), "remove"),
    "rmdir": _all(Syntax(), "write"),
    "mkdir": _all(_MKDIR, "write"),
    "touch": _all(_TOUCH, "write"),
    "truncate": _all(_TRUNCATE, "write"),
    "shred": _all(_SHRED, "write"),
    "tee": _all(Syntax(), "write"),
    "chmod": _mode_first(_CHMOD, chmod=True),
    "chown": _mode_first(_CHOWN, chmod=False),
    "chgrp": _mode_first(_CHOWN, chmod=False),
    "cp": _copy(_COPY, "cp"),
    "mv": _copy(_COPY, "mv"),
    "ln": _copy(_COPY, "ln"),
    "install": _copy(_INSTALL, "install"),
    "find": _find,
    "dd": _dd,
    "tar": _tar,
    "gtar": _tar,
    "bsdtar": _tar,
    "git": _git,
    "make": _make,
    "gmake": _make,
}  # fmt: skip
for _alias, _same in (("egrep", "grep"), ("fgrep", "grep"), ("gsed", "sed"), ("gawk", "awk"),
                      ("mawk", "awk"), ("nawk", "awk")):  # fmt: skip
    _HANDLERS[_alias] = _HANDLERS[_same]

KNOWN_PROGRAMS = frozenset(_HANDLERS)
"""Programs whose path operands are checked (plus cd and pushd, in shell_parse)."""
