"""What a sandboxed call is told when it failed on a path its sandbox does not show.

Outside its grants the machine's files are absent in a sandbox (``sandbox/bwrap.py``): a
command reading one gets a bare ``No such file or directory``, and whoever reads that (a
person, the model) takes the file for missing. :func:`hidden_hint` names such paths.

It judges from the command's output and the tool's profile only, never from the host's files:
the path as printed is normalised, not resolved, and nothing is looked up under it, so the
hint reads the same whether the hidden file exists or not (no tool learns through it whether
``~/.ssh/id_rsa`` is there). Bounded: a tail of stderr and a head of stdout, lines cut, a few
paths; plain string scanning, no regular expression.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from mcp_toolbridge.sandbox import PREFIX_FOLDERS, find_program, within

if TYPE_CHECKING:
    from mcp_toolbridge.sandbox import Confinement

STDERR_BYTES = 8192
STDOUT_BYTES = 4096
LINE_CHARS = 1024
MAX_LINES = 200
MAX_PATHS = 3
_MARK = "no such file or directory"
"""What ENOENT reads as in every common tool's message (cat, ls's ``cannot access``,
python's ``can't open file`` and ``FileNotFoundError``, node's ``ENOENT: no such file``)."""
_OWN = ("/proc", "/dev")
"""The sandbox's own: a path missing there is missing, not hidden."""
_QUOTES = "'\"`‘’“”"
_BEFORE = _QUOTES + " (=\t"


def hidden_hint(
    sandbox: Confinement, argv: Sequence[str], cwd: str | None, stderr: bytes, stdout: bytes
) -> str | None:
    """The hint for a sandboxed call that failed (exit status not 0) and printed ``No such
    file or directory`` of an absolute (or ``~/``) path its sandbox does not show; None when
    it printed none."""
    text = stderr[-STDERR_BYTES:] + b"\n" + stdout[:STDOUT_BYTES]
    if _MARK.encode() not in text.lower():
        return None
    home = str(sandbox.sandbox.home) if sandbox.sandbox.home is not None else None
    printed = named_missing(text.decode("utf-8", "replace"), home)
    if not printed:
        return None
    shown, granted = _shown(sandbox, argv, cwd, home)
    secrets = [_norm(str(p)) for p in sandbox.sandbox.masks]
    hidden: list[str] = []
    secret: list[str] = []
    for said, path in printed:
        inside = [s for s in secrets if within(path, s)]
        if inside and not any(within(path, g) and within(g, s) for g in granted for s in inside):
            secret.append(said)
        elif not inside and not any(within(path, root) for root in shown):
            hidden.append(said)
    return _say(hidden, secret)


def named_missing(text: str, home: str | None) -> list[tuple[str, str]]:
    """The absolute or ``~/`` paths named on the lines of ``text`` that say ``No such file or
    directory``: (as printed, normalised), at most :data:`MAX_PATHS`, first seen first."""
    found: dict[str, str] = {}
    for line in text.splitlines()[-MAX_LINES:]:
        line = line[:LINE_CHARS]
        if _MARK not in line.lower():
            continue
        for said in _paths(line):
            path = _expand(said, home)
            if path is not None and path not in found.values():
                found[said] = path
            if len(found) == MAX_PATHS:
                return list(found.items())
    return list(found.items())


def _paths(line: str) -> list[str]:
    """Each token of ``line`` that starts with ``/`` or ``~/``: up to the closing quote when
    it follows one, else up to whitespace or ``: ``; a trailing ``:`` or ``,`` left out."""
    out: list[str] = []
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        after = i == 0 or line[i - 1] in _BEFORE
        starts = after and (c == "/" or line.startswith("~/", i))
        if not starts:
            i += 1
            continue
        quote = line[i - 1] if i and line[i - 1] in _QUOTES else ""
        j = i
        while j < n:
            ch = line[j]
            if quote and ch in _QUOTES:
                break
            if not quote and (ch.isspace() or ch in _QUOTES or line.startswith(": ", j)):
                break
            j += 1
        token = line[i:j].rstrip(":,;.")
        if token not in ("", "/", "~/"):
            out.append(token)
        i = j + 1
    return out


def _expand(said: str, home: str | None) -> str | None:
    if said.startswith("~/"):
        if home is None:
            return None
        said = home + said[1:]
    return _norm(said)


def _norm(path: str) -> str:
    return os.path.normpath(path).replace("//", "/", 1) if path.startswith("/") else path


def _shown(
    sandbox: Confinement, argv: Sequence[str], cwd: str | None, home: str | None
) -> tuple[list[str], list[str]]:
    """(every root the sandbox shows, the granted ones among them), lexically and, for the
    roots only, resolved as the sandbox mounts them. What a launch shows by itself (its
    program with the folders and prefixes of it and its ``#!`` interpreter, the server's PATH
    and interpreter, the working directory) is counted as shown even where the sandbox leaves
    it out: a doubt gives no hint. Only the program is looked at (as its launch did), never a
    path the output names."""
    profile = sandbox.profile
    granted = [str(p) for p in (*profile.read, *profile.write, *sandbox.extra_read)]
    workdir = cwd if cwd is not None else os.getcwd()
    implicit = [workdir, sys.prefix, sys.base_prefix]
    path = sandbox.sandbox.path or os.defpath
    if argv:  # the program's folders as the launch found them: its #! interpreter's too
        try:
            implicit += find_program(argv[0], workdir, path, os.path.realpath)[1]
        except (OSError, ValueError):
            pass
    for folder in filter(lambda f: f.startswith("/"), path.split(os.pathsep)):
        implicit.append(folder)
        if PurePosixPath(folder).name in PREFIX_FOLDERS:
            implicit.append(os.path.dirname(_norm(folder)))
    # as the sandbox: none may be /, the home folder or above it
    above = "/" if home is None else home
    implicit = [r for r in implicit if not within(above, _norm(r))]
    roots = [*granted, *implicit]
    both = {_norm(r) for r in roots} | {os.path.realpath(r) for r in roots}
    given = {_norm(g) for g in granted} | {os.path.realpath(g) for g in granted}
    from mcp_toolbridge.sandbox import SYSTEM_PATHS  # loaded once a sandbox runs

    system = [*SYSTEM_PATHS, *_OWN]
    return [*system, *both], sorted(given)


def _say(hidden: list[str], secret: list[str]) -> str | None:
    parts: list[str] = []
    if hidden:
        names = _names(hidden)
        parts.append(
            f"{names} {'is' if len(hidden) == 1 else 'are'} outside what this tool's sandbox "
            "shows: there, the machine's files outside the tool's grants are absent, whether "
            "or not they exist, so this says nothing of the file itself. If the command needs "
            "it, ask the user to grant it (an fs.read root: the policy's [requires] fs.read, "
            "or the manifest's fs.read requirement) or to copy it into the workspace."
        )
    if secret:
        names = _names(secret)
        parts.append(
            f"{names} {'is' if len(secret) == 1 else 'are'} inside a secret path, which every "
            "sandbox hides whether or not it exists; tools are not meant to read it: do not "
            "look for another way in, and ask the user if the work really needs it."
        )
    return " ".join(parts) if parts else None


def _names(paths: list[str]) -> str:
    quoted = [f'"{p}"' for p in paths]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]
