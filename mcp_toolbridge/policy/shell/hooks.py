"""The bash sub-policy's two hooks into the gate: the paths a command names, and the floor.

:func:`mcp_toolbridge.policy.shell.parse.splitter` already turns a command argument into one rule
subject per simple command. Two things a splitter cannot express are added here:

- :func:`shell_targets`: the paths a command names become fs.read / fs.write targets, so the
  capability check and path rules see them like any path argument. These are the operands of
  known file commands (``cat x``, ``cp a b``, ``git log --output=f``, ``tar -xf a -C d``: see
  :mod:`mcp_toolbridge.policy.shell.operands`) and redirect targets (``> out.txt``, ``< in``), each
  canonicalized with realpath (symlinks and ``..`` resolved) against every directory the
  command may be in after a ``cd``; globs are expanded as bash would. Operands are also
  marked in ``Targets.operand_paths``: a path rule that matches one decides it, and one that no
  rule matches adds nothing (the command's own rule saw it). A redirect target that no rule
  matches gets ``default_action`` as before.
- :func:`shell_floor`: a command with parts that cannot be checked (``uncheckable``, or a path
  reason found here: a glob with too many matches, a write inside ``.git``) is never allowed by
  a prefix, glob or "any" rule. An allow stands only when an allow rule whose pattern is
  exactly the command's text (an "always" answer stores such session rules) covers each
  flagged command and, when the command is opaque or has a path reason, the whole text as
  ``bash -c <command>``. Otherwise the decision becomes ask, which is deny on a headless host.
  An ask the rules made already keeps its rule and says those reasons after it, so the
  question, the refusal and the audit line tell what no prefix or glob rule can approve.
"""

from __future__ import annotations

import dataclasses
import glob
import itertools
import os
import re
import shlex
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.policy.compiled import Decision, Policy
from mcp_toolbridge.policy.grants import SessionRules
from mcp_toolbridge.policy.paths import canonical_root, canonicalize, has_control, is_within
from mcp_toolbridge.policy.requirements import Denial, Targets
from mcp_toolbridge.policy.rules import Rule, Subject, resolve
from mcp_toolbridge.policy.shell.parse import Chain, ParsedCommand, PathRef, parse_command, whole

MAX_GLOB_MATCHES = 1000
"""Matches of one glob operand that are checked; past this the command asks."""
MAX_DIRECTORY_STATES = 32
MAX_LINK_HOPS = 40
"""Symbolic links followed while looking for /proc/self in a path (the kernel's own limit)."""
_PROCESS_DIR = re.compile(r"/proc/(?:self|thread-self)(?:/|$)")
PROTECTED = (".git", ".toolbridge")
"""Folders whose files change what later runs (git hooks and config; the project policy):
a command that writes inside one asks."""


def shell_commands(spec: ToolSpec, arguments: Mapping[str, Any]) -> Iterator[ParsedCommand]:
    """The parsed value of every ``shell.run`` argument of a call."""
    for name, roles in spec.argument_roles.items():
        value = arguments.get(name)
        if "shell.run" in roles and isinstance(value, str) and value.strip():
            yield parse_command(value)


@dataclass(frozen=True, slots=True)
class ShellPaths:
    """The canonical paths a command names, and why some of them cannot be checked."""

    reads: tuple[Path, ...] = ()
    writes: tuple[Path, ...] = ()
    operands: frozenset[tuple[str, Path]] = frozenset()
    reasons: tuple[str, ...] = ()


def shell_paths(policy: Policy, parsed: ParsedCommand) -> ShellPaths:
    """Resolve ``parsed.paths`` and ``parsed.directories`` against the workspace. Raises
    PathRejectedError (ArgumentsError) for an unusable path (control characters, a loop)."""
    base = canonical_root(policy.workspace or Path("/"))
    resolver = _Resolver(base)
    reads: list[Path] = []
    writes: list[Path] = []
    operands: set[tuple[str, Path]] = set()
    resolved: list[tuple[PathRef | None, Path]] = []
    for chain in parsed.directories:
        for directory in resolver.directories(chain):
            reads.append(directory)  # cd reads the directory: it must be in scope
            operands.add(("fs.read", directory))
            resolved.append((None, directory))
    for ref in parsed.paths:
        capability = "fs.read" if ref.access == "read" else "fs.write"
        found = reads if ref.access == "read" else writes
        for chain in sorted(ref.cwds):
            for directory in resolver.directories(chain):
                for path in resolver.paths(ref, directory):
                    found.append(path)
                    resolved.append((ref, path))
                    if not ref.redirect:
                        operands.add((capability, path))
    reasons = list(resolver.reasons)
    reasons += _through_new_links(resolved, base)
    for path in dict.fromkeys(writes):
        inside = path.relative_to(base).parts if is_within(path, base) else path.parts
        folder = next((part for part in inside if part in PROTECTED), None)
        if folder is not None:
            reasons.append(
                f"it writes {_shown(path, base)!r}, inside {folder}, whose files can make later "
                "commands run programs (git hooks and config, the project policy), so every "
                "write there is asked about"
            )
    return ShellPaths(
        tuple(dict.fromkeys(reads)),
        tuple(dict.fromkeys(writes)),
        frozenset(operands),
        tuple(dict.fromkeys(reasons)),
    )


