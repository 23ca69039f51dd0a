"""What a command's words can become: options, subcommands, scripts and names the line does
not show.

bash replaces an unquoted pattern (``*``, ``?*``, ``[-a]*``, ``*.txt``) with the names of the
files it matches before the program starts, and a name can begin with ``-``: in a folder
holding a file named ``-delete``, ``find *`` runs ``find -delete ...``; with files named
``--checkpoint=1`` and ``--checkpoint-action=exec=sh x.sh``, ``tar cf a.tar *`` runs x.sh.
``xargs`` does the same with the words it reads (``ls | xargs curl``). The flags a line shows
are judged by :mod:`~mcp_toolbridge.policy.shell.flags` and
:mod:`~mcp_toolbridge.policy.shell.operands`; this module judges the words that can still
become one, from the command line alone (what the folder holds when the check runs plays no
part, so nothing changes between the check and the run):

- :func:`hidden_option`: for a program whose flags the sub-policy judges (:data:`JUDGED`), a
  word that can expand to a name beginning with ``-``
  (:func:`~mcp_toolbridge.policy.shell.words.may_begin_with_dash`) is any flag that program
  has, unless the program has stopped reading options before it: a ``--`` where it honours
  one (not find, whose expression has no end, nor dd, whose operands are ``key=value``), or
  the program text for awk. A pattern where a program expects something other than a file
  can be anything: git's subcommand, tar's old-style option letters, sed's script, awk's
  program, any dd operand. Programs whose every option only changes what they print
  (:data:`HARMLESS`: cat, ls, head...) are not judged. The command then needs an exact allow
  rule of its own, like a dangerous flag written out.
- :func:`expansion_reasons`: what makes the whole line uncheckable: a pattern that becomes
  the command a wrapper runs or one of its options (``timeout 5 *``, ``env *``), a name a
  builtin assigns (``export *``, ``read *``), ``shopt`` changing what patterns match
  (``dotglob`` makes ``*`` match ``.git``), and ``set -k``, which turns every ``NAME=value``
  word into an assignment.
"""

from __future__ import annotations

from mcp_toolbridge.policy.shell.argv import (
    GLOB_OPTIONS,
    OPAQUE_PROGRAMS,
    SHELLS,
    WRAPPERS,
    XARGS_INPUT,
    basename,
)
from mcp_toolbridge.policy.shell.cwd import DIR_CHANGERS
from mcp_toolbridge.policy.shell.flags import FLAG_CHECKED
from mcp_toolbridge.policy.shell.git import SUBCOMMAND_OPTIONS, git_subcommand
from mcp_toolbridge.policy.shell.operands import KNOWN_PROGRAMS, READ_ONLY, SYNTAXES
from mcp_toolbridge.policy.shell.scan import Syntax, scan
from mcp_toolbridge.policy.shell.words import expands, may_begin_with_dash

HARMLESS = (
    frozenset(
        name for name, syntax in READ_ONLY.items() if not syntax.paths and not syntax.names_from
    )
    - FLAG_CHECKED
)
"""Programs whose every option only changes what they print: they only read the paths they
name, and no option of theirs names a path, reads names from a file or is flagged."""
JUDGED = (KNOWN_PROGRAMS | FLAG_CHECKED | SHELLS) - HARMLESS
"""Programs whose flags the sub-policy judges (path operands, dangerous flags, shells)."""
VAR_BUILTINS = frozenset(
    {"export", "declare", "typeset", "local", "readonly", "read", "mapfile", "readarray",
     "printf", "getopts", "let", "unset"}
)  # fmt: skip
"""Builtins that set shell variables named by their arguments."""
_OPTION_BUILTINS = frozenset({"shopt", "set"})
"""Builtins whose options change how later words expand."""
KNOWN = (
    JUDGED
    | HARMLESS
    | WRAPPERS
    | VAR_BUILTINS
    | DIR_CHANGERS
    | _OPTION_BUILTINS
    | frozenset(OPAQUE_PROGRAMS)
)
"""Every program the sub-policy has a rule for."""

