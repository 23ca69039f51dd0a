"""Every refusal says how to allow the call: the ``--allow`` flag, the policy line and the file
it goes in, the ``--workspace`` or ``[requires]`` entry that would contain a path, host or
command.

A suggested rule is checked before it is offered: the call's decision is worked out again with
the rule added, as ``--allow`` (the last layer) and as a line of the ``--policy`` file (for an
identified caller, first as a ``[[callers]]`` table for that person or agent alone), and only
what would let the call through is named. When no rule can (a project deny, the
watchdog, the confirmation gate), the message names what decided instead.
"""

from __future__ import annotations

import copy
import json
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mcp_toolbridge.host import LOCAL, Caller
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.policy.compiled import Decision, Policy
from mcp_toolbridge.policy.grants import SessionRules
from mcp_toolbridge.policy.layers import LAYER_COMMAND_LINE, LAYER_FILE
from mcp_toolbridge.policy.requirements import Denial, Targets
from mcp_toolbridge.policy.rules import Rule, Subject, Who, compile_rule, subjects

NEW_FILE = "toolbridge-policy.toml"
MAX_ENTRIES = 6


def _toml(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's, bar DEL, which TOML refuses raw)."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _entry(spec: ToolSpec, subject: Subject | None) -> str:
    pattern = subject.pattern_text() if subject is not None else None
    if pattern is None:
        return spec.name
    return f"{spec.name}={pattern.replace('{', '{{').replace('}', '}}')}"


def _trial(policy: Policy, entries: Sequence[str], layer: int, who: Who | None = None) -> Policy:
    """``policy`` with one allow rule per entry in the operator's scope, at ``layer`` (for
    ``who`` alone when given)."""
    extra: list[Rule] = []
    for entry in entries:
        permission, equals, pattern = entry.partition("=")
        extra.append(
            compile_rule(
                permission,
                pattern if equals else None,
                "allow",
                scope="manifest",
                origin="--allow (trial)",
                variables=policy.variables,
                layer=layer,
                who=who,
            )
        )
    trial = copy.copy(policy)
    trial.rules = policy.rules + tuple(extra)
    return trial


def _outcome(
    policy: Policy,
    spec: ToolSpec,
    arguments: Mapping[str, Any],
    targets: Targets,
    session: SessionRules | None,
) -> Decision:
    from mcp_toolbridge.policy.shell.hooks import shell_floor  # on use: see __init__

    decision = policy.decide(spec, targets, session)
    return shell_floor(policy, spec, arguments, decision, session)


def _through(decision: Decision) -> bool:
    """The rules would let it through (the confirmation gate asks after them, on its own)."""
    return decision.action == "allow" or decision.scope == "confirmation"


def _needed(
    policy: Policy, spec: ToolSpec, targets: Targets, session: SessionRules | None, *, shell: bool
) -> list[str]:
    """An exact allow entry for each subject not allowed now, and for every command when the
    shell floor asked (it wants an exact rule for what it could not check)."""
    picked = [s for s, d in policy.judge(spec, targets, session) if d.action != "allow"]
    if shell:
        picked += [s for s in subjects(targets) if s.capability == "shell.run"]
    if not picked:
        picked = [Subject.none()]
    return list(dict.fromkeys(_entry(spec, s if s.capability else None) for s in picked))


def _where(policy: Policy, *, table: bool = False) -> str:
    """Where a line goes: the --policy file, or a new one (then say how to use it)."""
    if policy.user_file is not None:
        return f"in {policy.user_file}" if table else f"to {policy.user_file} (before any [table])"
    return (
        f"{'in' if table else 'to'} a policy file (for example {NEW_FILE}: it adds to the "
        f"default policy) and start the server with --policy {NEW_FILE}"
    )


def _declare(spec: ToolSpec, decision: Decision) -> str:
    if decision.scope == "default" and "destructive" in spec.safety.inferred:
        return (
            ", or, if the tool changes nothing, declare it in its manifest "
            '("annotations": {"destructiveHint": false}, or "readOnlyHint": true; see '
            "docs/manifests.md)"
        )
    return ""


def _deciding_rule(policy: Policy, decision: Decision) -> str:
    for rule in policy.rules:
        if decision.rule.startswith(rule.origin + " ("):
            where = f"{rule.file} line {rule.line}" if rule.file and rule.line else rule.origin
            return f"{rule.origin.rpartition(' ')[2]} in {where}" if rule.file else where
    return decision.rule


def way_out(
    policy: Policy,
    spec: ToolSpec,
    arguments: Mapping[str, Any],
    targets: Targets,
    decision: Decision,
    session: SessionRules | None = None,
    caller: Caller = LOCAL,
) -> str:
    """How to allow a call the rules denied, or asked about on a client that cannot ask.
    ``policy`` is the caller's (``Policy.for_caller``)."""
    if decision.scope == "watchdog":
        where = policy.user_file or "the policy"
        return (
            f"The watchdog ([watchdog] in {where}) refused it, and no rule can overrule it: "
            "change what the watchdog allows, or, when it failed, fix what the reason says."
        )
    if decision.scope == "confirmation":
        return f"The tool declares requires_confirmation: {_unconfirmed(policy)}."
    entries = _needed(policy, spec, targets, session, shell=decision.scope == "shell")
    shown = entries[:MAX_ENTRIES]
    more = f" (and {len(entries) - MAX_ENTRIES} more)" if len(entries) > MAX_ENTRIES else ""
    flags = " ".join(f"--allow {shlex.quote(e)}" for e in shown) + more
    line = "allow = [" + ", ".join(_toml(e) for e in shown) + "]" + more
    flagged = _outcome(
        _trial(policy, entries, LAYER_COMMAND_LINE), spec, arguments, targets, session
    )
    filed = _outcome(_trial(policy, entries, LAYER_FILE), spec, arguments, targets, session)
    by_flag, by_file = _through(flagged), _through(filed)
    ways: list[str] = []
    who = _whom(caller)
    if who is not None:
        personal = _trial(policy, entries, LAYER_FILE, who)
        if _through(_outcome(personal, spec, arguments, targets, session)):
            named = ", ".join(f"{k} = {_toml(v)}" for k, v in who.fields().items())
            table = f"a [[callers]] table ({named}, {line})"
            ways.append(f"for {caller.describe()} alone, add {table} {_where(policy)}")
    if by_flag:
        ways.append(f"start the server with {flags}")
    if by_file:
        ways.append(f"add {line} {_where(policy)}")
    elif decision.action == "deny" and decision.scope in ("manifest", "project"):
        ways.append(
            f"remove or change the rule that denies it ({_deciding_rule(policy, decision)})"
        )
    if not ways:
        return f"No allow rule can let it through: {_deciding_rule(policy, decision)} decides it."
    then = ""
    if "confirmation" in (flagged.scope, filed.scope):
        then = f"; the tool also declares requires_confirmation: {_unconfirmed(policy)}"
    return "To allow it, " + ", or ".join(ways) + _declare(spec, decision) + then + "."


def _whom(caller: Caller) -> Who | None:
    """A rule for this caller alone: its subject, else (an agent) its client."""
    if caller.subject is not None:
        return Who(subject=caller.subject)
    return Who(client=caller.client_id) if caller.client_id is not None else None


def _unconfirmed(policy: Policy) -> str:
    return (
        "to run such tools without asking, set confirm_external_actions = false under "
        f"[security] {_where(policy, table=True)} (for every tool that declares it)"
    )


def _folder(path: Path) -> Path:
    return path if path.is_dir() else path.parent


def _too_wide(folder: Path) -> str | None:
    """What ``folder`` is when it must never be suggested as a workspace: the file system
    root, the home folder or a folder above it (``rm -rf /`` must not be answered with
    ``--workspace /``)."""
    if folder == Path(folder.anchor):
        return "the file system root"
    try:
        home = Path.home().resolve()
    except RuntimeError:  # no home folder can be determined
        return None
    return "the home folder or a folder above it" if home.is_relative_to(folder) else None


def capability_way_out(policy: Policy, denial: Denial) -> str:
    """How to grant what the capability check refused: the missing path, host or command."""
    where = _where(policy, table=True)
    if denial.capability == "net.fetch":
        return f"To allow it, add net.hosts = [{_toml(denial.target)}] under [requires] {where}."
    if denial.capability in ("fs.read", "fs.write"):
        grant = f"add {denial.capability} = [{_toml(denial.target)}] under [requires] {where}"
        folder = shlex.quote(str(_folder(Path(denial.target))))
        requires = policy.file.requires.fs
        listed = requires.read if denial.capability == "fs.read" else requires.write
        if any("{ad-hoc}" in p for p in listed) and not policy.variables.ad_hoc:
            return f"To allow it, start the server with --ad-hoc {folder}, or {grant}."
        if (what := _too_wide(_folder(Path(denial.target)))) is not None:
            return (
                f"No workspace is suggested for it: {folder} is {what}. "
                f"If a tool needs it, {grant}."
            )
        return (
            f"To allow it, serve a workspace that contains it (--workspace {folder}), or {grant}."
        )
    if denial.capability == "shell.run":
        if "matches no granted shell entry" in denial.message:
            program = shlex.split(denial.target)[0] if denial.target.strip() else "PROGRAM"
            return (
                f"To allow it, add {{ cmd = {_toml(program)} }} to shell under [requires] {where}."
            )
        return f'To allow it, add capabilities = ["shell.run"] under [requires] {where}.'
    return ""
