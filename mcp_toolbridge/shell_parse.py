"""The bash tool's sub-policy: a command line parsed into the simple commands it runs.

:func:`parse_command` parses with bashlex (a bash grammar) and walks the whole tree: lists
(``;``, ``&&``, ``||``, ``&``), pipelines, subshells, groups, loops and ifs, ``$( )``, backticks,
``<( )``, redirections and ``VAR=x`` prefixes. Every simple command becomes one argv, after its
assignments are stripped and its wrappers unwrapped (:mod:`mcp_toolbridge.shell_argv`, flags
checked by :mod:`mcp_toolbridge.shell_flags`); a
nested ``bash -c "..."`` is parsed in turn. The paths a command names are listed so the policy
can check them (``paths``): redirection targets, and the path operands of known file commands
(:mod:`mcp_toolbridge.shell_operands`), each with the working directories it may be relative
to. ``cd``/``pushd`` are followed through ``&&``, ``||``, ``;``, subshells and pipelines (a
subshell's ``cd`` does not carry over); what cannot be followed (``cd`` alone, ``cd -``,
``cd ~``, ``cd`` in a loop) is refused.

What cannot be checked statically is listed in ``uncheckable`` (one reason each) instead of
being guessed: a command name or argument whose value is only known at run time (``$X``,
``$(...)``, brace expansion), ``eval``/``source``/``exec``/``sudo``, function definitions,
heredocs that expand commands, ``/dev/tcp`` redirects, invisible or control characters, more
than 50 simple commands, more than 10,000 characters, anything bashlex cannot parse, flags
that make a command run programs or write files (``find -exec``, ``sed -i``, ...), and paths
that depend on HOME (``~``) or come from stdin (``xargs cat``).

:func:`splitter` adapts this to :data:`mcp_toolbridge.requirements.CommandSplitter`.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

import bashlex

from mcp_toolbridge.errors import ArgumentsError
from mcp_toolbridge.shell_argv import XARGS_INPUT, basename, risky_variable, unwrap
from mcp_toolbridge.shell_flags import flag_reason
from mcp_toolbridge.shell_operands import Access, Links, path_operands

MAX_COMMAND_CHARS = 10_000
MAX_SUBCOMMANDS = 50
MAX_NESTING = 3
MAX_DIRECTORIES = 16
"""How many directories a command may be in (after ``cd``) before it is not followed."""
MAX_CD_CHAIN = 8
SAFE_DEVICES = frozenset(
    {"/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/zero", "/dev/tty"}
)
_VAR_BUILTINS = frozenset(
    {"export", "declare", "typeset", "local", "readonly", "read", "mapfile", "readarray",
     "printf", "getopts", "let", "unset"}
)  # fmt: skip
_DIR_CHANGERS = frozenset({"cd", "pushd", "popd"})
_TILDE = re.compile(r"^~|[=:]~")
_CD_OPTION = re.compile(r"-[LPe@]+\Z")
_STACK_INDEX = re.compile(r"[-+][0-9]+\Z")
_QUOTED_HEREDOC = re.compile(
    r"<<(-?)[ \t]*(?:'([A-Za-z0-9_.-]+)'|\"([A-Za-z0-9_.-]+)\"|\\([A-Za-z0-9_]+))"
)
_TIME_KEYWORD = re.compile(r"(?:^|(?<=[;&|(!\n]))([ \t]*)time(?:[ \t]+-p)?(?=[ \t])")
_GLOB = re.compile(r"[*?]|\[.*\]")
_BRACE_EXPANSION = re.compile(r"\{[^{}]*(?:,|\.\.)[^{}]*\}")
_EXPANSION_START = re.compile(r"\$[A-Za-z0-9_{('\"@*#?$!-]")
_HIDDEN_SUBSTITUTION = ("$(", "`", "<(", ">(")


def whole(command: str) -> tuple[str, str, str]:
    """The argv that really runs: what an uncheckable command is matched as."""
    return ("bash", "-c", command)


Chain = tuple[str, ...]
"""A working directory: the ``cd`` arguments that lead to it from the workspace, in order."""
Cwds = frozenset[Chain]
Flow = tuple[Cwds, Cwds]
"""Where the shell may be after a command that succeeded, and after one that failed."""
_START: Cwds = frozenset({()})


@dataclass(frozen=True, slots=True)
class PathRef:
    """A path a command names: an operand of a known file command or a redirect target."""

    text: str
    """As bash passes it (quotes removed); relative paths are relative to each of ``cwds``."""
    access: Access
    cwds: Cwds = _START
    """The working directories the command may run in (``()`` is the workspace)."""
    pattern: str | None = None
    """A glob bash expands (quoted characters escaped as ``[*]``), or None for a plain path."""
    redirect: bool = False
    """True for a redirect target, which no command rule names."""
    command: int = -1
    """Which simple command names it (their order in the line; -1: a group's redirect)."""
    links: Links = None
    """A write that may leave symbolic links at or under the path (``mv``, ``ln``, tar...)."""
    follows: bool = True
    """False when the program never follows symbolic links in it (git pathspecs)."""


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
    """Every path named: operands of known file commands (:mod:`mcp_toolbridge.shell_operands`)
    and redirect targets, each with the directories it may be relative to."""
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


@dataclass
class _State:
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


@functools.lru_cache(maxsize=256)
def parse_command(command: str) -> ParsedCommand:
    """Parse ``command`` into the simple commands it runs; never raises. Cached: the gate
    and the splitter parse the same text."""
    state = _State()
    _Walker(state, command, 0, _START).run()
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
    """A :data:`~mcp_toolbridge.requirements.CommandSplitter` backed by :func:`parse_command`.

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


def invisible_character(text: str) -> str | None:
    """The first control, format (zero-width, bidi) or unusual space character, described."""
    for index, ch in enumerate(text):
        if ch in "\n\t ":
            continue
        category = unicodedata.category(ch)
        if category in ("Cc", "Cf", "Zl", "Zp", "Zs"):
            return f"U+{ord(ch):04X} at offset {index}"
    return None


def literal_text(raw: str) -> str | None:
    """What bash makes of a word with no expansions: quotes removed, escapes applied. None
    when the word is not plain (unbalanced quotes, or an expansion the parser missed)."""
    out: list[str] = []
    i, n = 0, len(raw)
    while i < n:
        ch = raw[i]
        if ch == "\\":
            if i + 1 >= n:
                out.append(ch)  # a trailing backslash stays
            elif raw[i + 1] != "\n":  # backslash-newline is a line continuation
                out.append(raw[i + 1])
            i += 2
        elif ch == "'":
            end = raw.find("'", i + 1)
            if end < 0:
                return None
            out.append(raw[i + 1 : end])
            i = end + 1
        elif ch == '"':
            i += 1
            while i < n and raw[i] != '"':
                if raw[i] == "\\" and i + 1 < n and raw[i + 1] in '$`"\\\n':
                    out.append("" if raw[i + 1] == "\n" else raw[i + 1])
                    i += 2
                    continue
                if raw[i] == "`" or _EXPANSION_START.match(raw, i):
                    return None
                out.append(raw[i])
                i += 1
            if i >= n:
                return None
            i += 1
        elif ch == "`" or _EXPANSION_START.match(raw, i):
            return None
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def glob_pattern(raw: str) -> str | None:
    """The glob bash expands for a word: unquoted ``*?[`` stay special, quoted or escaped ones
    become ``[*]``, ``[?]``, ``[[]``. None when the word is not plain."""
    out: list[str] = []

    def literal(ch: str) -> None:
        out.append(f"[{ch}]" if ch in "*?[" else ch)

    i, n = 0, len(raw)
    while i < n:
        ch = raw[i]
        if ch == "\\":
            if i + 1 < n and raw[i + 1] != "\n":
                literal(raw[i + 1])
            elif i + 1 >= n:
                out.append(ch)
            i += 2
        elif ch == "'":
            end = raw.find("'", i + 1)
            if end < 0:
                return None
            for quoted in raw[i + 1 : end]:
                literal(quoted)
            i = end + 1
        elif ch == '"':
            i += 1
            while i < n and raw[i] != '"':
                if raw[i] == "\\" and i + 1 < n and raw[i + 1] in '$`"\\':
                    i += 1
                literal(raw[i])
                i += 1
            if i >= n:
                return None
            i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def unquoted_text(raw: str) -> str:
    """The characters of a shell word that are outside quotes and not backslash-escaped."""
    out: list[str] = []
    quote: str | None = None
    i = 0
    while i < len(raw):
        ch = raw[i]
        if quote == "'":
            quote = None if ch == "'" else quote
        elif quote == '"':
            if ch == "\\":
                i += 1
            elif ch == '"':
                quote = None
        elif ch == "\\":
            i += 1
        elif ch in "'\"":
            quote = ch
        else:
            out.append(ch)
        i += 1
    return "".join(out)


class _Walker:
    """Walks one bashlex parse of ``source`` (the command, or a nested ``-c`` script)."""

    def __init__(self, state: _State, source: str, depth: int, cwds: Cwds) -> None:
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
        prepared, heredoc_spans, time_spans = self._prepare(text)
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

    def _prepare(self, text: str) -> tuple[str, set[int], list[tuple[int, int]]]:
        """Rewrite what bashlex cannot parse, keeping every offset: quoted heredoc delimiters
        (``<<'EOF'`` becomes ``<< EOF `` and is remembered as quoted) and the ``time``
        keyword (blanked). The walk checks afterwards that each rewrite hit what it meant to."""
        chars = list(text)
        heredocs: set[int] = set()
        for match in _QUOTED_HEREDOC.finditer(text):
            group = next(g for g in (2, 3, 4) if match.group(g) is not None)
            start, end = match.start(group), match.end(group)
            opener = start - 1
            closer = end if group != 4 else None
            chars[opener] = " "
            if closer is not None:
                chars[closer] = " "
            heredocs.add(start)
        times: list[tuple[int, int]] = []
        for match in _TIME_KEYWORD.finditer("".join(chars)):
            start = match.start() + len(match.group(1))
            for k in range(start, match.end()):
                chars[k] = " "
            times.append((start, match.end()))
        return "".join(chars), heredocs, times

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
            _Walker(state, unwrapped.script, self.depth + 1, self.cwds).run()
            return self.here()  # a child shell: its cd does not change ours
        final = unwrapped.argv
        state.commands.append(final)
        name = basename(final[0])
        flag = flag_reason(final)
        if flag is not None:
            if flag not in state.reasons:
                state.reasons.append(flag)
            state.flagged.append(final)
        if name in _VAR_BUILTINS:
            for arg in final[1:]:
                variable = arg.split("=", 1)[0].rstrip("+")
                if risky_variable(variable) and not arg.startswith("-"):
                    state.refuse(f"{name} sets {variable}, which can change what runs")
        core = final[:-1] if final[-1:] == (XARGS_INPUT,) else final
        offset = len(argv) - len(core)
        words = raws[offset:] if offset >= 0 and argv[offset:] == core else None
        if name in _DIR_CHANGERS:
            return self.change_directory(final, words)
        self.operands(final, words)
        return self.here()

    def change_directory(self, argv: tuple[str, ...], raws: tuple[str, ...] | None) -> Flow:
        """cd / pushd / popd: the shell may now be in each current directory joined with the
        argument. What cannot be followed (no argument, ``-``, ``~``, a pattern) is refused;
        popd and pushd without a directory go back to one already seen."""
        state = self.state
        name = basename(argv[0])
        args = [(k, a) for k, a in enumerate(argv[1:], 1) if not _CD_OPTION.match(a)]
        if args and args[0][1] == "--":
            args = args[1:]
        if name == "popd" or (name == "pushd" and (not args or _STACK_INDEX.match(args[0][1]))):
            return frozenset(state.directories | {()}), self.cwds
        if not args:
            state.refuse(f"{name} without a directory goes to HOME, outside what is checked")
            return self.here()
        index, target = args[0]
        bare = unquoted_text(raws[index]) if raws is not None else target
        if target == "-" or _TILDE.search(bare) or _GLOB.search(bare) or not target:
            state.refuse(f"{name} {target} goes to a directory that cannot be followed")
            return self.here()
        moved = frozenset((*chain, target) for chain in self.cwds)
        if any(len(chain) > MAX_CD_CHAIN for chain in moved) or (
            len(state.directories | moved) > MAX_DIRECTORIES
        ):
            state.refuse("it changes directory too many times to follow")
            return self.here()
        state.directories |= moved
        return moved, self.cwds

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
            if not operand.text or operand.text in SAFE_DEVICES:
                continue  # an empty argument names no file
            if operand.text.startswith("/dev/fd/"):
                continue
            raw = None
            if raws is not None and operand.index is not None and operand.index < len(raws):
                raw = raws[operand.index]
            bare = unquoted_text(raw) if raw is not None else operand.text
            pattern: str | None = None
            if raw is not None and _TILDE.search(bare):
                state.refuse(f"the path {raw!r} of {name} depends on HOME")
                continue
            if _GLOB.search(bare) and operand.index is not None:
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
            elif _GLOB.search(bare) or _BRACE_EXPANSION.search(bare):
                self.state.refuse(f"the command name {raw!r} is a pattern")
            return
        if kinds & {"parameter", "command", "hidden"}:
            self.state.refuse(f"argument {raw!r} of {program} is only known when it runs")
        elif _BRACE_EXPANSION.search(bare):
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
        if kinds or _GLOB.search(bare) or _BRACE_EXPANSION.search(bare) or bare.startswith("~"):
            self.state.refuse(f"the redirect target {raw!r} is only known when it runs")
            return
        self.target(text, write=kind != "<")

    def target(self, path: str, *, write: bool) -> None:
        if path.startswith(("/dev/tcp/", "/dev/udp/")):
            self.state.refuse(f"the redirect {path!r} opens a network connection")
            return
        if path in SAFE_DEVICES or path.startswith("/dev/fd/"):
            return
        self.state.targets.append(path)
        if write:
            self.state.writes.append(path)
        access: Access = "write" if write else "read"
        self.state.paths.append(
            PathRef(path, access, self.cwds, redirect=True, command=self.ordinal)
        )
