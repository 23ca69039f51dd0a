"""The workspace: the folder the file tools and bash work in, where it comes from when nobody
named one, and what a refused call says when there is none.

The order is ``--workspace DIR``, else the client's MCP roots, else the working directory,
unless that is ``/`` or the home folder: clients start servers wherever they like (Claude
Desktop uses ``/``), and a workspace nobody chose must never open the whole disk. With none,
the server still starts; the tools that work in the workspace refuse every call with
:func:`no_workspace_hint`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from mcp_toolbridge.model import ToolSpec

WORKSPACE_TOOLS = frozenset({"read", "write", "edit", "glob", "grep", "bash"})
"""The locked tools that work in the workspace folder."""

UNSET_ROOT = Path(os.devnull)
"""Where the file tools are rooted while there is no workspace: a file, so nothing exists or
can be created under it, whoever the server runs as. The policy refuses those calls first;
this keeps the tools harmless on their own."""


def unfit_reason(folder: Path) -> str | None:
    """Why ``folder`` may not be a default workspace (``/`` or the home folder), else None."""
    resolved = folder.resolve()
    if resolved == Path(resolved.anchor):
        return f"the file system root ({resolved})"
    try:
        home = Path.home().resolve()
    except RuntimeError:  # no home folder can be determined
        return None
    return f"the home folder ({resolved})" if resolved == home else None


def default_workspace(cwd: Path | None = None) -> Path | None:
    """The working directory as the workspace, or None when it is ``/`` or the home folder."""
    folder = (cwd or Path.cwd()).resolve()
    return None if unfit_reason(folder) else folder


def workspace_from_roots(roots: Sequence[Path]) -> tuple[Path | None, list[str]]:
    """The workspace the client's MCP roots name: the first that is a folder and is neither
    ``/`` nor the home folder (a client may send those; they still open too much); and a
    note for each root passed over before it. None when no root fits."""
    passed_over: list[str] = []
    for root in roots:
        if not root.is_dir():
            passed_over.append(f"{root} is not a folder; passed over")
            continue
        reason = unfit_reason(root)
        if reason is not None:
            passed_over.append(
                f"{root} is {reason}, never a workspace unless given with --workspace"
            )
            continue
        return root.resolve(), passed_over
    return None, passed_over


def needs_workspace(spec: ToolSpec) -> bool:
    """Whether a call to ``spec`` works in the workspace: the locked file tools and bash, and
    every tool whose requirements name ``{workspace}``."""
    if spec.is_locked and spec.id in WORKSPACE_TOOLS:
        return True
    return any("{workspace}" in p for p in (*spec.requires.fs_read, *spec.requires.fs_write))


def no_workspace_hint() -> str:
    """The refusal of a call that needs a workspace while there is none (no trailing period:
    it is embedded in longer messages)."""
    return (
        "no workspace is set, so the file tools have nowhere to work: the server was started "
        "in / or the home folder without --workspace, and the client sent no MCP roots. "
        "Start the server with --workspace DIR (`mcp-toolbridge config --client NAME` writes "
        "it into the client's config), or use a client that sends MCP roots"
    )
