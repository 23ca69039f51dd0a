"""Which node a test runs its npm-installed parts with (the OpenID provider, the TypeScript
SDK's client): CI's Node 22 (installed with the conformance suite) when it is there, else
the one on PATH, if it is new enough."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from tests.support.paths import ROOT

CI_NODE = ROOT / ".ci" / "node" / "conformance" / "node_modules" / ".bin" / "node"


def find_node(minimum: tuple[int, int]) -> str | None:
    """The path of a node at least ``minimum`` (major, minor); None: none is installed."""
    for candidate in (CI_NODE, shutil.which("node")):
        if candidate is None or not Path(candidate).exists():
            continue
        try:
            out = subprocess.run(
                [str(candidate), "--version"], capture_output=True, text=True, timeout=10
            ).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        found = re.match(r"v(\d+)\.(\d+)", out)
        if found and (int(found[1]), int(found[2])) >= minimum:
            return str(candidate)
    return None
