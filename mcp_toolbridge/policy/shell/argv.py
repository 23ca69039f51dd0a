"""What one simple command really runs: wrappers unwrapped, dangerous flags and variables found.

Used by :mod:`mcp_toolbridge.policy.shell.parse` on every simple command it finds. Pure text
work on an argv that bash would build; nothing here runs anything.

- :func:`unwrap` strips process wrappers (``env``, ``timeout``, ``nice``, ``nohup``,
  ``stdbuf``, ``time``, ``command``, ``builtin``, ``setsid``, ``ionice``, ``busybox``,
  ``xargs``) with their options, so the inner command is what rules see, and returns the
  script of a nested ``bash -c`` / ``sh -c`` for recursive parsing. Programs that run another
  command in a way that cannot be followed (``sudo``, ``eval``, ``source``, ``exec``, ...) make
  the command uncheckable.
- :func:`risky_variable` says whether assigning a variable can change what later runs
  (``PATH``, ``LD_PRELOAD``, ``GIT_SSH_COMMAND``, ``BASH_ENV``, ...).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

XARGS_INPUT = "{xargs input}"
"""Stands for the arguments xargs reads from stdin, so ``xargs rm`` is never matched as ``rm``."""
SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "yash"})
OPAQUE_PROGRAMS: dict[str, str] = {
    "sudo": "runs a command as another user",
    "doas": "runs a command as another user",
    "su": "runs a command as another user",
    "pkexec": "runs a command as another user",
    "runuser": "runs a command as another user",
    "chroot": "runs a command under another root",
    "eval": "runs text built at run time",
    "source": "runs a script file",
    ".": "runs a script file",
    "exec": "replaces the shell (and can open descriptors or sockets)",
    "trap": "registers a command string to run later",
    "alias": "defines an alias",
    "enable": "loads shell builtins",
    "hash": "changes what a command name runs",
    "watch": "runs its arguments through a shell",
    "script": "runs its arguments through a shell",
    "coproc": "runs a coprocess",
}
GLOB_OPTIONS = frozenset(
    {"dotglob", "extglob", "globstar", "nocaseglob", "nullglob", "failglob", "globskipdots",
     "globasciiranges", "nocasematch"}
)  # fmt: skip
"""Shell options that change what a pattern matches (dotglob makes ``*`` match ``.git``)."""
_SHELL_FLAGS = frozenset("abefhimnprstuvxBCEHPT")
_SHELL_LONG = frozenset({"--login", "--noprofile", "--norc", "--posix", "--noediting"})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\+?=")


def basename(program: str) -> str:
    return program.rsplit("/", 1)[-1]


# -- variables -------------------------------------------------------------------------------

_RISKY_EXACT = frozenset(
    {
        "PATH", "IFS", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "GLOBIGNORE",
        "HOME", "EDITOR", "VISUAL", "PAGER", "BROWSER", "LESSOPEN", "LESSCLOSE", "SHELL",
        "ZDOTDIR", "XDG_CONFIG_HOME", "GNUPGHOME", "TMPDIR", "MAKEFLAGS", "MAKE", "CC", "CXX",
        "LD", "AR", "GZIP", "RUSTC", "RUSTDOC", "GOFLAGS", "TERMINAL", "RSYNC_RSH",
        "RSYNC_CONNECT_PROG", "WGETRC", "CURL_HOME", "OPENSSL_CONF", "VIMINIT", "EXINIT",
        "PHPRC", "PSQLRC", "ERL_AFLAGS", "ERL_ZFLAGS",
    }
)  # fmt: skip
_RISKY_PREFIXES = (
    "LD_", "DYLD_", "GIT_", "BASH", "NPM_CONFIG_", "PIP_", "CARGO_", "PERL", "LUA_INIT",
    "R_PROFILE",
)  # fmt: skip
_RISKY_PARTS = (
    "PATH", "_OPTIONS", "_OPTS", "OPT", "_COMMAND", "_CMD", "EDITOR", "PAGER", "ASKPASS",
    "SHELL", "WRAPPER", "PRELOAD", "HOOK", "CONFIG", "PROGRAM", "_EXEC", "RUBY", "PYTHON",
    "NODE", "JAVA", "LIB",
)  # fmt: skip
_HARMLESS = frozenset(
    {"PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED", "PYTHONIOENCODING",
     "PYTHONUTF8", "NODE_ENV", "NODE_NO_WARNINGS"}
)  # fmt: skip


def risky_variable(name: str) -> bool:
    """True when setting ``name`` can change which program runs or what it loads."""
    upper = name.upper()
    if upper in _HARMLESS:
        return False
    return (
        upper in _RISKY_EXACT
        or upper.startswith(_RISKY_PREFIXES)
        or any(part in upper for part in _RISKY_PARTS)
    )


# -- option scanning -------------------------------------------------------------------------


def long_option(word: str, names: tuple[str, ...] | frozenset[str]) -> str | None:
    """The long option of ``names`` that ``word`` names, or None: the option itself
    (``--in-place``, ``--in-place=.bak``) or an abbreviation of it (``--in-pl``), which GNU
    getopt_long, argp, less and git's parse-options all accept when it is unambiguous among
    the program's own options. Any prefix counts here, since the program's other options are
    not known: an abbreviation the program finds ambiguous is refused by it anyway."""
    name = word.split("=", 1)[0]
    if not name.startswith("--") or len(name) <= 2:
        return None
    return next((full for full in sorted(names) if full.startswith(name)), None)


def scan_options(
    args: tuple[str, ...], short_value: str = "", long_value: frozenset[str] = frozenset()
) -> tuple[list[str], int]:
    """(the option words, the index of the first operand) in ``args``.

    ``short_value`` lists short options that take a value (``-n 5`` or ``-n5``);
    ``long_value`` long options that take one (``--signal KILL`` or ``--signal=KILL``).
    Values are skipped and not returned.
    """
    options: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return options, i + 1
        if arg.startswith("--"):
            options.append(arg)
            i += 2 if ("=" not in arg and arg in long_value) else 1
        elif arg.startswith("-") and len(arg) > 1:
            options.append(arg)
            takes = next((k for k, ch in enumerate(arg[1:], 1) if ch in short_value), None)
            i += 2 if takes == len(arg) - 1 else 1
        else:
            return options, i
    return options, i


def after_options(
    args: tuple[str, ...], short_value: str = "", long_value: frozenset[str] = frozenset()
) -> int:
    """Index of the first operand in ``args`` (see :func:`scan_options`)."""
    return scan_options(args, short_value, long_value)[1]


@dataclass(frozen=True, slots=True)
class Unwrapped:
    argv: tuple[str, ...]
    """The innermost command that runs (the input argv when nothing wraps it)."""
    script: str | None = None
    """The script of a nested ``bash -c`` (or ``sh -c``...), to be parsed in turn."""
    reasons: tuple[str, ...] = ()
    """Why the command cannot be checked rule by rule (empty: it can)."""
    writes: tuple[str, ...] = ()
    """Files a wrapper option writes (``time -o FILE``)."""
    reads: tuple[str, ...] = ()
    """Files a wrapper option reads (``xargs -a FILE``)."""


@dataclass(slots=True)
class _Files:
    """Files a wrapper's own options name."""

    reads: list[str]
    writes: list[str]


