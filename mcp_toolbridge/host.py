"""Per-call context: who calls, and what the caller's client can do for a tool.

No MCP types here. The server adapter implements :class:`Host` over MCP elicitation (and,
later, sampling); the CLI and headless transports pass no host, which makes every question
a refusal, never an invented answer. A host that tries to ask and cannot (the client answers
the question with an error, or the connection closes first) raises :class:`CouldNotAsk`,
which is a refusal too. It implements :class:`CallLog` over MCP logging
(``notifications/message``); the CLI passes none, and nothing is sent.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias, get_args

from mcp_toolbridge.state import PERSON_PREFIX

HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\U000e0000-\U000e007f]")
"""Characters that hide or rewrite text: C0 controls but tab and newline, DEL, C1 controls
(ANSI escapes: ``ESC [2J``, ``ESC ]0;title BEL``, the one-byte CSI ``\x9b``), bidi
embeddings, overrides and isolates (text shown in another order than it is read), and Unicode
tag characters (invisible text a model reads). A manifest's and a skill's descriptions lose
them at load (``loaders/report.py``); text a Host shows a person carries them escaped
(:func:`visible`)."""


def visible(text: str) -> str:
    """``text`` with every :data:`HIDDEN` character written as its escape (``\\u202e``), as
    a person deciding on a call or answering a question is shown it: what a model wrote can
    then neither reorder, hide nor repaint the text around it (found by the red-team pass of
    2026-11-29, 8th: a bash command holding U+202E was shown reordered for confirmation)."""
    return HIDDEN.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


FoundTools = Literal["direct", "loaded", "proxy"]
"""How a caller calls what tool_search found: by name, by name once its list has them
(else through the proxy tool), or through the proxy tool."""

ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]
"""progress(current, total, message): forwarded to the client when it asked for progress."""

RedactCut = Callable[[str, Sequence[tuple[int, int]]], list[str]]
"""redact_cut(text, spans) -> ``text[start:end]`` of each span, with every part of it that
belongs to a secret found in the text around it replaced by ``[REDACTED:<rule-id>]`` (a
secret the cut shows only part of too). For code that shows part of a longer text (a window
of a file, a long line cut, the head and tail of an output): it passes what it holds around
what it shows, up to :data:`CUT_MARGIN_CHARS` on each side. Blocking (it runs the secret
scan on up to that margin around each edge of what is shown): call it in a worker thread."""
CUT_MARGIN_CHARS = 16_384
"""How much text on each side of a cut is scanned with it (a PEM block of an 8192-bit RSA
key is about 6.5 KB, ~100 lines; code that reads lines keeps up to :data:`CUT_MARGIN_LINES`)."""
CUT_MARGIN_LINES = 128

LogLevel: TypeAlias = Literal[
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
]
"""The syslog severities MCP logging uses, from the least to the most severe."""
LOG_LEVELS: tuple[LogLevel, ...] = get_args(LogLevel)
SERVER_LOGGER = "mcp-toolbridge"
"""The logger name of the server's own messages (a tool's lines carry the tool's name)."""


def at_least(level: LogLevel, threshold: LogLevel) -> bool:
    """Whether ``level`` is as severe as ``threshold`` or more."""
    return LOG_LEVELS.index(level) >= LOG_LEVELS.index(threshold)


class CallLog(Protocol):
    """Log messages for the client of one call (MCP ``notifications/message``): a running
    tool's own lines and the server's events about the call. They ride the call's own stream
    and are sent only at the levels the client asked for."""

    def wants(self, level: LogLevel) -> bool:
        """Whether a message at ``level`` would reach the client now."""
        ...

    async def send(self, level: LogLevel, text: str, *, logger: str) -> None:
        """Send one message (dropped below the client's level). Never raises: a client gone
        away must not fail the call."""
        ...


@dataclass(frozen=True, slots=True)
class Answer:
    """A person's reply to a form: accept (with content), decline, or cancel."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None
    by: str | None = None
    """Who answered, when the host knows better than "the client's person": the console
    names its user (``console:alice``)."""


@dataclass(frozen=True, slots=True)
class Confirmation:
    """What a confirmation question is about, in parts, for a host that shows them apart
    (the console); a client's elicitation shows the message alone. Never a secret value:
    ``arguments`` are redacted (secret-looking names, URL passwords) and cut."""

    tool: str
    title: str | None
    arguments: str
    """The call's arguments as JSON, redacted."""
    rule: str
    """The rule (or default) that said to ask."""
    sandbox: str | None
    """The OS sandbox the call's processes would run in, in words; None: no sandbox."""
    caller: Caller
    session_id: str
    via: str | None
    wait_s: float
    """How long the call waits for an answer (its deadline) before it is refused."""


