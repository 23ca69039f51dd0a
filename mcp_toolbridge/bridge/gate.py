"""The permission gate of Bridge.call: capabilities -> rules -> watchdog -> confirmation.

1. Capability check: the paths, hosts and commands in the arguments against the granted
   scope (a shell command is parsed into its simple commands and its redirect targets). A
   refusal here is final: no rule, session answer or watchdog can change it.
2. Permission rules (manifest, project, session scopes; most specific wins). A shell command
   with parts that cannot be checked is never allowed by a broad rule: it asks.
3. The watchdog, when the policy names one: it can only tighten the decision. Then the
   secret scan (bridge/screen.py): arguments that carry a secret, to a tool that can reach the
   network, make an allowed call ask (naming the rules, never the value).
4. ``ask``: the person is asked through the client (allow once / allow always / reject).
   A client that cannot ask is headless, and ask is a deny with a fixed message that never
   reads as consent. A client that was asked and could not put the question to the person
   (:class:`~mcp_toolbridge.host.CouldNotAsk`: it answered with an error, the connection
   closed) gets the same deny, with the reason; so does a question the client answered with
   ``cancel`` (dismissed unanswered, or nobody there: headless Claude Code cancels every
   question at once). Only ``decline``, or the person's "Reject", is a rejection. "Always"
   adds a rule for its owner: the person when the caller is identified, else the session
   (``CallContext.owner``), kept in the State port. A headless call with a console
   (``CallContext.console``: ``serve --console``) is asked there instead, through the same
   Host port, with the confirmation in parts (:class:`~mcp_toolbridge.host.Confirmation`:
   the arguments redacted, the rule, the sandbox); it waits up to its deadline (the tool's
   timeout), reporting progress to a client that listens, and nobody answering in time is a
   refusal. Every answer records who gave it (``Clearance.by``: the console's user, else the
   client's person).

An allowed call's clearance carries the OS sandbox its processes will run in (the third
layer), built from the same policy: the tool's effective scope (``Policy.tool_scope``) and its
manifest folder. The watchdog itself runs sandboxed too: the policy's own read roots and its
``[watchdog] read`` entries, nothing writable, no network; a watchdog that fails while that
sandbox hides a file its command names is refused saying so, and how to show it.

Every refusal but the person's own "reject" ends with how to allow the call (the --allow flag,
the policy line and its file, the --workspace or [requires] entry; see policy.hints).

The gate runs before anything executes and has no side effects other than the question and
the "always" answers it keeps, so a multi-round-trip retry may run it again safely.
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from mcp_toolbridge.bridge.asking import (
    ALLOW_ALWAYS,
    ALLOW_ONCE,
    ASSISTANT_WANTS,
    REJECT,
    ask,
    sandbox_summary,
)
from mcp_toolbridge.bridge.budget import RateLimit
from mcp_toolbridge.bridge.redaction import redacted_arguments
from mcp_toolbridge.bridge.screen import (
    SECRETS_SCOPE,
    argument_hint,
    argument_question,
    reaches_network,
)
from mcp_toolbridge.errors import ExecError, StateFullError
from mcp_toolbridge.executors import DEFAULT_TIMEOUT_S, run_process
from mcp_toolbridge.host import (
    CallContext,
    Caller,
    Confirmation,
    CouldNotAsk,
    Host,
    visible,
)
from mcp_toolbridge.leaks import OFF, SecretScan
from mcp_toolbridge.model import Format, ToolSpec
from mcp_toolbridge.policy import (
    CommandSplitter,
    Decision,
    Policy,
    SandboxMode,
    Scope,
    SessionRules,
    Targets,
    Verdict,
    WatchdogRequest,
    always_grants,
    canonical_root,
    capability_way_out,
    combine,
    failure,
    hidden_from_it,
    is_within,
    named_files,
    parse_verdict,
    watchdog_payload,
    way_out,
)
from mcp_toolbridge.sandbox import Confinement, Guard, Limits, Sandbox, guarded_by, write_floor
from mcp_toolbridge.state import MemoryState, State

log = logging.getLogger("mcp_toolbridge")

HEADLESS_DENIED = (
    "Denied, nothing was run: this call needs a person's confirmation and this client cannot "
    "ask one (it does not support elicitation). This is a refusal, not an approval."
)
NOT_ASKED = (
    "Denied, nothing was run: this call needs a person's confirmation and the client could not "
    "ask for it"
)
"""The start of the refusal when asking failed; the reason follows in parentheses."""
NOT_CONSENT = "This is a refusal, not an approval."
DISMISSED = (
    "Denied, nothing was run: this call needs a person's confirmation and the client "
    "dismissed the question unanswered (cancel: it was closed without a choice, or nobody was "
    "there to answer; headless clients such as `claude -p` cancel every question)"
)
"""The start of the refusal when the client answered the question with ``cancel``."""
NO_CHOICE = (
    "Denied, nothing was run: this call needs a person's confirmation and the client's answer "
    "held none of the choices offered (it accepted the question without 'Allow once', 'Allow "
    "always (this session)' or 'Reject')"
)
"""The start of the refusal when the client accepted the question with no choice in it (a
client that accepts every form as it is): nobody chose, as with ``cancel``."""
REJECTED = "Denied, nothing was run: the person you are working with rejected this call."
MAX_SUMMARY = 600
APPROVED_SECRETS = "secret_scan.approved"
"""The State value of the (tool, rule) pairs an owner's "always" answers allowed in the
arguments (secrets nobody declared)."""


@dataclass(frozen=True, slots=True)
class Clearance:
    """What the gate decided, and the person's answer when one was asked."""

    decision: Decision
    answer: str | None = None
    hint: str = ""
    """How to allow the call (empty for the person's own rejection)."""
    reason: str = ""
    """Why the person could not be asked (the answer ``unreachable``); with ``cancel``, the
    refusal's start when it is not :data:`DISMISSED` (:data:`NO_CHOICE`)."""
    sandbox: Confinement | None = None
    """Where an allowed call's processes run (None: no sandbox configured)."""
    by: str | None = None
    """Who answered (``console:<user>``, ``client``, ``client:<subject>``); None: nobody."""

    @property
    def allowed(self) -> bool:
        return self.decision.action == "allow"

    def refusal(self) -> str:
        if self.answer == "reject":
            return REJECTED
        if self.answer == "headless":
            text = f"{HEADLESS_DENIED} (asked by {self.decision.rule})"
        elif self.answer == "unreachable":
            text = f"{NOT_ASKED} ({self.reason}). {NOT_CONSENT} (asked by {self.decision.rule})"
        elif self.answer == "cancel":
            text = f"{self.reason or DISMISSED}. {NOT_CONSENT} (asked by {self.decision.rule})"
        else:
            text = f"Denied by {self.decision.rule}."
        return f"{text} {self.hint}" if self.hint else text


