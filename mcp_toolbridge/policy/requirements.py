"""RequirementSet compilation and the call-time capability check (the first defense layer).

A :class:`~mcp_toolbridge.model.RequirementSet` is compiled once into a :class:`Scope`:
variables expanded, relative path patterns rooted at the workspace, literal directories made
canonical, globs compiled. The scope a call runs in is the policy's grant united with the called
tool's own requirements (see docs/permissions.md). :func:`argument_targets` finds the paths,
hosts and commands a call's arguments name; :func:`check_scope` refuses any that lie outside.
"""

from __future__ import annotations

import itertools
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

from mcp_toolbridge.errors import ArgumentsError
from mcp_toolbridge.model import (
    HttpTransport,
    PrefixArg,
    RequirementSet,
    ShellRequirement,
    ToolSpec,
)
from mcp_toolbridge.policy.paths import (
    PathRejectedError,
    canonical_root,
    canonicalize,
    check_text,
    escape_glob,
    glob_regex,
    is_within,
    split_glob,
)

VARIABLE_NAMES = ("workspace", "ad-hoc", "user-data")
KNOWN_CAPABILITIES = frozenset({"fs.read", "fs.write", "net.fetch", "shell.run"})
Role = Literal["fs.read", "fs.write", "net.fetch", "shell.run"]
ArgumentRoles = Mapping[str, Role | tuple[Role, ...]]
"""Argument name -> what the value is: a path read, a path written, a URL fetched, a command."""
CommandSplitter = Callable[[str], tuple[tuple[str, ...], ...]]

_T = TypeVar("_T")
_VARIABLE = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")
_SHELL_SYNTAX = frozenset(";&|<>$`(){}*?[]~\n\\#=!")


class VariableError(ValueError):
    """An undefined ``{name}`` in a pattern: a typo that must stop the load."""


@dataclass(frozen=True, slots=True)
class Variables:
    """What each pattern variable expands to. An empty tuple is an empty expansion."""

    workspace: tuple[Path, ...] = ()
    ad_hoc: tuple[Path, ...] = ()
    user_data: tuple[Path, ...] = ()

    @classmethod
    def of(
        cls, *, workspace: Path | None, user_data: Path | None, ad_hoc: Sequence[Path] = ()
    ) -> Variables:
        return cls(
            workspace=(canonical_root(workspace),) if workspace is not None else (),
            ad_hoc=tuple(canonical_root(p) for p in ad_hoc),
            user_data=(canonical_root(user_data),) if user_data is not None else (),
        )

    def values(self, name: str) -> tuple[Path, ...]:
        table = {"workspace": self.workspace, "ad-hoc": self.ad_hoc, "user-data": self.user_data}
        if name not in table:
            known = ", ".join("{" + n + "}" for n in VARIABLE_NAMES)
            raise VariableError(f"unknown variable {{{name}}}; known variables: {known}")
        return table[name]


def expand(pattern: str, variables: Variables, *, glob: bool = False) -> tuple[str, ...]:
    """Every expansion of ``pattern`` (one per combination of variable values).

    ``{{`` and ``}}`` stand for literal braces. An empty tuple means a variable expanded to
    nothing; an unknown variable raises :class:`VariableError`. With ``glob`` the pattern is a
    path glob and each value is substituted escaped (:func:`escape_glob`): a workspace named
    ``w[1]?`` is that folder, never a pattern.
    """
    pieces: list[tuple[str, ...]] = []
    last = 0
    for match in _VARIABLE.finditer(pattern):
        pieces.append((pattern[last : match.start()],))
        token = match.group()
        if token in ("{{", "}}"):
            pieces.append((token[0],))
        else:
            values = (str(p) for p in variables.values(match.group(1)))
            pieces.append(tuple(escape_glob(v) if glob else v for v in values))
        last = match.end()
    pieces.append((pattern[last:],))
    return tuple("".join(combo) for combo in itertools.product(*pieces))


