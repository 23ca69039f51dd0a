"""What ``doctor`` finds of the manifests' programs: each exec tool whose program, or the
script an AgentPM interpreter is given, is not there or cannot be run (a call would fail with
"cannot start", or the interpreter's "can't open file"), as the client's PATH finds it."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence

from mcp_toolbridge.errors import ErrorCode, Problem, Severity
from mcp_toolbridge.model import ExecTransport, Format, ToolSpec

AS_A_CLIENT = "`doctor` checks the programs as a client starts them"


def missing_programs(specs: Sequence[ToolSpec], path: str) -> list[str]:
    """``tool "NAME": PROGRAM ...`` for each exec tool that cannot start."""
    return [f'tool "{spec.name}": {what}' for spec, what in unstartable(specs, path)]


def unstartable(specs: Sequence[ToolSpec], path: str) -> list[tuple[ToolSpec, str]]:
    """Each exec tool that cannot start, with why (``PROGRAM is not on the PATH``)."""
    found: list[tuple[ToolSpec, str]] = []
    for spec in specs:
        if not isinstance(spec.transport, ExecTransport):
            continue
        program = spec.transport.argv[0]
        where = program if os.path.isabs(program) else shutil.which(program, path=path)
        if where is None:
            found.append((spec, f"{program} is not on the PATH"))
        elif not os.path.isfile(where):
            found.append((spec, f"{program} does not exist"))
        elif not os.access(where, os.X_OK):
            found.append((spec, f"{program} is not executable"))
        elif (script := _script(spec)) is not None and not os.path.isfile(script):
            found.append(
                (
                    spec,
                    f"{script} does not exist ({program} is to run it: the manifest's "
                    "entrypoint.args)",
                )
            )
    return found


def unstartable_problems(specs: Sequence[ToolSpec], path: str) -> list[Problem]:
    """:func:`unstartable` as ``lint`` reports it: a notice (``manifest.program``) filed under
    the tool's manifest and locator, as its load problems are."""
    return [
        Problem(
            spec.source.path,
            f"{what}: its calls cannot start ({AS_A_CLIENT})",
            _locator(spec),
            ErrorCode.MANIFEST_PROGRAM,
            Severity.NOTICE,
        )
        for spec, what in unstartable(specs, path)
    ]


def _locator(spec: ToolSpec) -> str:
    """``tool[i] "id"`` as a load problem names the tool (an agent.json's one tool: empty)."""
    if spec.source.format is Format.AGENTPM:
        return ""
    return f"tool[{spec.source.index}] {json.dumps(spec.id, ensure_ascii=False)}"


def _script(spec: ToolSpec) -> str | None:
    """The script an AgentPM entrypoint gives its interpreter (``args[0]``, taken from the
    entrypoint's cwd, else the manifest's folder); None when the first argument is an option
    (``python -m module``) or there is none."""
    assert isinstance(spec.transport, ExecTransport)
    argv = spec.transport.argv
    if spec.source.format is not Format.AGENTPM or len(argv) < 2 or argv[1][:1] == "-":
        return None
    folder = spec.transport.cwd or os.path.dirname(os.path.abspath(spec.source.path))
    return os.path.join(folder, argv[1])


__all__ = ["AS_A_CLIENT", "missing_programs", "unstartable", "unstartable_problems"]
