"""A tool's sandbox profile: what its processes may see, write and reach.

The profile is derived from the tool's effective capability scope (``Policy.tool_scope``: the
policy's grant united with the tool's declared requirements) and from nothing else, so a tool
with a new requirement gets a wider sandbox with no other change:

- ``fs.read`` roots are visible read-only, ``fs.write`` roots visible and writable (a glob
  pattern grants its literal prefix, e.g. ``{workspace}/out/*.txt`` -> ``{workspace}/out``);
- ``net.hosts``: none -> no network at all; ``*`` -> the host's network; anything else -> only
  the allowlisting proxy, which lets exactly those hosts through;
- everything else the tool needs to run is added read-only when it is launched (its command,
  its manifest folder, the interpreter and system libraries): see :mod:`.bwrap`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, get_args

from mcp_toolbridge.policy import HostPattern, SandboxMode, Scope, normalize_host

SANDBOX_MODES: tuple[SandboxMode, ...] = get_args(SandboxMode)
Network = Literal["none", "proxy", "full"]

SECRET_PATHS: tuple[str, ...] = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".config/gh",
    ".config/hub",
    ".npmrc",
    ".yarnrc.yml",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".m2/settings-security.xml",
    ".terraform.d/credentials.tfrc.json",
    ".vault-token",
    ".pgpass",
    ".my.cnf",
    ".s3cfg",
    ".boto",
    ".config/rclone",
    ".config/op",
    ".password-store",
    ".local/share/keyrings",
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
    ".bash_history",
    ".zsh_history",
    ".python_history",
)
"""The user's secret files and folders, relative to the home folder: masked in every sandbox
(empty, read-only) unless granted by name; a granted root inside one is shown over the mask.
docs/security.md lists them; the policy's ``[sandbox] mask`` adds more."""


@dataclass(frozen=True, slots=True)
class SandboxProfile:
    """What one tool's processes may see, write and reach (besides the system view)."""

    tool: str
    read: tuple[Path, ...] = ()
    """Visible read-only."""
    write: tuple[Path, ...] = ()
    """Visible and writable."""
    network: Network = "none"
    hosts: tuple[HostPattern, ...] = ()
    """With ``network == "proxy"``: the only hosts the proxy lets through."""

    def with_read(self, paths: Iterable[Path | str]) -> SandboxProfile:
        """The same profile with more read-only roots (a launch's own files)."""
        added = tuple(Path(p) for p in paths if p)
        return replace(self, read=_dedupe(self.read + added)) if added else self

    def allows_host(self, host: str) -> bool:
        name = normalize_host(host)
        return any(p.matches(name) for p in self.hosts)

    def names_exactly(self, host: str) -> bool:
        """True when ``host`` is granted by name (not only through a ``*.`` pattern)."""
        name = normalize_host(host)
        return any(p.source == name for p in self.hosts)

    def as_json(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "read": [str(p) for p in self.read],
            "write": [str(p) for p in self.write],
            "network": self.network,
            "hosts": [p.source for p in self.hosts],
        }


def profile_for(scope: Scope, *, tool: str, extra_read: Sequence[Path] = ()) -> SandboxProfile:
    """The profile of a call that runs in ``scope``; ``extra_read``: the tool's own folder."""
    hosts = scope.hosts
    network: Network = "none"
    if any(p.source == "*" for p in hosts):
        network = "full"
    elif hosts:
        network = "proxy"
    return SandboxProfile(
        tool=tool,
        read=_dedupe(tuple(p.root for p in scope.fs_read) + tuple(extra_read)),
        write=_dedupe(tuple(p.root for p in scope.fs_write)),
        network=network,
        hosts=hosts if network == "proxy" else (),
    )


def secret_paths(home: Path | None, extra: Sequence[str] = ()) -> tuple[Path, ...]:
    """The absolute secret paths: :data:`SECRET_PATHS` under ``home``, then ``extra``
    (absolute, or relative to the home folder)."""
    out: list[Path] = []
    for rel in (*SECRET_PATHS, *extra):
        path = Path(rel).expanduser()
        if path.is_absolute():
            out.append(path)
        elif home is not None:
            out.append(home / path)
    return _dedupe(tuple(out))


def _dedupe(paths: tuple[Path, ...]) -> tuple[Path, ...]:
    return tuple(dict.fromkeys(paths))
