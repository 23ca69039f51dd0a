"""Working directories: where ``cd`` and ``pushd`` may have taken the shell, and paths named
relative to them.

A directory is a :data:`Chain` of ``cd`` arguments from the workspace; the walker
(:mod:`mcp_toolbridge.policy.shell.walk`) carries the set of them (:data:`Cwds`) through the command
line, and every path it finds is a :class:`PathRef` holding the directories it may be relative
to. :func:`change_directory` follows one ``cd``/``pushd``/``popd``, or says why it cannot.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mcp_toolbridge.policy.shell.argv import basename
from mcp_toolbridge.policy.shell.scan import Access, Links
from mcp_toolbridge.policy.shell.words import GLOB, TILDE, unquoted_text

MAX_DIRECTORIES = 16
"""How many directories a command may be in (after ``cd``) before it is not followed."""
MAX_CD_CHAIN = 8
DIR_CHANGERS = frozenset({"cd", "pushd", "popd"})
_CD_OPTION = re.compile(r"-[LPe@]+\Z")
_STACK_INDEX = re.compile(r"[-+][0-9]+\Z")

Chain = tuple[str, ...]
"""A working directory: the ``cd`` arguments that lead to it from the workspace, in order."""
Cwds = frozenset[Chain]
Flow = tuple[Cwds, Cwds]
"""Where the shell may be after a command that succeeded, and after one that failed."""
START: Cwds = frozenset({()})


@dataclass(frozen=True, slots=True)
class PathRef:
    """A path a command names: an operand of a known file command or a redirect target."""

    text: str
    """As bash passes it (quotes removed); relative paths are relative to each of ``cwds``."""
    access: Access
    cwds: Cwds = START
    """The working directories the command may run in (``()`` is the workspace)."""
    pattern: str | None = None
    """A glob bash expands (quoted characters escaped as ``[*]``), or None for a plain path."""
    redirect: bool = False
    """True for a redirect target, which no command rule names."""
    command: int = -1
    """Which simple command names it (their order in the line; -1: a group's redirect)."""
    links: Links = None
    """A write that may leave symbolic links at or under the path (``mv``, ``ln``, tar...)."""
    follows: bool = True
    """False when the program never follows symbolic links in it (git pathspecs)."""


def change_directory(
    argv: tuple[str, ...], raws: tuple[str, ...] | None, cwds: Cwds, directories: set[Chain]
) -> Flow | str:
    """cd / pushd / popd: the shell may now be in each current directory joined with the
    argument. What cannot be followed (no argument, ``-``, ``~``, a pattern) is refused;
    popd and pushd without a directory go back to one already seen."""
    name = basename(argv[0])
    args = [(k, a) for k, a in enumerate(argv[1:], 1) if not _CD_OPTION.match(a)]
    if args and args[0][1] == "--":
        args = args[1:]
    if name == "popd" or (name == "pushd" and (not args or _STACK_INDEX.match(args[0][1]))):
        return frozenset(directories | {()}), cwds
    if not args:
        return f"{name} without a directory goes to HOME, outside what is checked"
    index, target = args[0]
    bare = unquoted_text(raws[index]) if raws is not None else target
    if target == "-" or TILDE.search(bare) or GLOB.search(bare) or not target:
        return f"{name} {target} goes to a directory that cannot be followed"
    moved = frozenset((*chain, target) for chain in cwds)
    if any(len(chain) > MAX_CD_CHAIN for chain in moved) or (
        len(directories | moved) > MAX_DIRECTORIES
    ):
        return "it changes directory too many times to follow"
    directories.update(moved)  # in place: the walk sees every directory reached
    return moved, cwds