_NO_END = frozenset({"find", "dd"})
"""Programs that read options (find's expression, dd's ``key=value``) after a ``--``."""
_AWKS = frozenset({"awk", "gawk", "mawk", "nawk"})
_PROGRAM_ENDS = _AWKS | SHELLS
"""Programs that stop reading options at their first operand (the program, the script)."""
_SHELL_OPTIONS = Syntax("oO", frozenset({"--rcfile", "--init-file"}))
_SCRIPTED = {
    **dict.fromkeys(("sed", "gsed"), frozenset({"-e", "--expression", "-f", "--file"})),
    **dict.fromkeys(_AWKS, frozenset({"-f", "--file", "-e", "--source"})),
}
"""Programs whose first operand is code unless one of these options gave it."""
_TARS = frozenset({"tar", "gtar", "bsdtar"})
_TAR_VALUE_LETTERS = "fCTXgbHKLNV"
"""Old-style tar letters that take the next word as their value (tar cfC a.tar dir)."""
_EXAMPLES = {
    "find": "-delete", "rm": "-rf", "rmdir": "--parents", "tar": "--checkpoint-action=exec=CMD",
    "git": "--output=FILE", "sed": "-i", "awk": "-fFILE", "cp": "--target-directory=DIR",
    "mv": "--target-directory=DIR", "ln": "--target-directory=DIR",
    "install": "--strip-program=CMD", "chmod": "-R", "chown": "--reference=FILE",
    "chgrp": "--reference=FILE", "grep": "--file=FILE", "rg": "--pre=CMD",
    "sort": "--output=FILE", "curl": "--config=FILE", "wget": "--execute=CMD",
    "rsync": "--rsh=CMD", "zip": "--unzip-command=CMD", "ssh": "-oProxyCommand=CMD",
    "split": "--filter=CMD", "man": "--pager=CMD", "make": "--file=FILE",
    "diff": "--recursive", "touch": "--reference=FILE", "truncate": "--size=0",
    "tee": "--append", "shred": "--remove", "mkdir": "--mode=777", "xxd": "-revert",
    "dd": "of=FILE",
}  # fmt: skip
for _shell in SHELLS:
    _EXAMPLES[_shell] = "-c"
for _alias, _same in (("gtar", "tar"), ("bsdtar", "tar"), ("gsed", "sed"), ("gawk", "awk"),
                      ("mawk", "awk"), ("nawk", "awk"), ("egrep", "grep"), ("fgrep", "grep"),
                      ("scp", "ssh"), ("sftp", "ssh"), ("gmake", "make")):  # fmt: skip
    _EXAMPLES[_alias] = _EXAMPLES[_same]

Kinds = dict[int, str]
"""argv index -> what the word there can become: ``dash`` (a name beginning with ``-``),
``pattern`` (any other name), ``input`` (the words xargs reads)."""


def word_kinds(argv: tuple[str, ...], raws: tuple[str, ...] | None) -> Kinds:
    """The words of ``argv`` (``raws`` as written, aligned with it) that bash or xargs
    replaces with other words."""
    kinds: Kinds = {}
    if raws is not None:
        for index in range(1, min(len(argv), len(raws))):
            raw = raws[index]
            if expands(raw):
                kinds[index] = "dash" if may_begin_with_dash(raw) else "pattern"
    if argv[-1] == XARGS_INPUT:
        kinds[len(argv) - 1] = "input"
    return kinds


def hidden_option(argv: tuple[str, ...], raws: tuple[str, ...] | None) -> str | None:
    """Why a word of ``argv`` can become an option (or a subcommand, a script, an operand)
    that the line does not show; None when none can. ``raws`` are the words as written,
    aligned with ``argv`` (the xargs input, last, has none)."""
    name = basename(argv[0])
    if name not in JUDGED:
        return None
    kinds = word_kinds(argv, raws)
    if not kinds:
        return None
    found = _first_hidden(name, argv, kinds)
    if found is None:
        return None
    index, role = found
    return _reason(name, raws[index] if raws is not None and index < len(raws) else None, role)


