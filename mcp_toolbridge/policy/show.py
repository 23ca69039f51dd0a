"""``mcp-toolbridge policy show``: the effective policy as JSON, with where each rule and
each setting came from (the built-in default, the ``--policy`` file and its line, ``--allow``,
the project file). ``--as SUBJECT`` (and ``--as-client``, ``--as-group``, ``--as-scope``)
shows what that caller gets: the rules for everyone and for it, the rules for others apart,
and the tools hidden from it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol

from mcp_toolbridge.host import Caller
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.policy.file import PolicyFile
from mcp_toolbridge.policy.layers import LAYER_NAMES, Layers
from mcp_toolbridge.policy.requirements import Scope, Variables
from mcp_toolbridge.policy.rules import Rule
from mcp_toolbridge.policy.watchdog import WatchdogConfig


class Shown(Protocol):
    """What of a compiled Policy is shown (not the class: it imports this module)."""

    file: PolicyFile
    layers: Layers
    variables: Variables
    rules: tuple[Rule, ...]
    ignored: tuple[Rule, ...]
    sources: tuple[str, ...]
    project_file: str | None
    confirm_external_actions: bool
    watchdog: WatchdogConfig | None

    @property
    def user_file(self) -> str | None: ...

    def effective_scope(self, tools: Sequence[ToolSpec] = ()) -> Scope: ...

    def exposed(self, spec: ToolSpec) -> bool: ...

    def for_caller(self, caller: Caller) -> Shown: ...


PRECEDENCE = (
    "most specific matching rule wins: exact > prefix > glob > any pattern; then the longer "
    "literal part; then tool > capability > '*'; then a rule for a subject > for a client > "
    "for a group or scope > for everyone; then, among the operator's rules, the later "
    "layer (--allow > the --policy file > the default); then deny > ask > allow. A manifest "
    "deny cannot be overridden by project or session rules, nor a project deny by session "
    "rules. No match: default_action."
)


def _rule(rule: Rule) -> dict[str, Any]:
    layer = LAYER_NAMES.get(rule.layer, "") if rule.scope == "manifest" else rule.scope
    written = rule.file or rule.origin.rpartition(" ")[0] or rule.origin
    where = f"{written} line {rule.line}" if rule.line is not None else rule.origin
    return {**rule.as_json(), "layer": layer, "from": where}


def render_policy(
    policy: Shown, tools: Sequence[ToolSpec] = (), caller: Caller | None = None
) -> str:
    """The effective policy as JSON. With ``tools``, ``requires`` is the effective set over
    those of them that are exposed, and the tools left out of tools/list are named; with
    ``caller``, as that caller gets it."""
    whole = policy
    if caller is not None:
        policy = policy.for_caller(caller)
    scope = policy.effective_scope(tools)
    file = policy.file
    layers: list[dict[str, Any]] = []
    if file.extends == "default":
        layers.append({"layer": "default", "source": "default policy"})
    if policy.user_file is not None:
        layers.append({"layer": "policy file", "source": policy.user_file, "extends": file.extends})
    allowed = [r.origin.removeprefix("--allow ") for r in policy.rules if r.layer == 2]
    if allowed:
        layers.append({"layer": "--allow", "source": "command line", "allow": allowed})
    if policy.project_file is not None:
        layers.append({"layer": "project", "source": policy.project_file})
    watchdog = policy.watchdog
    document: dict[str, Any] = {
        "sources": list(policy.sources),
        "layers": layers,
        "default_action": file.default_action,
        "grant": file.grant,
        "trust_project_allow": file.trust_project_allow,
        "security": {"confirm_external_actions": policy.confirm_external_actions},
        "watchdog": None
        if watchdog is None
        else {
            "command": list(watchdog.argv),
            "timeout_s": watchdog.timeout_s,
            "read": [str(p) for p in watchdog.read],
        },
        "settings_from": dict(sorted(policy.layers.settings_from.items())),
        "variables": {
            "workspace": [str(p) for p in policy.variables.workspace],
            "ad-hoc": [str(p) for p in policy.variables.ad_hoc],
            "user-data": [str(p) for p in policy.variables.user_data],
        },
        "requires": {
            "fs.read": [p.source for p in scope.fs_read],
            "fs.write": [p.source for p in scope.fs_write],
            "net.hosts": [p.source for p in scope.hosts],
            "shell": [s.model_dump(mode="json") for s in scope.shell],
            "capabilities": sorted(scope.capabilities),
            "expanded_to_nothing": list(scope.empty),
        },
        "sandbox": file.sandbox.model_dump(mode="json"),
        "hidden_tools": [t.name for t in tools if not policy.exposed(t)],
        "rules": [_rule(r) for r in policy.rules],
        "rules_for_others": [_rule(r) for r in whole.rules if r not in policy.rules],
        "ignored_rules": [
            {**_rule(r), "why": "project allow rules need trust_project_allow = true"}
            for r in policy.ignored
        ],
        "precedence": PRECEDENCE,
    }
    if caller is not None:
        document = {"as": _as(caller), **document}
    return json.dumps(document, indent=2)


def _as(caller: Caller) -> dict[str, Any]:
    return {
        "subject": caller.subject,
        "client": caller.client_id,
        "groups": sorted(caller.groups),
        "scopes": sorted(caller.scopes),
    }
