"""glob and grep leave out what no sandbox shows (the sandbox's masks: a recording folder, a
masked file), on every engine and with the sandbox off (rg then sees them: its results are
filtered), and say how many such paths the folder searched holds. The served test, with a
real ``serve --record``, is tests/sandbox/test_trust_recording.py."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from mcp_toolbridge.builtins.base import BuiltinTool
from mcp_toolbridge.builtins.fs.glob_grep import GlobTool, GrepTool
from mcp_toolbridge.executors.base import ExecRequest, ExecResult
from mcp_toolbridge.host import CallContext
from mcp_toolbridge.policy import Scope
from mcp_toolbridge.sandbox import Sandbox
from tests.support.builtin_fs import SESSION, Layout

ENGINES = ["python", "ripgrep"] if shutil.which("rg") else ["python"]
WORD = "needle"


@pytest.fixture
def masked(layout: Layout, tmp_path: Path) -> Sandbox:
    """A workspace holding ``logs/rec`` and ``src/key.txt``, both masked (the first through a
    link to it), and ``src/app.py``, each holding :data:`WORD`, and ``docs/readme.md``; and
    its sandbox, which is off."""
    ws = layout.ws
    (ws / "logs" / "rec").mkdir(parents=True)
    (ws / "logs" / "rec" / "calls.jsonl").write_text(f'{{"said": "{WORD}"}}\n', "utf-8")
    (ws / "src").mkdir()
    (ws / "src" / "key.txt").write_text(f"{WORD} key\n", "utf-8")
    (ws / "src" / "app.py").write_text(f"{WORD} = 1\n", "utf-8")
    (ws / "docs").mkdir()
    (ws / "docs" / "readme.md").write_text("read me\n", "utf-8")
    (tmp_path / "to-rec").symlink_to(ws / "logs" / "rec")
    mask = [str(tmp_path / "to-rec"), str(ws / "src" / "key.txt"), str(ws / "absent")]
    return Sandbox("off", home=None, mask=mask)


async def _call(
    tool: BuiltinTool, sandbox: Sandbox, granted: tuple[Path, ...] = (), **arguments: Any
) -> ExecResult:
    """A call of ``tool`` in ``sandbox``, its profile granting ``granted`` besides."""
    profile = sandbox.profile(Scope(), tool=tool.spec.name, extra_read=granted)
    request = ExecRequest(
        spec=tool.spec,
        arguments=arguments,
        timeout_s=60.0,
        context=CallContext(session_id=SESSION),
        sandbox=sandbox.confine(profile),
    )
    return await tool.run(request)


async def test_glob_lists_nothing_no_sandbox_shows(layout, sessions, masked):
    glob = GlobTool(layout.ws, sessions)
    every = await _call(glob, masked, pattern="**/*")
    assert sorted(every.value["files"]) == ["docs/readme.md", "src/app.py"]
    assert every.value["hidden_from_tools"] == 2  # the folder and the file; not the absent one
    assert "2 path(s) hidden from every tool were not listed" in str(every.text)
    for pattern in ("logs/rec/*", f"{layout.ws}/logs/rec/*", "src/key.*"):
        result = await _call(glob, masked, pattern=pattern)
        assert result.value["files"] == [], pattern
        assert result.value["hidden_from_tools"] == 1, pattern
    inside = await _call(glob, masked, pattern="*", path="logs/rec")
    assert inside.value["files"] == [] and inside.value["hidden_from_tools"] == 1
    plain = await _call(glob, masked, pattern="*", path="src")
    assert plain.value["files"] == ["src/app.py"] and plain.value["hidden_from_tools"] == 1
    none = await _call(glob, masked, pattern="*", path="docs")  # holds none: no note
    assert none.value["files"] == ["docs/readme.md"] and "hidden_from_tools" not in none.value


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("pattern", [WORD, f"{WORD[:-1]}(?=e)"])  # RE2, Python's re in a child
@pytest.mark.parametrize("mode", ["files_with_matches", "content", "count"])
async def test_grep_searches_nothing_no_sandbox_shows(
    layout, sessions, masked, engine, pattern, mode
):
    grep = GrepTool(layout.ws, sessions, engine=engine)
    result = await _call(grep, masked, pattern=pattern, output_mode=mode)
    assert result.ok, result
    assert result.value["num_files"] == 1
    assert "src/app.py" in str(result.text)
    assert "logs/rec" not in str(result.text) and "key.txt" not in str(result.text)
    assert result.value["hidden_from_tools"] == 2
    assert "2 path(s) hidden from every tool were not searched" in str(result.text)
    for path in ("logs/rec", "logs/rec/calls.jsonl", "src/key.txt"):
        inside = await _call(grep, masked, pattern=pattern, path=path, output_mode=mode)
        assert inside.value["num_files"] == 0 and inside.value["hidden_from_tools"] == 1, path
    globbed = await _call(grep, masked, pattern=pattern, glob="*.{txt,jsonl}")
    assert globbed.value["num_files"] == 0 and globbed.value["hidden_from_tools"] == 2


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_mask_the_tool_is_granted_by_name_is_shown(layout, sessions, masked, engine):
    """As the sandbox shows it (sandbox/bwrap.py): the masked file, granted, is found."""
    granted = (layout.ws / "src" / "key.txt",)
    glob = await _call(GlobTool(layout.ws, sessions), masked, granted, pattern="src/*")
    assert sorted(glob.value["files"]) == ["src/app.py", "src/key.txt"]
    assert "hidden_from_tools" not in glob.value
    grep = GrepTool(layout.ws, sessions, engine=engine)
    found = await _call(grep, masked, granted, pattern=WORD)
    assert sorted(found.value["files"]) == ["src/app.py", "src/key.txt"]
    assert found.value["hidden_from_tools"] == 1  # logs/rec still


async def test_without_a_sandbox_nothing_is_left_out(layout, sessions, masked):
    """A bare bridge (no sandbox configured, as in tests): every file is listed, no note."""
    request = ExecRequest(
        spec=GlobTool(layout.ws, sessions).spec,
        arguments={"pattern": "**/*"},
        timeout_s=60.0,
        context=CallContext(session_id=SESSION),
    )
    result = await GlobTool(layout.ws, sessions).run(request)
    assert len(result.value["files"]) == 4 and "hidden_from_tools" not in result.value