NO_POLICY = Decision("allow", "no policy configured", "default")
PENDING = Decision("ask", "confirmation pending", "confirmation")
"""The decision of a call that ended waiting for the person's answer (2026-07-28)."""


async def allow_all(spec: ToolSpec, arguments: Mapping[str, Any], ctx: CallContext) -> Clearance:
    """The gate of a bridge without a policy."""
    return Clearance(NO_POLICY)


def refused(rule: str, scope: str) -> Clearance:
    """A refusal decided before the gate (a spent budget: scope ``budget``)."""
    return Clearance(Decision("deny", rule, scope))


def _summary(arguments: Mapping[str, Any]) -> str:
    text = visible(json.dumps(arguments, ensure_ascii=False, sort_keys=True))
    return text if len(text) <= MAX_SUMMARY else text[:MAX_SUMMARY] + " …"


class PolicyGate:
    """Bridge gate over a compiled Policy; "always" answers are kept in ``state`` by owner
    (shared with the gates of later reloads)."""

    def __init__(
        self,
        policy: Policy,
        *,
        environ: Mapping[str, str] | None = None,
        splitter: CommandSplitter | None = None,
        sidecars: Callable[[str], Path | None] | None = None,
        sandbox: Sandbox | None = None,
        state: State | None = None,
        default_timeout_s: float = DEFAULT_TIMEOUT_S,
        secret_scan: SecretScan = OFF,
    ) -> None:
        """``default_timeout_s``: the deadline of a tool without its own (``--timeout``),
        which is how long a call waits for an answer in the console."""
        self.policy = policy
        self.rate_limit = RateLimit.configured(policy)
        """The policy's ``[limits]``: the bridge checks it before the gate."""
        self.default_timeout_s = default_timeout_s
        self.sandbox = sandbox
        self.state: State = state if state is not None else MemoryState()
        self.secret_scan = secret_scan
        self._sidecars = sidecars
        self._environ = dict(os.environ if environ is None else environ)
        self._splitter = splitter

    @classmethod
    def configured(
        cls,
        policy: Policy,
        mode: SandboxMode | None,
        *,
        environ: Mapping[str, str],
        sidecars: Callable[[str], Path | None] | None = None,
        state: State | None = None,
        default_timeout_s: float = DEFAULT_TIMEOUT_S,
        guard: Guard = ((), (), (), ()),
    ) -> PolicyGate:
        """The server's gate: its OS sandbox in ``mode`` (``--sandbox``), else as the
        policy's ``[sandbox]`` table says, with the table's masks and ``warm``; the home
        folder (for the secret paths) from ``environ``; the secret scan of its
        ``[secret_scan]`` table. ``guard``: the served manifest paths, the files that decide
        trust and the programs served tools run, read-only in every sandbox, and the folders
        also hidden in every sandbox (the recording's) (sandbox/guard.py)."""
        config = policy.file.sandbox
        held = guarded_by(policy, *guard)
        limits = Limits.of(config)
        sandbox = Sandbox.from_environ(mode or config.mode, environ, config.mask, limits, held)
        sandbox.warm.enabled = config.warm
        scan = SecretScan(policy.file.secret_scan)
        return cls(
            policy,
            environ=environ,
            sidecars=sidecars,
            sandbox=sandbox,
            secret_scan=scan,
            state=state,
            default_timeout_s=default_timeout_s,
        )

    async def session_rules(self, owner: str) -> SessionRules:
        """The rules the "always" answers of ``owner`` granted."""
        return SessionRules.of(await self.state.grants(owner))

    async def __call__(
        self, spec: ToolSpec, arguments: Mapping[str, Any], ctx: CallContext
    ) -> Clearance:
        clearance = await self._clear(spec, arguments, ctx)
        if not clearance.allowed or self.sandbox is None:
            return clearance
        return replace(clearance, sandbox=self.confinement(spec))

    def callable_by(self, spec: ToolSpec, caller: Caller) -> bool:
        """Whether ``caller`` may see and call ``spec`` at all (rules for some callers)."""
        return self.policy.callable_by(spec, caller)

    def caller_view(self, caller: Caller) -> tuple[int, ...] | None:
        """What, beside the catalog, decides ``caller``'s tool list (see Policy)."""
        return self.policy.caller_view(caller)

    def confinement(self, spec: ToolSpec) -> Confinement | None:
        """The sandbox of ``spec``'s processes: its effective scope, its manifest folder."""
        if self.sandbox is None:
            return None
        try:
            scope = self.policy.tool_scope(spec)
        except ValueError:  # refused by the capability check before it gets here
            scope = Scope()
        own = () if spec.source.format is Format.BUILTIN else (Path(spec.source.path).parent,)
        return self.sandbox.confine(self.sandbox.profile(scope, tool=spec.name, extra_read=own))

    async def _clear(
        self, spec: ToolSpec, arguments: Mapping[str, Any], ctx: CallContext
    ) -> Clearance:
        # The bash sub-policy is imported on first use (cli.startup.warm_up loads it early).
        from mcp_toolbridge.policy import (
            load_parser,
            parser_loaded,
            shell_denial,
            shell_floor,
            shell_targets,
        )
        from mcp_toolbridge.policy import splitter as shell_splitter

        policy = self.policy.for_caller(ctx.caller)  # the rules for everyone and for it
        if not parser_loaded() and any("shell.run" in r for r in spec.argument_roles.values()):
            await anyio.to_thread.run_sync(load_parser)  # not on the event loop: 0.1-0.3 s
        targets = policy.targets(
            spec,
            arguments,
            roles=spec.argument_roles or None,
            splitter=self._splitter or shell_splitter,
        )
        targets = shell_targets(policy, spec, arguments, targets)
        targets = self._own_sidecars_readable(spec, targets, ctx.session_id)
        denial = policy.check_capabilities(spec, targets)
        if denial is not None:
            denial = shell_denial(policy, spec, arguments, denial)
            return Clearance(Decision.refused(denial), hint=capability_way_out(policy, denial))
        rules = await self.session_rules(ctx.owner)
        decision = shell_floor(policy, spec, arguments, policy.decide(spec, targets, rules), rules)
        if self.sandbox is not None:
            held = self.sandbox.guarded
            decision = write_floor(
                decision, targets.paths_write, held.asked, targets.paths_read, held.hidden
            )
        if policy.watchdog is not None and decision.action != "deny":
            decision = combine(decision, await self._watchdog(spec, arguments, ctx))
        if decision.action == "deny":
            hint = way_out(policy, spec, arguments, targets, decision, rules, ctx.caller)
            return Clearance(decision, hint=hint)
        decision = await self._secrets_in(spec, arguments, decision, ctx.owner)
        if decision.action != "ask":
            return Clearance(decision)
        return await self._confirm(spec, arguments, targets, decision, ctx, rules)

    async def _secrets_in(
        self, spec: ToolSpec, arguments: Mapping[str, Any], decision: Decision, owner: str
    ) -> Decision:
        """``decision``, or an ask when the arguments carry secrets the owner (the person, or
        the session) has not allowed for this tool and the tool can reach the network."""
        if not self.secret_scan.enabled or not reaches_network(spec, self.policy, self.sandbox):
            return decision
        found = Counter(await self.secret_scan.arguments(arguments, spec.name))
        if found:
            approved = await self._approved_secrets(owner)
            for rule in [r for r in found if (spec.name, r) in approved]:
                del found[rule]
        return argument_question(spec, found, decision) if found else decision

    async def _approved_secrets(self, owner: str) -> set[tuple[str, str]]:
        """The (tool, rule) pairs the owner's "always" answers allowed in arguments."""
        kept = await self.state.load(owner, APPROVED_SECRETS) or []
        return {(str(tool), str(rule)) for tool, rule in kept}

    async def _hint(
        self,
        policy: Policy,
        spec: ToolSpec,
        arguments: Mapping[str, Any],
        targets: Targets,
        decision: Decision,
        rules: SessionRules,
        caller: Caller,
    ) -> str:
        if decision.scope == SECRETS_SCOPE:
            return argument_hint(spec, await self.secret_scan.arguments(arguments, spec.name))
        return way_out(policy, spec, arguments, targets, decision, rules, caller)

    def _own_sidecars_readable(self, spec: ToolSpec, targets: Targets, session_id: str) -> Targets:
        """A read-only tool may read the calling session's own sidecar folder (the
        ``output_path`` files of its truncated results), whatever the fs.read scope: those
        reads are not checked against the scope or the path rules."""
        folder = self._sidecars(session_id) if self._sidecars is not None else None
        if folder is None or not spec.safety.read_only or not targets.paths_read:
            return targets
        root = canonical_root(folder)
        kept = tuple(p for p in targets.paths_read if not is_within(p, root))
        return (
            targets if len(kept) == len(targets.paths_read) else replace(targets, paths_read=kept)
        )

    async def _watchdog(
        self, spec: ToolSpec, arguments: Mapping[str, Any], ctx: CallContext
    ) -> Verdict:
        config = self.policy.watchdog
        assert config is not None
        payload = watchdog_payload(
            WatchdogRequest.for_call(spec, arguments, session=ctx.session_id)
        )
        env: dict[str, str] = {k: self._environ[k] for k in ("PATH", "HOME") if k in self._environ}
        sandbox = None
        if self.sandbox is not None:  # the policy's read roots and its own; no write, no network
            profile = self.sandbox.profile(
                Scope(fs_read=self.policy.scope.fs_read), tool="watchdog", extra_read=config.read
            )
            sandbox = self.sandbox.confine(profile)
        try:
            outcome = await run_process(
                config.argv,
                stdin=payload,
                cwd=None,
                env=env,
                timeout_s=config.timeout_s,
                sandbox=sandbox,
                max_output_bytes=64 * 1024,
            )
        except ExecError as exc:
            return failure(exc.message)
        verdict = parse_verdict(outcome.stdout, exit_code=outcome.exit_code, signal=outcome.signal)
        if verdict.failed and sandbox is not None:  # did its sandbox hide what it needs?
            cwd = Path.cwd()
            hidden = [
                path
                for path in named_files(config, cwd)
                if sandbox.hides(path, config.argv, cwd=None, env=env)
            ]
            if hidden:
                return hidden_from_it(verdict, hidden, config)
        return verdict

    async def _confirm(
        self,
        spec: ToolSpec,
        arguments: Mapping[str, Any],
        targets: Targets,
        decision: Decision,
        ctx: CallContext,
        rules: SessionRules,
    ) -> Clearance:
        host: Host | None = ctx.host
        refused = Decision("deny", decision.rule, decision.scope)
        policy = self.policy.for_caller(ctx.caller)
        in_console = (host is None or not host.can_elicit) and ctx.console is not None
        if in_console:
            host = ctx.console
        if host is None or not host.can_elicit:
            hint = await self._hint(policy, spec, arguments, targets, decision, rules, ctx.caller)
            return Clearance(refused, "headless", hint)
        # A person sees the arguments with every secret nobody declared redacted, wherever
        # they are asked (the client's form or the console's page).
        shown, _ = await self.secret_scan.value(arguments, spec.name, len(_summary(arguments)))
        about = self._about(spec, shown, decision, ctx) if in_console else None
        message = (
            f"{ASSISTANT_WANTS} {spec.name!r}"
            f"{f' ({spec.title})' if spec.title else ''}.\n"
            f"Arguments: {_summary(shown)}\n"
            f"Why you are asked: {decision.rule}"
        )
        try:
            answer = await ask(host, f"confirm:{spec.name}", message, about, ctx.progress)
        except CouldNotAsk as exc:  # never an answer: refused as a headless client's call is
            hint = await self._hint(policy, spec, arguments, targets, decision, rules, ctx.caller)
            return Clearance(refused, "unreachable", hint, exc.reason)
        if answer.action == "cancel":  # nobody chose: refused as a call that was not asked
            hint = await self._hint(policy, spec, arguments, targets, decision, rules, ctx.caller)
            return Clearance(refused, "cancel", hint)
        by = answer.by or (f"client:{ctx.caller.subject}" if ctx.caller.subject else "client")
        choice = (answer.content or {}).get("decision") if answer.action == "accept" else None
        if choice == ALLOW_ONCE:
            return Clearance(Decision("allow", decision.rule, decision.scope), "once", by=by)
        if choice == ALLOW_ALWAYS:
            try:
                await self._keep_always(spec, arguments, targets, ctx.owner)
            except StateFullError as exc:  # allowed, this once: the person is asked again
                log.warning("an 'always' answer counts once: %s", exc.message)
                return Clearance(Decision("allow", decision.rule, decision.scope), "once", by=by)
            return Clearance(Decision("allow", decision.rule, decision.scope), "always", by=by)
        if answer.action == "accept" and choice != REJECT:  # no choice in it: nobody chose
            hint = await self._hint(policy, spec, arguments, targets, decision, rules, ctx.caller)
            return Clearance(refused, "cancel", hint, NO_CHOICE, by=by)
        return Clearance(refused, "reject", by=by)

    async def _keep_always(
        self, spec: ToolSpec, arguments: Mapping[str, Any], targets: Targets, owner: str
    ) -> None:
        """Keep an "always" answer for ``owner``: its grants, and the secrets the arguments
        carried, allowed for this tool from now on."""
        await self.state.add_grants(owner, always_grants(spec, targets))
        found = await self.secret_scan.arguments(arguments, spec.name)
        if found:
            approved = await self._approved_secrets(owner)
            pairs = sorted(approved | {(spec.name, rule) for rule in found})
            await self.state.save(owner, APPROVED_SECRETS, [list(p) for p in pairs])

    def _about(
        self, spec: ToolSpec, arguments: Mapping[str, Any], decision: Decision, ctx: CallContext
    ) -> Confirmation:
        """The confirmation in parts, for the console."""
        confinement = self.confinement(spec)
        return Confirmation(
            tool=spec.name,
            title=spec.title,
            arguments=redacted_arguments(arguments),
            rule=decision.rule,
            sandbox=sandbox_summary(confinement) if confinement is not None else None,
            caller=ctx.caller,
            session_id=ctx.session_id,
            via=ctx.via,
            wait_s=spec.effective_timeout_s(self.default_timeout_s),
        )
