"""Where the audit log is, and opening it (audit.py writes it): apart from the records, so a
server that opens its bridge after its first tools/list can open the file first, and fail the
start when it cannot (cli/startup.py), without importing the bridge."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs


def default_audit_path() -> Path:
    """Where the audit log goes without ``--audit``: the per-user data directory."""
    return Path(platformdirs.user_data_dir("mcp-toolbridge")) / "audit.ndjson"


def open_audit_file(path: Path | None = None) -> tuple[Path, int]:
    """Open ``path`` (or the default location) to append, creating it with mode 0600 (its
    folder 0700): the path and the file descriptor. Raises OSError."""
    target = path if path is not None else default_audit_path()
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
    return target, os.open(target, flags, 0o600)
