"""The architecture of DESIGN.md and docs/architecture.md, checked on the source.

The package is cut into units: the vocabulary modules at the top level, and one package per
seam. Imports point down the levels below, never up, and the units import each other without
a cycle. Foreign libraries stay in their adapter modules, code outside a package imports only
what its ``__init__`` exports, and modules stay small."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from fnmatch import fnmatch
from functools import cache
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "mcp_toolbridge"

LEVELS = {
    # the vocabulary: imports nothing above it
    "__init__.py": 0,
    "errors.py": 0,
    "model.py": 0,
    "names.py": 0,
    "schemas/": 0,
    "secrets.py": 0,
    "host.py": 0,
    "forking.py": 0,
    "cache/": 0,
    "state/": 0,
    "progress.py": 0,
    "workspace.py": 0,
    "lazy.py": 0,
    "edge/": 0,
    # what the core works on
    "loaders/": 1,
    "catalog/": 1,
    "policy/": 1,
    "sandbox/": 1,
    "leaks/": 1,
    # what runs a call
    "executors/": 2,
    "builtins/": 2,
    # the call pipeline
    "bridge/": 3,
    # the edges
    "server/": 4,
    "console/": 4,
    "runtime/": 4,
    "cli/": 5,
    "__main__.py": 5,
}

ONLY_IN = {
    "mcp": ("server/*.py",),
    "mcp_types": ("server/*.py",),
    "httpx2": ("executors/http*.py",),
    "jsonschema": ("schemas/*.py",),
    "subprocess": ("executors/spawn.py",),
    "multiprocessing": ("loaders/parallel.py", "forking.py"),
    "concurrent": ("loaders/parallel.py",),
    "asyncio": (),
    "betterleaks": ("leaks/engine.py",),
    "numpy": ("catalog/embedding.py",),
    "tokenizers": (),  # a dev tool: tests check catalog/wordpiece.py against it
    "redis": ("state/redis_client.py",),
}
MAX_LINES = 500
MAX_PROJECT_IMPORTS = 12


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "examples" not in p.parts)


def _rel(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def _unit(rel: str) -> str:
    head, sep, _ = rel.partition("/")
    return f"{head}/" if sep else head


def _imports(path: Path) -> Iterator[tuple[str, ast.stmt]]:
    """Every absolute import of ``path`` as a dotted name, with its statement: ``from a.b
    import c`` gives ``a.b.c`` (a name or a module, as Python resolves it)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                yield f"{node.module}.{alias.name}", node


def _project_target(dotted: str) -> str | None:
    """``mcp_toolbridge.policy.rules.Rule`` -> ``policy/rules.py`` (the module file imported
    from); None outside the package."""
    parts = dotted.split(".")
    if parts[0] != "mcp_toolbridge":
        return None
    node = PACKAGE
    for part in parts[1:]:
        if part in _exports(node):
            break
        if (node / part).is_dir():
            node = node / part
        elif (node / f"{part}.py").is_file():
            return _rel(node / f"{part}.py")
        else:
            break
    return _rel(node / "__init__.py")


@cache
def _exports(package: Path) -> frozenset[str]:
    """The names a package's ``__init__`` lists in ``__all__`` (a name there wins over a
    submodule of the same name, as it does in Python)."""
    init = package / "__init__.py"
    if not init.is_file():
        return frozenset()
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return frozenset(ast.literal_eval(node.value))
    return frozenset()


def _project_imports(path: Path) -> set[str]:
    found = set()
    for dotted, _ in _imports(path):
        target = _project_target(dotted)
        if target is not None:
            found.add(target)
    return found


def test_every_unit_has_a_level() -> None:
    units = {_unit(_rel(p)) for p in _modules()}
    assert sorted(units - set(LEVELS)) == []
    assert sorted(u for u in LEVELS if not (PACKAGE / u).exists()) == []


def test_no_import_points_up_a_level() -> None:
    upward = []
    for path in _modules():
        unit = _unit(_rel(path))
        for target in _project_imports(path):
            other = _unit(target)
            if other != unit and LEVELS[other] > LEVELS[unit]:
                upward.append(f"{_rel(path)} (level {LEVELS[unit]}) imports {target}")
    assert upward == []


def test_units_import_each_other_without_a_cycle() -> None:
    graph: dict[str, set[str]] = {}
    for path in _modules():
        unit = _unit(_rel(path))
        graph.setdefault(unit, set()).update(
            _unit(t) for t in _project_imports(path) if _unit(t) != unit
        )
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as exc:
        raise AssertionError(f"import cycle between units: {exc.args[1]}") from None


def test_modules_import_each_other_without_a_cycle() -> None:
    graph = {_rel(p): _project_imports(p) - {_rel(p)} for p in _modules()}
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as exc:
        raise AssertionError(f"import cycle between modules: {exc.args[1]}") from None


def test_code_outside_a_package_imports_only_its_exports() -> None:
    """``from mcp_toolbridge.policy import Policy`` from outside ``policy/``, never
    ``mcp_toolbridge.policy.rules``: a package's inside can be rearranged freely."""
    reaching_in = []
    for path in _modules():
        rel = _rel(path)
        for target in sorted(_project_imports(path)):
            package = _unit(target)
            if package.endswith("/") and not rel.startswith(package):
                if target != f"{package}__init__.py":
                    reaching_in.append(f"{rel} imports {target}")
    assert reaching_in == []


def test_every_package_says_what_it_is() -> None:
    silent = [
        _rel(init)
        for init in PACKAGE.rglob("__init__.py")
        if "examples" not in init.parts and not ast.get_docstring(ast.parse(init.read_text()))
    ]
    assert silent == []


def test_foreign_libraries_are_imported_only_by_their_adapter_module() -> None:
    offences = []
    for path in _modules():
        rel = _rel(path)
        for dotted, _ in _imports(path):
            allowed = ONLY_IN.get(dotted.split(".")[0])
            if allowed is not None and not any(fnmatch(rel, pattern) for pattern in allowed):
                offences.append(f"{rel} imports {dotted}")
    assert offences == []


def test_modules_stay_small() -> None:
    too_big = []
    for path in _modules():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES:
            too_big.append(f"{_rel(path)}: {lines} lines")
    assert too_big == []


def test_modules_import_few_project_modules() -> None:
    busy = []
    for path in _modules():
        count = len(_project_imports(path))
        if count > MAX_PROJECT_IMPORTS and path.name != "__init__.py":
            busy.append(f"{_rel(path)}: {count} project modules")
    assert busy == []
