"""Small ToolSpec builders for the policy, requirements and audit tests, and policy files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp_toolbridge.model import (
    SAFETY_FACTS,
    BuiltinTransport,
    ExecTransport,
    Format,
    HttpTransport,
    RequirementSet,
    Safety,
    Source,
    ToolSpec,
)
from mcp_toolbridge.policy import Policy

SCHEMA: dict[str, Any] = {"type": "object"}


def _safety(facts: dict[str, bool]) -> Safety:
    """The facts given are declared; the others take the fail-closed defaults (inferred)."""
    return Safety(**facts, inferred=frozenset(SAFETY_FACTS) - facts.keys())


def builtin(name: str, *, requires: RequirementSet | None = None, **safety: bool) -> ToolSpec:
    return ToolSpec(
        name=name,
        id=name,
        input_schema=SCHEMA,
        runtime_input_schema=SCHEMA,
        transport=BuiltinTransport(name=name),
        requires=requires or RequirementSet(),
        safety=_safety(safety),
        source=Source(path="<builtin>", index=0, format=Format.BUILTIN),
    )


def exec_tool(
    name: str, *, requires: RequirementSet | None = None, tags: tuple[str, ...] = (), **safety: bool
) -> ToolSpec:
    return ToolSpec(
        name=name,
        id=name.replace("_", "."),
        input_schema=SCHEMA,
        runtime_input_schema=SCHEMA,
        transport=ExecTransport(argv=("/bin/true",)),
        requires=requires or RequirementSet(),
        safety=_safety(safety),
        tags=tags,
        source=Source(path="/manifests/tools.json", index=2, format=Format.AGENTCLI),
    )


def http_tool(
    name: str, url: str, *, capabilities: tuple[str, ...] = (), **safety: bool
) -> ToolSpec:
    return ToolSpec(
        name=name,
        id=name.replace("_", "."),
        input_schema=SCHEMA,
        runtime_input_schema=SCHEMA,
        transport=HttpTransport(method="POST", url=url),
        requires=RequirementSet(capabilities=capabilities),
        safety=_safety(safety),
        source=Source(path="/bundle/tools.json", index=0, format=Format.RUNLOOP),
    )


def write_policy(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def load_policy_text(file: Path, text: str, *, workspace: Path) -> Policy:
    """``text`` written to ``file`` and loaded as the operator's policy for ``workspace``,
    without a user data folder."""
    return Policy.load(write_policy(file, text), workspace=workspace, user_data=None)
