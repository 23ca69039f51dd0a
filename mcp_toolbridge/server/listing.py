"""What tools/list is made of: the SDK's low-level Server as this server declares its
capabilities, list cursors, and which tool a call runs (a proxy call's target)."""

from __future__ import annotations

import base64
import binascii
from typing import Any

import mcp_types as types
from mcp.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_toolbridge import __version__
from mcp_toolbridge.catalog import Catalog
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.names import PROXY_TOOL


class SdkServer(Server[Any]):
    """The SDK server, announcing tools.listChanged to legacy clients too, and the logging
    capability to them only (2026-07-28 has no logging/setLevel: a request opts in), with
    this package's version."""

    def __init__(self, name: str, **handlers: Any) -> None:
        super().__init__(name, version=__version__, **handlers)

    def get_capabilities(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
        *,
        protocol_version: str | None = None,
    ) -> types.ServerCapabilities:
        found = super().get_capabilities(
            notification_options,
            experimental_capabilities,
            extensions,
            protocol_version=protocol_version,
        )
        if protocol_version in MODERN_PROTOCOL_VERSIONS:
            return found.model_copy(update={"logging": None})
        return found

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )


def encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o:{offset}".encode()).decode()


def decode_cursor(cursor: str) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor.encode()).decode()
        if not text.startswith("o:"):
            raise ValueError(cursor)
        offset = int(text[2:])
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
        raise MCPError(code=types.INVALID_PARAMS, message="Invalid cursor") from exc
    if offset < 0:
        raise MCPError(code=types.INVALID_PARAMS, message="Invalid cursor")
    return offset


def runs(catalog: Catalog, params: types.CallToolRequestParams, spec: ToolSpec) -> ToolSpec:
    """The tool a call runs: the one a proxy call names when it is in the catalog (its needs
    decide what must happen first, such as fetching the roots), else ``spec``."""
    target = (params.arguments or {}).get("name") if spec.name == PROXY_TOOL else None
    entry = catalog.get(target) if isinstance(target, str) else None
    return entry.spec if entry is not None else spec
