"""Secrets nobody declared, on a call's way out and in (the scan itself is leaks/).

- **Out**: :func:`screen` replaces every secret in what a finished call returns (its value,
  text and error, and the copies its observers keep: the executor's result, argv and URL) with
  ``[REDACTED:<rule-id>]``; :func:`kept_arguments` does the same to the arguments the
  observers are given (a recording keeps them). A result whose redacted value no longer
  matches the tool's output schema becomes an ``output.invalid`` failure that still carries
  the redacted output as text (:func:`off_schema`; Bridge.call decides, it holds the schema).
  :func:`screened_context` does the same to the log lines and progress messages a running call
  sends to the client, and gives the tools that cut their output (a window of a file, a long
  line, the head and tail of a command's output) the redaction of what they show, scanned
  with the text around the cut before it is cut (:class:`CutRedactor`, leaks/cuts.py).
- **In**: :func:`argument_question` is the gate's question when a call's arguments carry a
  secret and the tool can reach the network (:func:`reaches_network`): the call asks, naming
  the rules, never the value; headless, it is refused.

What is recorded anywhere (audit line, log, message) is rule ids and counts.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from mcp_toolbridge.bridge.outcome import CallOutcome
from mcp_toolbridge.errors import ErrorCode
from mcp_toolbridge.executors import ExecResult
from mcp_toolbridge.host import CallContext, CallLog, LogLevel, ProgressFn
from mcp_toolbridge.leaks import SecretScan, redact_cut, scanned_text, summary
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.policy import Decision, Policy
from mcp_toolbridge.sandbox import Sandbox

if TYPE_CHECKING:  # jsonschema loads with the first schema compiled, not at start
    from mcp_toolbridge.schemas import CompiledSchema

log = logging.getLogger("mcp_toolbridge")

SECRETS_SCOPE = "secrets"
"""The scope of a decision the argument scan made (audit ``decisionScope``)."""
MAX_SHOWN_CHARS = 100_000
"""The most of a redacted value an ``output.invalid`` failure shows."""
JOINT_CHARS = 16_384
"""A call's texts up to this long in all are first judged together by the prefilter."""


def _size(value: Any, limit: int = 1 << 20) -> int:
    """About how many characters scanning ``value`` means (stops counting past ``limit``)."""
    if isinstance(value, str):
        return len(value)
    total = 0
    stack = [value]
    while stack and total <= limit:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item) + 2
        elif item is None:  # a call's absent parts: no ABC check (the slow one) for them
            total += 8
        elif type(item) is dict or isinstance(item, Mapping):  # the ABC check only if not
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
        else:
            total += 8
    return total


@dataclass(frozen=True, slots=True)
class Screened:
    """What a finished call returns, redacted, and how many secrets were, per rule: the most
    found in any one part the client gets (its value and its text usually show the same
    output twice), the copies only observers keep not counted."""

    value: Any
    text: str | None
    error: str | None
    result: ExecResult | None
    counts: Counter[str]


async def screen(
    scan: SecretScan,
    tool: str,
    *,
    value: Any,
    text: str | None,
    error: str | None,
    result: ExecResult | None,
) -> Screened:
    """The parts of a finished call with every secret redacted (see the module doc)."""
    counts: Counter[str] = Counter()

    async def redact_text(item: str | None, into: Counter[str]) -> str | None:
        if item is None:
            return None
        redacted, found = await scan.text(item, tool)
        into |= found
        return redacted

    async def redact_value(item: Any, into: Counter[str]) -> Any:
        redacted, found = await scan.value(item, tool, _size(item))
        into |= found
        return redacted

    copies: Counter[str] = Counter()
    argv: list[str] = list(result.argv) if result is not None else []
    if argv and not isinstance(value, str):  # the value and the argv kept: one scan of both
        both = [value, argv]
        (new_value, found), (argv, kept) = await scan.values(both, tool, _size(both))
        counts |= found
        copies |= kept
    else:
        new_value = await redact_value(value, counts)
        argv = await redact_value(argv, copies) if argv else argv
    new_text = await redact_text(text, counts)
    new_error = await redact_text(error, counts)
    if result is not None:
        result = replace(
            result,
            value=new_value if result.value is value else await redact_value(result.value, copies),
            text=new_text if result.text == text else await redact_text(result.text, copies),
            error=new_error if result.error == error else await redact_text(result.error, copies),
            argv=tuple(argv),
            url=await redact_text(result.url, copies),
        )
    if counts:
        log.info("secret scan: redacted %s from the result of %s", summary(counts), tool)
    return Screened(new_value, new_text, new_error, result, counts)