@dataclass(frozen=True, slots=True)
class TextBlock:
    """Plain text in a sampling message."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolUseBlock:
    """The model asks to call the tool ``name`` with ``input``; ``id`` pairs it with a result."""

    id: str
    name: str
    input: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolResultBlock:
    """What a requested tool call returned, sent back to the model in a user message."""

    tool_use_id: str
    text: str
    is_error: bool = False


SamplingBlock: TypeAlias = TextBlock | ToolUseBlock | ToolResultBlock


@dataclass(frozen=True, slots=True)
class SamplingMessage:
    role: Literal["user", "assistant"]
    content: tuple[SamplingBlock, ...]


@dataclass(frozen=True, slots=True)
class SamplingTool:
    """A tool offered to the client's model: its name, description and input schema."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True, slots=True)
class SamplingRequest:
    """One ``sampling/createMessage`` with tools: the conversation so far and the offer."""

    messages: tuple[SamplingMessage, ...]
    tools: tuple[SamplingTool, ...] = ()
    system_prompt: str | None = None
    max_tokens: int = 4096


@dataclass(frozen=True, slots=True)
class SamplingResult:
    """The client's model's reply: text and/or tool_use blocks."""

    content: tuple[SamplingBlock, ...]
    model: str = ""
    stop_reason: str | None = None


class Host(Protocol):
    """What the client can do for the server during a call."""

    @property
    def can_elicit(self) -> bool: ...

    async def elicit(
        self,
        key: str,
        message: str,
        schema: dict[str, Any],
        about: Confirmation | None = None,
    ) -> Answer:
        """Ask the person through a form. ``key`` names the question stably across MCP
        multi-round-trip retries of the same call; ``about`` is the confirmation the form
        asks for, in parts (None for other forms). Raises :class:`CouldNotAsk` when the
        question could not be put to the person or no answer can come back."""
        ...

    @property
    def can_sample(self) -> bool:
        """True when the client's model can be sampled with tools (MCP sampling)."""
        ...

    async def sample(self, key: str, request: SamplingRequest) -> SamplingResult:
        """Ask the client's model for one message. ``key`` names the request stably across
        multi-round-trip retries of the same call, like :meth:`elicit`. Raises
        :class:`CouldNotSample` when the client could not run its model for it."""
        ...


class SharedHost(Host, Protocol):
    """A Host every caller's calls share (the web console's desk): each call asks through
    the view :meth:`for_caller` gives it, so the host knows whose question it holds and can
    keep each caller to its share."""

    def for_caller(self, caller: Caller) -> Host: ...


class InputPending(Exception):
    """Raised by a Host that must return to the client before it can answer (MCP 2026
    multi-round-trip requests): the call ends now and is retried with the answer."""

    def __init__(self, key: str, message: str, schema: dict[str, Any]) -> None:
        super().__init__(key)
        self.key = key
        self.message = message
        self.schema = schema


class CouldNotAsk(Exception):
    """Raised by :meth:`Host.elicit` when the person could not be asked: the client answered
    the question with an error (it does not handle it after all), its reply was not an
    answer, or the connection to it closed before an answer came. ``reason`` says which, in
    words a model can read. Never an answer and never consent: whoever asked treats it as a
    refusal, the way a headless session's question is refused."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class CouldNotSample(Exception):
    """Raised by :meth:`Host.sample` when the client's model could not be asked: the client
    answered the request with an error, its reply was not a sampling result, or the
    connection closed first. ``reason`` says which, in words a model can read."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class SignInRefused(Exception):
    """Raised by the issuer's side of the console's browser sign-in (the authorization code
    redeemed, the tokens checked) when the person may not sign in: ``reason`` says why in
    words for them, ``status`` is the HTTP status of the page that says it."""

    def __init__(self, reason: str, *, status: int = 403) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status


