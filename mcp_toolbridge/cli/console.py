"""What the command line gives back: its exit statuses, and lines on stdout and stderr.

While serving, stdout carries the MCP stream, so everything human-facing goes to stderr.
"""

from __future__ import annotations

import sys

EXIT_OK = 0
EXIT_PROBLEMS = 1
"""lint found problems, or a called tool failed."""
EXIT_LOAD = 2
"""Nothing could be served or run: manifests, settings or the command line are wrong."""
EXIT_INTERRUPTED = 130
"""Stopped by Ctrl-C (SIGINT), as a shell reports it."""
EXIT_BROKEN_PIPE = 141
"""The reader of stdout went away (SIGPIPE, as a shell reports it)."""


def err(line: str) -> None:
    """One line on stderr, flushed."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def out(text: str) -> None:
    """Text and a newline on stdout."""
    sys.stdout.write(text + "\n")


def counted(n: int, noun: str, *, none: str | None = None) -> str:
    """``1 tool``, ``3 tools``; ``none`` (``no problems``) for zero when given. Nouns here
    take an ``s``."""
    if n == 0 and none is not None:
        return none
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
