"""How the operator's policy is put together: the built-in default, the ``--policy`` file over
it, and ``--allow`` over both.

- The file **adds to** the default unless it says ``extends = "none"``. A setting it writes
  replaces the default's (key by key inside a table such as ``[security]``); the path, host,
  shell and capability lists of ``[requires]`` are added to the default's; its rules are added
  to the default's rules.
- Rules keep their layer: at equal specificity a rule of a later layer wins over an earlier
  layer's, whatever the actions (``rules.resolve``), so a file's ``bash`` allow beats the
  default's ``bash`` ask. Within one layer, deny > ask > allow as before.
- ``allow = [...]``, ``ask = [...]`` and ``deny = [...]`` write one rule per entry, as
  ``NAME`` or ``NAME=PATTERN`` (an exact or glob pattern); ``--allow NAME[=PATTERN]`` is the
  same on the command line.
- A rule may be for some callers only: ``subject``, ``client``, ``group`` or ``scope`` in a
  ``[[rules]]`` entry, or the one-line lists of a ``[[callers]]`` table that names them.
"""

from __future__ import annotations

import functools
import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_toolbridge.policy.file import (
    DEFAULT_POLICY_TOML,
    CallersModel,
    PolicyFile,
    PrefixPattern,
    ProjectFile,
    RuleModel,
    invalid,
    load_toml,
    read_policy_text,
    split_shorthand,
    validate_policy,
)
from mcp_toolbridge.policy.requirements import Scope, Variables, compile_requirements
from mcp_toolbridge.policy.rules import Action, Rule, RuleScope, Who, compile_rule
from mcp_toolbridge.policy.toml_lines import KeyLines, KeyPath, key_lines, line_of

DEFAULT_ORIGIN = "default policy"
LAYER_DEFAULT, LAYER_FILE, LAYER_COMMAND_LINE = 0, 1, 2
LAYER_NAMES = {LAYER_DEFAULT: "default", LAYER_FILE: "policy file", LAYER_COMMAND_LINE: "--allow"}
SHORTHAND_KEYS: tuple[Action, ...] = ("allow", "ask", "deny")
_RULE_KEYS = frozenset({"extends", "rules", "callers", *SHORTHAND_KEYS})


@dataclass(frozen=True, slots=True)
class RuleSource:
    """One rule as written, before it is compiled: where it is and which layer it is in."""

    model: RuleModel
    origin: str
    """``default policy rules[3]``, ``/etc/tb.toml allow[0]``, ``--allow 'bash=git status'``."""
    file: str | None
    """The file it is written in (None: the built-in default or the command line)."""
    key: KeyPath
    line: int | None
    layer: int


@dataclass(frozen=True)
class Layers:
    """The merged operator policy: effective settings and every rule with its source."""

    file: PolicyFile
    rules: tuple[RuleSource, ...]
    user_file: str | None
    """The ``--policy`` file, when one was given."""
    own: PolicyFile | None = None
    """That file alone, as written (not merged)."""
    lines: KeyLines = field(default_factory=dict)
    """Where each key of the ``--policy`` file is written."""
    settings_from: dict[str, str] = field(default_factory=dict)
    """Dotted setting -> where its value comes from (``default policy``, ``FILE line N``)."""


@functools.cache
def _default_data() -> dict[str, Any]:
    return load_toml(DEFAULT_POLICY_TOML, DEFAULT_ORIGIN)


def rule_sources(
    data: dict[str, Any],
    model: PolicyFile | ProjectFile,
    *,
    origin: str,
    file: str | None,
    lines: KeyLines,
    layer: int,
) -> list[RuleSource]:
    """The rules a validated file writes: ``allow``/``ask``/``deny`` entries, then ``rules``,
    then the one-line rules of each ``[[callers]]`` table."""
    out = _shorthands(model, (), origin=origin, file=file, lines=lines, layer=layer)
    for index, rule in enumerate(model.rules):
        key: KeyPath = ("rules", index)
        out.append(
            RuleSource(
                rule,
                f"{origin} rules[{index}]",
                file,
                key,
                line_of(lines, (*key, "permission")),  # what names the rule; else its header
                layer,
            )
        )
    callers: list[CallersModel] = getattr(model, "callers", [])
    for index, who in enumerate(callers):
        out += _shorthands(
            who, ("callers", index), origin=origin, file=file, lines=lines, layer=layer
        )
    return out


