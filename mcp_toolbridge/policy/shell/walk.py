"""The bashlex walker: every simple command of a parsed command line, and what it names.

:class:`Walker` walks one bashlex tree (the command, or a nested ``bash -c`` script, walked
by a walker of its own) and records into a shared :class:`WalkState`: each simple command's
argv after :func:`~mcp_toolbridge.policy.shell.argv.unwrap`, its dangerous flags
(:mod:`mcp_toolbridge.policy.shell.flags`) and the words that can become one
(:mod:`mcp_toolbridge.policy.shell.expanded`), the paths it names (redirect targets, and the
operands of :func:`~mcp_toolbridge.policy.shell.operands.path_operands`) with the
directories ``cd`` may have taken it to (:mod:`mcp_toolbridge.policy.shell.cwd`), and every
reason the line cannot be checked.
:func:`mcp_toolbridge.policy.shell.parse.parse_command` turns the state into a ``ParsedCommand``.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from mcp_toolbridge.policy.shell.argv import XARGS_INPUT, basename, risky_variable, unwrap
from mcp_toolbridge.policy.shell.cwd import (
    DIR_CHANGERS,
    Chain,
    Cwds,
    Flow,
    PathRef,
    change_directory,
)
from mcp_toolbridge.policy.shell.expanded import VAR_BUILTINS, expansion_reasons, hidden_option
from mcp_toolbridge.policy.shell.flags import flag_reason
from mcp_toolbridge.policy.shell.operands import path_operands
from mcp_toolbridge.policy.shell.scan import Access
from mcp_toolbridge.policy.shell.words import (
    BRACE_EXPANSION,
    GLOB,
    TILDE,
    glob_pattern,
    invisible_character,
    literal_text,
    prepare,
    unquoted_text,
)

MAX_COMMAND_CHARS = 10_000
MAX_SUBCOMMANDS = 50
MAX_NESTING = 3
SAFE_DEVICES = frozenset(
    {"/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/zero", "/dev/tty"}
)
_HIDDEN_SUBSTITUTION = ("$(", "`", "<(", ">(")
_DESCRIPTOR = re.compile(r"/dev/fd/[0-9]+")
"""A descriptor itself names no file; anything under it (``/dev/fd/../../etc/x``: /dev/fd
is /proc/self/fd) is a path like any other."""


def names_no_file(path: str) -> bool:
    """Whether ``path`` is a device or descriptor that no path check is about."""
    return path in SAFE_DEVICES or _DESCRIPTOR.fullmatch(path) is not None


@dataclass
class WalkState:
    """What the walk of one command line (and its nested shells) has found so far."""

    commands: list[tuple[str, ...]] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    flagged: list[tuple[str, ...]] = field(default_factory=list)
    paths: list[PathRef] = field(default_factory=list)
    directories: set[Chain] = field(default_factory=set)
    opaque: bool = False
    count: int = 0

    def refuse(self, reason: str) -> None:
        self.opaque = True
        if reason not in self.reasons:
            self.reasons.append(reason)


class Walker:
    """Walks one bashlex parse of ``source`` (the command, or a nested ``-c`` script)."""

    def __init__(self, state: WalkState, source: str, depth: int, cwds: Cwds) -> None:
        self.state = state
        self.source = source
        self.depth = depth
        self.cwds = cwds
        """Where the shell may be at the point the walk has reached."""
        self.ordinal = -1
        """The simple command being walked (``state.count``), -1 outside one."""
        self.quoted_heredocs: set[int] = set()
        self.seen_heredocs: set[int] = set()
        self.word_spans: list[tuple[int, int]] = []

    def run(self) -> None:
        text = self.source
        if len(text) > MAX_COMMAND_CHARS:
            self.state.refuse(f"it is longer than {MAX_COMMAND_CHARS:,} characters")
            return
        hidden = invisible_character(text)
        if hidden is not None:
            self.state.refuse(f"it contains an invisible or control character ({hidden})")
        if self.depth > MAX_NESTING:
            self.state.refuse(f"shells are nested more than {MAX_NESTING} deep")
            return
        prepared, heredoc_spans, time_spans = prepare(text)
        import bashlex  # on first use: building its parser costs every server 0.1 s of start-up

        try:
            nodes = bashlex.parse(prepared)
        except Exception as exc:  # bashlex raises several types, including NotImplementedError
            why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            self.state.refuse(f"bash syntax that could not be parsed ({why})")
            return
        self.source = prepared
        self.quoted_heredocs = heredoc_spans
        try:
            for node in nodes:  # lines of the script, one after the other
                ok, failed = self.walk(node)
                self.cwds = ok | failed
        except (AttributeError, TypeError, ValueError, IndexError) as exc:  # an odd tree: refuse
            self.state.refuse(f"bash syntax that is not checked ({type(exc).__name__})")
        if heredoc_spans - self.seen_heredocs or any(
            start < end_w and start_w < end
            for start, end in time_spans
            for start_w, end_w in self.word_spans
        ):
            self.state.refuse("quoting that could not be parsed reliably")

    # -- the tree ---------------------------------------------------------------------------
    # Each node returns its Flow: the directories the shell may be in after it succeeded and
    # after it failed, so ``cd sub && cat x`` reads sub/x while ``cd sub; cat x`` may read
    # either x or sub/x. Subshells, pipelines and substitutions leave the directory unchanged.

    def here(self) -> Flow:
        return self.cwds, self.cwds

    def walk(self, node: Any) -> Flow:
        kind = node.kind
        if kind == "list":
            return self.sequence(node.parts)
        if kind == "pipeline":
            return self.pipeline(node.parts)
        if kind in ("for", "while", "until", "if"):
            return self.statement(kind, node.parts)
        if kind == "compound":
            return self.compound(node)
        if kind == "function":
            self.state.refuse("it defines a shell function")
            start = self.cwds
            for part in node.parts:
                self.walk(part)
            self.cwds = start
        elif kind == "command":
            return self.command(node)
        elif kind == "word":
            self.expansions(node)
        elif kind == "redirect":
            self.redirect(node)
        elif kind not in ("operator", "reservedword", "pipe"):
            self.state.refuse(f"bash syntax that is not checked ({kind})")
        return self.here()

    def sequence(self, parts: list[Any]) -> Flow:
        """``a; b``, ``a && b``, ``a || b``, ``a & b`` (left to right, as bash groups them)."""
        ok = failed = self.cwds
        op = ";"
        for part in parts:
            if part.kind == "operator":
                op = str(part.op)
                continue
            self.cwds = ok if op == "&&" else failed if op == "||" else ok | failed
            part_ok, part_failed = self.walk(part)
            if op == "&&":
                ok, failed = part_ok, failed | part_failed
            elif op == "||":
                ok, failed = ok | part_ok, part_failed
            else:
                ok, failed = part_ok, part_failed
        self.cwds = ok | failed
        return ok, failed

    def pipeline(self, parts: list[Any]) -> Flow:
        start = self.cwds
        commands = [p for p in parts if p.kind not in ("pipe", "reservedword")]
        negated = any(p.kind == "reservedword" and p.word == "!" for p in parts)
        if len(commands) == 1:
            ok, failed = self.walk(commands[0])
            self.cwds = ok | failed
            return (failed, ok) if negated else (ok, failed)
        for command in commands:  # each part of a pipeline runs in a subshell
            self.cwds = start
            self.walk(command)
        self.cwds = start
        return start, start

    def statement(self, kind: str, parts: list[Any]) -> Flow:
        """if/while/until/for, over-approximated: every branch may see every directory."""
        start = self.cwds
        seen = start
        for part in parts:
            if part.kind in ("reservedword", "operator"):
                continue
            self.cwds = seen
            ok, failed = self.walk(part)
            seen = seen | ok | failed
        if kind != "if" and seen != start:
            self.state.refuse("a loop changes directory, so the paths in it cannot be followed")
        self.cwds = seen
        return seen, seen

    def compound(self, node: Any) -> Flow:
        start = self.cwds
        first = node.list[0] if node.list else None
        subshell = first is not None and first.kind == "reservedword" and first.word == "("
        inner = [p for p in node.list if p.kind != "reservedword"]
        flow = self.sequence(inner)
        after = self.cwds
        self.cwds = start  # the group's redirections are opened before it runs
        self.ordinal = -1
        for redirect in getattr(node, "redirects", None) or ():
            self.redirect(redirect)
        if subshell:
            return start, start
        self.cwds = after
        return flow

    def command(self, node: Any) -> Flow:
        state = self.state
        state.count += 1
        ordinal = state.count  # substitutions walked below have their own
        if state.count == MAX_SUBCOMMANDS + 1:
            state.refuse(f"it has more than {MAX_SUBCOMMANDS} simple commands")
        words: list[Any] = []
        for part in node.parts:
            if part.kind == "assignment" and not words:
                self.assignment(part)
            elif part.kind in ("word", "assignment"):
                words.append(part)
            elif part.kind == "redirect":
                self.ordinal = ordinal
                self.redirect(part)
            else:
                self.walk(part)
        if not words:
            return self.here()
        argv = tuple(self.text_of(w) for w in words)
        for index, word in enumerate(words):
            self.argument(word, index, argv[0])
        raws = tuple(self.source[w.pos[0] : w.pos[1]] for w in words)
        self.ordinal = ordinal
        return self.simple(argv, raws)

    def text_of(self, word: Any) -> str:
        """The word as bash passes it: bashlex's text for words with expansions (those are
        uncheckable anyway), otherwise our own quote removal (bashlex mishandles ``'a'\\''b'``)."""
        if getattr(word, "parts", None):
            return str(word.word)
        text = literal_text(self.source[word.pos[0] : word.pos[1]])
        if text is None:
            self.state.refuse("quoting that could not be parsed reliably")
            return str(word.word)
        return text

    def simple(self, argv: tuple[str, ...], raws: tuple[str, ...]) -> Flow:
        state = self.state
        unwrapped = unwrap(argv)
        for reason in unwrapped.reasons:
            state.refuse(reason)
        for path in unwrapped.writes:
            self.target(path, write=True)
        for path in unwrapped.reads:
            self.target(path, write=False)
        if unwrapped.script is not None:
            Walker(state, unwrapped.script, self.depth + 1, self.cwds).run()
            return self.here()  # a child shell: its cd does not change ours
        final = unwrapped.argv
        state.commands.append(final)
        name = basename(final[0])
        core = final[:-1] if final[-1:] == (XARGS_INPUT,) else final
        offset: int | None = len(argv) - len(core)
        if offset is not None and (offset < 0 or argv[offset:] != core):
            offset = None
        words = raws[offset:] if offset is not None else None
        for reason in expansion_reasons(argv, raws, final, offset):
            state.refuse(reason)
        flags = [why for why in (flag_reason(final), hidden_option(final, words)) if why]
        for flag in flags:
            if flag not in state.reasons:
                state.reasons.append(flag)
        if flags:
            state.flagged.append(final)
        if name in VAR_BUILTINS:
            for arg in final[1:]:
                variable = arg.split("=", 1)[0].rstrip("+")
                if risky_variable(variable) and not arg.startswith("-"):
                    state.refuse(f"{name} sets {variable}, which can change what runs")
        if name in DIR_CHANGERS:
            moved = change_directory(final, words, self.cwds, state.directories)
            if isinstance(moved, str):
                state.refuse(moved)
                return self.here()
            return moved
        self.operands(final, words)
        return self.here()

    def operands(self, argv: tuple[str, ...], raws: tuple[str, ...] | None) -> None:
        """The paths a known file command names (:func:`path_operands`), with the
        directories they may be relative to."""
        state = self.state
        found = path_operands(argv)
        for reason in found.reasons:
            state.refuse(reason)
        name = basename(argv[0])
        for operand in found.paths:
            if XARGS_INPUT in operand.text:
                state.refuse(f"xargs gives {name} file names that are only known when it runs")
                continue
            if not operand.text or names_no_file(operand.text):
                continue  # an empty argument names no file
            raw = None
            if raws is not None and operand.index is not None and operand.index < len(raws):
                raw = raws[operand.index]
            bare = unquoted_text(raw) if raw is not None else operand.text
            pattern: str | None = None
            if raw is not None and TILDE.search(bare):
                state.refuse(f"the path {raw!r} of {name} depends on HOME")
                continue
            if GLOB.search(bare) and operand.index is not None:
                pattern = glob_pattern(raw) if raw is not None and operand.whole else None
                if pattern is None:
                    state.refuse(f"the path {raw or operand.text!r} of {name} is a pattern")
                    continue
            ref = PathRef(operand.text, operand.access, self.cwds, pattern)
            state.paths.append(
                dataclasses.replace(
                    ref, command=self.ordinal, links=operand.links, follows=operand.follows
                )
            )

    def assignment(self, node: Any) -> None:
        self.word_spans.append(tuple(node.pos))
        name = str(node.word).split("=", 1)[0].rstrip("+")
        if risky_variable(name):
            self.state.refuse(f"it sets {name}, which can change what runs")
        kinds = self.expansions(node)
        if "hidden" in kinds:
            self.state.refuse(f"the value of {name} hides a command substitution")

    def argument(self, word: Any, index: int, program: str) -> None:
        kinds = self.expansions(word)
        raw = self.source[word.pos[0] : word.pos[1]]
        bare = unquoted_text(raw)
        if index == 0:
            if kinds & {"parameter", "command", "process", "hidden"}:
                self.state.refuse(f"the command name {raw!r} is only known when it runs")
            elif GLOB.search(bare) or BRACE_EXPANSION.search(bare):
                self.state.refuse(f"the command name {raw!r} is a pattern")
            return
        if kinds & {"parameter", "command", "hidden"}:
            self.state.refuse(f"argument {raw!r} of {program} is only known when it runs")
        elif BRACE_EXPANSION.search(bare):
            self.state.refuse(f"argument {raw!r} of {program} is a brace expansion")

    def expansions(self, word: Any) -> set[str]:
        """What expands inside a word; the commands of its substitutions are walked."""
        self.word_spans.append(tuple(word.pos))
        kinds: set[str] = set()
        for part in getattr(word, "parts", None) or ():
            if part.kind == "parameter":
                kinds.add("parameter")
                value = str(getattr(part, "value", "") or "")
                if any(marker in value for marker in _HIDDEN_SUBSTITUTION):
                    kinds.add("hidden")
            elif part.kind in ("commandsubstitution", "processsubstitution"):
                kinds.add("command" if part.kind == "commandsubstitution" else "process")
                start = self.cwds  # a subshell: its cd does not change ours
                self.walk(part.command)
                self.cwds = start
            elif part.kind == "tilde":
                kinds.add("tilde")
            else:
                self.walk(part)
        return kinds

    def redirect(self, node: Any) -> None:
        kind = str(node.type)
        target = node.output
        if kind in ("<<", "<<-"):
            self.word_spans.append(tuple(target.pos))
            body = str(node.heredoc.value) if node.heredoc is not None else ""
            quoted = target.pos[0] in self.quoted_heredocs
            if quoted:
                self.seen_heredocs.add(target.pos[0])
            if not quoted and any(m in body for m in ("$(", "`", "${")):
                self.state.refuse("an unquoted heredoc expands commands; quote it: <<'EOF'")
            return
        if kind == "<<<":
            if "hidden" in self.expansions(target):
                self.state.refuse("a here-string hides a command substitution")
            return
        if target is None or isinstance(target, int | str):
            return  # a descriptor: 2>&1, >&2, 2>&-
        kinds = self.expansions(target)
        text = self.text_of(target)
        raw = self.source[target.pos[0] : target.pos[1]]
        if kind in (">&", "<&") and (text == "-" or text.isdigit()):
            return
        bare = unquoted_text(raw)
        if kinds or GLOB.search(bare) or BRACE_EXPANSION.search(bare) or bare.startswith("~"):
            self.state.refuse(f"the redirect target {raw!r} is only known when it runs")
            return
        self.target(text, write=kind != "<")

    def target(self, path: str, *, write: bool) -> None:
        if path.startswith(("/dev/tcp/", "/dev/udp/")):
            self.state.refuse(f"the redirect {path!r} opens a network connection")
            return
        if names_no_file(path):
            return
        self.state.targets.append(path)
        if write:
            self.state.writes.append(path)
        access: Access = "write" if write else "read"
        self.state.paths.append(
            PathRef(path, access, self.cwds, redirect=True, command=self.ordinal)
        )
