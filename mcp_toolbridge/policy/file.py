"""The policy file format: pydantic models for the operator's and the project's TOML files,
the built-in default policy, and parsing that names the file, the line and the key on every
error (with the closest valid name for a misspelt one). How a file layers over the default is
in :mod:`.layers`."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from mcp_toolbridge.errors import ConfigError, ErrorCode
from mcp_toolbridge.leaks import SecretScanSettings
from mcp_toolbridge.model import RequirementSet, ShellRequirement
from mcp_toolbridge.policy.diagnose import describe
from mcp_toolbridge.policy.rules import Action
from mcp_toolbridge.state import MAX_PEOPLE, PERSON_IDLE_S

DefaultAction = Literal["allow", "deny", "ask", "by-safety"]
SandboxMode = Literal["auto", "required", "off"]
_M = TypeVar("_M", bound=BaseModel)
PROJECT_POLICY = Path(".toolbridge") / "policy.toml"

DEFAULT_POLICY_TOML = """\
# The default policy (used when --policy is not given).
default_action = "by-safety"   # no rule matched: allow, or ask for destructive tools
grant = "declared"             # tools' own declared requirements extend the scope
trust_project_allow = false    # <workspace>/.toolbridge/policy.toml may only tighten

[requires]
fs.read = ["{workspace}"]
fs.write = ["{workspace}"]

[security]
confirm_external_actions = true

[[rules]]
permission = "read"
action = "allow"

[[rules]]
permission = "glob"
action = "allow"

[[rules]]
permission = "grep"
action = "allow"

[[rules]]                      # environment files usually hold secrets: ask, even for read
permission = "fs.read"
pattern = "**/.env"
action = "ask"

[[rules]]
permission = "fs.read"
pattern = "**/.env.*"
action = "ask"

[[rules]]
permission = "write"
action = "ask"

[[rules]]
permission = "edit"
action = "ask"

