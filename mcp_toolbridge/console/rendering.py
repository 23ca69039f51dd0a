"""The console's one Jinja2 environment (its pages and its sign-in page): autoescaped, and
every value a template writes passed through :func:`shown` first.

Autoescaping stops markup; it does not stop text that reorders or hides itself. A caller
named by an identity provider, a tool's argv, an error text or a manifest's words may hold a
bidi override (U+202E: ``alice`` + U+202E + ``gnp.exe`` reads as ``aliceexe.png``), an
isolate, a Unicode tag character (invisible) or a terminal escape: each is shown as its
escape (``\\u202e``, ``host.visible``), so what the person reads is what was sent."""

from __future__ import annotations

from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from mcp_toolbridge.host import visible


def shown(value: Any) -> Any:
    """``value`` as a template writes it: text with every ``host.HIDDEN`` character escaped
    (markup the code made safe stays markup); anything else as it is."""
    if isinstance(value, Markup):
        return Markup(visible(str(value)))
    if isinstance(value, str):
        return visible(value)
    return value


def environment() -> Environment:
    """The templates of ``mcp_toolbridge.console``, autoescaped, each value :func:`shown`."""
    return Environment(
        loader=PackageLoader("mcp_toolbridge.console", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        finalize=shown,
        trim_blocks=True,
        lstrip_blocks=True,
    )


__all__ = ["environment", "shown"]