def _first_hidden(name: str, argv: tuple[str, ...], kinds: Kinds) -> tuple[int, str] | None:
    """(index, role) of the first word that can become something the line does not show."""
    first = min(kinds)
    if name == "dd":
        return first, "operand"
    start = 1
    syntax = SYNTAXES.get(name, _SHELL_OPTIONS if name in SHELLS else None)
    if name == "git":
        sub = git_subcommand(_shadow(argv, kinds, first))
        if first <= sub:
            return first, "subcommand"
        start, syntax = sub + 1, SUBCOMMAND_OPTIONS
    elif name in _TARS and not argv[1].startswith("-"):  # old style: tar cf a.tar ...
        if 1 in kinds:
            return 1, "letters"
        start = 2 + sum(1 for ch in argv[1] if ch in _TAR_VALUE_LETTERS)
    dashy = [k for k in sorted(kinds) if kinds[k] != "pattern"]
    stop = dashy[0] if dashy else len(argv)
    if stop < start:
        return stop, "option"  # the value of an old-style tar letter: the rest are options
    shadow = _shadow(argv, kinds, stop)
    ended, operands, given = _read_options(shadow, syntax, start)
    ended = (ended or (name in _PROGRAM_ENDS and bool(operands))) and name not in _NO_END
    if dashy and not ended:
        return stop, "option"
    if name in _SCRIPTED and not given & _SCRIPTED[name]:
        script = operands[0] if operands else stop
        if script in kinds:
            return script, "script"
    return None


def _shadow(argv: tuple[str, ...], kinds: Kinds, stop: int) -> tuple[str, ...]:
    """``argv[:stop]`` with every pattern in it read as one operand."""
    return tuple("./pattern" if k in kinds else argv[k] for k in range(stop))


def _read_options(
    argv: tuple[str, ...], syntax: Syntax | None, start: int
) -> tuple[bool, list[int], set[str]]:
    """(a ``--`` ended the options, the indices of the operands, the options given) in
    ``argv``, read from ``start`` as GNU getopt does. Without a syntax every option may take
    a value, so a ``--`` right after one is not taken for the end."""
    if syntax is not None:
        found = scan(argv, syntax, start)
        return found.ended, [k for k, _ in found.operands], found.options
    operands: list[int] = []
    options: set[str] = set()
    for k in range(start, len(argv)):
        word = argv[k]
        if word == "--" and (k == start or not argv[k - 1].startswith("-")):
            return True, [*operands, *range(k + 1, len(argv))], options
        if word.startswith("-") and word != "-":
            options.add(word.split("=", 1)[0])
        else:
            operands.append(k)
    return False, operands, options


def _example(name: str) -> str | None:
    """An option of ``name`` worth fearing: from the table above, else one of its options
    that names a path or reads names from a file."""
    if name in _EXAMPLES:
        return _EXAMPLES[name]
    syntax = SYNTAXES.get(name)
    found = [*syntax.names_from, *syntax.paths] if syntax is not None else []
    named = sorted(o for o in found if o.startswith("--")) or sorted(found)
    return f"{named[0]}=FILE" if named and named[0].startswith("--") else next(iter(named), None)