@dataclass(frozen=True, slots=True)
class PathPattern:
    """A compiled path pattern: a literal root (the path and everything below) or a glob."""

    source: str
    root: Path
    regex: re.Pattern[str] | None = None

    def matches(self, path: Path) -> bool:
        if self.regex is None:
            return is_within(path, self.root)
        return is_within(path, self.root) and self.regex.match(path.as_posix()) is not None

    @property
    def literal(self) -> str:
        """Its part before any wildcard, as written: ``root`` is where that part resolved to
        through its links when it was compiled."""
        return split_glob(self.source)[0]


def compile_path(expanded: str, variables: Variables) -> tuple[PathPattern, ...]:
    """Compile one expanded pattern (variables substituted escaped: see :func:`expand`); a
    relative one is rooted at each workspace root."""
    check_text(expanded, what=f"path pattern {expanded!r}")
    if expanded.startswith("/"):
        absolute: tuple[str, ...] = (expanded,)
    else:
        absolute = tuple(
            f"{escape_glob(root.as_posix().rstrip('/'))}/{expanded}" for root in variables.workspace
        )
    out: list[PathPattern] = []
    for pattern in absolute:
        literal, rest = split_glob(pattern)
        root = canonical_root(Path(literal))
        if not rest:
            out.append(PathPattern(pattern, root))
            continue
        glob = f"{escape_glob(root.as_posix().rstrip('/'))}/{rest}"
        out.append(PathPattern(pattern, root, glob_regex(glob)))
    return tuple(out)


def normalize_host(host: str) -> str:
    check_text(host, what=f"host {host!r}")
    return host.strip().lower().rstrip(".").removeprefix("[").removesuffix("]")


@dataclass(frozen=True, slots=True)
class HostPattern:
    """``*`` any host; ``*.example.com`` any subdomain (not the apex); otherwise exact."""

    source: str

    def matches(self, host: str) -> bool:
        pattern = self.source
        if pattern == "*":
            return True
        if pattern.startswith("*."):
            return host.endswith(pattern[1:]) and len(host) > len(pattern) - 1
        return host == pattern


def compile_host(raw: str) -> HostPattern:
    host = normalize_host(raw)
    name, colon, port = host.rpartition(":")
    if colon and port.isdigit() and name and (":" not in name or name.endswith("]")):
        bare = name.removesuffix("]")
        raise ValueError(
            f"invalid host pattern {raw!r}: a host is granted without a port (on every port); "
            f"write {bare!r}"
        )
    if not host or any(ch in host for ch in "/@ \t") or "*" in host.lstrip("*."):
        raise ValueError(f"invalid host pattern {raw!r}: use a host name, an IP, '*.domain' or '*'")
    return HostPattern(host)


def shell_matches(requirement: ShellRequirement, argv: Sequence[str]) -> bool:
    """argv[0] equals ``cmd`` exactly; each ArgPattern matches one positional argument."""
    if not argv or argv[0] != requirement.cmd:
        return False
    if requirement.args is None:
        return True
    rest = argv[1:]
    if len(rest) != len(requirement.args):
        return False
    for pattern, arg in zip(requirement.args, rest, strict=True):
        if isinstance(pattern, str):
            if arg != pattern:
                return False
        elif isinstance(pattern, PrefixArg) and not arg.startswith(pattern.prefix):
            return False
    return True


@dataclass(frozen=True, slots=True)
class Scope:
    """A compiled RequirementSet: what a call may touch."""

    fs_read: tuple[PathPattern, ...] = ()
    fs_write: tuple[PathPattern, ...] = ()
    hosts: tuple[HostPattern, ...] = ()
    shell: tuple[ShellRequirement, ...] = ()
    capabilities: frozenset[str] = frozenset()
    empty: tuple[str, ...] = ()
    """Patterns that expanded to nothing (named in denial messages)."""

    def union(self, other: Scope) -> Scope:
        return Scope(
            fs_read=_dedupe(self.fs_read + other.fs_read),
            fs_write=_dedupe(self.fs_write + other.fs_write),
            hosts=_dedupe(self.hosts + other.hosts),
            shell=_dedupe(self.shell + other.shell),
            capabilities=self.capabilities | other.capabilities,
            empty=_dedupe(self.empty + other.empty),
        )

    def allows_shell(self) -> bool:
        return bool(self.shell) or "shell.run" in self.capabilities