_Step = Callable[[tuple[str, ...], list[str], _Files], "tuple[str, ...] | None"]


def _env(argv: tuple[str, ...], reasons: list[str], files: _Files) -> tuple[str, ...] | None:
    args = argv[1:]
    if args[:1] == ("-",):
        args = args[1:]  # "env -" is "env -i"
    options, start = scan_options(args, "uCPS", frozenset({"--unset", "--chdir", "--split-string"}))
    for option in options:
        short = option[1:] if not option.startswith("--") else ""
        if option.startswith("--split-string") or "S" in short or "P" in short:
            reasons.append(f"env {option} changes how the command line is built")
        elif option.startswith("--chdir") or "C" in short:
            reasons.append(f"env {option} runs the command in another directory")
    rest = args[start:]
    while rest and (match := _ASSIGNMENT.match(rest[0])) is not None:
        if risky_variable(match.group(1)):
            reasons.append(f"env sets {match.group(1)}, which can change what runs")
        rest = rest[1:]
    return rest or None


def _simple(short_value: str, long_value: frozenset[str], *, operand: bool = False) -> _Step:
    """A wrapper whose command follows its options (and one operand, e.g. timeout's duration)."""

    def step(argv: tuple[str, ...], reasons: list[str], files: _Files) -> tuple[str, ...] | None:
        args = argv[1:]
        start = after_options(args, short_value, long_value) + (1 if operand else 0)
        return args[start:] or None

    return step


def _time(argv: tuple[str, ...], reasons: list[str], files: _Files) -> tuple[str, ...] | None:
    args = argv[1:]
    for i, arg in enumerate(args):
        if not arg.startswith("-") or arg == "--":
            break
        if arg.startswith("--output="):
            files.writes.append(arg.split("=", 1)[1])
        elif arg in ("-o", "--output") and i + 1 < len(args):
            files.writes.append(args[i + 1])
    return args[after_options(args, "fo", frozenset({"--format", "--output"})) :] or None


def _command(argv: tuple[str, ...], reasons: list[str], files: _Files) -> tuple[str, ...] | None:
    args = argv[1:]
    start = after_options(args)
    if any(("v" in a or "V" in a) for a in args[:start] if a != "--"):
        return None  # command -v / -V only looks the name up
    return args[start:] or None


