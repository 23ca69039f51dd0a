"""Names a package imports on first use (PEP 562): a package's ``__init__`` that re-exports
its modules' names without importing those modules until a name is asked for, so importing
one module of a package (or one name) does not import the whole package. A server's start
imports only what its first ``tools/list`` needs (docs/performance.md, "Start-up")."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence


def on_first_use(package: str, modules: Mapping[str, Sequence[str]]) -> Callable[[str], object]:
    """The ``__getattr__`` of ``package``: ``modules`` maps each module (a full name) to the
    names the package exports from it; a name is imported from its module when first asked
    for, then kept in the package. Importing is thread-safe (the import system's locks)."""
    where = {name: module for module, names in modules.items() for name in names}
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
