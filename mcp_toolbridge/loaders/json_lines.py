"""Where each key of a JSON manifest is written: ``json.loads`` returns values without
positions, so a manifest's problems find their line by scanning the text again, and only when
there are problems (a clean load never scans).

:func:`key_lines` maps key paths (``("tools", 3, "command", 0)``) to 1-based lines: an object
member's line is its key's, an array element's is where the element starts. The scan only has
to be right for text ``json.loads`` accepted. :func:`with_lines` gives each problem the line
of the field its message names first (``relative command[0] ...`` -> ``command[0]``'s line),
else the line of its tool entry (``tool[3]`` -> ``tools[3]``); a problem about the whole file
gets none.
"""

from __future__ import annotations

import dataclasses
import json
import re

from mcp_toolbridge.errors import Problem

__all__ = ["key_lines", "with_lines"]

KeyPath = tuple[str | int, ...]

# A string (escapes kept), a structural character, a newline, or a scalar; the spaces between
# tokens are skipped by finditer.
_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|[{}\[\]:,\n]|[^\s{}\[\]:,"]+')
_TOOL = re.compile(r"tool\[(\d+)\]")
_FIELD = re.compile(r"[A-Za-z_$][\w$-]*(?:\.[A-Za-z_$][\w$-]*|\[\d+\])*")
_PART = re.compile(r"\.?([A-Za-z_$][\w$-]*)|\[(\d+)\]")


class _Frame:
    __slots__ = ("index", "is_array", "key", "path", "wants_key")

    def __init__(self, path: KeyPath, is_array: bool) -> None:
        self.path = path
        self.is_array = is_array
        self.index = 0
        self.key: str | None = None
        self.wants_key = not is_array


def key_lines(text: str) -> dict[KeyPath, int]:
    """Every key path written in ``text`` (valid JSON) -> the line it is written on."""
    lines: dict[KeyPath, int] = {}
    stack: list[_Frame] = []
    line = 1
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token == "\n":
            line += 1
            continue
        top = stack[-1] if stack else None
        if token in "}]":
            stack.pop()
            continue
        if token == ":":
            continue
        if token == ",":
            if top is not None and not top.is_array:
                top.wants_key = True
            continue
        if top is not None and top.wants_key:  # an object's key
            top.key = json.loads(token)
            top.wants_key = False
            lines[(*top.path, top.key)] = line
            continue
        if top is None:  # the document itself
            path: KeyPath = ()
        elif top.is_array:
            path = (*top.path, top.index)
            lines[path] = line
            top.index += 1
        else:
            assert top.key is not None
            path = (*top.path, top.key)
        if token in "{[":
            stack.append(_Frame(path, token == "["))
    return lines


def _field(text: str, base: KeyPath, lines: dict[KeyPath, int]) -> int | None:
    """The line of the written field ``text`` names under ``base`` (its longest written
    prefix), or None."""
    text = text.strip("`").removeprefix("agent.json.")
    if text.endswith(".json") or not _FIELD.fullmatch(text):  # a file named: tools.json
        return None
    parts: list[str | int] = [
        int(index) if index else str(name) for name, index in _PART.findall(text)
    ]
    for end in range(len(parts), 0, -1):
        found = lines.get((*base, *parts[:end]))
        if found is not None:
            return found
    return None


def _line(problem: Problem, lines: dict[KeyPath, int]) -> int | None:
    tool = _TOOL.match(problem.locator)
    base: KeyPath = ("tools", int(tool.group(1))) if tool else ()
    for word in problem.message.split(maxsplit=2)[:2]:  # "relative command[0] ...": the 2nd
        found = _field(word.rstrip(":;,"), base, lines)
        if found is not None:
            return found
    return lines.get(base) if base else None


def with_lines(problems: list[Problem], text: str) -> list[Problem]:
    """``problems`` with the line each one is about, found in ``text`` (the manifest as read);
    a one-line document gives none, since every problem would be on line 1."""
    if not problems or "\n" not in text.strip():
        return problems
    lines = key_lines(text)
    return [
        dataclasses.replace(problem, line=_line(problem, lines))
        if problem.line is None
        else problem
        for problem in problems
    ]
