"""The policy's read verdict for glob and grep results (read_verdict in
builtins/fs/visibility.py) and the tools' filtering with it, on real files; both grep engines."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mcp_toolbridge.builtins.fs.glob_grep import GlobTool, GrepTool
from mcp_toolbridge.builtins.fs.glob_grep_specs import GLOB_SPEC, GREP_SPEC
from mcp_toolbridge.builtins.fs.visibility import read_verdict
from mcp_toolbridge.policy.compiled import Policy
from mcp_toolbridge.policy.rules import Action
from tests.support.builtin_fs import Layout, call, sidecar
from tests.support.policy_fixtures import load_policy_text

ENGINES = ["python", "ripgrep"] if shutil.which("rg") else ["python"]

POLICY = """
extends = "none"
default_action = "deny"
grant = "policy"
[requires]
fs.read = ["{workspace}/src", "{workspace}/docs"]
[[rules]]
permission = "grep"
action = "allow"
[[rules]]
permission = "glob"
action = "allow"
[[rules]]
permission = "read"
action = "deny"
[[rules]]
permission = "read"
pattern = "**/*.key"
action = "deny"
[[rules]]
permission = "fs.read"
pattern = "**/.env"
action = "ask"
[[rules]]
permission = "grep"
pattern = "docs/private/**"
action = "deny"
"""


def _policy(layout: Layout, text: str = POLICY) -> Policy:
    return load_policy_text(layout.ws.parent / "policy.toml", text, workspace=layout.ws)


def test_the_verdict_joins_scope_the_tools_rules_and_the_read_tools_patterned_rules(layout):
    policy = _policy(layout)
    ws = layout.ws
    grep = read_verdict(policy, GREP_SPEC)
    glob = read_verdict(policy, GLOB_SPEC)
    cases: dict[str, tuple[Action, Action]] = {
        "src/app.py": ("allow", "allow"),  # read's unpatterned deny does not hide files
        "src/id.key": ("deny", "deny"),  # read's patterned deny does
        "src/.env": ("ask", "ask"),  # an fs.read rule applies to every reading tool
        "docs/private/plan.md": ("deny", "allow"),  # grep's own rule, not glob's
        "notes/todo.md": ("deny", "deny"),  # outside the granted fs.read scope
    }
    for rel, (for_grep, for_glob) in cases.items():
        assert (grep(ws / rel), glob(ws / rel)) == (for_grep, for_glob), rel


def _tree(ws: Path) -> None:
    for rel, text in {
        "src/app.py": "token = 1\n",
        "src/id.key": "token key\n",
        "src/.env": "token=secret\n",
        "docs/private/plan.md": "token plan\n",
        "docs/readme.md": "no match here\n",
    }.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text, encoding="utf-8")


@pytest.mark.parametrize("engine", ENGINES)
async def test_both_engines_withhold_the_same_files(layout, sessions, engine):
    _tree(layout.ws)
    verdict = read_verdict(_policy(layout), GREP_SPEC)
    grep = GrepTool(layout.ws, sessions, engine, readable=verdict)
    result = await call(grep, pattern="token", path="src", output_mode="count")
    assert result.value["counts"] == [{"file": "src/app.py", "count": 1}]
    assert result.value["withheld_by_policy"] == 2  # the key (deny) and .env (asks)
    named = await call(grep, pattern="token", path="src/.env", output_mode="content")
    assert named.value["content"] == "src/.env:1:token=secret"  # the call was asked about
    docs = await call(grep, pattern="token", path="docs")
    assert docs.value["files"] == [] and docs.value["withheld_by_policy"] == 1


async def test_glob_withholds_only_what_reading_denies(layout, sessions):
    _tree(layout.ws)
    glob = GlobTool(layout.ws, sessions, readable=read_verdict(_policy(layout), GLOB_SPEC))
    result = await call(glob, pattern="src/*")
    assert sorted(result.value["files"]) == ["src/.env", "src/app.py"]
    assert result.value["withheld_by_policy"] == 1
    assert "1 matching file(s) withheld" in result.value["note"]
    plain = await call(GlobTool(layout.ws, sessions), pattern="src/*")
    assert "withheld_by_policy" not in plain.value and len(plain.value["files"]) == 3


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_sessions_sidecar_is_searched_whatever_the_verdict(layout, sessions, engine):
    """Sidecar files lie outside the workspace (so outside the scope): the gate lets the
    session's read-only tools read them, and grep does not withhold them either."""
    (layout.ws / "src").mkdir()
    (layout.ws / "src" / "many.py").write_text("token\n" * 300, encoding="utf-8")
    verdict = read_verdict(_policy(layout), GREP_SPEC)
    grep = GrepTool(layout.ws, sessions, engine, readable=verdict)
    first = await call(grep, pattern="token", path="src", output_mode="content")
    kept = sidecar(first)
    again = await call(grep, pattern="many", path=str(kept), output_mode="count")
    assert again.value["counts"] == [{"file": str(kept), "count": 300}]
    assert "withheld_by_policy" not in again.value