@dataclass(frozen=True, slots=True)
class Caller:
    """Who calls: the person or agent a validated access token names, or the local caller.

    Over HTTP with an authorization server (``serve --auth-issuer``), the server turns each
    request's access token into a Caller: ``subject`` (the token's ``sub``), ``client_id``
    (the OAuth client it was issued to: an agent, an IDE), ``issuer``, the ``groups`` named by
    its group and role claims, and its ``scopes``. Never the token itself. Over stdio, with
    the static ``--token``, and on the command line, the caller is :data:`LOCAL`: anonymous,
    matched by no identity rule, its state kept per session as before.
    """

    subject: str | None = None
    client_id: str | None = None
    issuer: str | None = None
    groups: frozenset[str] = frozenset()
    scopes: frozenset[str] = frozenset()

    @property
    def identified(self) -> bool:
        """True when an access token named this caller (a subject or at least a client)."""
        return self.subject is not None or self.client_id is not None

    @property
    def key(self) -> str | None:
        """The owner of this person's state (``"caller:<digest>"`` of the issuer, subject
        and client id: one person through one client); None for an anonymous caller, whose
        state is its session's."""
        if not self.identified:
            return None
        who = json.dumps([self.issuer, self.subject, self.client_id])
        return PERSON_PREFIX + hashlib.sha256(who.encode("utf-8")).hexdigest()[:32]

    def describe(self) -> str:
        """``alice (client ide-1)``, ``client ci-agent``, ``the local caller``: for messages."""
        if self.subject is not None and self.client_id is not None:
            return f"{self.subject} (client {self.client_id})"
        if self.subject is not None:
            return self.subject
        return f"client {self.client_id}" if self.client_id is not None else "the local caller"


LOCAL = Caller()
"""The caller of stdio, the static bearer token and the command line: anonymous."""
CALLER_KEY = "toolbridge.caller"
"""Where the HTTP edge puts a request's validated :class:`Caller` in its ASGI scope for
another edge behind it (the console's sign-in)."""


@dataclass(frozen=True, slots=True)
class Connected:
    """One client connection as the console's sessions page lists it."""

    session: str
    """The session its audit lines name (never the Mcp-Session-Id header value)."""
    caller: str
    client: str
    """The client's name and version as it introduced itself ("" when it did not)."""
    era: str
    """The protocol version of its last request."""
    transport: str
    """``stdio``, ``http`` (a stateful session) or ``http, no session``."""
    since: float
    last: float
    """When it connected and when it last sent a request (seconds since the epoch)."""
    requests: int
    replica: str
    """The server process (replica) it is connected to."""


class CallLease(Protocol):
    """A call's record in state other servers share (a replica's lease, see
    server/replicas.py): what the call has come to (its decision, the budget it holds), so
    a survivor can report it if this server dies."""

    async def note(self, **facts: Any) -> None:
        """Add facts to the record (plain JSON); never raises."""
        ...


@dataclass(frozen=True, slots=True)
class CallContext:
    session_id: str = "local"
    progress: ProgressFn | None = None
    log: CallLog | None = None
    """None: nobody listens (the CLI); nothing is sent."""
    host: Host | None = None
    """None: headless (no person to ask)."""
    depth: int = 0
    """0 for a client's own call; n for a call made by a subagent n levels down (task)."""
    denied_tools: frozenset[str] = frozenset()
    """Tools this caller may not use whatever the policy says (a subagent: todo, question,
    task unless allowed). Inherited and only ever widened by nested subagents."""
    found_tools: FoundTools = "direct"
    """How this caller reaches the tools tool_search finds: ``direct`` (every tool is listed,
    or it is a subagent or the command line), ``loaded`` (a 2025-era connection: they join its
    tool list, and a client that listed once calls them through the proxy tool) or ``proxy``
    (its list never changes as a side effect: the 2026-07-28 revision; it calls them through
    the proxy tool)."""
    via: str | None = None
    """The tool this call came through (the proxy), None for a direct call: recorded by the
    audit log and telemetry beside the real tool."""
    budget_session: str | None = None
    """Where an anonymous caller's tool budgets are summed when not per ``session_id``: a
    sessionless HTTP call has a session of its own, but its usage counts for the whole
    server."""
    caller: Caller = LOCAL
    """Who calls (an identified person or agent over HTTP with OAuth; else :data:`LOCAL`)."""
    lease: CallLease | None = None
    """The call's record in shared state, when replicas share one (else None)."""
    console: Host | None = None
    """Where a person answers a confirmation this call's client cannot ask (``serve
    --console``): the call waits there up to its deadline. None: such a call is refused.
    The console's view for this call's caller (:meth:`SharedHost.for_caller`)."""
    redact_cut: RedactCut | None = None
    """What a tool that cuts its output calls for the part it shows (:data:`RedactCut`);
    None: the secret scan is off (or nothing screens this call), a cut shows what it cuts."""

    @property
    def owner(self) -> str:
        """Whose "always" answers and stored values (the todo list) a call uses: the
        person's when the caller is identified, else the session's."""
        return self.caller.key or self.session_id

    @property
    def budget_scope(self) -> str:
        """Where the call's tool budget is summed: the person's when identified (it holds
        across their sessions), else the session's (or the server's, see budget_session)."""
        if self.caller.key is not None:
            return self.caller.key
        return self.budget_session if self.budget_session is not None else self.session_id

    @property
    def headless(self) -> bool:
        return self.host is None or not self.host.can_elicit
