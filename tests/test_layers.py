"""docs/architecture.md's module table is the layering: every module is listed, and no
module-level import points to a higher layer (imports inside functions and under
TYPE_CHECKING are exempt)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "mcp_toolbridge"
TABLE = ROOT / "docs" / "architecture.md"
_ROW = re.compile(r"^\| (\d+) \| (.+?) \| .* \|$")


def _layers() -> dict[str, int]:
    """Module (``catalog.py``) or package (``loaders/``) -> layer, from the table's module
    column."""
    layers: dict[str, int] = {}
    for line in TABLE.read_text(encoding="utf-8").splitlines():
        match = _ROW.match(line)
        if match:
            for unit in re.findall(r"`([^`]+)`", match.group(2)):
                layers[unit] = int(match.group(1))
    return layers


def _unit(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return f"{rel.parts[0]}/" if len(rel.parts) > 1 else rel.name


def _module_unit(dotted: str) -> str | None:
    """``mcp_toolbridge.executors.http`` -> ``executors/``; ``mcp_toolbridge.bridge`` ->
    ``bridge.py``; None for anything outside the package."""
    parts = dotted.split(".")
    if parts[0] != "mcp_toolbridge":
        return None
    if len(parts) == 1:
        return "__init__.py"
    if (PACKAGE / parts[1]).is_dir():
        return f"{parts[1]}/"
    return f"{parts[1]}.py"


def _top_level_imports(path: Path) -> set[str]:
    """Units imported at module level (not in functions, not under ``if TYPE_CHECKING``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for inner in ast.walk(node) if isinstance(node, ast.If | ast.Try) else (node,):
            if isinstance(inner, ast.Import):
                names = [alias.name for alias in inner.names]
            elif isinstance(inner, ast.ImportFrom) and inner.module and inner.level == 0:
                names = [inner.module]
                if inner.module == "mcp_toolbridge":
                    names += [f"mcp_toolbridge.{alias.name}" for alias in inner.names]
            else:
                continue
            for name in names:
                unit = _module_unit(name)
                if unit is not None:
                    found.add(unit)
    return found


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "examples" not in p.parts)


def test_every_module_is_in_the_architecture_table() -> None:
    layers = _layers()
    missing = sorted({_unit(p) for p in _modules()} - set(layers))
    assert missing == [], f"add these to the module table in {TABLE.name}: {missing}"
    stale = sorted(u for u in layers if not (PACKAGE / u).exists())
    assert stale == [], f"the module table in {TABLE.name} lists modules that are gone: {stale}"


def test_no_module_imports_from_a_higher_layer() -> None:
    layers = _layers()
    upward = []
    for path in _modules():
        unit = _unit(path)
        for imported in _top_level_imports(path):
            if imported != unit and layers.get(imported, 0) > layers[unit]:
                upward.append(
                    f"{path.relative_to(PACKAGE)} (layer {layers[unit]}) imports {imported} "
                    f"(layer {layers[imported]})"
                )
    assert upward == []