async def kept_arguments(
    scan: SecretScan, arguments: Mapping[str, Any], tool: str, found: Counter[str] | None = None
) -> Any:
    """A call's arguments as the observers may keep them (a recording): every secret nobody
    declared replaced by its marker; ``arguments`` itself when they carry none (``found``:
    what the scan found in them; None: scan them now)."""
    if not scan.enabled:
        return arguments
    if found is None:
        found = await scan.arguments(arguments, tool)
    if not found:
        return arguments
    kept, _ = await scan.value(arguments, tool, _size(arguments))
    return kept


def off_schema(screened: Screened, problem: str) -> str:
    """The failure of a result that, redacted, no longer matches the tool's output schema:
    the redacted output comes back as text."""
    shown = screened.text
    if shown is None:
        shown = json.dumps(screened.value, ensure_ascii=False, default=str)
    if len(shown) > MAX_SHOWN_CHARS:
        shown = shown[:MAX_SHOWN_CHARS] + f"… [{len(shown) - MAX_SHOWN_CHARS} more characters]"
    return (
        f"the result carried secrets ({summary(screened.counts)}), redacted as "
        f"[REDACTED:<rule-id>]; redacted, it no longer matches the tool's output schema "
        f"({problem}), so it comes back as text only:\n{shown}"
    )


async def read_back(scan: SecretScan, text: str, tool: str) -> str:
    """The whole output of a call of ``tool``, read back later (a resource), redacted."""
    redacted, found = await scan.text(text, tool)
    if found:
        log.info("secret scan: redacted %s from an output of %s read back", summary(found), tool)
    return redacted


class ScreenedLog:
    """A call's client log with every secret in a line redacted before it is sent."""

    def __init__(self, inner: CallLog, scan: SecretScan, tool: str) -> None:
        self._inner = inner
        self._scan = scan
        self._tool = tool

    def wants(self, level: LogLevel) -> bool:
        return self._inner.wants(level)

    async def send(self, level: LogLevel, text: str, *, logger: str) -> None:
        redacted, found = await self._scan.text(text, self._tool)
        if found:
            log.info("secret scan: redacted %s from a log line of %s", summary(found), self._tool)
        await self._inner.send(level, redacted, logger=logger)


class CutRedactor:
    """The :data:`~mcp_toolbridge.host.RedactCut` of one call: what a cut shows, redacted
    with the text around it (leaks/cuts.py), the secrets found there logged by rule."""

    def __init__(self, scan: SecretScan, tool: str) -> None:
        self._scan = scan
        self._tool = tool
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        """The secrets replaced at the call's cuts, per rule (:func:`with_cuts`)."""

    def __call__(self, text: str, spans: Sequence[tuple[int, int]]) -> list[str]:
        shown, found = redact_cut(self._scan, text, spans, self._tool)
        if found:
            log.info("secret scan: redacted %s at a cut of %s", summary(found), self._tool)
            with self._lock:  # called from worker threads
                self.counts.update(found)
        return shown


def with_cuts(outcome: CallOutcome, running: CallContext) -> CallOutcome:
    """``outcome`` whose ``redacted`` counts the secrets replaced at the cuts of the call
    that ran with ``running`` too (they are markers by the time its result is scanned)."""
    cuts = running.redact_cut
    if not isinstance(cuts, CutRedactor) or not cuts.counts:
        return outcome
    return replace(outcome, redacted=dict(Counter(outcome.redacted or {}) + cuts.counts))


def screened_context(scan: SecretScan, ctx: CallContext, tool: str) -> CallContext:
    """``ctx`` whose log lines and progress messages are redacted on their way to the
    client, and whose tools redact what they cut (:class:`CutRedactor`)."""
    if not scan.enabled:
        return ctx
    log_ = ScreenedLog(ctx.log, scan, tool) if ctx.log is not None else None
    progress: ProgressFn | None = None
    inner = ctx.progress
    if inner is not None:

        async def progress(current: float, total: float | None, message: str | None) -> None:
            if message:
                message, _ = await scan.text(message, tool)
            await inner(current, total, message)

    return replace(ctx, log=log_, progress=progress, redact_cut=CutRedactor(scan, tool))


