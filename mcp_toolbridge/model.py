"""ToolSpec: the one normalized, frozen record every manifest format turns into.

Past the loaders no code knows which format a tool came from: how arguments reach a process,
how its output is read and what counts as failure are all fields here.

The fields carry the Tool Interface partitions (spec/tool-interface-partitions.txt) that the
three formats can fill: identity (``id``, ``name``, ``namespace``, ``source``), discovery
(``description``, ``tags``, ``pinned``), schemas (model-facing ``input_schema`` vs
``runtime_input_schema``, ``output_schema``), safety (``safety`` with the record of which
facts were inferred), execution (``transport``, ``timeout_s``), permission (``requires``),
rendering (``title``).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer, model_validator

from mcp_toolbridge.secrets import SERVER_ENV_PREFIXES as SERVER_ENV_PREFIXES
from mcp_toolbridge.secrets import secret_env_clash


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Format(StrEnum):
    AGENTCLI = "agentcli"
    AGENTPM = "agentpm"
    RUNLOOP = "runloop"
    BUILTIN = "builtin"


class Source(Frozen):
    """Where a tool was declared: the manifest path (as given), its index there, its format."""

    path: str
    index: int
    format: Format

    def locator(self, name: str | None) -> str:
        return f'tool[{self.index}] "{name}"' if name else f"tool[{self.index}]"


class EnvSpec(Frozen):
    """The environment a child process gets, on top of PATH and HOME.

    The loaders refuse what may not be here with a message naming the manifest's line; the
    model refuses it again, so no other way of making a ToolSpec can: the server's own
    variables, and PATH among the fixed values (a tool's PATH is the server's: the sandbox
    shows the folders on the server's PATH, and a manifest's would not be found there)."""

    passthrough: tuple[str, ...] = ()
    """Names copied from the server's environment when set there (agentcli envPassthrough)."""
    values: dict[str, str] = Field(default_factory=dict)
    """Fixed values: AgentPM entrypoint env and declared variables (with defaults applied)."""

    @model_validator(mode="after")
    def _nothing_of_the_servers(self) -> EnvSpec:
        names = [*self.passthrough, *self.values]
        own = [name for name in names if name.startswith(SERVER_ENV_PREFIXES)]
        if own:
            raise ValueError(f"the server's own variables never reach a tool: {', '.join(own)}")
        if "PATH" in self.values:
            raise ValueError("a tool's PATH is the server's: a manifest cannot set it")
        return self


class ExecTransport(Frozen):
    kind: Literal["exec"] = "exec"
    argv: tuple[str, ...]
    """Program and fixed arguments. argv[0] is absolute, or an interpreter name looked up on
    the child's PATH (AgentPM ``node``/``python``)."""
    cwd: str | None = None
    """Absolute working directory; None means the folder holding the manifest."""
    args_via: Literal["stdin", "file"] = "stdin"
    """stdin: the JSON arguments are written to stdin, which is then closed.
    file: they are written to a private temporary file whose path becomes argv[1]."""
    stdout: Literal["json", "first_json_object"] = "json"
    """json: all of stdout is one JSON value. first_json_object: the first complete JSON object
    in stdout is the result (noise before it is tolerated)."""
    ok_flag: bool = False
    """When true, a result object with ``"ok": false`` reports a failure."""
    env: EnvSpec = EnvSpec()
    reports_progress: bool = False
    """The manifest says the tool reports progress on its progress channel
    (``TOOLBRIDGE_PROGRESS_FD``). Informative: every exec tool gets the channel."""


class HttpTransport(Frozen):
    kind: Literal["http"] = "http"
    method: str
    url: str
    """Absolute URL; ``{name}`` is expanded from the arguments, ``${secret:ID}`` from secrets."""
    headers: dict[str, str] = Field(default_factory=dict)


class BuiltinTransport(Frozen):
    kind: Literal["builtin"] = "builtin"
    name: str
    holds_place: bool = True
    """Whether a call holds one of the bridge's places (its limit on calls running at once)
    while it runs. False for a tool that waits on a person or the client's model rather
    than this machine (question, task): held, a few such calls would stop every caller's
    tools, and a subagent's own calls would wait for the place its task holds."""


Transport = Annotated[ExecTransport | HttpTransport | BuiltinTransport, Field(discriminator="kind")]


class WildcardArg(Frozen):
    wildcard: Literal[True] = True


class PrefixArg(Frozen):
    prefix: str


ArgPattern = str | WildcardArg | PrefixArg


class ShellRequirement(Frozen):
    cmd: str
    args: tuple[ArgPattern, ...] | None = None
    """None: any arguments. Otherwise matched position by position against argv[1..]."""


class RequirementSet(Frozen):
    """The capability surface a tool (or the policy) declares. Variables such as {workspace}
    are expanded when the policy is compiled."""

    fs_read: tuple[str, ...] = ()
    fs_write: tuple[str, ...] = ()
    net_hosts: tuple[str, ...] = ()
    shell: tuple[ShellRequirement, ...] = ()
    capabilities: tuple[str, ...] = ()

    def is_empty(self) -> bool:
        return not (
            self.fs_read or self.fs_write or self.net_hosts or self.shell or self.capabilities
        )


Role = Literal["fs.read", "fs.write", "net.fetch", "shell.run"]
"""What an argument names, for the capability check: a path read or written, a URL fetched,
a shell command run."""

SAFETY_FACTS = ("read_only", "destructive", "idempotent", "open_world", "requires_confirmation")


