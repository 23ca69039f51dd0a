"""skill: load a discovered skill's instructions (its SKILL.md body) and its file list.

Skills are discovered once, when the tool is built; the tool's description lists them one
line each, which is how the model learns they exist. A call looks the skill up by its
registered name only, never by joining the argument to a path.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from mcp_toolbridge.builtins.skill.discovery import SKILL_FILE, Skill, discover_skills
from mcp_toolbridge.builtins.skill.spec import build_spec
from mcp_toolbridge.errors import Problem
from mcp_toolbridge.host import visible
from mcp_toolbridge.model import ToolSpec

if TYPE_CHECKING:
    from mcp_toolbridge.executors import ExecRequest, ExecResult

MAX_FILES = 100
MAX_ENTRIES = 5_000
"""Folder entries the file listing looks at, files and folders alike: a tree of many empty
folders ends it as many files do."""
MAX_LIST_SECONDS = 1.0
"""The listing's time budget (a slow file system ends it as many entries do)."""
SKIPPED_DIRS = frozenset({".git", "__pycache__", "node_modules"})


def list_files(
    folder: Path,
    limit: int = MAX_FILES,
    max_entries: int = MAX_ENTRIES,
    budget_s: float = MAX_LIST_SECONDS,
) -> tuple[list[str], str | None]:
    """Up to ``limit`` files below ``folder`` (relative POSIX paths, SKILL.md left out,
    symlinked folders not followed, unreadable folders skipped), depth first with names
    sorted, and why the listing stopped early (None: it did not).

    At most ``max_entries`` entries are looked at, for at most ``budget_s`` seconds. The
    walk keeps its own stack (no recursion: a tree may be nested thousands deep). Blocking:
    run it in a worker thread.
    """
    deadline = time.monotonic() + budget_s
    files: list[str] = []
    seen = 0
    pending: list[tuple[str, str]] = [(os.fspath(folder), "")]
    while pending:
        current, relative = pending.pop()
        names: list[str] = []
        subfolders: list[str] = []
        stopped: str | None = None
        try:
            with os.scandir(current) as entries:
                for entry in entries:
                    seen += 1
                    if seen > max_entries:
                        stopped = f"it stopped after looking at {max_entries:,} entries"
                        break
                    if seen % 256 == 0 and time.monotonic() > deadline:
                        stopped = f"it stopped after {budget_s:g} s"
                        break
                    try:
                        is_folder = entry.is_dir()  # a link to a folder: neither walked nor listed
                    except OSError:
                        is_folder = False
                    if not is_folder:
                        names.append(entry.name)
                    elif not entry.is_symlink() and entry.name not in SKIPPED_DIRS:
                        subfolders.append(entry.name)
        except OSError:
            continue  # unreadable (or a path too long): skipped, as os.walk does
        for name in sorted(names):
            path = visible(f"{relative}/{name}" if relative else name)  # a name is any bytes
            if path == SKILL_FILE:
                continue
            if len(files) == limit:
                return files, f"only the first {limit} files are listed"
            files.append(path)
        if stopped is not None:
            return files, stopped
        pending.extend(
            (os.path.join(current, name), f"{relative}/{name}" if relative else name)
            for name in sorted(subfolders, reverse=True)
        )
    return files, None


class SkillTool:
    """The skill built-in over the skills found in ``dirs`` (earlier dirs win a clash)."""

    def __init__(self, dirs: Sequence[Path]) -> None:
        found, problems = discover_skills(dirs)
        self.problems: list[Problem] = problems
        """Skills that were refused (and name clashes), for start-up output and ``lint``."""
        self.skills: dict[str, Skill] = {skill.name: skill for skill in found}
        self._spec = build_spec(found)

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    async def run(self, request: ExecRequest) -> ExecResult:
        # Imported on the first call: the tool is made at load, with the listing, which needs
        # no executor module (docs/performance.md, "Start-up").
        from mcp_toolbridge.executors import ExecResult

        name = str(request.arguments["name"])
        skill = self.skills.get(name)
        if skill is None:
            known = ", ".join(self.skills) or "none (no skills are installed)"
            return ExecResult(
                ok=False,
                error=f"unknown skill {name!r}. Available skills: {known}",
            )
        # Off the event loop: the walk is bounded (entries and time) but still disk work.
        files, stopped = await anyio.to_thread.run_sync(
            list_files, skill.folder, abandon_on_cancel=True
        )
        value: dict[str, Any] = {
            "name": skill.name,
            "description": skill.description,
            "folder": str(skill.folder),
            "body": skill.body,
            "files": files,
        }
        if stopped is not None:
            value["files_truncated"] = True
            value["note"] = f"the file list is incomplete: {stopped}; use glob for the rest"
        return ExecResult(ok=True, value=value, text=_text(value))


def _text(value: dict[str, Any]) -> str:
    """The body as Markdown under a header naming the skill and its folder, then its files."""
    parts = [f"# Skill: {value['name']}", f"Folder: {value['folder']}", "", value["body"]]
    if value["files"]:
        parts += ["", "Files in the skill's folder:", *(f"- {f}" for f in value["files"])]
    if value.get("note"):
        parts.append(f"({value['note']})")
    return "\n".join(parts)
