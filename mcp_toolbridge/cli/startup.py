"""The end of a start: the cyclic garbage collector, paused by the entry point
(``__main__.run``), is turned back on once a server is ready or a verb is done.

Everything made until then (modules, classes, the catalog) lives as long as the process, so
it is frozen first (``gc.freeze``): moved to a generation no later collection scans, which
would otherwise walk it again and again for nothing (see loaders/__init__.py for the same
reasoning about a big catalog)."""

from __future__ import annotations

import gc


def started() -> None:
    """The start is over: freeze what it made and collect from here on (a no-op when the
    collector was not paused, as when ``main`` is called in process)."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
