"""Permission rules: (permission, pattern, action), compiled once, and the specificity order.

A call is split into subjects (one per path, host or command it targets; one argument-less
subject when it targets nothing). For each subject the matching rule with the greatest key wins:

    (pattern kind: exact 3 > prefix 2 > glob 1 > any 0,
     length of the pattern's literal part,
     permission: tool name or id 3 > group of tools 2 > capability 1 > "*" 0,
     whom it is for: a subject 3 > an OAuth client 2 > a group or scope 1 > everyone 0,
     action: deny 2 > ask 1 > allow 0)

A permission names one tool (its MCP name or manifest id), a capability, every tool (``*``),
or a group of tools (:class:`ToolGroup`): a glob of tool names and ids (``fx_*``), or the tools
of a manifest, named by a path (it has a ``/``: ``./manifests/fx``, the manifest file or a
folder holding it; a relative path is read from the folder of the file the rule is written
in, or from the working directory for ``--allow``).

A rule may be for some callers only (:class:`Who`: a subject, an OAuth client, a group or
role claim, a scope; every condition given must hold); the caller's rules are the rules for
everyone plus those for it (``Policy.for_caller``), so a rule for a person beats a rule for
everyone at equal specificity.

Within one scope, the operator's rules also carry a layer (the built-in default 0, the
``--policy`` file 1, ``--allow`` 2): it is compared just before the action, so at equal
specificity a later layer's rule wins whatever the actions, and a file can allow what the
default asks about. Across scopes the layer plays no part.

Then the sticky-deny rule: when the winner is not a deny, the best match within each stricter
scope (manifest, then project) is looked at, and if that is a deny it wins instead. So a
manifest deny is never turned into ask or allow by a project or session rule.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from mcp_toolbridge.host import Caller
from mcp_toolbridge.model import HttpTransport, ToolSpec
from mcp_toolbridge.policy.paths import (
    canonical_root,
    escape_glob,
    glob_regex,
    has_glob,
    is_within,
    split_glob,
    wildcard_pattern,
)
from mcp_toolbridge.policy.requirements import KNOWN_CAPABILITIES, Targets, Variables, expand

Action = Literal["allow", "deny", "ask"]
RuleScope = Literal["manifest", "project", "session"]
Kind = Literal["any", "glob", "prefix", "exact"]

KIND_RANK: dict[Kind, int] = {"any": 0, "glob": 1, "prefix": 2, "exact": 3}
ACTION_RANK: dict[Action, int] = {"allow": 0, "ask": 1, "deny": 2}
SCOPE_RANK: dict[RuleScope, int] = {"session": 0, "project": 1, "manifest": 2}
_UNIVERSAL = frozenset({"*", "**"})


@dataclass(frozen=True, slots=True)
class Subject:
    """One thing a call touches, as rules see it."""

    capability: str | None = None
    text: str | None = None
    path: Path | None = None

    @classmethod
    def none(cls) -> Subject:
        return cls()

    @classmethod
    def host(cls, host: str) -> Subject:
        return cls("net.fetch", host.lower())

    @classmethod
    def command(cls, argv: tuple[str, ...]) -> Subject:
        return cls("shell.run", shlex.join(argv))

    def pattern_text(self) -> str | None:
        return str(self.path) if self.path is not None else self.text


def subjects(targets: Targets) -> tuple[Subject, ...]:
    found = [
        *(Subject("fs.read", path=p) for p in targets.paths_read),
        *(Subject("fs.write", path=p) for p in targets.paths_write),
        *(Subject.host(h) for h in targets.hosts),
        *(Subject.command(c) for c in targets.commands),
    ]
    return tuple(found) or (Subject.none(),)


def tool_capabilities(spec: ToolSpec) -> frozenset[str]:
    """Capability names a tool declares, directly or through its requirements."""
    req = spec.requires
    names = {("net.fetch" if c.startswith("net:") else c) for c in req.capabilities}
    names |= {"fs.read"} if req.fs_read else set()
    names |= {"fs.write"} if req.fs_write else set()
    names |= {"net.fetch"} if req.net_hosts or isinstance(spec.transport, HttpTransport) else set()
    names |= {"shell.run"} if req.shell else set()
    return frozenset(names)


@dataclass(frozen=True, slots=True)
class Who:
    """Whom a rule is for: every condition given must hold for the caller (at least one is
    given; a rule for everyone has no Who)."""

    subject: str | None = None
    client: str | None = None
    group: str | None = None
    """A value of the caller's group or role claims (not a group of tools)."""
    scope: str | None = None
    """A scope of the caller's access token."""

    def matches(self, caller: Caller) -> bool:
        return (
            (self.subject is None or caller.subject == self.subject)
            and (self.client is None or caller.client_id == self.client)
            and (self.group is None or self.group in caller.groups)
            and (self.scope is None or self.scope in caller.scopes)
        )

    @property
    def rank(self) -> int:
        """How specific: a person 3, an OAuth client 2, a group or a scope 1."""
        return 3 if self.subject is not None else 2 if self.client is not None else 1

    def fields(self) -> dict[str, str]:
        found = {"subject": self.subject, "client": self.client}
        found |= {"group": self.group, "scope": self.scope}
        return {k: v for k, v in found.items() if v is not None}

    def describe(self) -> str:
        return "for " + " and ".join(f"{k} {v!r}" for k, v in self.fields().items())


