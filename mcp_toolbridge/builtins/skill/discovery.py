"""Skills: folders holding a SKILL.md, found under the skill directories.

A SKILL.md opens with front matter between two ``---`` lines, then the body::

    ---
    name: pdf-forms
    description: Fill in PDF forms from a JSON file.
    ---
    # Filling PDF forms
    ...

The front matter is read as simple ``key: value`` lines (quotes around the value are
dropped); ``key: >`` or ``key: |`` followed by indented lines is a folded or literal block,
and ``key:`` followed by indented lines (a nested map such as ``metadata``) is kept but
ignored. ``name`` (``^[a-z0-9][a-z0-9:_-]*$``) and ``description`` are required. Anything else
is a load problem for that skill, which is then left out; the other skills still load.

A skill folder, and its SKILL.md, must really be inside the directory it was found in: a
symlink that leads elsewhere is refused. The description and the body lose the characters
that hide or rewrite text (control characters but tab and newline, bidi overrides, Unicode tag
characters: ``host.HIDDEN``, as a manifest's): the model reads both, and a person reviewing
the file would not see them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from mcp_toolbridge.errors import Problem, Severity
from mcp_toolbridge.host import HIDDEN
from mcp_toolbridge.policy import canonical_root, is_within

SKILL_FILE = "SKILL.md"
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9:_-]*$")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_SKILL_BYTES = 200 * 1024
"""The result cap of the spec's other tools: a body always fits one result."""
_KEY_LINE = re.compile(r"^([A-Za-z][A-Za-z0-9_-]*)\s*:(?:\s+(.*))?$")


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    folder: Path
    """The real path of the skill's folder."""
    body: str


class SkillFormatError(ValueError):
    """SKILL.md is not in the expected shape; the message says what to fix."""


def default_skill_dirs(workspace: Path) -> list[Path]:
    """``<workspace>/.toolbridge/skills`` and the per-user ``<user data>/skills``."""
    return [
        workspace / ".toolbridge" / "skills",
        Path(platformdirs.user_data_dir("mcp-toolbridge")) / "skills",
    ]


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def parse_front_matter(text: str) -> tuple[dict[str, str | None], str]:
    """The front matter keys (None for a nested map) and the body of a SKILL.md."""
    lines = text.removeprefix("\ufeff").splitlines()
    if not lines or lines[0].rstrip() != "---":
        raise SkillFormatError("the file must start with a '---' line opening the front matter")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].rstrip() == "---")
    except StopIteration:
        raise SkillFormatError("the front matter is not closed by a '---' line") from None
    fields: dict[str, str | None] = {}
    block: list[str] | None = None
    style = ""
    key = ""
    for number, line in enumerate(lines[1:end], start=2):
        if line[:1] in (" ", "\t"):
            if block is None:
                raise SkillFormatError(f"line {number}: an indented line must follow 'key:'")
            block.append(line.strip())
            continue
        if block is not None:
            fields[key] = _join(block, style)
            block = None
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _KEY_LINE.match(line)
        if match is None:
            raise SkillFormatError(f"line {number}: expected 'key: value', got {line[:60]!r}")
        key, value = match.group(1), (match.group(2) or "").strip()
        if key in fields:
            raise SkillFormatError(f"line {number}: the key {key!r} is given twice")
        if value in ("", ">", "|", ">-", "|-", ">+", "|+"):
            block, style = [], value
            fields[key] = None
        else:
            fields[key] = _unquote(value)
    if block is not None:
        fields[key] = _join(block, style)
    return fields, "\n".join(lines[end + 1 :]).strip("\n")


def _join(block: list[str], style: str) -> str | None:
    if not style:
        return None  # a nested map: kept, not interpreted
    if style.startswith("|"):
        return "\n".join(block).strip()
    return " ".join(part for part in block if part).strip()


def parse_skill(text: str, folder: Path) -> Skill:
    fields, body = parse_front_matter(text)
    name = fields.get("name")
    description = fields.get("description")
    if not name:
        raise SkillFormatError("the front matter has no 'name: <skill-name>' line")
    if len(name) > MAX_NAME or not NAME_PATTERN.match(name):
        raise SkillFormatError(
            f"the name {name!r} is not valid: use lowercase letters, digits, ':', '_' and '-', "
            f"starting with a letter or digit, at most {MAX_NAME} characters"
        )
    if not description:
        raise SkillFormatError("the front matter has no 'description: <one line>' line")
    description = " ".join(HIDDEN.sub("", description).split())  # one line, nothing hidden
    if len(description) > MAX_DESCRIPTION:
        raise SkillFormatError(
            f"the description has {len(description)} characters; keep it under "
            f"{MAX_DESCRIPTION} (the body holds the details)"
        )
    # The body too: tag characters are instructions a model reads and a person reviewing
    # the file does not see (found by the red-team pass of 2026-11-29, 8th).
    return Skill(name=name, description=description, folder=folder, body=HIDDEN.sub("", body))


def _load(folder: Path, real_root: Path) -> Skill:
    real_folder = canonical_root(folder)
    skill_file = canonical_root(folder / SKILL_FILE)
    if not is_within(real_folder, real_root) or not is_within(skill_file, real_folder):
        raise SkillFormatError(f"the skill leads outside {real_root} through a symlink; refused")
    if not skill_file.is_file():
        raise SkillFormatError(f"{SKILL_FILE} is not a regular file")
    size = skill_file.stat().st_size
    if size > MAX_SKILL_BYTES:
        raise SkillFormatError(f"{SKILL_FILE} has {size} bytes; the limit is {MAX_SKILL_BYTES}")
    try:
        text = skill_file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SkillFormatError(f"{SKILL_FILE} is not UTF-8 text") from None
    return parse_skill(text, real_folder)


def discover_skills(dirs: Sequence[Path]) -> tuple[list[Skill], list[Problem]]:
    """Every valid skill under ``dirs`` (earlier dirs win a name clash), and the problems.

    A missing directory is skipped silently (the defaults need not exist).
    """
    skills: dict[str, Skill] = {}
    problems: list[Problem] = []
    for root in dirs:
        if not root.is_dir():
            continue
        real_root = canonical_root(root)
        for folder in sorted(root.iterdir()):
            marker = folder / SKILL_FILE
            if not folder.is_dir() or not os.path.lexists(marker):
                continue
            try:
                skill = _load(folder, real_root)
            except (SkillFormatError, OSError) as exc:
                # A notice, not an error: a skills folder may come with a cloned repository,
                # and one bad SKILL.md must not stop the server; the other skills still load.
                problems.append(
                    Problem(str(marker), f"skill not loaded: {exc}", severity=Severity.NOTICE)
                )
                continue
            earlier = skills.get(skill.name)
            if earlier is not None:
                problems.append(
                    Problem(
                        str(marker),
                        f"skill {skill.name!r} is already defined in {earlier.folder}; "
                        "this one is ignored",
                        severity=Severity.NOTICE,
                    )
                )
                continue
            skills[skill.name] = skill
    return sorted(skills.values(), key=lambda s: s.name), problems
