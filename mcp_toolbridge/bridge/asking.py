"""Asking a person to confirm a call: the confirmation form and its three answers, put
through the client's elicitation or, when the client cannot ask, the web console
(``CallContext.console``); a call waiting in the console tells a client that listens, every
few seconds, that it still waits and for how long at most. And the sandbox of a call in one
line, for the person deciding on it."""

from __future__ import annotations

from typing import Any

import anyio

from mcp_toolbridge.host import Answer, Confirmation, CouldNotAsk, Host, ProgressFn
from mcp_toolbridge.sandbox import Confinement

ALLOW_ONCE = "Allow once"
ALLOW_ALWAYS = "Allow always (this session)"
REJECT = "Reject"
ASSISTANT_WANTS = "The assistant wants to run the tool"
"""How a confirmation begins: it speaks to the person working with a model (a terminal
that asks the one who typed ``call`` says it in its own words, cli/ask.py)."""
WAITING_PROGRESS_S = 5.0
"""How often a call waiting for an answer in the console tells its client it still waits."""


def confirmation_form() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Run this tool call?",
                "enum": [ALLOW_ONCE, ALLOW_ALWAYS, REJECT],
            }
        },
        "required": ["decision"],
    }


async def ask(
    host: Host,
    key: str,
    message: str,
    about: Confirmation | None,
    progress: ProgressFn | None,
) -> Answer:
    """``host.elicit`` of the confirmation form; a question put to the console tells a client
    that listens, every few seconds, that the call still waits (and for how long at most)."""
    if about is None:
        return await host.elicit(key, message, confirmation_form())
    found: list[Answer | CouldNotAsk] = []
    async with anyio.create_task_group() as group:
        if progress is not None:
            group.start_soon(_waiting, progress, about.wait_s)
        try:
            found.append(await host.elicit(key, message, confirmation_form(), about))
        except CouldNotAsk as exc:
            found.append(exc)
        group.cancel_scope.cancel()
    if isinstance(found[0], CouldNotAsk):
        raise found[0]
    return found[0]


async def _waiting(progress: ProgressFn, wait_s: float) -> None:
    started = anyio.current_time()
    while True:
        waited = anyio.current_time() - started
        text = (
            "waiting for a person's answer in the mcp-toolbridge console "
            f"({waited:.0f} s of at most {wait_s:g} s)"
        )
        await progress(round(waited, 1), wait_s, text)
        await anyio.sleep(WAITING_PROGRESS_S)


def sandbox_summary(confinement: Confinement) -> str:
    """The sandbox of a tool's processes in one line, for a person deciding on a call."""
    sandbox, profile = confinement.sandbox, confinement.profile
    if sandbox.mode == "off":
        return "none (--sandbox off): the tool's processes run with this server's rights"
    reads = ", ".join(str(p) for p in profile.read) or "nothing beyond the system"
    writes = ", ".join(str(p) for p in profile.write) or "nothing"
    network = {
        "none": "no network",
        "proxy": "network to " + ", ".join(h.source for h in profile.hosts) + " only",
        "full": "any network",
    }.get(profile.network, profile.network)
    missing = sandbox.unsupported()
    head = "bubblewrap" if missing is None else f"none here ({missing.reason})"
    return f"{head}: reads {reads}; writes {writes}; {network}"