@dataclass(frozen=True, slots=True)
class ToolGroup:
    """The tools a permission names together: those whose MCP name or manifest id fits
    ``glob`` (``fx_*``), or those loaded from the manifests at or below ``manifests`` (a
    manifest file, or a folder holding manifests; canonical). The locked tools belong to no
    manifest, but a glob can name them (``web_*``)."""

    glob: re.Pattern[str] | None = None
    manifests: Path | None = None

    def contains(self, spec: ToolSpec) -> bool:
        if self.glob is not None:
            return bool(self.glob.match(spec.name) or self.glob.match(spec.id))
        if self.manifests is None or spec.is_locked:
            return False
        return is_within(_manifest_path(spec.source.path), self.manifests)


@functools.lru_cache(maxsize=4096)
def _manifest_path(path: str) -> Path:
    return canonical_root(Path(path))


def is_manifest_path(permission: str) -> bool:
    """Whether a permission names manifests by a path rather than a tool or capability."""
    return "/" in permission or permission.startswith("~") or permission in (".", "..")


def tool_group(permission: str, base: Path | None = None) -> ToolGroup | None:
    """The group of tools ``permission`` names (None: it names one tool, a capability or
    ``*``). A relative path is read from ``base`` (default: the working directory)."""
    if is_manifest_path(permission):
        path = Path(permission).expanduser()
        if not path.is_absolute():
            path = (base or Path.cwd()) / path
        return ToolGroup(manifests=canonical_root(path))
    if permission != "*" and has_glob(permission):
        return ToolGroup(glob=text_glob(permission, ignore_case=False))
    return None


@dataclass(frozen=True, slots=True)
class _Alternative:
    """One expansion of a rule's pattern, compiled for text and for path subjects."""

    text: str
    literal: int
    text_regex: re.Pattern[str] | None
    host_regex: re.Pattern[str] | None
    paths: tuple[tuple[Path, re.Pattern[str] | None, int], ...]
    """(canonical root, glob regex or None, literal length) per workspace rooting."""


