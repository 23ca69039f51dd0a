"""Manifest loaders: agentcli ``tools.json``, AgentPM ``agent.json``, Runloop ``tools.json``
v1 and Runloop bundles (``manifest.toml``), each normalized into :class:`ToolSpec` records.

:func:`load_paths` takes files and folders (walked recursively, sorted) and returns one
:class:`LoadReport` holding every tool that loaded cleanly and every problem found in every
file; nothing stops at the first error.
"""

from mcp_toolbridge.loaders.discovery import MANIFEST_NAMES, detect_format, load_file, load_paths
from mcp_toolbridge.loaders.report import LoadReport

__all__ = ["MANIFEST_NAMES", "LoadReport", "detect_format", "load_file", "load_paths"]
