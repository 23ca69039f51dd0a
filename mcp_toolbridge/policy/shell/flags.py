"""Flags that turn a harmless-looking command into one that runs programs or writes files.

:func:`flag_reason` is called by :mod:`mcp_toolbridge.policy.shell.parse` on every simple command
(after wrappers are unwrapped). A command it flags (``find -exec``, ``sed -i`` or a sed script
with ``w``/``e``, ``git -c``, ``git config`` that sets anything, ``git difftool``, ``rg --pre``,
``tar -I``/``--to-command``, ``awk`` with ``system()``, recursive walks that follow symbolic
links such as ``grep -R``) is uncheckable by prefix or glob rules: it needs an exact allow rule
of its own.

Long options are matched as the programs read them: written out or abbreviated
(``sed --in-pl``, ``tar --checkpoint-act=exec=...``, ``git fetch --upl=...``), since getopt_long
and git's parse-options take any unambiguous prefix (:func:`~.argv.long_option`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from mcp_toolbridge.policy.shell.argv import basename, long_option
from mcp_toolbridge.policy.shell.sed import sed_check

_FIND_ACTIONS = frozenset(
    {"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"}
)
_TAR_LONG = (
    "--to-command", "--use-compress-program", "--checkpoint-action", "--info-script",
    "--new-volume-script", "--rsh-command", "--rmt-command",
)  # fmt: skip
_GIT_VALUE_GLOBALS = frozenset(
    {"-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--list-cmds",
     "--attr-source"}
)  # fmt: skip
_GIT_SUB_FLAGS = ("--upload-pack", "--receive-pack", "--exec", "--open-files-in-pager")
_GIT_RUNS = {
    "difftool": "git difftool runs an external diff program",
    "mergetool": "git mergetool runs an external merge program",
    "filter-branch": "git filter-branch runs shell commands given as filters",
    "filter-repo": "git filter-repo runs Python callbacks given on its command line",
    "send-email": "git send-email runs programs (--sendmail-cmd, --to-cmd, ...) and sends mail",
    "instaweb": "git instaweb starts a web server and a browser",
    "hook": "git hook runs repository hooks",
    "shell": "git shell runs commands",
    "web--browse": "git web--browse starts a browser",
}
_GIT_SUB_OPTIONS = {
    "clone": ("-c", "--config", "--template", "-u", "--upload-pack"),
    "init": ("--template",),
    "ls-remote": ("-u", "--upload-pack"),
    "rebase": ("-x", "--exec"),
    "help": ("-w", "--web"),
    "daemon": ("--access-hook",),
    "grep": ("-O", "--open-files-in-pager"),
    "submodule": ("foreach",),
    "bisect": ("run",),
}
_GIT_CONFIG_SCOPES = ("--global", "--system", "--file", "-f", "--blob")
_GIT_CONFIG_READS = frozenset(
    {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--get-colorbool",
     "--list", "-l"}
)  # fmt: skip
_GIT_CONFIG_WRITES = frozenset(
    {"--add", "--unset", "--unset-all", "--replace-all", "--rename-section", "--remove-section",
     "--edit", "-e"}
)  # fmt: skip
_GIT_CONFIG_VALUES = frozenset({"--type", "--default", "--comment", "--value", "--url"})
GIT_CONFIG_RISK = (
    "git config can set aliases (alias.x = !cmd), core.pager, core.editor, core.sshCommand, "
    "core.hooksPath, core.fsmonitor, filters, credential helpers and other options that make "
    "git run programs"
)
_AWK_RISK = re.compile(r"system|getline|\||\bprintf?\b[^;{}\n]*>|@\s*(?:include|load)\b")


def flag_reason(argv: tuple[str, ...]) -> str | None:
    """Why ``argv`` can run programs or write files through a flag; None when it cannot."""
    name = basename(argv[0])
    check = _FLAG_CHECKS.get(name)
    return check(argv) if check is not None else None


def _find(argv: tuple[str, ...]) -> str | None:
    hit = next((a for a in argv[1:] if a in _FIND_ACTIONS), None)
    return f"find {hit} runs commands, deletes or writes files" if hit else None


def _git(argv: tuple[str, ...]) -> str | None:
    """Options and subcommands that make git run a program other than itself (the whole
    class: config that sets aliases, pagers, editors, hooks, ssh commands and filters; hooks;
    external diff and merge tools; shell filters; upload/receive-pack programs; ext:: and fd::
    transports)."""
    args = argv[1:]
    for arg in args:
        if arg.startswith(("ext::", "fd::")):
            return f"the git transport {arg.split('::', 1)[0]}:: runs a program"
    i = 0
    while i < len(args) and args[i].startswith("-"):
        arg = args[i]
        if arg.startswith(("-c", "--config-env", "--exec-path")):
            return f"git {arg.split('=', 1)[0]} can make git run any program"
        i += 2 if arg in _GIT_VALUE_GLOBALS else 1
    if i >= len(args):
        return None
    sub, rest = args[i], args[i + 1 :]
    if sub in _GIT_RUNS:
        return _GIT_RUNS[sub]
    if sub == "config":
        return _git_config(rest)
    for arg in rest:
        if long_option(arg, _GIT_SUB_FLAGS):
            return f"git option {arg.split('=', 1)[0]} runs another program"
    risky = _GIT_SUB_OPTIONS.get(sub, ())
    for arg in rest:
        if arg == "--":
            break
        name = arg.split("=", 1)[0]
        bundle = name[1:] if len(name) > 1 and name[0] == "-" and name[1] != "-" else ""
        short = next((f"-{ch}" for ch in bundle if f"-{ch}" in risky), None)  # -ix: -i -x
        if name in risky or short or long_option(arg, risky):
            return f"git {sub} {short or name} runs another program"
    return None


def _git_config(args: tuple[str, ...]) -> str | None:
    """Only reads of the repository's own configuration pass: ``--get``, ``--list``,
    ``get``/``list``, or a single key."""
    operands: list[str] = []
    reads = False
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, _ = arg.partition("=")
        i += 1
        if name in _GIT_CONFIG_SCOPES or long_option(arg, _GIT_CONFIG_SCOPES):
            return f"git config {name} reads or writes configuration outside the repository"
        if name in _GIT_CONFIG_WRITES or long_option(arg, _GIT_CONFIG_WRITES):
            return GIT_CONFIG_RISK
        if name in _GIT_CONFIG_READS or long_option(arg, _GIT_CONFIG_READS):
            reads = True
        elif (name in _GIT_CONFIG_VALUES or long_option(arg, _GIT_CONFIG_VALUES)) and not eq:
            i += 1
        elif not arg.startswith("-"):
            operands.append(arg)
    if operands[:1] in (["get"], ["list"]) or reads:
        return None
    if len(operands) <= 1 and operands[:1] not in (["set"], ["unset"], ["edit"]):
        return None
    return GIT_CONFIG_RISK


def _rg(argv: tuple[str, ...]) -> str | None:
    for arg in argv[1:]:
        if long_option(arg, ("--pre", "--hostname-bin")):
            return f"rg {arg.split('=', 1)[0]} runs another program on every file"
    return _follows(argv, "L", ("--follow",))


FOLLOWS = "follows symbolic links inside the directories it walks, which may lead outside"


def _follows(argv: tuple[str, ...], letters: str, long: tuple[str, ...]) -> str | None:
    """``PROG -L`` (or another letter or long option) that makes a recursive walk follow
    symbolic links: a link inside the workspace can point anywhere."""
    for arg in argv[1:]:
        if arg == "--":
            break
        if long_option(arg, long) or (
            arg.startswith("-") and not arg.startswith("--") and set(arg[1:]) & set(letters)
        ):
            return f"{basename(argv[0])} {arg} {FOLLOWS}"
    return None


def _grep(argv: tuple[str, ...]) -> str | None:
    return _follows(argv, "R", ("--dereference-recursive",))


def _recursive(argv: tuple[str, ...], letters: str, long: tuple[str, ...]) -> bool:
    return _follows(argv, letters, long) is not None


def _cp(argv: tuple[str, ...]) -> str | None:
    if _recursive(argv, "rRa", ("--recursive", "--archive")):
        return _follows(argv, "L", ("--dereference",))
    return None


def _chmod(argv: tuple[str, ...]) -> str | None:
    if _recursive(argv, "R", ("--recursive",)):
        return _follows(argv, "L", ())
    return None


def _diff(argv: tuple[str, ...]) -> str | None:
    if "--no-dereference" in argv:
        return None
    found = _follows(argv, "r", ("--recursive",))
    return None if found is None else found + " (add --no-dereference)"


def _find_follows(argv: tuple[str, ...]) -> str | None:
    if "-L" in argv[1:] or "-follow" in argv[1:]:
        return f"find -L / -follow {FOLLOWS}"
    return None


def _options(table: dict[str, str]) -> Callable[[tuple[str, ...]], str | None]:
    """A check that flags any of the options in ``table`` (also as ``--opt=value`` and, for
    short options, with the value attached)."""

    def check(argv: tuple[str, ...]) -> str | None:
        for arg in argv[1:]:
            if arg == "--":
                break
            name = arg.split("=", 1)[0]
            full = name if name in table else long_option(arg, frozenset(table))
            if full is not None:
                return f"{basename(argv[0])} {full} {table[full]}"
            if len(arg) > 2 and arg[0] == "-" and arg[1] != "-":  # a bundle: rsync -avze CMD
                hit = next((k for k in shorts if k[1:] in arg[1:]), None)
                if hit is not None:
                    return f"{basename(argv[0])} {hit} {table[hit]}"
        return None

    shorts = sorted(k for k in table if not k.startswith("--"))

    return check


_RUNS = "runs another program"
_SSH_OPTIONS = re.compile(
    r"(?i)^(?:proxycommand|localcommand|permitlocalcommand|knownhostscommand|match"
    r"|proxyusefdpass|securitykeyprovider|pkcs11provider)\b"
)


_SSH_VALUES = frozenset("BbcDEeFIiJLlmOopPQRSsWw")
"""Letters of ssh, scp and sftp that take a value: the rest of a bundle is that value."""


def _ssh(argv: tuple[str, ...]) -> str | None:
    """ssh, scp, sftp: options that run a local program (``-o ProxyCommand=...``, ``-F``
    config files that can hold them, scp/sftp ``-S``), alone or in a bundle (``-qo``)."""
    name = basename(argv[0])
    args = argv[1:]
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if not arg.startswith("-") or arg.startswith("--"):
            continue
        letters = arg[1:]
        for k, ch in enumerate(letters):
            value = letters[k + 1 :] or (args[i + 1] if i + 1 < len(args) else "")
            if ch == "o" and _SSH_OPTIONS.match(value):
                return f"{name} -o {value.split('=')[0].split()[0]} {_RUNS}"
            if ch == "F":
                return f"{name} -F reads a config file that can run programs"
            if name in ("scp", "sftp") and ch in "SD":
                return f"{name} -{ch} {_RUNS}"
            if ch in _SSH_VALUES:
                break
    return None


def _tar(argv: tuple[str, ...]) -> str | None:
    args = argv[1:]
    for index, arg in enumerate(args):
        if full := long_option(arg, _TAR_LONG):
            return f"tar {full} runs another program"
        if long_option(arg, ("--dereference", "--absolute-names")):
            return f"tar {arg} reaches outside the directories it is given"
        short = arg[1:] if arg.startswith("-") and not arg.startswith("--") else ""
        if index == 0 and not arg.startswith("-"):
            short = arg  # old-style bundled options: tar xIf ...
        if "I" in short or "F" in short:
            return "tar -I / -F runs another program"
        if "h" in short or "P" in short:
            return "tar -h / -P follows symbolic links or keeps absolute names"
    return None


_AWK_LOADS = ("--file", "--include", "--load", "--exec")
_AWK_VALUES = ("--assign", "--field-separator")


def _awk(argv: tuple[str, ...]) -> str | None:
    args = argv[1:]
    program: str | None = None
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=")
        if arg[:2] in ("-f", "-i", "-l", "-E") or long_option(arg, _AWK_LOADS):
            return f"awk {name if arg.startswith('--') else arg[:2]} loads program code from a file"
        if arg[:2] == "-W":  # mawk -W exec FILE, gawk -W file=FILE: any long option
            return "awk -W sets options that can load program code from a file"
        if arg[:2] == "-e" or long_option(arg, ("--source",)):
            attached = value if arg.startswith("--") and eq else arg[2:] * (arg[1] != "-")
            following = attached or (args[i + 1] if i + 1 < len(args) else "")
            program = (program or "") + "\n" + following
            i += 1 if attached else 2
        elif arg in ("-v", "-F") or (long_option(arg, _AWK_VALUES) and not eq):
            i += 2
        elif arg == "--":
            i += 1
            break
        elif arg.startswith("-") and len(arg) > 1:
            i += 1
        else:
            break
    if program is None and i < len(args):
        program = args[i]
    if program is not None and _AWK_RISK.search(program):
        return "the awk program can run commands or write files (system, |, getline, print >)"
    return None


def _find_all(argv: tuple[str, ...]) -> str | None:
    return _find(argv) or _find_follows(argv)


_FLAG_CHECKS: dict[str, Callable[[tuple[str, ...]], str | None]] = {
    "find": _find_all,
    "grep": _grep,
    "egrep": _grep,
    "fgrep": _grep,
    "cp": _cp,
    "chmod": _chmod,
    "chown": _chmod,
    "chgrp": _chmod,
    "diff": _diff,
    "sort": _options({"--compress-program": _RUNS}),
    "install": _options({"--strip-program": _RUNS}),
    "split": _options({"--filter": "runs a shell command on every piece"}),
    "man": _options({"-P": _RUNS, "--pager": _RUNS, "-H": _RUNS, "--html": _RUNS}),
    "zip": _options({"-TT": _RUNS, "--unzip-command": _RUNS}),
    "wget": _options(
        {
            "-e": "runs wgetrc commands",
            "--execute": "runs wgetrc commands",
            "--use-askpass": _RUNS,
            "--config": "reads a config file",
        }
    ),
    "curl": _options({"-K": "reads options from a file", "--config": "reads options from a file"}),
    "rsync": _options({"-e": _RUNS, "--rsh": _RUNS, "--rsync-path": _RUNS}),
    "ssh": _ssh,
    "scp": _ssh,
    "sftp": _ssh,
    "sed": sed_check,
    "gsed": sed_check,
    "git": _git,
    "rg": _rg,
    "tar": _tar,
    "gtar": _tar,
    "bsdtar": _tar,
    "awk": _awk,
    "gawk": _awk,
    "mawk": _awk,
    "nawk": _awk,
}


FLAG_CHECKED = frozenset(_FLAG_CHECKS)
"""Programs with flags that run programs or write files (each checked above)."""