@dataclass(frozen=True, slots=True)
class Rule:
    permission: str
    pattern: str | None
    kind: Kind
    action: Action
    scope: RuleScope
    origin: str
    alternatives: tuple[_Alternative, ...] = ()
    layer: int = 0
    """Operator rules: 0 the built-in default, 1 the --policy file, 2 --allow."""
    line: int | None = None
    """The line of the file it is written on, when known."""
    file: str | None = None
    """The file it is written in (None: the built-in default, --allow, a session answer)."""
    group: ToolGroup | None = None
    """The tools the permission names when it is a glob or a manifest path."""
    who: Who | None = None
    """Whom it is for; None: everyone."""

    def names_tool(self, spec: ToolSpec) -> bool:
        """Whether the permission names this tool: its name or id, or a group holding it."""
        if self.permission in (spec.name, spec.id):
            return True
        return self.group is not None and self.group.contains(spec)

    def applies_to(self, spec: ToolSpec, subject: Subject | None = None) -> bool:
        perm = self.permission
        if perm == "*" or self.names_tool(spec):
            return True
        if self.group is not None:
            return False
        if subject is not None and subject.capability is not None:
            return perm == subject.capability or (
                perm not in KNOWN_CAPABILITIES and perm in tool_capabilities(spec)
            )
        return perm in tool_capabilities(spec)

    def permission_rank(self, spec: ToolSpec) -> int:
        if self.permission in (spec.name, spec.id):
            return 3
        if self.group is not None:
            return 2
        return 0 if self.permission == "*" else 1

    def match(self, subject: Subject) -> int | None:
        """The literal length of the best matching alternative; None when nothing matches."""
        if self.kind == "any":
            return 0
        best: int | None = None
        for alt in self.alternatives:
            length = _match_alternative(self.kind, alt, subject)
            if length is not None and (best is None or length > best):
                best = length
        return best

    def describe(self) -> str:
        if self.kind == "any":
            shown = "any argument"
        elif self.kind == "prefix":
            shown = f"prefix {self.pattern!r}"
        else:
            shown = f"{self.kind} {self.pattern!r}"
        whom = f", {self.who.describe()}" if self.who is not None else ""
        return f"{self.origin} ({self.permission}, {shown}, {self.action}{whom})"

    def as_json(self) -> dict[str, Any]:
        shown = {
            "scope": self.scope,
            "origin": self.origin,
            "line": self.line,
            "permission": self.permission,
            "kind": self.kind,
            "pattern": self.pattern,
            "expanded": [a.text for a in self.alternatives],
            "action": self.action,
            "for": self.who.fields() if self.who is not None else "everyone",
        }
        if self.group is not None and self.group.manifests is not None:
            shown["tools"] = f"the tools of the manifests at or below {self.group.manifests}"
        elif self.group is not None:
            shown["tools"] = f"every tool whose name or id fits the glob {self.permission!r}"
        return shown


def _match_alternative(kind: Kind, alt: _Alternative, subject: Subject) -> int | None:
    if subject.path is not None:
        best: int | None = None
        for root, regex, literal in alt.paths:
            if kind == "exact":
                hit = subject.path == root
            elif kind == "prefix":
                hit = is_within(subject.path, root)
            else:
                hit = regex is not None and regex.match(subject.path.as_posix()) is not None
            if hit and (best is None or literal > best):
                best = literal
        return best
    if subject.text is None:
        return None
    is_host = subject.capability == "net.fetch"
    text, pattern = subject.text, alt.text.lower() if is_host else alt.text
    if kind == "exact":
        hit = text == pattern
    elif kind == "prefix":
        boundary = is_host or pattern.endswith(" ")
        hit = text == pattern or text.startswith(pattern if boundary else pattern + " ")
    else:
        regex = alt.host_regex if is_host else alt.text_regex
        hit = regex is not None and regex.match(text) is not None
    return alt.literal if hit else None


def literal_length(pattern: str) -> int:
    """Characters of a glob other than ``*``, ``?`` and bracket expressions (an escaped
    character, a one-character bracket expression like ``[*]``, counts as one)."""
    count, i = 0, 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "[":
            end = pattern.find("]", i + 2)
            if end != -1:
                count += int(end == i + 2 and pattern[i + 1] != "!")
                i = end + 1
                continue
        if ch not in "*?":
            count += 1
        i += 1
    return count


def text_glob(pattern: str, *, ignore_case: bool) -> re.Pattern[str]:
    """A glob over plain text: ``*`` any run of characters, ``?`` one, ``[...]`` a class."""
    flags = re.DOTALL | (re.IGNORECASE if ignore_case else 0)
    return re.compile(wildcard_pattern(pattern, separator="") + r"\Z", flags)


