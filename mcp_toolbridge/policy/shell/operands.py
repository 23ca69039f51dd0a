"""Which arguments of known file commands are paths, and whether they are read or written.

:func:`path_operands` is called by :mod:`mcp_toolbridge.policy.shell.parse` on every simple command
(after wrappers are unwrapped). For a program it knows (``cat``, ``grep``, ``cp``, ``rm``,
``tar``, ``git``, ... see ``_HANDLERS``) it returns the arguments that name files, each with how
it is used: ``read``, ``write``, or ``remove`` (written without following a final symlink:
``rm link`` removes the link). The policy then checks them like redirect targets
(:mod:`mcp_toolbridge.policy.shell.hooks`).

Options that take a value are skipped, so ``head -n 5 f`` names only ``f``; an option whose
value is a file (``sort -o out``, ``git log --output=x``, ``tar -f a.tar``) names that file.
When the role of an operand is unclear it is a read target: nothing is silently dropped.
Options that read path names from a file (``wc --files0-from``, ``tar -T``) make the command
uncheckable. Programs not in the table are matched as text only.

This module is the table; the argv scanning is :mod:`mcp_toolbridge.policy.shell.scan`, the handlers
:mod:`mcp_toolbridge.policy.shell.handlers`, :mod:`mcp_toolbridge.policy.shell.programs` and
:mod:`mcp_toolbridge.policy.shell.git`.
"""

from __future__ import annotations

from mcp_toolbridge.policy.shell.argv import basename
from mcp_toolbridge.policy.shell.git import git_operands
from mcp_toolbridge.policy.shell.handlers import (
    Handler,
    always,
    copy_like,
    every_operand,
    mode_first,
    pattern_first,
    second_written,
)
from mcp_toolbridge.policy.shell.programs import (
    AWK,
    MAKE,
    TAR,
    awk_operands,
    dd_operands,
    find_operands,
    make_operands,
    tar_operands,
)
from mcp_toolbridge.policy.shell.scan import Found, Syntax


def path_operands(argv: tuple[str, ...]) -> Found:
    """The paths ``argv`` names and how it uses them (empty for programs not in the table)."""
    handler = _HANDLERS.get(basename(argv[0]))
    return handler(argv) if handler is not None else Found()


# -- the table ------------------------------------------------------------------------------------

_READ = Syntax()
_PLAIN = Syntax()
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
_SPLIT = Syntax(
    "abClnt",
    frozenset({"--suffix-length", "--additional-suffix", "--bytes", "--line-bytes", "--lines",
               "--number", "--separator", "--filter"}),
)  # fmt: skip
"""split [FILE [PREFIX]]: the pieces are PREFIX plus a suffix (``--additional-suffix`` too),
so ``split -l1 -a1 --additional-suffix=ig in .git/con`` writes ``.git/config``."""
_XXD = Syntax("cglosn", frozenset({"-cols", "-groupsize", "-len", "-seek", "-name"}))
_REALPATH = Syntax(paths={"--relative-to": "read", "--relative-base": "read"})
_NL = Syntax("bdfhilnsvw")
_PASTE = Syntax("d", frozenset({"--delimiters"}))
_FOLD = Syntax("w", frozenset({"--width"}))
_CMP = Syntax("in", frozenset({"--ignore-initial", "--bytes"}))
_STRINGS = Syntax("ntTeso", frozenset({"--bytes", "--radix", "--target", "--encoding"}))
_BASE64 = Syntax("w", frozenset({"--wrap"}))


def _plus_command(text: str) -> bool:
    return text.startswith("+")


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

_MORE = Syntax("n")
READ_ONLY: dict[str, Syntax] = {**_READERS, "less": _LESS, "more": _MORE, "ls": _LS,
                                "tree": _TREE, "du": _DU}  # fmt: skip
"""Programs that only read the paths they name, with their option syntax."""

