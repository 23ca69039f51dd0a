"""Requests the SDK takes for notifications: a frame with a ``method`` and an ``id`` the SDK
cannot take (a fraction, a number past a float's range, a boolean, null: MCP ids are strings
or integers) validates as a notification, which the SDK ignores, so a client waiting on that
id waits for ever. JSON-RPC 2.0 asks for -32600 (Invalid Request) with id null.

Over stdio the frame is answered so (stdio.py). Over HTTP a 2026-07-28 POST of one is refused
by the SDK itself (400, -32600), but a 2025 session's gets 202 Accepted, as a notification:
:class:`MisreadIds` turns that 202 into the same 400 and -32600 the 2026 path sends.
"""

from __future__ import annotations

import json

import mcp_types as types

from mcp_toolbridge.edge import ASGIApp, Message, Receive, Scope, Send, send_json_reply

WHY = "Invalid Request: id must be a string or an integer"
CHECKED_BODY = 64 << 10
"""The largest POST body looked at again when the SDK accepted it (202): a notification is
small, and a larger body is not kept beside the SDK's own copy while its request runs."""


def reply_to_misread(text: str | bytes) -> types.JSONRPCError | None:
    """The answer to a frame the SDK validated as a notification (or accepted as one) although
    it has a ``method`` and an ``id``; None for a real notification or a response."""
    try:
        frame = json.loads(text)
    except (ValueError, RecursionError):  # nested deeper than json reads: the SDK's own way
        return None
    if not isinstance(frame, dict) or "method" not in frame or "id" not in frame:
        return None
    error = types.ErrorData(code=types.INVALID_REQUEST, message=WHY)
    return types.JSONRPCError(jsonrpc="2.0", id=None, error=error)


class MisreadIds:
    """ASGI middleware of the MCP endpoint: a POST the SDK accepted (202) whose body is a
    request with an id it could not take is answered 400 with -32600 instead. It keeps a
    reference to a small body's chunks while its request runs, and looks at them again only
    when the answer is 202."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self._app(scope, receive, send)
            return
        chunks: list[bytes] | None = []
        size = 0
        replaced = False

        async def reading() -> Message:
            nonlocal chunks, size
            message = await receive()
            if chunks is not None and message["type"] == "http.request":
                body = message.get("body", b"")
                size += len(body)
                if size <= CHECKED_BODY:
                    chunks.append(body)
                else:
                    chunks = None
            return message

        async def sending(message: Message) -> None:
            nonlocal replaced
            if replaced:
                return  # the SDK's 202 body: already answered
            accepted = message["type"] == "http.response.start" and message["status"] == 202
            if accepted and chunks:
                reply = reply_to_misread(b"".join(chunks))
                if reply is not None:
                    replaced = True
                    value = reply.model_dump(mode="json", by_alias=True, exclude_unset=True)
                    await send_json_reply(send, 400, value)
                    return
            await send(message)

        await self._app(scope, reading, sending)