def _compile_alternative(text: str, kind: Kind, variables: Variables) -> _Alternative:
    glob = kind == "glob"
    rooted: Iterable[str]
    if text.startswith("/"):
        rooted = (text,)
    else:
        rooted = (
            f"{escape_glob(r.as_posix().rstrip('/')) if glob else r.as_posix().rstrip('/')}/{text}"
            for r in variables.workspace
        )
    paths: list[tuple[Path, re.Pattern[str] | None, int]] = []
    for absolute in rooted:
        if glob:
            literal, rest = split_glob(absolute)
            root = canonical_root(Path(literal))
            regex = glob_regex(f"{escape_glob(root.as_posix().rstrip('/'))}/{rest}")
            paths.append((root, regex, literal_length(absolute)))
        else:
            paths.append((canonical_root(Path(absolute)), None, len(absolute)))
    return _Alternative(
        text=text,
        literal=literal_length(text) if glob else len(text),
        text_regex=text_glob(text, ignore_case=False) if glob else None,
        host_regex=text_glob(text, ignore_case=True) if glob else None,
        paths=tuple(paths),
    )


def compile_rule(
    permission: str,
    pattern: str | None,
    action: Action,
    *,
    scope: RuleScope,
    origin: str,
    prefix: bool = False,
    variables: Variables | None = None,
    layer: int = 0,
    line: int | None = None,
    file: str | None = None,
    who: Who | None = None,
) -> Rule:
    """Compile one rule. Raises ValueError (VariableError) for an undefined variable. A
    relative manifest path in ``permission`` is read from ``file``'s folder (none: the working
    directory)."""
    variables = variables or Variables()
    group = tool_group(permission, Path(file).parent if file is not None else None)
    if pattern is None or (not prefix and pattern in _UNIVERSAL):
        return Rule(
            permission, pattern, "any", action, scope, origin, (), layer, line, file, group, who
        )
    kind: Kind = "prefix" if prefix else ("glob" if has_glob(pattern) else "exact")
    alternatives = tuple(
        _compile_alternative(e, kind, variables)
        for e in expand(pattern, variables, glob=kind == "glob")
    )
    return Rule(
        permission,
        pattern,
        kind,
        action,
        scope,
        origin,
        alternatives,
        layer,
        line,
        file,
        group,
        who,
    )


def resolve(rules: Iterable[Rule], spec: ToolSpec, subject: Subject) -> Rule | None:
    """The rule that decides ``subject`` for ``spec``, or None when no rule matches."""
    best: dict[RuleScope, tuple[tuple[int, ...], Rule]] = {}
    for rule in rules:
        if not rule.applies_to(spec, subject):
            continue
        literal = rule.match(subject)
        if literal is None:
            continue
        key = (
            KIND_RANK[rule.kind],
            literal,
            rule.permission_rank(spec),
            rule.who.rank if rule.who is not None else 0,
            rule.layer,
            ACTION_RANK[rule.action],
        )
        current = best.get(rule.scope)
        if current is None or key > current[0]:
            best[rule.scope] = (key, rule)
    if not best:
        return None

    def across(entry: tuple[tuple[int, ...], Rule]) -> tuple[int, ...]:
        key, rule = entry  # the layer only orders rules within a scope
        return (*key[:4], key[5], SCOPE_RANK[rule.scope])

    _, winner = max(best.values(), key=across)
    if winner.action == "deny":
        return winner
    session = best.get("session")
    if winner.action == "ask" and session is not None and session[1].action == "allow":
        # "ask" means "ask the person", and session rules are the person's own "always"
        # answers for this very call: they settle an ask (never a deny, checked below).
        winner = session[1]
    for stricter in ("manifest", "project"):
        if SCOPE_RANK[stricter] <= SCOPE_RANK[winner.scope]:
            break
        entry = best.get(stricter)
        if entry is not None and entry[1].action == "deny":
            return entry[1]
    return winner
