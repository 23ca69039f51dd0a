"""Install links for the clients that have them (``config --client vscode|cursor`` prints them).

- VS Code: ``code --add-mcp JSON`` adds a server to the user profile, the JSON being the
  server's entry with its ``name``; ``vscode:mcp/install?JSON`` (URL-encoded) does the same
  from a browser or a README.
- Cursor: ``cursor://anysphere.cursor-deeplink/mcp/install?name=NAME&config=BASE64``, the
  config being the server's entry as in ``mcp.json``, as JSON, base64-encoded.

Each link carries the same entry ``config`` prints, so it starts the same installation.
"""

from __future__ import annotations

import base64
import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode


@dataclass(frozen=True)
class InstallLink:
    what: str
    text: str


def _compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def vscode_links(name: str, entry: Mapping[str, Any]) -> list[InstallLink]:
    named = {"name": name, **entry}
    return [
        InstallLink("VS Code, from a terminal", shlex.join(["code", "--add-mcp", _compact(named)])),
        InstallLink("VS Code, as a link", "vscode:mcp/install?" + quote(_compact(named), safe="")),
    ]


def cursor_links(name: str, entry: Mapping[str, Any]) -> list[InstallLink]:
    config = base64.b64encode(_compact(dict(entry)).encode("utf-8")).decode("ascii")
    query = urlencode({"name": name, "config": config})
    return [
        InstallLink("Cursor, as a link", f"cursor://anysphere.cursor-deeplink/mcp/install?{query}")
    ]


def install_links(client: str, name: str, entry: Mapping[str, Any]) -> list[InstallLink]:
    """The install links of ``client`` for the server ``name`` started as ``entry``; none for a
    client without them."""
    if client == "vscode":
        return vscode_links(name, entry)
    if client == "cursor":
        return cursor_links(name, entry)
    return []
