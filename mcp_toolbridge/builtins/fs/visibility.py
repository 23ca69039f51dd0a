"""Which result paths glob and grep may show: the policy's verdict on reading each one.

A deny rule on reading a path would be worthless if grep printed the file's lines or glob
listed it, so both tools ask a :data:`ReadVerdict` (built from the policy by
:mod:`mcp_toolbridge.builtins.registry`) about every path they are about to return and
withhold what it refuses, counting it without naming it:

- glob withholds paths whose reading is denied (by a rule, or outside the fs.read scope); a
  name is not content, so a path whose reading asks is still listed.
- grep withholds those, and also the files whose reading asks (default policy: ``.env``
  files), because grep shows their content without anyone being asked; naming such a file
  (or a folder whose reading asks too) in ``path`` searches it, since the call itself was
  then asked about.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mcp_toolbridge.policy import Action

ReadVerdict = Callable[[Path], Action]
"""The policy's answer for reading a canonical path: allow, ask or deny."""


class ResultFilter:
    """Keeps the paths a call may show and counts the ones it withholds (not thread-safe:
    one filter per call)."""

    def __init__(self, verdict: ReadVerdict, *, show_ask: bool) -> None:
        self._verdict = verdict
        self._show_ask = show_ask
        self.withheld = 0

    @classmethod
    def for_glob(cls, verdict: ReadVerdict) -> ResultFilter:
        return cls(verdict, show_ask=True)

    @classmethod
    def for_grep(cls, verdict: ReadVerdict, root: Path) -> ResultFilter:
        """``root``: the folder or file the call named (already cleared by the gate)."""
        return cls(verdict, show_ask=verdict(root) == "ask")

    def keep(self, path: Path) -> bool:
        action = self._verdict(path)
        if action == "allow" or (action == "ask" and self._show_ask):
            return True
        self.withheld += 1
        return False
