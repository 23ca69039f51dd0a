"""Runloop bundles: a ``manifest.toml`` whose ``[artifacts.tools]`` table pins a tools.json
inside the bundle folder by its BLAKE3 digest. The digest is checked before the tools.json
is read as runloop.py reads one, its problems given their lines as discovery.py gives a
manifest's (json_lines.py); error texts follow Runloop's bundle audit
(spec/runloop-tools-json-v1.txt)."""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any

from blake3 import blake3

from mcp_toolbridge.errors import ErrorCode
from mcp_toolbridge.loaders.json_lines import with_lines
from mcp_toolbridge.loaders.report import (
    LoadReport,
    ProblemLog,
    json_quote,
    parse_json,
    probe_file,
    read_bytes,
)
from mcp_toolbridge.loaders.runloop import display_join, json_shown, load_runloop

__all__ = ["bundle_tools_path", "load_bundle"]


def _artifact(path: Path, log: ProblemLog) -> dict[str, Any] | None:
    """The ``[artifacts.tools]`` table, or None (logged when the file is broken)."""
    data = read_bytes(path, log)
    if data is None:
        return None
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        log.error(f"invalid TOML: {exc}")
        return None
    except RecursionError:  # tomllib recurses per nesting level of arrays and tables
        log.error("invalid TOML: nested too deeply to parse")
        return None
    artifacts = doc.get("artifacts")
    table = artifacts.get("tools") if isinstance(artifacts, dict) else None
    if table is not None and not isinstance(table, dict):
        log.error("[artifacts.tools] must be a table {path, blake3, version}")
        return None
    return table


_DIGEST = re.compile(r"[0-9a-fA-F]{64}")


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` (normalized, symlinks not followed) lies in ``folder`` or below."""
    normal = os.path.normpath(path)
    try:
        return os.path.commonpath([normal, str(folder)]) == str(folder) and normal != str(folder)
    except ValueError:  # different drives on Windows
        return False


def _digest_now(folder: Path, rel: object, display: str) -> str:
    """For a bundle with no digest: the line to write, with the digest the tools.json has
    now (the bundle's own file; its digest is no secret, and a mismatch names it too)."""
    if not isinstance(rel, str) or not rel or not _inside(folder / rel, folder):
        return ""
    if not probe_file(folder / rel):
        return ""
    data = read_bytes(folder / rel, ProblemLog(display))
    if data is None:
        return ""
    return (
        f'; write blake3 = "{blake3(data).hexdigest()}", the digest {rel} has now, once it '
        "is the tools.json you mean to serve"
    )


def bundle_tools_path(path: Path) -> Path | None:
    """The absolute tools.json a bundle's manifest.toml points at (None if none/broken)."""
    table = _artifact(path, ProblemLog(str(path)))
    rel = table.get("path") if table else None
    folder = Path(os.path.normpath(path.absolute().parent))
    if not isinstance(rel, str) or not rel or not _inside(folder / rel, folder):
        return None
    return Path(os.path.normpath(folder / rel))


def load_bundle(path: Path, display: str) -> LoadReport:
    """A Runloop bundle: its manifest.toml, the digest check, then the pinned tools.json.
    The report's ``manifests`` names the bundle's manifest.toml only (one entry per bundle);
    problems inside the tools.json name the tools.json."""
    log = ProblemLog(display)
    table = _artifact(path, log)
    if table is None:
        return log.report([])
    version = table.get("version", 1)
    if type(version) is not int or version != 1:
        log.error(f"unsupported tools.json version {json_shown(version)} (supported: 1)")
    rel, digest = table.get("path"), table.get("blake3")
    folder = Path(os.path.normpath(path.absolute().parent))
    if not isinstance(rel, str) or not rel:
        log.error('[artifacts.tools] path is required (e.g. path = "tools.json")')
    elif not _inside(folder / rel, folder):
        log.error(
            f"[artifacts.tools] path {json_quote(rel)} must stay inside the bundle folder",
            code=ErrorCode.MANIFEST_DIGEST,
        )
    if not isinstance(digest, str) or not digest:
        log.error(
            "[artifacts.tools] blake3 is required (the BLAKE3 hex digest of tools.json)"
            + _digest_now(folder, rel, log.path)
        )
    elif not _DIGEST.fullmatch(digest.strip()):
        log.error(
            f"[artifacts.tools] blake3 must be 64 hex digits (got {json_shown(digest)})",
            code=ErrorCode.MANIFEST_DIGEST,
        )
    if log.error_count() or not isinstance(rel, str) or not isinstance(digest, str):
        return log.report([])
    tools_path = folder / rel
    tools_display = display_join(display, rel)
    if not probe_file(tools_path):
        log.error(f"missing tools.json at {tools_display}", code=ErrorCode.MANIFEST_UNREADABLE)
        return log.report([])
    data = read_bytes(tools_path, log)
    if data is None:
        return log.report([])
    actual = blake3(data).hexdigest()
    if actual != digest.strip().lower():
        log.error(
            f"tools.json digest mismatch (expected {digest}, got {actual})",
            code=ErrorCode.MANIFEST_DIGEST,
        )
        return log.report([])
    tools_log = ProblemLog(tools_display)
    ok, doc = parse_json(data, tools_log)
    tools = load_runloop(doc, tools_path, tools_log, path.absolute().parent.name) if ok else []
    if tools_log.problems:  # as load_file does: a clean load never scans the text again
        tools_log.problems = with_lines(tools_log.problems, data.decode("utf-8-sig"))
    return LoadReport(tools, log.problems + tools_log.problems, [display])
