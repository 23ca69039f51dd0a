"""Every process a call starts is started inside a sandbox: checked on the source.

``run_process`` (the only spawner, tests/test_layering.py) has no default for ``sandbox``, so
a caller must name one; this test checks that no caller in the package names ``None`` except
the probe that finds out whether there can be a sandbox at all. A new spawner is then
sandboxed by construction, or fails here."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "mcp_toolbridge"
UNCONFINED_ON_PURPOSE = {("executors/subprocess.py", "_probe")}


def _calls() -> list[tuple[str, str, ast.Call]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Call):
                    name = getattr(node.func, "id", getattr(node.func, "attr", ""))
                    if name == "run_process":
                        rel = path.relative_to(PACKAGE).as_posix()
                        found.append((rel, function.name, node))
    return found


def test_run_process_is_called_from_every_spawning_place() -> None:
    places = {(rel, fn) for rel, fn, _ in _calls()}
    assert {rel for rel, _ in places} >= {
        "executors/exec_tool.py",
        "builtins/bash.py",
        "builtins/fs/grep_rg.py",
        "bridge/gate.py",
    }


def test_no_caller_runs_a_process_outside_the_sandbox_except_the_probe() -> None:
    unconfined = []
    for rel, function, call in _calls():
        given = {k.arg: k.value for k in call.keywords}
        assert "sandbox" in given, f"{rel}:{call.lineno} names no sandbox"
        value = given["sandbox"]
        if isinstance(value, ast.Constant) and value.value is None:
            unconfined.append((rel, function))
    assert set(unconfined) == UNCONFINED_ON_PURPOSE