def _reason(name: str, raw: str | None, role: str) -> str:
    example = _example(name)
    such = f" such as {example} (from a file of that name)" if example else ""
    if raw is None:
        what = {"subcommand": "its subcommand", "letters": "its option letters",
                "script": "its script", "operand": "operands such as of=FILE"}.get(
            role, f"options{such}")  # fmt: skip
        fix = f"; write xargs {name} -- instead" if role == "option" and name not in _NO_END else ""
        return f"xargs passes {name} the words it reads, which can become {what}{fix}"
    if role == "subcommand":
        return (
            f"{raw!r} can expand to a git subcommand or option (from a file named config or "
            f"-c); name the subcommand first, then '--' before {raw!r}"
        )
    if role == "letters":
        return (
            f"{raw!r} can expand to {name}'s option letters (a file named cIf runs a program); "
            f"write the options first, then '--' before {raw!r}"
        )
    if role == "script":
        return (
            f"{raw!r} can expand to the {name} script (from a file named as code); write the "
            f"script first, then '--' before {raw!r}"
        )
    if role == "operand":
        return (
            f"{raw!r} can expand to a dd operand such as of=FILE (from a file of that name); "
            "name if= and of= yourself"
        )
    safe = f"./{raw}"
    quote = f" (or quote it, if {name} is to see the pattern itself)"
    if name in _NO_END:
        fix = f"write {safe!r} instead{quote}"
    elif name == "git":
        fix = f"write {safe!r}{quote}, or put '--' after the subcommand, before it"
    else:
        fix = f"write {safe!r}{quote}, or put '--' before it"
    return f"{raw!r} can expand to an option of {name}{such}; {fix}"


def expansion_reasons(
    argv: tuple[str, ...], raws: tuple[str, ...], final: tuple[str, ...], offset: int | None
) -> list[str]:
    """Why the words of one simple command make the line uncheckable. ``argv`` and ``raws``
    are the command as written, ``final`` what runs once its wrappers are unwrapped: it
    starts at ``argv[offset]`` (``offset`` None when the two cannot be aligned)."""
    reasons: list[str] = []
    name = basename(final[0])
    inner = raws[offset:] if offset is not None else ()
    ahead = raws[1:] if offset is None else raws[1:offset]  # the wrappers' own words
    if name in WRAPPERS and offset is not None:  # one that found no command to run
        ahead += inner[1:]
    for raw in ahead:
        if expands(raw):
            reasons.append(
                f"{raw!r} can expand to an option of {basename(argv[0])} or to the command it runs"
            )
            break
    if offset and expands(inner[0]):
        reasons.append(f"the command name {inner[0]!r} is a pattern")
    if name in VAR_BUILTINS and inner:
        reasons += _assigned(name, final, inner)
    elif name == "shopt":
        reasons += _shopt(final, inner)
    elif name == "set":
        reasons += _set(final, inner)
    return reasons


def _assigned(name: str, argv: tuple[str, ...], raws: tuple[str, ...]) -> list[str]:
    """``export *``, ``read *``, ``printf -v *``: a pattern can name any variable (PATH)."""
    last = len(raws)
    if name == "printf":  # the arguments after the format are only printed
        k = 1
        while k < len(argv) and argv[k].startswith("-") and argv[k] != "--":
            k += 2 if argv[k] == "-v" else 1
        last = min(last, k + 1 + int(argv[k : k + 1] == ("--",)))
    for raw in raws[1:last]:
        if expands(raw):
            return [f"{raw!r} can expand to a variable that {name} sets (such as PATH)"]
    return []


def _shopt(argv: tuple[str, ...], raws: tuple[str, ...]) -> list[str]:
    setting = any(a.startswith("-") and set(a[1:]) & set("su") for a in argv[1:])
    for index, arg in enumerate(argv[1:], 1):
        if index < len(raws) and expands(raws[index]):
            return [f"{raws[index]!r} can expand to any shopt option"]
        if setting and arg in GLOB_OPTIONS:
            return [f"shopt -s/-u {arg} changes what patterns match (dotglob: * matches .git)"]
    return []


def _set(argv: tuple[str, ...], raws: tuple[str, ...]) -> list[str]:
    for index, arg in enumerate(argv[1:], 1):
        if arg == "--":
            break
        if index < len(raws) and expands(raws[index]):
            return [f"{raws[index]!r} can expand to an option of set; write set -- {raws[index]}"]
        if arg[:1] in "-+" and "k" in arg[1:] and not arg.startswith("--"):
            return [f"set {arg} turns every NAME=value word into an assignment"]
        if arg == "keyword" and argv[index - 1] in ("-o", "+o"):
            return [f"set {argv[index - 1]} keyword turns every NAME=value word into an assignment"]
    return []