_HANDLERS: dict[str, Handler] = {
    **{name: every_operand(syntax, "read") for name, syntax in _READERS.items()},
    "less": every_operand(_LESS, "read", skip=_plus_command),
    "more": every_operand(_MORE, "read", skip=_plus_command),
    "ls": every_operand(_LS, "read", implied=always),
    "tree": every_operand(_TREE, "read", implied=always),
    "du": every_operand(_DU, "read", implied=always),
    "grep": pattern_first(_GREP, frozenset({"-e", "--regexp", "-f", "--file"}),
                           recursive=frozenset({"-r", "-R", "--recursive",
                                                "--dereference-recursive"})),
    "rg": pattern_first(_RG, frozenset({"-e", "--regexp", "-f", "--file"}), always_cwd=True,
                         no_pattern=frozenset({"--files", "--type-list"})),
    "sed": pattern_first(_SED, frozenset({"-e", "--expression", "-f", "--file"}),
                          writes_when=frozenset({"-i", "--in-place"})),
    "awk": awk_operands,
    "sort": every_operand(_SORT, "read"),
    "uniq": second_written(_UNIQ),
    "xxd": second_written(_XXD),
    "split": second_written(_SPLIT),
    "rm": every_operand(_PLAIN, "remove"),
    "unlink": every_operand(_PLAIN, "remove"),
    "rmdir": every_operand(_PLAIN, "write"),
    "mkdir": every_operand(_MKDIR, "write"),
    "touch": every_operand(_TOUCH, "write"),
    "truncate": every_operand(_TRUNCATE, "write"),
    "shred": every_operand(_SHRED, "write"),
    "tee": every_operand(_PLAIN, "write"),
    "chmod": mode_first(_CHMOD, chmod=True),
    "chown": mode_first(_CHOWN, chmod=False),
    "chgrp": mode_first(_CHOWN, chmod=False),
    "cp": copy_like(_COPY, "cp"),
    "mv": copy_like(_COPY, "mv"),
    "ln": copy_like(_COPY, "ln"),
    "install": copy_like(_INSTALL, "install"),
    "find": find_operands,
    "dd": dd_operands,
    "tar": tar_operands,
    "gtar": tar_operands,
    "bsdtar": tar_operands,
    "git": git_operands,
    "make": make_operands,
    "gmake": make_operands,
}  # fmt: skip
for _alias, _same in (("egrep", "grep"), ("fgrep", "grep"), ("gsed", "sed"), ("gawk", "awk"),
                      ("mawk", "awk"), ("nawk", "awk")):  # fmt: skip
    _HANDLERS[_alias] = _HANDLERS[_same]

KNOWN_PROGRAMS = frozenset(_HANDLERS)
"""Programs whose path operands are checked (plus cd and pushd, followed by parse.py)."""

SYNTAXES: dict[str, Syntax] = {
    **READ_ONLY, "grep": _GREP, "egrep": _GREP, "fgrep": _GREP, "rg": _RG, "sed": _SED,
    "gsed": _SED, "awk": AWK, "gawk": AWK, "mawk": AWK, "nawk": AWK, "sort": _SORT,
    "uniq": _UNIQ, "xxd": _XXD, "split": _SPLIT, "rm": _PLAIN, "unlink": _PLAIN, "rmdir": _PLAIN,
    "mkdir": _MKDIR, "touch": _TOUCH, "truncate": _TRUNCATE, "shred": _SHRED, "tee": _PLAIN,
    "chmod": _CHMOD, "chown": _CHOWN, "chgrp": _CHOWN, "cp": _COPY, "mv": _COPY, "ln": _COPY,
    "install": _INSTALL, "make": MAKE, "gmake": MAKE, "tar": TAR, "gtar": TAR, "bsdtar": TAR,
}  # fmt: skip
"""The option syntax of the programs above that read options as GNU getopt does (find, dd and
git have grammars of their own): which options take a value, so a ``--`` that is one is not
taken for the end of the options."""
