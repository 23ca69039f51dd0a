"""A catalog of misbehaving tools, written as a real agentcli manifest of /bin/sh scripts.

Every tool runs as ``/bin/sh <folder>/tools/bin/<name>``, so a marker token in the folder's
path is on the command line of every tool process (and of the children the ``forker`` starts),
which is how tests find processes left behind. Each :class:`Fault` says what a call must come
back with: success, or the ``toolbridge/code`` of its error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tests.support.manifests import NOT_DESTRUCTIVE, write_script


@dataclass(frozen=True)
class Fault:
    name: str
    script: str
    """The body of a /bin/sh script; the call's arguments arrive as JSON on stdin."""
    code: str | None
    """The expected ``_meta["toolbridge/code"]`` of the result, or None for success."""
    timeout_s: float | None = None
    args: tuple[str, ...] = ()


def faults(*, hang_timeout_s: float = 0.5, bomb_bytes: int = 4 << 20) -> tuple[Fault, ...]:
    """The misbehaviours: each tool fails in its own way (``ok`` and ``whoami`` do not)."""
    return (
        Fault("ok", "printf '{\"echo\": '\ncat\nprintf '}\\n'\n", None),
        Fault(
            "fail",
            'echo \'{"error": "the input was rejected"}\' >&2\nexit 3\n',
            "exec.failed",
        ),
        Fault("crash", "kill -SEGV $$\nsleep 5\n", "exec.failed"),
        Fault("hang", "sleep 30\n", "exec.timeout", timeout_s=hang_timeout_s),
        Fault("garbage", "echo 'this is not JSON at all'\necho 'noise' >&2\n", "exec.output"),
        Fault("nonutf8", "printf '\\377\\376 not JSON \\200\\201\\n'\n", "exec.output"),
        Fault(
            "bomb",
            # One byte short of a JSON object: the output is cut, never parsed as a result.
            'printf \'{"big": "\'\nhead -c "$1" /dev/zero | tr \'\\000\' x\n',
            "exec.output",
            args=(str(bomb_bytes),),
        ),
        Fault(
            "forker",
            # A child that would outlive the call; it carries the marker on its command line.
            "/bin/sh -c 'sleep 60; :' \"$0-child\" &\nprintf '{\"forked\": true}\\n'\n",
            None,
        ),
        Fault("slow", "sleep 5\nprintf '{\"slow\": true}\\n'\n", None, timeout_s=30),
        Fault("whoami", 'cat >/dev/null\nprintf \'{"server_pid": %s}\\n\' "$PPID"\n', None),
    )


def write_catalog(folder: Path, catalog: tuple[Fault, ...]) -> Path:
    """Write ``folder/tools.json`` and its scripts; returns the folder to serve."""
    tools = []
    for fault in catalog:
        write_script(folder / "tools" / "bin" / fault.name, fault.script, python=False)
        tool: dict[str, object] = {
            "name": fault.name,
            "description": f"A misbehaving test tool: {fault.name}",
            "schema": {"type": "object"},
            "command": [f"./tools/bin/{fault.name}", *fault.args],
            "annotations": NOT_DESTRUCTIVE,  # misbehaving, but destroying nothing
        }
        if fault.timeout_s is not None:
            tool["timeoutSec"] = fault.timeout_s
        tools.append(tool)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tools.json").write_text(json.dumps({"tools": tools}, indent=2), encoding="utf-8")
    return folder