[[rules]]
permission = "bash"
action = "ask"
"""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PrefixPattern(_Model):
    prefix: str = Field(min_length=1)


Name = Annotated[str, Field(min_length=1)]


class RuleModel(_Model):
    permission: str = Field(min_length=1)
    pattern: str | PrefixPattern | None = None
    action: Action
    subject: Name | None = None
    """For this caller only (an access token's ``sub``); with the keys below, every one
    given must hold. None of them: for everyone."""
    client: Name | None = None
    """For callers through this OAuth client (an agent's client id)."""
    group: Name | None = None
    """For callers with this value in a group or role claim."""
    scope: Name | None = None
    """For callers whose token carries this scope."""


def split_shorthand(entry: str) -> tuple[str, str | None]:
    """``"bash=git status"`` -> ``("bash", "git status")``; ``"read"`` -> ``("read", None)``.
    The same text as ``--allow``. Raises ValueError for an empty name or pattern."""
    permission, equals, pattern = entry.partition("=")
    permission = permission.strip()
    if not permission:
        raise ValueError('write NAME or NAME=PATTERN, such as "read" or "bash=git status"')
    if equals and not pattern:
        raise ValueError(f'the pattern after "{permission}=" is empty; leave out "=" for any')
    return permission, (pattern if equals else None)


def _shorthand(entry: str) -> str:
    split_shorthand(entry)
    return entry


Shorthand = Annotated[str, AfterValidator(_shorthand)]
"""One rule in a line: ``allow = ["read", "bash=git status"]`` (an exact or glob pattern)."""


class CallersModel(_Model):
    """``[[callers]]``: the one-line rules (``allow``, ``ask``, ``deny``) for some callers:
    a subject, an OAuth client, a group or role, a scope (each given must hold)."""

    subject: Name | None = None
    client: Name | None = None
    group: Name | None = None
    scope: Name | None = None
    allow: list[Shorthand] = []
    ask: list[Shorthand] = []
    deny: list[Shorthand] = []

    @model_validator(mode="after")
    def _names_someone(self) -> CallersModel:
        if not (self.subject or self.client or self.group or self.scope):
            raise ValueError("name the callers: subject, client, group or scope")
        return self


class FsModel(_Model):
    read: list[str] = []
    write: list[str] = []


class NetModel(_Model):
    hosts: list[str] = []


class RequiresModel(_Model):
    fs: FsModel = FsModel()
    net: NetModel = NetModel()
    shell: list[ShellRequirement] = []
    capabilities: list[str] = []

    def requirement_set(self) -> RequirementSet:
        return RequirementSet(
            fs_read=tuple(self.fs.read),
            fs_write=tuple(self.fs.write),
            net_hosts=tuple(self.net.hosts),
            shell=tuple(self.shell),
            capabilities=tuple(self.capabilities),
        )


class SecurityModel(_Model):
    confirm_external_actions: bool = True


class WatchdogModel(_Model):
    command: list[str] = Field(min_length=1)
    timeout_s: float = Field(default=10.0, gt=0, le=300)
    read: list[str] = []
    """Files and folders the watchdog's own sandbox shows besides the policy's fs.read roots
    (its script, its configuration); relative to the policy file's folder."""


class SubagentsModel(_Model):
    """``[subagents]``: the task tool's loop limits and what subagents may use."""

    max_turns: int = Field(default=8, ge=1, le=100)
    max_seconds: float = Field(default=300.0, gt=0, le=3600)
    max_depth: int = Field(default=1, ge=1, le=4)
    tools: list[Literal["todo", "question", "task"]] = []
    """Which of todo, question and task subagents may use (none by default)."""


class BashModel(_Model):
    """``[bash]``: the bash tool's environment."""

    env_passthrough: list[Annotated[str, Field(pattern=r"^[A-Z_][A-Z0-9_]*$")]] = Field(
        default=[], max_length=64
    )
    """Variables of the server's environment passed to commands, beside the minimal set."""


class WebFetchModel(_Model):
    """``[web_fetch]``."""

    timeout_s: float = Field(default=30.0, gt=0, le=600)
    allow_loopback: bool = False
    """For tests only: lets web_fetch reach 127.0.0.1 and ::1. Never in production."""


def _at_least(minimum: int, why: str) -> AfterValidator:
    """A sandbox limit: 0 (none) or at least ``minimum``; below it no command starts (the
    loader, the shell and the warm sandbox's zygote fail), so the policy is refused."""

    def check(value: int) -> int:
        if 0 < value < minimum:
            raise ValueError(
                f"{value} is too small for any command to start ({why}): "
                f"set at least {minimum}, or 0 for no limit"
            )
        return value

    return AfterValidator(check)


class SandboxModel(_Model):
    """``[sandbox]``: the OS sandbox around every process a call starts (docs/security.md)."""

    mode: SandboxMode = "auto"
    """auto: sandbox where the platform can, warn (saying how to fix it) where it cannot;
    required: refuse to start without it; off. ``--sandbox`` overrides it."""
    mask: list[str] = Field(default=[], max_length=256)
    """More secret paths to hide in every sandbox (absolute, or relative to the home folder)."""
    warm: bool = True
    """Set sandboxes up before the calls of tools called again (each reused only when its
    call left nothing behind); false: a fresh sandbox for every call."""
    processes: Annotated[int, _at_least(16, "a pipeline and the sandbox's own two")] = Field(
        default=1024, ge=0, le=1_000_000
    )
    """Processes and threads per call (RLIMIT_NPROC, counted per sandbox); 0: no limit."""
    open_files: Annotated[int, _at_least(64, "bash and Python open about 20")] = Field(
        default=4096, ge=0, le=1_048_576
    )
    """Open files per process (RLIMIT_NOFILE); 0: the server's own limit."""
    memory_mib: Annotated[int, _at_least(64, "Python maps about 20 MiB to start")] = Field(
        default=4096, ge=0, le=1_048_576
    )
    """MiB of heap and private writable memory per process (RLIMIT_DATA); 0: no limit."""
    file_size_mib: int = Field(default=4096, ge=0, le=1_048_576)
    """The largest file a process may write, in MiB (RLIMIT_FSIZE); 0: no limit."""


class DiscoveryModel(_Model):
    """``[discovery]``: which tools are always listed."""

    pin: list[Annotated[str, Field(min_length=1)]] = Field(default=[], max_length=1000)
    """Tools listed whatever ``--expose`` says (beside ``serve --pin``): MCP names or
    manifest ids, globs (``*``, ``?``, ``[...]``) allowed."""


class AuthModel(_Model):
    """``[auth]``: over HTTP, accept the access tokens of an OAuth authorization server
    (``serve --auth-issuer`` wins; docs/operating.md)."""

    issuer: str | None = None
    resource: str | None = None
    """The MCP endpoint's canonical URL, as clients reach it (default: the --http URL)."""
    scopes: list[Annotated[str, Field(min_length=1, pattern=r"^[!#-\[\]-~]+$")]] = []
    """Scopes every request's token must carry."""
    algorithms: list[str] = []
    """The token signing algorithms accepted (default: RS*, PS*, ES256, ES384)."""
    leeway_s: float = Field(default=30.0, ge=0, le=300)
    group_claims: list[str] = ["groups", "roles"]
    introspection_client_id: str | None = None
    introspection_secret: str | None = None
    """A secret id (``TOOLBRIDGE_SECRET_<ID>`` or the secrets file), never the secret."""
    introspection_cache_s: float = Field(default=30.0, ge=0, le=300)
    """How long an opaque token the issuer called active is taken without asking it again
    (never beyond the token's exp): a revoked one is honoured at most this long; 0: ask on
    every request (server/tokens.py)."""
    person_idle_s: float = Field(default=PERSON_IDLE_S, ge=600, le=366 * 86_400)
    """How long what the server keeps of a person (their "always" answers, budget usage, todo
    list) outlives their last call (state/memory.py)."""
    max_people: int = Field(default=MAX_PEOPLE, ge=1, le=10_000_000)
    """How many people's state the server keeps at most (state/memory.py)."""
    console_client_id: str | None = Field(default=None, min_length=1)
    """The web console's OAuth client at the issuer: a person signs in to ``/console`` in
    the browser with it (``serve --console-client-id`` wins; docs/console.md)."""
    console_client_secret: str | None = None
    """Its secret's id (``TOOLBRIDGE_SECRET_<ID>`` or the secrets file), never the secret;
    none: a public client (PKCE alone), unless TOOLBRIDGE_CONSOLE_CLIENT_SECRET is set."""
    console_admin_role: str | None = Field(default=None, min_length=1)
    """The group or role a person needs to sign in to the console (default ``admin``;
    ``serve --console-admin-role`` wins)."""


class LimitsModel(_Model):
    """``[limits]``: how many calls one caller may make in a sliding window (the person when
    identified, else the session; anonymous sessionless calls share the server's count).
    Kept in the state store, so replicas sharing it share the count."""

    calls: int | None = Field(default=None, gt=0, le=1_000_000)
    """Calls allowed per window; none: no limit."""
    window_s: float = Field(default=60.0, gt=0, le=86_400)


class StateModel(_Model):
    """``[state]``: where what outlives a call is kept (``serve --state`` wins). ``memory``
    (the default): in the server's memory; ``redis://HOST:PORT/DB``: in a Redis that every
    replica of one service shares (docs/deploy.md)."""

    url: str = "memory"
    prefix: str = Field(default="tb:", pattern=r"^[A-Za-z0-9_.:-]{1,64}$")
    """Put before every key, so several services can share one Redis."""
    keys: str | None = None
    """The secret id (``TOOLBRIDGE_SECRET_<ID>`` or the secrets file) of the request-state
    keys, when ``TOOLBRIDGE_STATE_KEYS`` is not set; never the keys themselves."""
    replica: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9-]{0,62}$")
    """This replica's name in session ids and leases (default: the host name, made fit)."""


class PolicyFile(_Model):
    extends: Literal["default", "none"] = "default"
    """default: this file adds to the built-in default policy; none: it replaces it."""
    allow: list[Shorthand] = []
    ask: list[Shorthand] = []
    deny: list[Shorthand] = []
    default_action: DefaultAction = "ask"
    grant: Literal["declared", "policy"] = "declared"
    trust_project_allow: bool = False
    requires: RequiresModel = RequiresModel()
    security: SecurityModel = SecurityModel()
    watchdog: WatchdogModel | None = None
    rules: list[RuleModel] = []
    callers: list[CallersModel] = []
    web_search: dict[str, Any] = {}
    """The web_search providers (checked by builtins/web/providers.py when tools are built)."""
    subagents: SubagentsModel = SubagentsModel()
    bash: BashModel = BashModel()
    web_fetch: WebFetchModel = WebFetchModel()
    discovery: DiscoveryModel = DiscoveryModel()
    sandbox: SandboxModel = SandboxModel()
    secret_scan: SecretScanSettings = SecretScanSettings()
    """Secrets nobody declared, in results and arguments (leaks/, docs/secrets.md)."""
    auth: AuthModel = AuthModel()
    limits: LimitsModel = LimitsModel()
    state: StateModel = StateModel()


class ProjectFile(_Model):
    allow: list[Shorthand] = []
    ask: list[Shorthand] = []
    deny: list[Shorthand] = []
    rules: list[RuleModel] = []


def read_policy_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise invalid(str(path), f"cannot read the policy file: {exc}") from exc


def load_toml(text: str, origin: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise invalid(origin, f"not valid TOML: {exc}") from exc
    except RecursionError as exc:  # tomllib recurses per nesting level of arrays and tables
        raise invalid(origin, "not valid TOML: nested too deeply to parse") from exc


def validate_policy(model: type[_M], data: dict[str, Any], text: str, origin: str) -> _M:
    """``data`` (parsed from ``text``) as ``model``; every error names its line and key."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise invalid(origin, describe(exc, model, text)) from exc


def parse_policy(model: type[_M], text: str, origin: str) -> _M:
    return validate_policy(model, load_toml(text, origin), text, origin)


def invalid(origin: str, message: str) -> ConfigError:
    return ConfigError(f"{origin}: {message}", code=ErrorCode.POLICY_INVALID, origin=origin)