def _shown(path: Path, base: Path) -> str:
    """``path`` as the model would write it: relative to the workspace when inside it."""
    return str(path.relative_to(base)) if is_within(path, base) and path != base else str(path)


def _through_new_links(resolved: list[tuple[PathRef | None, Path]], base: Path) -> list[str]:
    """A path that goes through a place another command of the same line may turn into a
    symbolic link (``mv dirlink y && cat y/s.txt``, ``tar -xf a.tar && cat link/x``) was
    checked against what is there now, not what will be: that command asks."""
    movers = [(ref, path) for ref, path in resolved if ref is not None and ref.links]
    found: list[str] = []
    for mover, place in movers:
        for ref, path in resolved:
            if ref is not None and (ref.command == mover.command or not ref.follows):
                continue
            if is_within(path, place) and (path != place or mover.links == "at"):
                found.append(
                    f"the path {_shown(path, base)!r} goes through {_shown(place, base)!r}, "
                    "where a command of the same line may leave a symbolic link, so it cannot "
                    "be checked before the line runs; run them as separate calls"
                )
    return found


def through_process(path: str) -> bool:
    """Whether the absolute ``path`` goes through /proc/self or /proc/thread-self, written or
    behind a symbolic link (/dev/fd, /dev/stdin, a link planted in the workspace). Those name
    the process that opens them: the server resolves them to its own working directory and
    descriptors, bash to its own, so no check made here holds for the command."""
    parts = deque(Path(path).parts[1:])
    current = "/"
    hops = 0
    while parts:
        part = parts.popleft()
        if part in ("", "."):
            continue
        if part == "..":
            current = os.path.dirname(current)
            continue
        step = os.path.join(current, part)
        if _PROCESS_DIR.match(step):
            return True
        try:
            target = os.readlink(step)
        except OSError:  # not a link, or not there: a plain component
            current = step
            continue
        hops += 1
        if hops > MAX_LINK_HOPS:
            return False  # a loop: canonicalize refuses it
        if target.startswith("/"):
            current = "/"
        parts.extendleft(reversed(Path(target).parts[1 if target.startswith("/") else 0 :]))
    return False


