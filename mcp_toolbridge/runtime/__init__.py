"""The composition root: settings (``settings.py``) -> a loaded catalog (``loading.py``) -> a
Bridge with its executors and gate (``composition.py``), shared by the CLI verbs and the
server, so ``mcp-toolbridge call`` runs a tool exactly the way MCP ``tools/call`` does; the
catalog a start composes, kept between runs (``cache.py``, in the stored form of
``snapshot.py``).

May import: every package below the edges (it is one of them)."""

from mcp_toolbridge.runtime.cache import INDEX_AFTER_LIST_BELOW, LeftOut
from mcp_toolbridge.runtime.composition import (
    TRANSPORT_KINDS,
    Runtime,
    import_call_machinery,
    open_bridge,
    open_runtime,
)
from mcp_toolbridge.runtime.loading import (
    BUILTIN_SPECS,
    Loaded,
    load_catalog,
    load_policy,
    search_index,
    serving_index,
)
from mcp_toolbridge.runtime.settings import Settings, bundled_manifests

__all__ = [
    "BUILTIN_SPECS",
    "INDEX_AFTER_LIST_BELOW",
    "TRANSPORT_KINDS",
    "LeftOut",
    "Loaded",
    "Runtime",
    "Settings",
    "bundled_manifests",
    "import_call_machinery",
    "load_catalog",
    "load_policy",
    "open_bridge",
    "open_runtime",
    "search_index",
    "serving_index",
]
