"""MCP tool names: sanitizing manifest ids, the SEP-986 rule for ids kept as written
(``--keep-names``), and the reserved names (the locked ids and the proxy's)."""

from __future__ import annotations

import hashlib
import re

from anyascii import anyascii

MAX_NAME = 64
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")

MAX_KEPT_NAME = 128
KEPT_NAME_PATTERN = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
"""SEP-986 (what the SDK's ``validate_tool_name`` accepts): the rule for manifest ids served as
written. Dots are allowed, slashes and spaces are not."""

LOCKED_IDS: tuple[str, ...] = (
    "read",
    "write",
    "edit",
    "glob",
    "grep",
    "bash",
    "todo",
    "task",
    "question",
    "web_search",
    "web_fetch",
    "skill",
    "tool_search",
)
"""The spec's locked fundamental tools, in its order: reserved in every catalog."""

LOCKED_TOOL_IDS: frozenset[str] = frozenset(LOCKED_IDS)

PROXY_TOOL = "call_tool"
"""The built-in proxy served beside tool_search: it runs a catalog tool named in its arguments
under that tool's own identity (see bridge/pipeline.py). Not a locked id, but reserved too."""

RESERVED_NAMES: frozenset[str] = LOCKED_TOOL_IDS | {PROXY_TOOL}
"""Names no manifest tool may take: the locked ids and the proxy's."""


def sanitize_name(raw: str) -> str:
    """Map a manifest id to ``[A-Za-z0-9_-]{1,64}``.

    An id that is not ASCII is transliterated first (anyascii): accents are dropped
    (``café_menu`` -> ``cafe_menu``), other scripts are romanized (``翻译`` -> ``FanYi``,
    ``ファイル`` -> ``fuairu``). Then runs of other characters (dots, slashes, ``@``, spaces)
    become one ``_``; leading and trailing ``_`` are dropped, and an id with nothing left is
    ``tool``. A name longer than 64 keeps its head and gets a short digest of the whole id, so
    two long ids that share a prefix stay distinct.
    """
    name = _UNSAFE.sub("_", raw if raw.isascii() else anyascii(raw)).strip("_") or "tool"
    if len(name) > MAX_NAME:
        digest = hashlib.blake2s(raw.encode("utf-8"), digest_size=4).hexdigest()
        name = f"{name[: MAX_NAME - len(digest) - 1]}_{digest}"
    return name
