"""Which locked tools a server serves and how they are configured, decided at load.

:func:`parse_locked` reads ``--locked``; :func:`plan_locked` turns the chosen ids, the settings
and the operator's policy file into a :class:`~mcp_toolbridge.builtins.registry.LockedPlan`:
the skills found, the web_search providers (their keys resolved) and the subagent limits.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from mcp_toolbridge.builtins.registry import LockedPlan
from mcp_toolbridge.builtins.skill import SkillTool, default_skill_dirs
from mcp_toolbridge.builtins.web import load_web_search_config, providers_from_config
from mcp_toolbridge.errors import ConfigError, ErrorCode
from mcp_toolbridge.names import LOCKED_IDS
from mcp_toolbridge.policy import PolicyFile
from mcp_toolbridge.secrets import SecretResolver


def parse_locked(text: str) -> tuple[str, ...]:
    """``--locked``: ``all``, ``none`` or a comma-separated list of locked ids."""
    words = [w.strip() for w in text.split(",") if w.strip()]
    if words == ["all"]:
        return LOCKED_IDS
    if words in ([], ["none"]):
        return ()
    unknown = [w for w in words if w not in LOCKED_IDS]
    if unknown:
        raise ConfigError(
            f"--locked: unknown tool {', '.join(map(repr, unknown))}; use all, none or a "
            f"comma-separated list of: {', '.join(LOCKED_IDS)}",
            code=ErrorCode.CONFIG_INVALID,
        )
    return tuple(name for name in LOCKED_IDS if name in words)


def plan_locked(
    names: Collection[str],
    *,
    workspace: Path,
    environ: Mapping[str, str],
    config: PolicyFile,
    origin: str,
    secrets: SecretResolver,
    skill_dirs: Sequence[Path] = (),
) -> LockedPlan:
    """Decide the locked tools. Raises ConfigError naming ``origin`` (the policy file) for a
    bad ``[web_search]`` table or a provider whose key is not set."""
    chosen = tuple(name for name in LOCKED_IDS if name in names)
    try:
        search_config = load_web_search_config(config.web_search)
        providers = (
            tuple(providers_from_config(search_config, secrets)) if "web_search" in chosen else ()
        )
    except ConfigError as exc:
        raise ConfigError(
            f"{origin}: {exc.message}", code=ErrorCode.CONFIG_INVALID, origin=origin
        ) from exc
    skills = SkillTool(list(skill_dirs) or default_skill_dirs(workspace))
    return LockedPlan(
        names=chosen,
        workspace=workspace,
        environ=dict(environ),
        config=config,
        skills=skills,
        providers=providers,
        web_search=search_config,
        problems=tuple(skills.problems) if "skill" in chosen else (),
    )