def _shorthands(
    model: PolicyFile | ProjectFile | CallersModel,
    prefix: KeyPath,
    *,
    origin: str,
    file: str | None,
    lines: KeyLines,
    layer: int,
) -> list[RuleSource]:
    """The ``allow``/``ask``/``deny`` entries of a file (``prefix`` empty) or of one
    ``[[callers]]`` table (its identity on every rule)."""
    whom: dict[str, str | None] = {}
    if isinstance(model, CallersModel):
        whom = {k: getattr(model, k) for k in ("subject", "client", "group", "scope")}
    where = "".join(f"[{k}]" if isinstance(k, int) else k for k in prefix)
    out: list[RuleSource] = []
    for action in SHORTHAND_KEYS:
        for index, entry in enumerate(getattr(model, action)):
            permission, pattern = split_shorthand(entry)
            key: KeyPath = (*prefix, action, index)
            named = f"{where}.{action}[{index}]" if where else f"{action}[{index}]"
            rule = RuleModel(permission=permission, pattern=pattern, action=action, **whom)
            out.append(RuleSource(rule, f"{origin} {named}", file, key, line_of(lines, key), layer))
    return out


def who_of(model: RuleModel) -> Who | None:
    """Whom a rule as written is for (None: everyone)."""
    who = Who(model.subject, model.client, model.group, model.scope)
    return who if who.fields() else None


def command_line_rules(allow: Sequence[str]) -> list[RuleSource]:
    """``--allow NAME[=PATTERN]`` entries as rules of the last layer."""
    out: list[RuleSource] = []
    for index, entry in enumerate(allow):
        try:
            permission, pattern = split_shorthand(entry)
        except ValueError as exc:
            raise invalid("--allow", f"{entry!r}: {exc}") from exc
        model = RuleModel(permission=permission, pattern=pattern, action="allow")
        origin = f"--allow {shlex.quote(entry)}"
        out.append(RuleSource(model, origin, None, ("--allow", index), None, LAYER_COMMAND_LINE))
    return out


def _union(base: list[Any], extra: list[Any]) -> list[Any]:
    seen = {json.dumps(v, sort_keys=True) for v in base}
    return base + [v for v in extra if json.dumps(v, sort_keys=True) not in seen]