def _dedupe(items: tuple[_T, ...]) -> tuple[_T, ...]:
    return tuple(dict.fromkeys(items))


def compile_requirements(requires: RequirementSet, variables: Variables) -> Scope:
    """Compile a RequirementSet. Raises ValueError (VariableError for a typo) naming the key."""
    fs: dict[str, list[PathPattern]] = {"fs.read": [], "fs.write": []}
    empty: list[str] = []
    for key, patterns in (("fs.read", requires.fs_read), ("fs.write", requires.fs_write)):
        for index, raw in enumerate(patterns):
            try:
                expansions = expand(raw, variables, glob=True)
                compiled = [p for e in expansions for p in compile_path(e, variables)]
            except (ValueError, PathRejectedError) as exc:
                raise ValueError(f"{key}[{index}]: {exc}") from exc
            if not compiled:
                empty.append(raw)
            fs[key].extend(compiled)
    hosts: list[HostPattern] = []
    for index, raw in enumerate(requires.net_hosts):
        try:
            hosts.extend(compile_host(h) for h in expand(raw, variables))
        except (ValueError, PathRejectedError) as exc:
            raise ValueError(f"net.hosts[{index}]: {exc}") from exc
    capabilities: set[str] = set()
    for index, name in enumerate(requires.capabilities):
        try:
            check_text(name, what=f"capability {name!r}")
            if name.startswith("net:"):
                hosts.append(compile_host(name[4:]))
                capabilities.add("net.fetch")
            else:
                capabilities.add(name)
        except (ValueError, PathRejectedError) as exc:
            raise ValueError(f"capabilities[{index}]: {exc}") from exc
    return Scope(
        fs_read=tuple(fs["fs.read"]),
        fs_write=tuple(fs["fs.write"]),
        hosts=tuple(hosts),
        shell=requires.shell,
        capabilities=frozenset(capabilities),
        empty=tuple(empty),
    )


@dataclass(frozen=True, slots=True)
class Targets:
    """What a call's arguments point at, canonicalized."""

    paths_read: tuple[Path, ...] = ()
    paths_write: tuple[Path, ...] = ()
    hosts: tuple[str, ...] = ()
    commands: tuple[tuple[str, ...], ...] = ()
    operand_paths: frozenset[tuple[str, Path]] = frozenset()
    """(``fs.read`` or ``fs.write``, path) pairs among the paths above that a shell command
    names as operands, so the command's own rule already saw them: they meet the capability
    check and the path rules that match them, but one that no rule matches adds nothing (no
    ``default_action``). See docs/permissions.md, "bash"."""

    def is_empty(self) -> bool:
        return not (self.paths_read or self.paths_write or self.hosts or self.commands)


@dataclass(frozen=True, slots=True)
class Denial:
    """The capability check refused a call: which capability, which target, and why."""

    capability: str
    target: str
    message: str
    rule: str = field(default="capability check")


def split_command(command: str) -> tuple[tuple[str, ...], ...]:
    """The default command splitter: conservative, never guesses at shell syntax.

    A command without shell syntax becomes one argv (``shlex.split``). Anything with operators,
    redirections, expansions, globs, escapes or newlines is kept whole as
    ``("bash", "-c", command)``, which is what actually runs; it then matches only a shell
    grant for ``bash`` itself and rules written for the whole text.
    """
    check_text(command.replace("\n", " ").replace("\t", " "), what="the command")
    if not command.strip():
        raise ArgumentsError("the command is empty; give a command to run")
    if any(ch in _SHELL_SYNTAX for ch in command):
        return (("bash", "-c", command),)
    try:
        argv = tuple(shlex.split(command))
    except ValueError:
        return (("bash", "-c", command),)
    return (argv,)


