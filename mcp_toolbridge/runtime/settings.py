"""What a runtime is made from: the settings the CLI verbs and the server give (paths,
limits, the policy file, the workspace, the locked tools, the cache), and the example catalog
served when no path is given."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mcp_toolbridge.builtins import LOCKED_IDS
from mcp_toolbridge.cache import CACHE_DIR_ENV, default_cache_dir
from mcp_toolbridge.executors import DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT_S
from mcp_toolbridge.policy import SandboxMode
from mcp_toolbridge.workspace import default_workspace

if TYPE_CHECKING:
    from mcp_toolbridge.sandbox import Guard


def bundled_manifests() -> Path:
    """The example catalog: inside the installed package, or beside it in a checkout."""
    package = Path(__file__).parent.parent
    packaged = package / "examples"
    return packaged if packaged.is_dir() else package.parent / "manifests"


@dataclass(frozen=True)
class Settings:
    paths: Sequence[Path] = ()
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    max_concurrency: int | None = None
    secrets_file: Path | None = None
    policy_file: Path | None = None
    workspace: Path | None = None
    """Roots every fs capability (``--workspace``); None: the client's MCP roots, else the
    working directory unless that is / or the home folder (see workspace.py)."""
    audit_path: Path | None = None
    """Where audit lines go; None: the per-user data directory."""
    audit: bool = True
    record_dir: Path | None = None
    """Where ``serve --record`` writes: hidden in every sandbox and held as the audit log is
    (sandbox/guard.py), since its files hold every caller's calls and results."""
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    locked: tuple[str, ...] = LOCKED_IDS
    """Which locked tools to serve when the catalog is loaded with ``locked=True``."""
    ad_hoc: tuple[Path, ...] = ()
    """The folders ``{ad-hoc}`` expands to (``--ad-hoc``); none by default."""
    skills_dirs: tuple[Path, ...] = ()
    """Where the skill tool looks; empty: <workspace>/.toolbridge/skills and the user's."""
    keep_names: bool = False
    """Serve manifest ids as written (SEP-986 names) instead of sanitizing them."""
    sandbox: SandboxMode | None = None
    """``--sandbox``: the OS sandbox mode; None: the policy's ``[sandbox] mode`` (auto)."""
    pins: tuple[str, ...] = ()
    """``--pin``: tools always listed (names, ids or globs), beside the policy's own."""
    allow: tuple[str, ...] = ()
    """``--allow NAME[=PATTERN]``: allow rules over the policy (see policy.layers)."""
    cache: bool = False
    """Keep manifests, the catalog and the index in the user's cache folder (CLI: on)."""
    progress: bool = False
    """Show the progress of long loads and index builds on stderr."""

    def own_folders(self) -> tuple[Path, ...]:
        """The server's own folders that no sandbox shows and the tools in the server ask
        about (sandbox/guard.py ``hidden``): the recording folder (every caller's calls and
        results) and the start-up cache folder (its key signs the snapshots the next start
        loads, outside any sandbox), as ``Sandbox.from_environ`` finds it."""
        cache = Path(os.path.abspath(self.environ.get(CACHE_DIR_ENV) or default_cache_dir()))
        return (cache,) if self.record_dir is None else (self.record_dir, cache)

    def guard_inputs(self, programs: Sequence[str]) -> Guard:
        """What the gate holds read-only besides the policy (``sandbox.Guard``), for a catalog
        whose exec tools run ``programs``: the served manifest paths, the policy, secrets and
        audit files, the programs and :meth:`own_folders`; ``serve`` and ``inspect`` alike."""
        from mcp_toolbridge.bridge import default_audit_path  # the call machinery's: not at start

        audit = (self.audit_path or default_audit_path()) if self.audit else None
        files = (self.policy_file, self.secrets_file, audit)
        return (self.manifest_paths(), files, programs, self.own_folders())

    def manifest_paths(self) -> list[Path]:
        return list(self.paths) if self.paths else [bundled_manifests()]

    def workspace_root(self) -> Path | None:
        """The workspace in force: the one given, else the working directory when it is fit
        to be one; None means there is none (the file tools refuse)."""
        if self.workspace is not None:
            return self.workspace.resolve()
        return default_workspace()
