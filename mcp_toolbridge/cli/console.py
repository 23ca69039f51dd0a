"""What the command line gives back: its exit statuses, and lines on stdout and stderr (among
them the notice that the bundled examples stand in for manifests not named).

While serving, stdout carries the MCP stream, so everything human-facing goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from mcp_toolbridge.host import HIDDEN, visible

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


def shown(text: str) -> str:
    """``text`` that quotes something from outside (a client's config, a manifest) as a
    terminal is to show it: every ``host.HIDDEN`` character as its escape (``\\x1b``)."""
    return visible(text)


def json_text(value: Any, *, indent: int | None = 2) -> str:
    """``value`` as JSON for stdout: non-ASCII text as it is, but every ``host.HIDDEN``
    character (C1 controls such as the one-byte CSI ``\\x9b``, DEL, bidi overrides and
    isolates, tag characters; JSON already escapes C0 controls and so ESC) as its JSON escape
    (``\\u202e``). The data parsed back is the same; a terminal shown it is not
    repainted, retitled or reordered, and a clipboard is not written (ESC ]52)."""
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    return HIDDEN.sub(lambda m: json.dumps(m.group())[1:-1], text)


def counted(n: int, noun: str, *, none: str | None = None) -> str:
    """``1 tool``, ``3 tools``; ``none`` (``no problems``) for zero when given. Nouns here
    take an ``s``."""
    if n == 0 and none is not None:
        return none
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


MANIFEST_FILES = ("tools.json", "agent.json", "manifest.toml")
_VERB_WORDS = {
    "config": "config --client NAME",
    "doctor": "doctor --client NAME",
    "search": "search QUERY",
    "export": "export --format openai",
    "replay": "replay DIR",
}


def examples_notice(args: argparse.Namespace) -> str | None:
    """With no manifest named, the tools are the bundled examples: said when the working
    directory holds a manifest the user may think was read (``lint`` in the folder of the
    ``tools.json`` just written), and always by ``lint``, whose "no problems" is about them."""
    if getattr(args, "paths", None) != []:
        return None
    here = [name for name in MANIFEST_FILES if (Path.cwd() / name).is_file()]
    if here:
        verb = _VERB_WORDS.get(args.verb, args.verb)
        return (
            f"mcp-toolbridge: no manifest named, so the tools are the bundled examples; "
            f"./{here[0]} here was not read: name it on the command line "
            f"(`mcp-toolbridge {verb} ./{here[0]}`, or . for this folder)"
        )
    if args.verb == "lint":
        return (
            "mcp-toolbridge: no manifest named, so the bundled examples were checked: name "
            "yours (`mcp-toolbridge lint PATH`)"
        )
    return None
