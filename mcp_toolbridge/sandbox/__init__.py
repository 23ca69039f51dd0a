"""The environment sandbox, the third layer of defense: every process a call starts runs in an
OS sandbox (bubblewrap: Linux user, mount, PID and network namespaces) built from that tool's
effective capabilities, with an allowlisting proxy as the only network of a tool granted
specific hosts. ``relay.py`` runs inside sandboxes only. See docs/security.md.

May import: the vocabulary and ``policy`` (its scope types)."""

from typing import TYPE_CHECKING

from mcp_toolbridge.lazy import on_first_use
from mcp_toolbridge.policy import SandboxMode

if TYPE_CHECKING:
    from mcp_toolbridge.sandbox.bwrap import SYSTEM_PATHS, Plan
    from mcp_toolbridge.sandbox.confine import Confinement, Launch, Sandbox, find_bwrap
    from mcp_toolbridge.sandbox.diagnosis import BWRAP_VARIABLE, Fix, Support, diagnose, unrunnable
    from mcp_toolbridge.sandbox.guard import (
        RELOADED,
        Guard,
        Guarded,
        RunningCall,
        guarded,
        guarded_by,
        write_floor,
    )
    from mcp_toolbridge.sandbox.limits import Limits, limit_hint
    from mcp_toolbridge.sandbox.profile import (
        SANDBOX_MODES,
        SECRET_PATHS,
        SandboxProfile,
        profile_for,
    )
    from mcp_toolbridge.sandbox.program import PREFIX_FOLDERS, find_program, within
    from mcp_toolbridge.sandbox.warm import WarmLost, WarmSandbox

__getattr__ = on_first_use(
    __name__,
    {
        "mcp_toolbridge.sandbox.bwrap": ("SYSTEM_PATHS", "Plan"),
        "mcp_toolbridge.sandbox.confine": (
            "Confinement",
            "Launch",
            "Sandbox",
            "find_bwrap",
        ),
        "mcp_toolbridge.sandbox.diagnosis": (
            "BWRAP_VARIABLE",
            "Fix",
            "Support",
            "diagnose",
            "unrunnable",
        ),
        "mcp_toolbridge.sandbox.guard": (
            "RELOADED",
            "RunningCall",
            "Guard",
            "Guarded",
            "guarded",
            "guarded_by",
            "write_floor",
        ),
        "mcp_toolbridge.sandbox.limits": ("Limits", "limit_hint"),
        "mcp_toolbridge.sandbox.program": ("PREFIX_FOLDERS", "find_program", "within"),
        "mcp_toolbridge.sandbox.profile": (
            "SANDBOX_MODES",
            "SECRET_PATHS",
            "SandboxProfile",
            "profile_for",
        ),
        "mcp_toolbridge.sandbox.warm": (
            "WarmLost",
            "WarmSandbox",
        ),
    },
)

__all__ = [
    "BWRAP_VARIABLE",
    "PREFIX_FOLDERS",
    "RELOADED",
    "SANDBOX_MODES",
    "SECRET_PATHS",
    "SYSTEM_PATHS",
    "Confinement",
    "Fix",
    "Guard",
    "Guarded",
    "Launch",
    "Limits",
    "Plan",
    "RunningCall",
    "Sandbox",
    "SandboxMode",
    "SandboxProfile",
    "Support",
    "WarmLost",
    "WarmSandbox",
    "diagnose",
    "find_bwrap",
    "find_program",
    "guarded",
    "guarded_by",
    "limit_hint",
    "profile_for",
    "unrunnable",
    "within",
    "write_floor",
]