def host_of(url: str) -> str:
    check_text(url, what="the URL")
    try:
        host = urlsplit(url).hostname
    except ValueError as exc:
        raise ArgumentsError(f"the URL {url!r} is not valid: {exc}") from exc
    if not host:
        raise ArgumentsError(f"the URL {url!r} has no host; give an absolute http(s) URL")
    return normalize_host(host)


def _strings(name: str, value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ArgumentsError(f"argument {name!r} must be a string or a list of strings")


def argument_targets(
    spec: ToolSpec,
    arguments: Mapping[str, Any],
    *,
    base: Path,
    roles: ArgumentRoles | None = None,
    splitter: CommandSplitter = split_command,
) -> Targets:
    """Find and canonicalize the paths, hosts and commands a call names.

    ``roles`` maps a top-level argument name to its role(s); a missing or null argument is
    skipped. An http tool's URL host is always a target (its template filled from the
    arguments). Raises ArgumentsError (PathRejectedError) for unusable values.
    """
    found: dict[str, list[Any]] = {"fs.read": [], "fs.write": [], "net.fetch": [], "shell.run": []}
    for name, role_or_roles in (roles or {}).items():
        value = arguments.get(name)
        if value is None:
            continue
        role_list = (role_or_roles,) if isinstance(role_or_roles, str) else role_or_roles
        for text in _strings(name, value):
            for role in role_list:
                if role in ("fs.read", "fs.write"):
                    found[role].append(canonicalize(text, base=base))
                elif role == "net.fetch":
                    found[role].append(host_of(text))
                else:
                    found[role].extend(splitter(text))
    if isinstance(spec.transport, HttpTransport):
        found["net.fetch"].append(host_of(_fill_template(spec.transport.url, arguments)))
    return Targets(
        paths_read=tuple(found["fs.read"]),
        paths_write=tuple(found["fs.write"]),
        hosts=tuple(found["net.fetch"]),
        commands=tuple(found["shell.run"]),
    )


def _fill_template(url: str, arguments: Mapping[str, Any]) -> str:
    def fill(match: re.Match[str]) -> str:
        value = arguments.get(match.group(1))
        return match.group() if value is None else str(value)

    return re.sub(r"\{([A-Za-z0-9_.-]+)\}", fill, url)


def check_scope(scope: Scope, targets: Targets) -> Denial | None:
    """The first target outside ``scope``, as a Denial; None when everything is inside."""
    for capability, paths, patterns in (
        ("fs.read", targets.paths_read, scope.fs_read),
        ("fs.write", targets.paths_write, scope.fs_write),
    ):
        for path in paths:
            if not any(p.matches(path) for p in patterns):
                return Denial(
                    capability, str(path), _outside(capability, str(path), patterns, scope)
                )
    for host in targets.hosts:
        if not any(p.matches(host) for p in scope.hosts):
            granted = ", ".join(p.source for p in scope.hosts) or "none"
            return Denial(
                "net.fetch",
                host,
                f"host {host!r} is not in the granted net.hosts ({granted}); "
                "declare it in the policy's [requires] net.hosts, or in the tool's capabilities "
                '("net:HOST" in its Runloop entry)',
            )
    for argv in targets.commands:
        text = shlex.join(argv)
        if not scope.allows_shell():
            return Denial("shell.run", text, "running commands (shell.run) is not granted")
        if scope.shell and not any(shell_matches(r, argv) for r in scope.shell):
            allowed = ", ".join(r.cmd for r in scope.shell)
            return Denial(
                "shell.run",
                text,
                f"command {text!r} matches no granted shell entry (commands: {allowed})",
            )
    return None


def _outside(capability: str, path: str, patterns: tuple[PathPattern, ...], scope: Scope) -> str:
    if not patterns:
        why = f" ({', '.join(scope.empty)} expanded to nothing)" if scope.empty else ""
        return f"no {capability} scope is granted{why}, so {path!r} cannot be used"
    granted = ", ".join(p.source for p in patterns)
    return f"{path!r} is outside the granted {capability} scope ({granted})"
