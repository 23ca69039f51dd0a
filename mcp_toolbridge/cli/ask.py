"""Asking the person at the terminal: the Host of ``mcp-toolbridge call``.

When stdin and stderr are both a terminal, a call the policy says to ask about is put to the
person there (the question on stderr, the answer read from stdin; stdout keeps only the
result): ``y`` allows it once, ``a`` always (for the rest of this call's session), anything
else refuses, and Enter alone is no. The question tool's forms are asked one field at a time.
Without a terminal there is nobody to ask: the call stays headless, and ask means deny.
"""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO

import anyio

from mcp_toolbridge.bridge import (
    ALLOW_ALWAYS,
    ALLOW_ONCE,
    ASSISTANT_WANTS,
    REJECT,
    confirmation_form,
)
from mcp_toolbridge.host import Answer, Confirmation, SamplingRequest, SamplingResult

CONFIRM_PROMPT = "Run it? [y] once, [a] always (this session), [N] no: "
YOU_ASKED = "You asked to run the tool"
"""The confirmation's start at the terminal: the person asked is the one who typed ``call``,
not someone working with a model."""


class TerminalHost:
    """A Host that asks the person at this terminal."""

    def __init__(self, stdin: TextIO, out: TextIO) -> None:
        self._stdin = stdin
        self._out = out

    @classmethod
    def attached(cls) -> TerminalHost | None:
        """A host on this process's terminal, or None when stdin or stderr is not one."""
        if sys.stdin.isatty() and sys.stderr.isatty():
            return cls(sys.stdin, sys.stderr)
        return None

    @property
    def can_elicit(self) -> bool:
        return True

    @property
    def can_sample(self) -> bool:
        return False

    async def sample(self, key: str, request: SamplingRequest) -> SamplingResult:
        raise NotImplementedError("a terminal has no model to sample")

    async def elicit(
        self,
        key: str,
        message: str,
        schema: dict[str, Any],
        about: Confirmation | None = None,
    ) -> Answer:
        if schema == confirmation_form():
            self._say(message.replace(ASSISTANT_WANTS, YOU_ASKED, 1))
            reply = await self._read(CONFIRM_PROMPT)
            if reply is None:
                return Answer("cancel")
            choice = {"y": ALLOW_ONCE, "yes": ALLOW_ONCE, "a": ALLOW_ALWAYS, "always": ALLOW_ALWAYS}
            return Answer("accept", {"decision": choice.get(reply.strip().lower(), REJECT)})
        self._say(message)
        content: dict[str, Any] = {}
        for name, field in schema.get("properties", {}).items():
            value = await self._field(field)
            if value is None:
                return Answer("cancel")
            content[name] = value
        return Answer("accept", content)

    async def _field(self, field: dict[str, Any]) -> Any:
        """One form field's value, asked until it is valid; None at the end of input."""
        title = str(field.get("title") or "")
        if field.get("description"):
            self._say(f"{title}: {field['description']}" if title else str(field["description"]))
        choices = _choices(field)
        if choices:
            for number, (_value, label) in enumerate(choices, start=1):
                self._say(f"  {number}) {label}")
        many = field.get("type") == "array"
        while True:
            prompt = "numbers, comma-separated: " if many else ("number: " if choices else "> ")
            reply = await self._read(prompt)
            if reply is None:
                return None
            text = reply.strip()
            if not choices:
                if field.get("type") == "boolean":
                    return text.lower() in ("y", "yes", "true")
                return text
            picked = [p.strip() for p in text.split(",")] if many else [text]
            if all(p.isdigit() and 1 <= int(p) <= len(choices) for p in picked) and picked:
                values = [choices[int(p) - 1][0] for p in picked]
                return values if many else values[0]
            self._say(f"type a number from 1 to {len(choices)}")

    def _say(self, text: str) -> None:
        self._out.write(text + "\n")
        self._out.flush()

    async def _read(self, prompt: str) -> str | None:
        """One line typed at the terminal, read on the event loop; None at end of input."""
        self._out.write(prompt)
        self._out.flush()
        fd = self._stdin.fileno()
        line = b""
        while not line.endswith(b"\n"):
            await anyio.wait_readable(fd)
            chunk = os.read(fd, 4096)
            if not chunk:
                return line.decode(errors="replace") if line else None
            line += chunk
        return line.decode(errors="replace")


def _choices(field: dict[str, Any]) -> list[tuple[str, str]]:
    """(value, label) of an enum, a oneOf of consts, or an array of such items."""
    if field.get("type") == "array":
        field = field.get("items") or {}
    if "enum" in field:
        return [(str(v), str(v)) for v in field["enum"]]
    options = field.get("oneOf") or field.get("anyOf") or []
    return [(str(o["const"]), str(o.get("title") or o["const"])) for o in options if "const" in o]