class Safety(Frozen):
    """Safety facts with fail-closed defaults; ``inferred`` names the facts that were not
    declared by the manifest and so took the cautious value: destructive, not read-only, not
    idempotent, open world (MCP's own defaults for an unannotated tool), and no confirmation
    beyond what the policy asks for.

    A read-only tool does not change its environment, so ``read_only=True`` without an explicit
    ``destructive`` means not destructive, and both true is refused (MCP: destructiveHint is
    meaningful only when readOnlyHint is false).
    """

    read_only: bool = False
    destructive: bool = True
    idempotent: bool = False
    open_world: bool = True
    requires_confirmation: bool = False
    inferred: frozenset[str] = frozenset(SAFETY_FACTS)

    @model_validator(mode="before")
    @classmethod
    def _read_only_is_not_destructive(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("read_only") is True and "destructive" not in data:
            return {**data, "destructive": False}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Safety:
        if self.read_only and self.destructive:
            raise ValueError("a read-only tool cannot be destructive")
        return self

    @field_serializer("inferred", when_used="json")
    def _sorted(self, inferred: frozenset[str]) -> list[str]:
        """A set has no order of its own: as JSON, sorted, so equal specs dump equal text in
        every process (the order of a set of strings changes with the hash seed)."""
        return sorted(inferred)


class Budget(Frozen):
    tokens: int | None = None
    usd: float | None = None


class ToolSpec(Frozen):
    name: str
    """The MCP tool name: sanitized to [A-Za-z0-9_-]{1,64}, unique in the catalog."""
    id: str
    """The identifier as written in the manifest (kept in _meta)."""
    namespace: str = ""
    """The manifest's namespace: its folder or package name."""
    title: str | None = None
    description: str = ""
    version: str | None = None
    input_schema: dict[str, Any]
    """Model-facing input schema: properties marked ``visibility: internal`` removed."""
    runtime_input_schema: dict[str, Any]
    """The schema as declared, internal fields included."""
    output_schema: dict[str, Any] | None = None
    input_schema_ref: str | None = None
    output_schema_ref: str | None = None
    transport: Transport
    timeout_s: float | None = None
    """None, zero or less: the server default (``--timeout``); see :meth:`effective_timeout_s`."""
    requires: RequirementSet = RequirementSet()
    argument_roles: dict[str, tuple[Role, ...]] = Field(default_factory=dict)
    """Which arguments name what the capability check must see: argument name -> roles
    (``fs.read``, ``fs.write``, ``net.fetch``, ``shell.run``). Built-in tools declare them."""
    safety: Safety = Safety()
    secrets: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    """Keywords the manifest gives (Runloop ``observability.tags``): searched by tool_search,
    and the tool's search hint (:attr:`search_hint`)."""
    pinned: bool = False
    """Always listed, whatever ``--expose`` says (``--pin``, the policy's ``[discovery] pin``);
    clients that defer tools by themselves are told to load it (``anthropic/alwaysLoad``)."""
    budget: Budget | None = None
    source: Source

    @model_validator(mode="after")
    def _no_secret_named_as_a_fixed_variable(self) -> ToolSpec:
        """The loaders refuse it naming the manifest; refused again here for any other way
        of making a ToolSpec (:func:`~mcp_toolbridge.secrets.secret_env_clash`)."""
        for secret in self.secrets:
            clash = secret_env_clash(secret)
            if clash is not None:
                raise ValueError(clash)
        return self

    @property
    def is_locked(self) -> bool:
        """Whether this is one of the locked tools (declared by the server, not loaded from a
        manifest)."""
        return self.source.format is Format.BUILTIN

    @property
    def search_hint(self) -> str | None:
        """The Tool Interface's Discovery.search_hint: the manifest's keywords in one line
        (whitespace collapsed), None when it gives none."""
        hint = " ".join(" ".join(self.tags).split())
        return hint or None

    def effective_timeout_s(self, default_s: float) -> float:
        """The deadline of a call: ``timeout_s`` when it is positive, else ``default_s`` (the
        server's ``--timeout``). Zero or less is no deadline of the tool's own, as agentcli
        reads ``timeoutSec`` (docs/manifests.md); the loaders never set it, but a spec built
        in code may."""
        own = self.timeout_s
        return own if own is not None and own > 0 else default_s


ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]
"""The Agent Client Protocol's tool kinds: what a client shows a call as (icon, diff view,
terminal pane)."""

LOCKED_KINDS: dict[str, ToolKind] = {
    "read": "read",
    "write": "edit",
    "edit": "edit",
    "glob": "search",
    "grep": "search",
    "bash": "execute",
    "todo": "think",
    "task": "think",
    "question": "other",
    "web_search": "fetch",
    "web_fetch": "fetch",
    "skill": "read",
    "tool_search": "search",
}
"""The locked tools' ACP kinds (the spec's tool kind mapping; where it is silent, as the
Claude Code and opencode ACP adapters map their own tools)."""


def tool_kind(spec: ToolSpec) -> ToolKind:
    """A tool's ACP kind: a locked tool's from :data:`LOCKED_KINDS`; a manifest tool's from
    its *declared* safety facts, an undeclared fact counting as its cautious value:

    - declared read-only: ``fetch`` when it reaches the outside world (an HTTP tool, or one
      that declares ``open_world: true``), else ``read``;
    - otherwise (writes, or may write): ``execute`` for a process, ``other`` for an HTTP call.
    """
    if spec.is_locked:
        return LOCKED_KINDS.get(spec.id, "other")
    safety = spec.safety
    http = isinstance(spec.transport, HttpTransport)
    if safety.read_only and "read_only" not in safety.inferred:
        declared_open = safety.open_world and "open_world" not in safety.inferred
        return "fetch" if http or declared_open else "read"
    return "other" if http else "execute"
