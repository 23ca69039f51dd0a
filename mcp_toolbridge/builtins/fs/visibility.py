"""Which result paths glob and grep may show: the policy's verdict on reading each one.

A deny rule on reading a path would be worthless if grep printed the file's lines or glob
listed it, so both tools ask a :data:`ReadVerdict` (built from the policy by
:func:`read_verdict`) about every path they are about to return and withhold what it refuses,
counting it without naming it:

- glob withholds paths whose reading is denied (by a rule, or outside the fs.read scope); a
  name is not content, so a path whose reading asks is still listed.
- grep withholds those, and also the files whose reading asks (default policy: ``.env``
  files), because grep shows their content without anyone being asked; naming such a file
  (or a folder whose reading asks too) in ``path`` searches it, since the call itself was
  then asked about. A file with several hard links is judged by its strictest name in the
  workspace (links.py): ``config.txt`` hard-linked to ``.env`` is withheld as ``.env`` is.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from mcp_toolbridge.builtins.fs import read as fs_read
from mcp_toolbridge.builtins.fs.links import LinkIndex
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.policy import (
    ACTION_RANK,
    Action,
    Policy,
    Subject,
    Targets,
    is_within,
    resolve,
)

ReadVerdict = Callable[[Path], Action]
"""The policy's answer for reading a canonical path: allow, ask or deny."""

MAX_SCOPE_FOLDERS = 10_000
"""Folders glob and grep remember as inside the fs.read scope (see _scope_check)."""


class ResultFilter:
    """Keeps the paths a call may show and counts the ones it withholds (not thread-safe:
    one filter per call)."""

    def __init__(
        self, verdict: ReadVerdict, *, show_ask: bool, links: LinkIndex | None = None
    ) -> None:
        self._verdict = verdict
        self._show_ask = show_ask
        self._links = links
        self.withheld = 0

    @classmethod
    def for_glob(cls, verdict: ReadVerdict) -> ResultFilter:
        return cls(verdict, show_ask=True)

    def keep(self, path: Path) -> bool:
        action = self._verdict(path)
        if action != "deny" and self._links is not None:
            try:
                stricter = self._links.stricter(path, os.stat(path, follow_symlinks=False))
            except OSError:
                stricter = None
            if stricter is not None:
                action = stricter.action
        if action == "allow" or (action == "ask" and self._show_ask):
            return True
        self.withheld += 1
        return False


class GrepVisibility:
    """What grep may show in one workspace under one policy: ``verdict`` on reading each path,
    and the workspace's hard-link index, kept between calls (safe to share between them)."""

    def __init__(self, verdict: ReadVerdict, workspace: Path) -> None:
        self.verdict = verdict
        self._links = LinkIndex(workspace, verdict)

    def filter(self, root: Path) -> ResultFilter:
        """One call's filter; ``root``: the folder or file the call named (already cleared by
        the gate). A file with several hard links is judged by its strictest name in the
        workspace too."""
        verdict = self.verdict
        return ResultFilter(verdict, show_ask=verdict(root) == "ask", links=self._links)


def read_verdict(policy: Policy, spec: ToolSpec) -> ReadVerdict:
    """glob's or grep's view of reading one result path (see the module doc).

    Outside the tool's fs.read scope is deny. Otherwise the stricter of: the rules' decision
    for a call of ``spec`` naming that path (what the gate would say; fs.read rules apply), and
    a rule for the read tool with a pattern that matches it (a read deny rule hides files from
    glob and grep too). The read tool's unpatterned rules and default are left out, so a policy
    that serves grep but not read still lets grep show what its own rules allow.

    A path no patterned rule matches gets the same decision as any other such path, so that
    one is computed once; the rest costs a scope check and one match per patterned rule."""
    read_spec = fs_read.SPEC
    probe = Subject("fs.read", path=Path("/"))
    own = [r for r in policy.rules if r.kind != "any" and r.applies_to(spec, probe)]
    read = [r for r in policy.rules if r.kind != "any" and r.applies_to(read_spec, probe)]
    patterned = tuple({id(r): r for r in own + read}.values())
    unmatched: list[Action] = []
    in_scope = _scope_check(policy, spec)

    def verdict(path: Path) -> Action:
        if not in_scope(path):
            return "deny"
        targets = Targets(paths_read=(path,))
        subject = Subject("fs.read", path=path)
        if not any(rule.match(subject) is not None for rule in patterned):
            if not unmatched:
                unmatched.append(policy.decide(spec, targets).action)
            return unmatched[0]
        action = policy.decide(spec, targets).action
        winner = resolve(read, read_spec, subject)
        if winner is not None and ACTION_RANK[winner.action] > ACTION_RANK[action]:
            action = winner.action
        return action

    return verdict


def _scope_check(policy: Policy, spec: ToolSpec) -> Callable[[Path], bool]:
    """Whether a path is inside ``spec``'s fs.read scope. When the scope is plain folders (no
    glob), a file whose folder is inside is inside: folders found inside are remembered."""

    def full(path: Path) -> bool:
        return policy.check_capabilities(spec, Targets(paths_read=(path,))) is None

    try:
        roots = policy.tool_scope(spec).fs_read
    except ValueError:
        return full
    if any(pattern.regex is not None for pattern in roots):
        return full
    inside: set[Path] = set()

    def check(path: Path) -> bool:
        folder = path.parent
        if folder in inside:
            return True
        if any(is_within(folder, pattern.root) for pattern in roots):
            if len(inside) >= MAX_SCOPE_FOLDERS:
                inside.clear()
            inside.add(folder)
            return True
        return full(path)

    return check