class _Resolver:
    """Canonicalizes paths against the directories a command may be in."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.reasons: list[str] = []
        self._states: dict[Chain, set[tuple[str, Path]]] = {(): {(str(base), base)}}

    def directories(self, chain: Chain) -> list[Path]:
        return sorted({physical for _, physical in self._resolve(chain)})

    def _resolve(self, chain: Chain) -> set[tuple[str, Path]]:
        """(logical, physical) pairs for ``chain``: bash's ``cd`` is logical (``cd link/..``
        is lexical) and falls back to physical, so both are followed."""
        known = self._states.get(chain)
        if known is not None:
            return known
        states: set[tuple[str, Path]] = set()
        step = chain[-1]
        for logical, physical in self._resolve(chain[:-1]):
            lexical = os.path.normpath(os.path.join(logical, step))
            self._process_relative(os.path.join(physical, step), step)
            states.add((lexical, canonicalize(lexical, base=self.base)))
            real = canonicalize(step, base=physical)
            states.add((str(real), real))
        if len(states) > MAX_DIRECTORY_STATES:
            self.reasons.append(
                "it changes directory in too many ways to follow; use fewer cd commands "
                "or absolute paths"
            )
            states = set(itertools.islice(sorted(states), MAX_DIRECTORY_STATES))
        self._states[chain] = states
        return states

    def _process_relative(self, joined: str, text: str) -> None:
        if through_process(joined):
            self.reasons.append(
                f"the path {text!r} goes through /proc/self, which names the process that "
                "opens it: where it leads is only known when the command runs; name the file "
                "by its real path instead"
            )

    def paths(self, ref: PathRef, directory: Path) -> list[Path]:
        self._process_relative(os.path.join(directory, ref.text), ref.text)
        found = [self._canonical(ref.text, directory, remove=ref.access == "remove")]
        if ref.pattern is None:
            return found
        matches = list(
            itertools.islice(glob.iglob(ref.pattern, root_dir=directory), MAX_GLOB_MATCHES + 1)
        )
        if len(matches) > MAX_GLOB_MATCHES:
            self.reasons.append(
                f"the pattern {ref.text!r} matches more than {MAX_GLOB_MATCHES:,} paths, "
                "too many to check; use a narrower pattern"
            )
        for match in matches[:MAX_GLOB_MATCHES]:
            if has_control(match):  # a name the model never wrote: judged by a person
                self.reasons.append(
                    f"the pattern {ref.text!r} matches {match!r}, a name that holds a control "
                    "character, which this check does not judge; name the files you mean"
                )
                continue
            found.append(self._canonical(match, directory, remove=ref.access == "remove"))
        return found

    @staticmethod
    def _canonical(text: str, directory: Path, *, remove: bool) -> Path:
        """The real path; for a removal, the real parent plus the name (``rm link`` removes
        the link, not what it points to)."""
        head, tail = os.path.split(text)
        if not remove or tail in ("", ".", ".."):
            return canonicalize(text, base=directory)
        return canonicalize(head or ".", base=directory) / tail


def shell_targets(
    policy: Policy, spec: ToolSpec, arguments: Mapping[str, Any], targets: Targets
) -> Targets:
    """``targets`` plus the paths the call's commands name (see :func:`shell_paths`); a
    command with a path reason also becomes the subject ``bash -c <command>``, which an
    "always" answer stores and :func:`shell_floor` looks for. Raises PathRejectedError
    (ArgumentsError) for an unusable path."""
    reads: list[Path] = []
    writes: list[Path] = []
    operands: set[tuple[str, Path]] = set()
    commands: list[tuple[str, ...]] = []
    for parsed in shell_commands(spec, arguments):
        found = shell_paths(policy, parsed)
        reads += found.reads
        writes += found.writes
        operands |= found.operands
        if found.reasons and whole(parsed.source) not in targets.commands:
            commands.append(whole(parsed.source))  # as for an opaque command (see splitter)
    if not reads and not writes and not commands:
        return targets
    return dataclasses.replace(
        targets,
        paths_read=targets.paths_read + tuple(reads),
        paths_write=targets.paths_write + tuple(writes),
        commands=targets.commands + tuple(commands),
        operand_paths=targets.operand_paths | operands,
    )


def exact_approval_missing(
    parsed: ParsedCommand,
    policy: Policy,
    spec: ToolSpec,
    session_rules: SessionRules | None,
    path_reasons: tuple[str, ...] = (),
) -> str | None:
    """Why ``parsed`` must be asked about, or None when it is checkable or exactly allowed.
    ``path_reasons`` come from :func:`shell_paths` and concern the whole text."""
    if parsed.checkable and not path_reasons:
        return None
    rules = policy.rules + (session_rules.rules if session_rules else ())
    opaque = parsed.opaque or bool(path_reasons)
    pending = [*parsed.flagged, *((whole(parsed.source),) if opaque else ())]
    for argv in pending:
        subject = Subject.command(argv)
        winner = resolve(rules, spec, subject)
        if winner is None or winner.action != "allow" or not _names_exactly(winner, subject):
            return _ask_reason(parsed, path_reasons)
    return None


def _ask_reason(parsed: ParsedCommand, path_reasons: tuple[str, ...]) -> str:
    if not path_reasons:
        return parsed.ask_reason() or ""
    reasons = (*parsed.uncheckable, *path_reasons)
    shown = "; ".join(reasons[:3])
    more = f" (and {len(reasons) - 3} more)" if len(reasons) > 3 else ""
    return f"the command cannot be fully checked against the shell rules: {shown}{more}"


def _names_exactly(rule: Rule, subject: Subject) -> bool:
    """An exact rule, or a rule whose pattern text is the subject's text itself (a command
    with ``*`` in it, such as ``find . -name '*.o' -delete``, compiles as a glob)."""
    return rule.kind == "exact" or any(alt.text == subject.text for alt in rule.alternatives)


def shell_floor(
    policy: Policy,
    spec: ToolSpec,
    arguments: Mapping[str, Any],
    decision: Decision,
    session_rules: SessionRules | None = None,
) -> Decision:
    """Turn an allow into ask when a command has parts no exact rule approves. An ask the
    rules made already (the default's ``bash`` ask met the ``bash -c <command>`` subject a
    path reason added) keeps its rule and says those reasons too: the question, the headless
    refusal and the audit line then tell what no prefix or glob rule can approve."""
    if decision.action == "deny":
        return decision
    whys: list[str] = []
    for parsed in shell_commands(spec, arguments):
        reasons = shell_paths(policy, parsed).reasons
        why = exact_approval_missing(parsed, policy, spec, session_rules, reasons)
        if why is not None and decision.action == "allow":
            return Decision("ask", why, "shell")
        if why is not None and why not in whys:
            whys.append(why)
    if not whys:
        return decision
    return dataclasses.replace(decision, rule=f"{decision.rule}, and {'; '.join(whys)}")


def shell_denial(
    policy: Policy, spec: ToolSpec, arguments: Mapping[str, Any], denial: Denial
) -> Denial:
    """``denial``, saying why when it refuses the ``bash -c <command>`` subject that a command
    with a reason of its own adds (no shell entry grants ``bash``): the model then knows it
    is the write inside ``.git`` or the path through ``/proc/self``, not ``cat``, that the
    scope refuses."""
    if denial.capability != "shell.run":
        return denial
    for parsed in shell_commands(spec, arguments):
        if shlex.join(whole(parsed.source)) == denial.target:
            why = _ask_reason(parsed, shell_paths(policy, parsed).reasons)
            if why:
                return dataclasses.replace(
                    denial, message=f"{denial.message}; it stands for the whole command, as {why}"
                )
    return denial
