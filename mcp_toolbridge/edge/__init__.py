"""What both HTTP edges (server/ and console/) stand on: the ASGI callable's types and a whole
reply of their own sent in one go (``asgi.py``); this machine's loopback names and the
listening socket (``binding.py``). They do not import each other, so this sits below both.

May import: the vocabulary only (it is part of it)."""

from mcp_toolbridge.edge.asgi import (
    ASGIApp,
    Header,
    Message,
    Receive,
    Scope,
    Send,
    send_json_reply,
    send_reply,
)
from mcp_toolbridge.edge.binding import LOOPBACK_NAMES, bracketed, is_loopback, listen_on

__all__ = [
    "LOOPBACK_NAMES",
    "ASGIApp",
    "Header",
    "Message",
    "Receive",
    "Scope",
    "Send",
    "bracketed",
    "is_loopback",
    "listen_on",
    "send_json_reply",
    "send_reply",
]