def _ionice(argv: tuple[str, ...], reasons: list[str], files: _Files) -> tuple[str, ...] | None:
    args = argv[1:]
    start = after_options(args, "cnpPu", frozenset({"--class", "--classdata", "--pid"}))
    if any(a.startswith(("-p", "-P", "-u", "--pid", "--pgid", "--uid")) for a in args[:start]):
        return None  # acts on running processes, runs nothing
    return args[start:] or None


def _xargs(argv: tuple[str, ...], reasons: list[str], files: _Files) -> tuple[str, ...] | None:
    args = argv[1:]
    long_value = frozenset(
        {"--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars"}
    )
    start = after_options(args, "adEILnPs", long_value | {"--process-slot-var"})
    k = 0
    while k < start:  # -a FILE / --arg-file=FILE: the arguments are read from a file
        option = args[k]
        k += 1
        if option.startswith("--arg-file"):
            value = option.partition("=")[2] or (args[k] if k < start else "")
            files.reads.append(value)
        elif option.startswith("-") and not option.startswith("--"):
            for n, ch in enumerate(option[1:], 1):
                if ch == "a":
                    files.reads.append(option[n + 1 :] or (args[k] if k < start else ""))
                if ch in "adEILnPs":
                    k += 0 if option[n + 1 :] else 1
                    break
    inner = args[start:]
    return (*(inner or ("echo",)), XARGS_INPUT)


_WRAPPERS: dict[str, _Step] = {
    "env": _env,
    "timeout": _simple("sk", frozenset({"--signal", "--kill-after"}), operand=True),
    "nice": _simple("n", frozenset({"--adjustment"})),
    "nohup": _simple("", frozenset()),
    "stdbuf": _simple("ioe", frozenset({"--input", "--output", "--error"})),
    "setsid": _simple("", frozenset()),
    "time": _time,
    "command": _command,
    "builtin": _simple("", frozenset()),
    "ionice": _ionice,
    "busybox": _simple("", frozenset()),
    "xargs": _xargs,
}


WRAPPERS = frozenset(_WRAPPERS)
"""Programs that run a command given in their arguments (unwrapped by :func:`unwrap`)."""


def shell_script(argv: tuple[str, ...]) -> tuple[str | None, str | None]:
    """(the ``-c`` script, None) for ``bash [opts] -c SCRIPT``; (None, None) for a shell that
    runs a file or stdin; (None, reason) for options that cannot be followed."""
    args = argv[1:]
    has_c = False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--" or arg in ("-", "+"):
            i += 1
            break
        if arg.startswith("--"):
            if arg not in _SHELL_LONG:
                return None, f"{basename(argv[0])} option {arg} is not understood"
            i += 1
            continue
        if arg[0] not in "-+" or len(arg) == 1:
            break
        skip = 0
        shell = basename(argv[0])
        for ch in arg[1:]:
            if ch == "c":
                has_c = True
            elif ch in "oO":
                skip += 1
                value = args[i + skip] if i + skip < len(args) else ""
                if value in GLOB_OPTIONS or value == "keyword":
                    return None, f"{shell} {arg[0]}{ch} {value} changes how words expand"
            elif ch == "k":
                return None, f"{shell} {arg[0]}k turns NAME=value words into assignments"
            elif ch not in _SHELL_FLAGS:
                return None, f"{shell} option {arg} is not understood"
        i += 1 + skip
    if not has_c:
        return None, None
    if i >= len(args):
        return None, f"{basename(argv[0])} -c has no script"
    return args[i], None


MAX_WRAPPERS = 16


def unwrap(argv: tuple[str, ...]) -> Unwrapped:
    """Strip wrappers until the command that really runs is reached."""
    reasons: list[str] = []
    files = _Files([], [])
    current = argv
    for _ in range(MAX_WRAPPERS):
        name = basename(current[0])
        if name in OPAQUE_PROGRAMS:
            reasons.append(f"{name} {OPAQUE_PROGRAMS[name]}")
            break
        step = _WRAPPERS.get(name)
        if step is None:
            break
        inner = step(current, reasons, files)
        if inner is None:
            break
        if name == "xargs" and basename(inner[0]) in SHELLS and shell_script(inner)[0]:
            reasons.append("xargs feeds its input into a shell script")
            break
        current = inner
    else:
        reasons.append(f"more than {MAX_WRAPPERS} nested wrappers")
    script: str | None = None
    if basename(current[0]) in SHELLS:
        script, why = shell_script(current)
        if why is not None:
            reasons.append(why)
    return Unwrapped(current, script, tuple(reasons), tuple(files.writes), tuple(files.reads))
