"""The layering rules of DESIGN.md, checked on the source: who may import what, module size.

``server*.py`` are the MCP adapter modules (top level only: ``*`` does not match ``/``)."""

from __future__ import annotations

import ast
from fnmatch import fnmatch
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "mcp_toolbridge"

ONLY_IN = {
    "mcp": ("server*.py",),
    "mcp_types": ("server*.py",),
    "httpx2": ("executors/http*.py",),
    "jsonschema": ("schemas.py",),
    "subprocess": ("executors/subprocess.py",),
    "multiprocessing": ("loaders/shares.py", "forked.py"),
    "concurrent": ("loaders/shares.py",),
    "asyncio": (),
}
MAX_LINES = 500


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "examples" not in p.parts)


def test_foreign_libraries_are_imported_only_by_their_adapter_module() -> None:
    offences = []
    for path in _modules():
        rel = path.relative_to(PACKAGE).as_posix()
        for name in _imports(path):
            allowed = ONLY_IN.get(name)
            if allowed is not None and not any(fnmatch(rel, pattern) for pattern in allowed):
                offences.append(f"{rel} imports {name}")
    assert offences == []


def test_modules_stay_small() -> None:
    too_big = []
    for path in _modules():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES:
            too_big.append(f"{path.relative_to(PACKAGE)}: {lines} lines")
    assert too_big == []
