"""The ASGI side both HTTP edges share (server/ and console/): the callable's types, and a
whole reply of their own (a refusal, a redirect, a small page or JSON) sent in one go: its
start with ``content-length``, then its one body message."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
Header = tuple[bytes, bytes]


async def send_reply(
    send: Send,
    status: int,
    body: bytes = b"",
    *,
    content_type: bytes | None = None,
    headers: Iterable[Header] = (),
) -> None:
    """Send a whole reply: ``content-type`` (when given), ``content-length``, then
    ``headers``, and ``body``."""
    typed = [] if content_type is None else [(b"content-type", content_type)]
    sized = [*typed, (b"content-length", str(len(body)).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": sized})
    await send({"type": "http.response.body", "body": body})


async def send_json_reply(
    send: Send, status: int, value: object, *, headers: Iterable[Header] = ()
) -> None:
    """Send ``value`` as a whole ``application/json`` reply."""
    body = json.dumps(value).encode()
    await send_reply(send, status, body, content_type=b"application/json", headers=headers)
