"""git's path-operand rules: which arguments of a git command line are paths.

``-C``, ``--git-dir`` and ``--work-tree`` come before the subcommand and move every relative
path; options that write (``--output``, ``format-patch -o``), subcommands that create a
directory (``init``, ``clone``, ``worktree add``, ``bundle create``) and subcommands that
rewrite the work tree (checkout, reset, merge, ...) name written paths; pathspecs and
``REV:path`` name read paths that git never follows symbolic links in. Used by the table in
:mod:`mcp_toolbridge.policy.shell.operands`.
"""

from __future__ import annotations

import os
from urllib.parse import unquote

from mcp_toolbridge.policy.shell.scan import Access, Found, Links, Operand, Syntax, in_directory

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


SUBCOMMAND_OPTIONS = Syntax(
    "mSGFtoCeLXsnUABIOcf",
    _GIT_VALUES | _GIT_WRITE_OPTIONS | _GIT_READ_OPTIONS | frozenset({"--pathspec-from-file"}),
)
"""Options of git's subcommands that may take a value (more than any one subcommand has: a
``--`` taken for a value only makes the check stricter)."""


def git_subcommand(argv: tuple[str, ...]) -> int:
    """The index of git's subcommand, after its global options (``len(argv)`` when none)."""
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        name, eq, _ = argv[i].partition("=")
        takes = name in _GIT_GLOBAL_PATHS or name in _GIT_GLOBAL_VALUES
        i += 2 if takes and not eq else 1
    return i


def git_operands(argv: tuple[str, ...]) -> Found:
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
                joined = in_directory(base, text)
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
            joined = in_directory(base, text)
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
        abbreviated = len(name) > 2 and name.startswith("--")  # parse-options abbreviations
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
        if text.lower().startswith("file://"):  # a repository on this machine, by URL
            add(index, _file_url_path(text), "read", whole=False)
            continue
        if "://" in text:
            continue
        _rev, colon, path = text.partition(":")
        if colon:
            if path and not path.startswith("/"):
                add(index, path, "read", whole=False, follows=False)
            continue
        add(index, text, "read", follows=False)  # git never follows a link in a pathspec
    return out


def _file_url_path(url: str) -> str:
    """The path git opens for a ``file://`` URL: after the host (``localhost`` or none),
    percent-decoded as git decodes it (``file:///srv/r%5Fx`` is /srv/r_x)."""
    rest = url[len("file://") :]
    if not rest.startswith("/"):
        rest = "/" + rest.partition("/")[2]
    return unquote(rest)


def _at(argv: tuple[str, ...], i: int) -> str:
    return argv[i] if i < len(argv) else ""
