"""Manifest loaders: agentcli ``tools.json``, AgentPM ``agent.json``, Runloop ``tools.json``
v1 and Runloop bundles (``manifest.toml``), each normalized into :class:`ToolSpec` records.

:func:`load_paths` takes files and folders (walked recursively, sorted) and returns one
:class:`LoadReport` holding every tool that loaded cleanly and every problem found in every
file; nothing stops at the first error. :func:`load_manifests` does the same per file, with
each file's inputs recorded, and takes unchanged files from the start-up cache.
"""

from mcp_toolbridge.loaders.cache import FileLoad, Manifests
from mcp_toolbridge.loaders.discovery import (
    MANIFEST_NAMES,
    detect_format,
    load_file,
    load_manifests,
    load_paths,
)
from mcp_toolbridge.loaders.report import LoadReport

__all__ = [
    "MANIFEST_NAMES",
    "FileLoad",
    "LoadReport",
    "Manifests",
    "detect_format",
    "load_file",
    "load_manifests",
    "load_paths",
]
