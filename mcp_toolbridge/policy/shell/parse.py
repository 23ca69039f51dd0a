"""The bash tool's sub-policy: a command line parsed into the simple commands it runs.

:func:`parse_command` parses with bashlex (a bash grammar) and walks the whole tree: lists
(``;``, ``&&``, ``||``, ``&``), pipelines, subshells, groups, loops and ifs, ``$( )``, backticks,
``<( )``, redirections and ``VAR=x`` prefixes. Every simple command becomes one argv, after its
assignments are stripped and its wrappers unwrapped (:mod:`mcp_toolbridge.policy.shell.argv`, flags
checked by :mod:`mcp_toolbridge.policy.shell.flags`); a
nested ``bash -c "..."`` is parsed in turn. The paths a command names are listed so the policy
can check them (``paths``): redirection targets, and the path operands of known file commands
(:mod:`mcp_toolbridge.policy.shell.operands`), each with the working directories it may be relative
to. ``cd``/``pushd`` are followed through ``&&``, ``||``, ``;``, subshells and pipelines (a
subshell's ``cd`` does not carry over); what cannot be followed (``cd`` alone, ``cd -``,
``cd ~``, ``cd`` in a loop) is refused.

What cannot be checked statically is listed in ``uncheckable`` (one reason each) instead of
being guessed: a command name or argument whose value is only known at run time (``$X``,
``$(...)``, brace expansion), ``eval``/``source``/``exec``/``sudo``, function definitions,
heredocs that expand commands, ``/dev/tcp`` redirects, invisible or control characters, more
than 50 simple commands, more than 10,000 characters, anything bashlex cannot parse, flags
that make a command run programs or write files (``find -exec``, ``sed -i``, ...), patterns
that can expand to such a flag (``find *`` beside a file named ``-delete``:
:mod:`mcp_toolbridge.policy.shell.expanded`), and paths that depend on HOME (``~``) or come
from stdin (``xargs cat``).

:func:`splitter` adapts this to :data:`mcp_toolbridge.policy.requirements.CommandSplitter`.

The walk itself is :mod:`mcp_toolbridge.policy.shell.walk`, word quoting
:mod:`mcp_toolbridge.policy.shell.words` and ``cd`` tracking :mod:`mcp_toolbridge.policy.shell.cwd`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from mcp_toolbridge.errors import ArgumentsError
from mcp_toolbridge.policy.shell.cwd import START, Chain, PathRef
from mcp_toolbridge.policy.shell.walk import MAX_COMMAND_CHARS, Walker, WalkState
from mcp_toolbridge.policy.shell.words import whole

__all__ = [
    "MAX_COMMAND_CHARS",
    "Chain",
    "ParsedCommand",
    "PathRef",
    "parse_command",
    "splitter",
    "whole",
]


@dataclass(frozen=True, slots=True)
class ParsedCommand:
    source: str
    commands: tuple[tuple[str, ...], ...] = ()
    """Every simple command's argv, assignments stripped and wrappers unwrapped."""
    redirect_targets: tuple[str, ...] = ()
    """Files named by redirections (read or written), as written (relative = workspace)."""
    redirect_writes: tuple[str, ...] = ()
    """The subset of ``redirect_targets`` that is written (``>``, ``>>``, ``&>``, ``<>``...)."""
    paths: tuple[PathRef, ...] = ()
    """Every path named: operands of known file commands
    (:mod:`mcp_toolbridge.policy.shell.operands`) and redirect targets, each with the
    directories it may be relative to."""
    directories: tuple[Chain, ...] = ()
    """Every directory ``cd``/``pushd`` may reach (each is read, so it must be in scope)."""
    uncheckable: tuple[str, ...] = ()
    """Why the command cannot be checked rule by rule; empty when it can."""
    flagged: tuple[tuple[str, ...], ...] = ()
    """Commands with a dangerous flag: each needs an exact allow rule of its own."""
    opaque: bool = False
    """True when some reason concerns the whole text rather than one flagged command; the
    command is then also matched as ``bash -c <command>`` (see :func:`whole`)."""

    @property
    def checkable(self) -> bool:
        return not self.uncheckable

    def ask_reason(self) -> str | None:
        """A one-line reason for asking, or None when every part was checked."""
        if not self.uncheckable:
            return None
        shown = "; ".join(self.uncheckable[:3])
        more = f" (and {len(self.uncheckable) - 3} more)" if len(self.uncheckable) > 3 else ""
        return f"the command cannot be fully checked against the shell rules: {shown}{more}"


_parser_loaded = False


def load_parser() -> None:
    """Import bashlex now. Its import builds its parser tables (0.1 to 0.3 s of CPU), so it is
    done in a worker thread: at start-up when bash is served, and by the gate before a call
    that needs it (see :func:`parser_loaded`), never on the event loop."""
    global _parser_loaded
    import bashlex  # noqa: F401

    _parser_loaded = True


def parser_loaded() -> bool:
    """Whether :func:`load_parser` has finished (parsing no longer imports anything)."""
    return _parser_loaded


@functools.lru_cache(maxsize=256)
def parse_command(command: str) -> ParsedCommand:
    """Parse ``command`` into the simple commands it runs; never raises. Cached: the gate
    and the splitter parse the same text."""
    state = WalkState()
    Walker(state, command, 0, START).run()
    return ParsedCommand(
        source=command,
        commands=tuple(dict.fromkeys(state.commands)),
        redirect_targets=tuple(dict.fromkeys(state.targets)),
        redirect_writes=tuple(dict.fromkeys(state.writes)),
        uncheckable=tuple(state.reasons),
        flagged=tuple(dict.fromkeys(state.flagged)),
        paths=tuple(dict.fromkeys(state.paths)),
        directories=tuple(sorted(state.directories)),
        opaque=state.opaque,
    )


def splitter(command: str) -> tuple[tuple[str, ...], ...]:
    """A :data:`~mcp_toolbridge.policy.requirements.CommandSplitter` backed by
    :func:`parse_command`.

    Returns every simple command's argv. When the command is opaque (or runs nothing but
    assignments and redirections) ``("bash", "-c", command)`` is added: it fails closed in the
    capability check unless ``bash`` itself is granted, and it is a rule subject that only an
    exact rule (or an "always" answer for this very text) settles.
    """
    if not command.strip():
        raise ArgumentsError("the command is empty; give a command to run")
    if "\x00" in command:
        raise ArgumentsError("the command contains a NUL character; remove it")
    parsed = parse_command(command)
    found = list(parsed.commands)
    if parsed.opaque or not found:
        found.append(whole(command))
    return tuple(found)
