"""What tools/list is made of: the SDK's low-level Server as this server declares its
capabilities, list cursors, which tool a call runs (a proxy call's target), and what a server
lists with before its bridge is open (:class:`Opening`).

A stdio server answers ``initialize`` and its first ``tools/list`` from the catalog and the
policy alone; the call machinery (the bridge, the executors, the sandbox, the built-in tools,
the audit log) is imported and opened once that list is answered, or as soon as a request
needs it (cli/serve.py). A call that comes first waits for it."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import mcp_types as types
from mcp.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_toolbridge import __version__
from mcp_toolbridge.catalog import Catalog, CatalogEntry
from mcp_toolbridge.errors import UnknownToolError
from mcp_toolbridge.host import Caller
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.names import PROXY_TOOL

if TYPE_CHECKING:
    from mcp_toolbridge.bridge import Bridge


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


class Access(Protocol):
    """Who may see and call which tools (the policy; see bridge.ToolAccess)."""

    def callable_by(self, spec: ToolSpec, caller: Caller) -> bool: ...

    def caller_view(self, caller: Caller) -> Hashable: ...


class Opening:
    """A bridge on its way: the catalog and the access rules to list with, ``wanted`` (set by
    the first list or the first request that needs the bridge: open it now), and the bridge
    once :meth:`open` gives it."""

    def __init__(self, catalog: Catalog, access: Access) -> None:
        self.catalog = catalog
        self._access = access
        self.wanted = anyio.Event()
        self._opened = anyio.Event()
        self._bridge: Bridge | None = None
        self._stopping = False

    def callable_by(self, spec: ToolSpec, caller: Caller) -> bool:
        return self._access.callable_by(spec, caller)

    def caller_view(self, caller: Caller) -> Hashable:
        return self._access.caller_view(caller)

    def entry(self, name: str) -> CatalogEntry:
        entry = self.catalog.get(name)
        if entry is None:
            raise UnknownToolError(f"unknown tool: {name}", tool=name)
        return entry

    def stopping(self) -> None:
        """The server is stopping before its bridge is open: the bridge is told when it is."""
        self._stopping = True
        if self._bridge is not None:
            self._bridge.stopping()

    def open(self, bridge: Bridge) -> None:
        """The bridge is open: requests waiting for it go on."""
        self._bridge = bridge
        if self._stopping:
            bridge.stopping()
        self._opened.set()

    async def bridge(self) -> Bridge:
        """The bridge, opened first if it is not yet (waiting, off the event loop's work)."""
        self.wanted.set()
        await self._opened.wait()
        assert self._bridge is not None
        return self._bridge