def reaches_network(spec: ToolSpec, policy: Policy, sandbox: Sandbox | None) -> bool:
    """Whether a call of ``spec`` can send its arguments over the network: HTTP tools always;
    a tool that runs a process (exec tools, bash) when it is granted hosts inside an active
    OS sandbox, and when it is open-world outside one; any other tool when it is open-world
    (web_fetch, web_search)."""
    kind = spec.transport.kind
    if kind == "http":
        return True
    runs_process = kind == "exec" or any("shell.run" in r for r in spec.argument_roles.values())
    if not runs_process or sandbox is None or not sandbox.active:
        return spec.safety.open_world
    try:
        return bool(policy.tool_scope(spec).hosts)
    except ValueError:  # its requirements do not compile: the capability check refuses it
        return True


def argument_question(spec: ToolSpec, found: Counter[str], prior: Decision) -> Decision:
    """The ask for a call whose arguments carry secrets (``found``), over the gate's ``prior``
    decision (allow, or ask: then both reasons are given)."""
    reason = (
        f"secret scan: the arguments carry {sum(found.values())} secret(s) "
        f"({summary(found)}) and {spec.name} can reach the network"
    )
    if prior.action == "ask":
        return Decision("ask", f"{prior.rule}; and {reason}", prior.scope)
    return Decision("ask", reason, SECRETS_SCOPE)


def argument_hint(spec: ToolSpec, found: Counter[str]) -> str:
    """How an operator lets such a call through without being asked."""
    rules = ", ".join(f'"{rule}"' for rule in sorted(found))
    return (
        "Do not put credentials in tool arguments; the tool gets declared secrets itself. To "
        "send this anyway, a person must approve it, or the policy file must allow it: "
        f'[[secret_scan.allow]] tool = "{spec.name}", rule = one of {rules} (docs/secrets.md).'
    )


def _read(outcome: CallOutcome, arguments: Mapping[str, Any]) -> list[str] | None:
    """The texts that :func:`screen` and the scan of ``arguments`` read, each as it reads it;
    None when they are too long to be judged together."""
    value, result = outcome.value, outcome.result
    argv = list(result.argv) if result is not None else []
    parts: list[Any] = [arguments, outcome.text, outcome.error]
    parts += [[value, argv]] if argv and not isinstance(value, str) else [value, argv or None]
    if result is not None:
        parts.append(result.url)
        parts.append(result.value if result.value is not value else None)
        parts.append(result.text if result.text != outcome.text else None)
        parts.append(result.error if result.error != outcome.error else None)
    if _size(parts, JOINT_CHARS) > JOINT_CHARS:
        return None
    return [text for text in map(scanned_text, parts) if text]


async def screened(
    scan: SecretScan, output: CompiledSchema | None, outcome: CallOutcome, arguments: Any
) -> tuple[CallOutcome, Counter[str]]:
    """``outcome`` with secrets redacted (off its output schema, ``output``: a failure), and
    the secrets its ``arguments`` carry, per rule. A call whose arguments and result hold no
    text the engine could find anything in (one pass of its prefilter over them all, the most
    trivial call's case) is returned as it is, without a call of the engine."""
    if not scan.enabled:
        return outcome, Counter()
    texts = _read(outcome, arguments)
    if texts is not None and not await scan.may_find(texts):
        return outcome, Counter()
    found = await scan.arguments(arguments, outcome.tool)
    parts = await screen(
        scan,
        outcome.tool,
        value=outcome.value,
        text=outcome.text,
        error=outcome.error,
        result=outcome.result,
    )
    outcome = replace(
        outcome,
        value=parts.value,
        text=parts.text,
        error=parts.error,
        result=parts.result,
        redacted=dict(parts.counts) or None,
        argument_secrets=dict(found) or None,
    )
    if parts.counts and outcome.ok and output is not None:
        problems = output.validate(parts.value)
        if problems:
            error = off_schema(parts, problems[0])
            failed = replace(
                outcome, ok=False, value=None, error=error, code=ErrorCode.OUTPUT_INVALID
            )
            return failed, found
    return outcome, found