def _merge_requires(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        mine = out.get(key)
        if isinstance(value, dict) and isinstance(mine, dict):
            out[key] = {
                k: _union(mine.get(k, []), v) if isinstance(v, list) else v
                for k, v in {**mine, **value}.items()
            }
        elif isinstance(value, list) and isinstance(mine, list):
            out[key] = _union(mine, value)
        else:
            out[key] = value
    return out


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """The settings of ``over`` laid over ``base`` (rules are not settings: left out)."""
    out = {k: v for k, v in base.items() if k not in _RULE_KEYS}
    for key, value in over.items():
        if key in _RULE_KEYS:
            continue
        if key == "requires" and isinstance(value, dict):
            out[key] = _merge_requires(out.get(key, {}), value)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def _leaves(data: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    for key, value in data.items():
        if not prefix and key in _RULE_KEYS:
            continue
        if isinstance(value, dict) and value and key != "web_search":
            found += _leaves(value, (*prefix, key))
        else:
            found.append((*prefix, key))
    return found


def _settings_from(
    base: dict[str, Any], over: dict[str, Any], origin: str, lines: KeyLines
) -> dict[str, str]:
    """Where each effective setting comes from; a [requires] list both give lists both."""
    out = {".".join(key): DEFAULT_ORIGIN for key in _leaves(base)}
    for key in _leaves(over):
        line = line_of(lines, key)
        here = f"{origin} line {line}" if line is not None else origin
        name = ".".join(key)
        if key[0] == "requires" and name in out:
            out[name] = f"{out[name]}, {here}"
        else:
            out[name] = here
    return out


def load_layers(policy_file: Path | None, allow: Sequence[str] = ()) -> Layers:
    """Read the default and the ``--policy`` file and put them together with ``--allow``.

    Raises ConfigError (policy.invalid) naming the file, the line and the key.
    """
    default = _default_data()
    default_model = validate_policy(PolicyFile, default, DEFAULT_POLICY_TOML, DEFAULT_ORIGIN)
    default_rules = rule_sources(
        default, default_model, origin=DEFAULT_ORIGIN, file=None, lines={}, layer=LAYER_DEFAULT
    )
    if policy_file is None:
        rules = [*default_rules, *command_line_rules(allow)]
        settings = _settings_from(default, {}, DEFAULT_ORIGIN, {})
        return Layers(default_model, tuple(rules), None, None, {}, settings)
    origin = str(policy_file)
    text = read_policy_text(policy_file)
    data = load_toml(text, origin)
    own = validate_policy(PolicyFile, data, text, origin)
    lines = key_lines(text)
    base = default if own.extends == "default" else {}
    merged = validate_policy(
        PolicyFile, {**merge(base, data), "extends": own.extends}, text, origin
    )
    mine = rule_sources(data, own, origin=origin, file=origin, lines=lines, layer=LAYER_FILE)
    inherited = default_rules if own.extends == "default" else []
    rules = [*inherited, *mine, *command_line_rules(allow)]
    settings = _settings_from(base, data, origin, lines)
    return Layers(merged, tuple(rules), origin, own, lines, settings)


def load_project(path: Path) -> tuple[list[RuleSource], KeyLines]:
    """The rules of ``<workspace>/.toolbridge/policy.toml`` (the project scope)."""
    origin = str(path)
    text = read_policy_text(path)
    data = load_toml(text, origin)
    project = validate_policy(ProjectFile, data, text, origin)
    lines = key_lines(text)
    return rule_sources(
        data, project, origin=origin, file=origin, lines=lines, layer=LAYER_DEFAULT
    ), lines


def pattern_of(model: RuleModel) -> tuple[str | None, bool]:
    """(pattern text, is a prefix pattern) of a rule as written."""
    pattern = model.pattern
    if isinstance(pattern, PrefixPattern):
        return pattern.prefix, True
    return pattern, False


def _requires_key(message: str) -> KeyPath:
    """``fs.read[1]: ...`` (a compile_requirements error) -> ``("requires", "fs", "read", 1)``."""
    head = message.split(":", 1)[0]
    name, _, index = head.partition("[")
    parts: list[str | int] = ["requires", *name.split(".")]
    if index.rstrip("]").isdigit():
        parts.append(int(index.rstrip("]")))
    return tuple(parts)


def compile_grant(layers: Layers, variables: Variables) -> Scope:
    """The policy's ``[requires]`` compiled. An error in the ``--policy`` file is reported
    against that file's own entries (their index and line there)."""
    if layers.own is not None and layers.user_file is not None:
        try:
            compile_requirements(layers.own.requires.requirement_set(), variables)
        except ValueError as exc:
            line = line_of(layers.lines, _requires_key(str(exc)))
            where = f"line {line}: " if line is not None else ""
            raise invalid(layers.user_file, f"{where}requires.{exc}") from exc
    try:
        return compile_requirements(layers.file.requires.requirement_set(), variables)
    except ValueError as exc:
        raise invalid(layers.user_file or DEFAULT_ORIGIN, f"requires.{exc}") from exc


def compile_sources(
    sources: Sequence[RuleSource], scope: RuleScope, variables: Variables
) -> list[Rule]:
    """Compile rules as written; an undefined variable names the file, line and key."""
    out: list[Rule] = []
    for source in sources:
        pattern, prefix = pattern_of(source.model)
        try:
            out.append(
                compile_rule(
                    source.model.permission,
                    pattern,
                    source.model.action,
                    scope=scope,
                    origin=source.origin,
                    prefix=prefix,
                    variables=variables,
                    layer=source.layer,
                    line=source.line,
                    file=source.file,
                    who=who_of(source.model),
                )
            )
        except ValueError as exc:
            key = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in source.key)[1:]
            where = f"line {source.line}: " if source.line is not None else ""
            suffix = ".pattern" if source.key[0] == "rules" else ""
            raise invalid(source.file or source.origin, f"{where}{key}{suffix}: {exc}") from exc
    return out
