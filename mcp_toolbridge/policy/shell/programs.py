"""Path-operand handlers for programs with an argument grammar of their own.

``find`` (start points before the expression, ``-delete``, ``-newer F``), ``dd``
(``if=``/``of=``), ``tar`` (old-style bundled letters, the mode deciding whether the archive
is read or written, ``-C`` changing where members are), ``awk`` (the program, ``var=value``
operands, gawk's dump and profile files) and ``make`` (only ``-C`` and ``-f``). The table
that maps program names to them is :mod:`mcp_toolbridge.policy.shell.operands`.
"""

from __future__ import annotations

import os

from mcp_toolbridge.policy.shell.argv import long_option
from mcp_toolbridge.policy.shell.handlers import pattern_first
from mcp_toolbridge.policy.shell.scan import (
    Access,
    Found,
    Links,
    Operand,
    Syntax,
    found_of,
    in_directory,
    scan,
)


def find_operands(argv: tuple[str, ...]) -> Found:
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


def dd_operands(argv: tuple[str, ...]) -> Found:
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


_TAR_LONG_TABLES = (
    frozenset(_TAR_LONG_PATHS),
    frozenset(n for n in _TAR_MODES if n.startswith("--")),
    _TAR_LONG_VALUES,
)


def _tar_long(arg: str) -> str:
    """The long option ``arg`` names, an abbreviation (``--dir=X``, ``--extr``) read as the
    option it abbreviates; a path option first where the prefix fits several."""
    name = arg.split("=", 1)[0]
    if any(name in table for table in _TAR_LONG_TABLES):
        return name
    return next((full for t in _TAR_LONG_TABLES if (full := long_option(arg, t))), name)


TAR = Syntax("fCTXg" + _TAR_VALUES, _TAR_LONG_VALUES | frozenset(_TAR_LONG_PATHS))
"""tar's options read as GNU getopt does (old-style bundled letters aside)."""


def tar_operands(argv: tuple[str, ...]) -> Found:
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
            members.append((index, in_directory(directory, arg), not directory))
            continue
        if arg == "--":
            only_operands = True
            continue
        if arg.startswith("--"):
            _name, eq, value = arg.partition("=")
            name = _tar_long(arg)
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


AWK = Syntax(
    "vFeil",
    frozenset({"--assign", "--field-separator", "--source", "--include", "--load"}),
    {"-f": "read", "--file": "read"},
    attached="dDLopM",
)
MAKE = Syntax(
    "jlWo",
    frozenset({"--jobs", "--load-average", "--what-if", "--old-file", "--new-file"}),
    {"-C": "read", "--directory": "read", "-f": "read", "--file": "read", "--makefile": "read"},
)

_AWK_FILES = {"-d": "awkvars.out", "-o": "awkprof.out", "-p": "awkprof.out",
              "--dump-variables": "awkvars.out", "--pretty-print": "awkprof.out",
              "--profile": "awkprof.out"}  # fmt: skip
_awk_program_and_files = pattern_first(
    AWK, frozenset({"-f", "--file", "-e", "--source"}), skip_assignments=True
)


def awk_operands(argv: tuple[str, ...]) -> Found:
    """awk: the program, then files (``var=value`` operands are assignments); gawk's
    ``-d``/``-o``/``-p`` write a file (attached name, or a default one)."""
    out = _awk_program_and_files(argv)
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


def make_operands(argv: tuple[str, ...]) -> Found:
    """make: only -C and -f name paths (operands are targets and VAR=value)."""
    return found_of(scan(argv, MAKE))
