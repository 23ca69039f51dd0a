"""The policy file's ``[secret_scan]`` table (docs/secrets.md, "Secrets nobody declared").

    [secret_scan]
    mode = "on"                                     # "off": nothing is scanned
    rules = { "generic-api-key" = true, "jwt" = false }   # per-rule switches

    [[secret_scan.allow]]                           # findings that are not secrets here
    tool = "git_*"                                  # the tool's MCP name (a glob)
    rule = "jwt"                                    # the rule id (a glob)
    pattern = "^eyJhbGciOiJub25lI"                  # a regex searched in the value found

An allow entry needs at least one of ``tool``, ``rule`` and ``pattern``; a finding is allowed
when every key the entry gives matches it. Rule ids are checked against the engine's rules.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

RULE_ID = r"^[a-z0-9][a-z0-9._-]{0,99}$"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AllowEntry(_Model):
    """One allow-list entry: a finding it matches is left in place (and not counted)."""

    tool: str | None = Field(default=None, min_length=1, max_length=200)
    rule: str | None = Field(default=None, min_length=1, max_length=100)
    pattern: str | None = Field(default=None, min_length=1, max_length=1000)

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression: {exc}") from exc
        return value

    @model_validator(mode="after")
    def _says_something(self) -> AllowEntry:
        if self.tool is None and self.rule is None and self.pattern is None:
            raise ValueError(
                "an allow entry needs tool, rule or pattern (an empty one would allow every "
                'secret: to stop scanning, write mode = "off")'
            )
        return self


class SecretScanSettings(_Model):
    """``[secret_scan]``: secrets nobody declared, found in results and arguments."""

    mode: Literal["on", "off"] = "on"
    """on: results are redacted and arguments checked; off: nothing is scanned."""
    rules: dict[str, bool] = Field(default={}, max_length=1000)
    """Per-rule switches over the defaults (every engine rule on, but the entropy-gated ones
    in :data:`OFF_BY_DEFAULT`)."""
    allow: list[AllowEntry] = Field(default=[], max_length=1000)

    @field_validator("rules")
    @classmethod
    def _known_rules(cls, value: dict[str, bool]) -> dict[str, bool]:
        if not value:
            return value
        from mcp_toolbridge.leaks.engine import OWN_RULES, known_rule_ids  # the engine: on use

        known = known_rule_ids() | OWN_RULES
        for rule in value:
            if re.match(RULE_ID, rule) is None:
                raise ValueError(f"{rule!r} is not a rule id (lower-case, like github-pat)")
            if known and rule not in known:
                near = sorted(k for k in known if rule.split("-")[0] in k)[:8]
                hint = f"; rules like it: {', '.join(near)}" if near else ""
                raise ValueError(
                    f"no rule {rule!r} in the secret scanner's rules{hint} (the ids are "
                    "those in [REDACTED:<rule-id>] markers and audit lines)"
                )
        return value

    def disabled(self) -> frozenset[str]:
        """The rule ids that are off: the default-off ones unless switched on, and those
        switched off."""
        from mcp_toolbridge.leaks.engine import OFF_BY_DEFAULT

        off = {rule for rule in OFF_BY_DEFAULT if not self.rules.get(rule, False)}
        off.update(rule for rule, on in self.rules.items() if not on)
        return frozenset(off)
