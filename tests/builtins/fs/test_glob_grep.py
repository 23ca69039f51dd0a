"""The glob and grep built-ins (grep on both engines), on real files in a temporary workspace."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_toolbridge.builtins.fs.glob_grep import GlobTool, GrepTool
from mcp_toolbridge.builtins.session import Sessions
from mcp_toolbridge.errors import ErrorCode, PermissionDeniedError
from mcp_toolbridge.executors.base import ExecRequest
from mcp_toolbridge.host import CallContext
from mcp_toolbridge.policy.paths import PathRejectedError
from tests.support.builtin_fs import SESSION, Layout, call, err, flipping, sidecar, sidecar_lines

HAVE_RG = shutil.which("rg") is not None
ENGINES = [
    "python",
    pytest.param(
        "ripgrep",
        marks=pytest.mark.skipif(
            not HAVE_RG, reason="ripgrep (rg) is not on PATH; the ripgrep engine is untested"
        ),
    ),
]


@pytest.fixture
def glob(layout: Layout, sessions: Sessions) -> GlobTool:
    return GlobTool(layout.ws, sessions)


@pytest.fixture(params=ENGINES)
def grep(request: pytest.FixtureRequest, layout: Layout, sessions: Sessions) -> GrepTool:
    return GrepTool(layout.ws, sessions, engine=request.param)


def put(root: Path, rel: str, text: str = "", mtime: float | None = None) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


@pytest.fixture
def tree(layout: Layout) -> Path:
    """A small project: sources, an ignored build folder, nested ignores, .git, a binary."""
    ws = layout.ws
    put(ws, ".gitignore", "build/\n*.log\n/top-only.txt\n!keep.log\ndocs/*.tmp\n")
    put(ws, "src/app.py", "import os\ndef main():\n    return os.getcwd()\n", 1000)
    put(ws, "src/util.py", "def helper():\n    return 'HELPER'\n", 3000)
    put(ws, "src/web/page.ts", "const helper = 1;\n", 2000)
    put(ws, "src/web/.gitignore", "generated.ts\n")
    put(ws, "src/web/generated.ts", "const helper = 2;\n", 2500)
    put(ws, "build/out.py", "def helper(): pass\n", 4000)
    put(ws, "debug.log", "helper log\n", 4000)
    put(ws, "keep.log", "helper kept\n", 500)
    put(ws, "top-only.txt", "helper\n", 4000)
    put(ws, "nested/top-only.txt", "helper nested\n", 600)
    put(ws, "docs/a.tmp", "helper\n", 4000)
    put(ws, "docs/deeper/b.tmp", "helper deeper\n", 700)
    put(ws, ".git/config", "helper = git\n", 4000)
    put(ws, ".hidden.py", "helper = hidden\n", 800)
    (ws / "blob.bin").write_bytes(b"helper\0binary")
    (ws / "outside-link").symlink_to(layout.evil, target_is_directory=True)
    (ws / "leak.py").symlink_to(layout.evil / "secret.txt")
    return ws


# -- glob ----------------------------------------------------------------------------------


def test_glob_and_grep_declare_fs_read_on_path_and_read_only_safety(glob, layout, sessions):
    grep = GrepTool(layout.ws, sessions, engine="python")
    for spec in (glob.spec, grep.spec):
        assert spec.requires.fs_read == ("{workspace}",)
        assert spec.argument_roles == {"path": ("fs.read",)}
        assert spec.safety.read_only and spec.safety.idempotent and not spec.safety.open_world


async def test_glob_lists_matches_newest_first_and_hides_gitignored_files(glob, tree):
    result = await call(glob, pattern="**/*.py")
    assert result.ok
    assert result.value["files"] == ["src/util.py", "src/app.py", ".hidden.py"]
    assert result.value["hidden_by_gitignore"] == 0
    assert result.value["ignored_dirs"] == ["build"]
    assert "include_ignored" in result.value["note"]


async def test_glob_counts_hidden_files_and_include_ignored_shows_them(glob, tree):
    hidden = await call(glob, pattern="*.{log,ts,txt,tmp}")
    assert hidden.value["files"] == [
        "src/web/page.ts",
        "docs/deeper/b.tmp",
        "nested/top-only.txt",
        "keep.log",
    ]
    assert hidden.value["hidden_by_gitignore"] == 4
    shown = await call(glob, pattern="*.{log,ts,txt,tmp}", include_ignored=True)
    assert set(shown.value["files"]) == {
        "src/web/page.ts",
        "src/web/generated.ts",
        "debug.log",
        "keep.log",
        "top-only.txt",
        "nested/top-only.txt",
        "docs/a.tmp",
        "docs/deeper/b.tmp",
    }
    assert "hidden_by_gitignore" not in shown.value


async def test_a_literal_folder_in_the_pattern_does_not_unhide_an_ignored_folder(glob, tree):
    hidden = await call(glob, pattern="build/**")
    assert hidden.value["files"] == []
    assert hidden.value["ignored_dirs"] == ["build"]
    shown = await call(glob, pattern="build/**", include_ignored=True)
    assert shown.value["files"] == ["build/out.py"]


async def test_glob_never_lists_dot_git_or_follows_symlinks(glob, tree):
    everything = await call(glob, pattern="**", include_ignored=True)
    files = everything.value["files"]
    assert not any(f.startswith(".git/") for f in files)
    assert ".gitignore" in files
    assert "leak.py" not in files
    assert not any(f.startswith("outside-link") for f in files)


async def test_glob_patterns_with_a_slash_are_anchored_to_the_search_folder(glob, tree):
    anchored = await call(glob, pattern="src/*.py")
    assert anchored.value["files"] == ["src/util.py", "src/app.py"]
    below = await call(glob, pattern="*.ts", path="src/web")
    assert below.value["files"] == ["src/web/page.ts"]
    absolute = await call(glob, pattern=str(tree / "src" / "**" / "*.ts"))
    assert absolute.value["files"] == ["src/web/page.ts"]


async def test_glob_with_no_match_says_so(glob, tree):
    result = await call(glob, pattern="**/*.rs")
    assert result.ok and result.value["files"] == []
    assert "No files found" in result.value["note"]


async def test_glob_over_1000_entries_truncates_with_a_sidecar(glob, layout, sessions):
    for n in range(1005):
        put(layout.ws, f"many/f{n:04d}.txt", "", 10_000 + n)
    result = await call(glob, pattern="many/*.txt")
    assert result.truncated
    assert len(result.value["files"]) == 1000
    assert result.value["num_files"] == 1005
    assert result.value["files"][0] == "many/f1004.txt"
    kept = sidecar_lines(result)
    assert len(kept) == 1005 and kept[-1] == "many/f0000.txt"
    assert sidecar(result).parent == sessions.get(SESSION).sidecar_dir


async def test_glob_path_must_be_a_directory_inside_the_workspace(glob, tree, layout):
    as_file = await call(glob, pattern="*", path="src/app.py")
    assert not as_file.ok and "must be a directory" in err(as_file)
    missing = await call(glob, pattern="*", path="nope")
    assert not missing.ok and "not found" in err(missing)
    for path in ("../ws_evil", str(layout.evil), "outside-link"):
        with pytest.raises(PermissionDeniedError) as caught:
            await call(glob, pattern="*", path=path)
        assert caught.value.code is ErrorCode.PERMISSION_DENIED
    with pytest.raises(PermissionDeniedError):
        await call(glob, pattern=str(layout.evil / "*.txt"))


async def test_glob_refuses_nul_in_pattern_or_path_and_dotdot_in_pattern(glob, tree):
    with pytest.raises(PathRejectedError):
        await call(glob, pattern="*.py\x00")
    with pytest.raises(PathRejectedError):
        await call(glob, pattern="*.py", path="src\x00")
    with pytest.raises(Exception, match=r"\.\."):
        await call(glob, pattern="../ws_evil/*")


# -- grep ----------------------------------------------------------------------------------


async def test_grep_lists_matching_files_newest_first_respecting_gitignore(grep, tree):
    result = await call(grep, pattern="helper")
    assert result.ok
    assert result.value["files"] == [
        "src/util.py",
        "src/web/page.ts",
        ".hidden.py",
        "docs/deeper/b.tmp",
        "nested/top-only.txt",
        "keep.log",
    ]
    assert result.value["num_files"] == 6


async def test_grep_content_mode_prints_path_line_and_text(grep, tree):
    result = await call(grep, pattern="return", output_mode="content", path="src")
    assert result.value["content"] == (
        "src/util.py:2:    return 'HELPER'\nsrc/app.py:3:    return os.getcwd()"
    )
    assert result.value["num_matches"] == 2
    plain = await call(
        grep, pattern="return", output_mode="content", path="src/app.py", line_numbers=False
    )
    assert plain.value["content"] == "src/app.py:    return os.getcwd()"


async def test_grep_context_lines_and_group_separators(grep, layout):
    put(layout.ws, "c.txt", "a\nhit 1\nb\nc\nd\ne\nhit 2\nf\n")
    result = await call(grep, pattern="hit", output_mode="content", context=1)
    assert result.value["content"] == (
        "c.txt-1-a\nc.txt:2:hit 1\nc.txt-3-b\n--\nc.txt-6-e\nc.txt:7:hit 2\nc.txt-8-f"
    )


async def test_grep_count_mode_and_case_insensitive(grep, tree):
    result = await call(
        grep, pattern="HELPER", output_mode="count", path="src", case_insensitive=True
    )
    assert result.value["counts"] == [
        {"file": "src/util.py", "count": 2},
        {"file": "src/web/page.ts", "count": 1},
    ]
    assert result.value["num_matches"] == 3


async def test_grep_glob_filter_and_braces(grep, tree):
    result = await call(grep, pattern="helper", glob="*.{ts,tmp}")
    assert result.value["files"] == ["src/web/page.ts", "docs/deeper/b.tmp"]
    excluded = await call(grep, pattern="helper", glob="!*.py", path="src")
    assert excluded.value["files"] == ["src/web/page.ts"]


async def test_grep_multiline_spans_lines(grep, layout):
    put(layout.ws, "m.py", "def f(\n    x,\n):\n    pass\ndef g(): pass\n")
    single = await call(grep, pattern=r"f\(.*x", output_mode="content")
    assert single.value["num_matches"] == 0
    result = await call(grep, pattern=r"def f\(.*?\):", output_mode="content", multiline=True)
    assert result.value["content"] == "m.py:1:def f(\nm.py:2:    x,\nm.py:3:):"


async def test_an_invalid_regex_is_an_error_not_no_matches(grep, tree):
    result = await call(grep, pattern="foo(bar")
    assert not result.ok
    assert "invalid regular expression" in err(result)
    assert "backslash" in err(result)


async def test_a_pattern_ripgrep_cannot_parse_runs_on_the_python_engine(grep, tree):
    """Without ripgrep's syntax: RE2 when it can say the same (Python's syntax translated),
    else Python's backtracking re in a child process."""
    engines = {
        "help(?=er)": "python",
        r"(h)elper\b(?!\1)": "python",
        "(?a)helper": "re2",
        "helper{,1}": "re2",
    }
    for pattern, engine in engines.items():
        result = await call(grep, pattern=pattern)
        assert result.ok, pattern
        assert result.value["engine"] == engine, pattern
        assert result.value["num_files"] == 6, pattern


async def test_python_syntax_decides_what_is_valid_on_both_engines(grep, tree):
    for pattern in (r"\pL", r"\x{41}", r"\z"):  # valid for ripgrep, not for Python's re
        result = await call(grep, pattern=pattern)
        assert "invalid regular expression" in err(result), pattern


async def test_a_line_break_without_multiline_matches_nothing(grep, tree):
    result = await call(grep, pattern=r"main\(\):\n", output_mode="content")
    assert result.ok and result.value["num_matches"] == 0


async def test_a_nul_byte_anywhere_makes_a_file_binary(grep, layout):
    (layout.ws / "late.bin").write_bytes(b"needle\n" + b"x" * 200_000 + b"\0\n")
    put(layout.ws, "text.txt", "needle\n")
    result = await call(grep, pattern="needle")
    assert result.value["files"] == ["text.txt"]


async def test_a_very_long_line_with_many_matches_is_found_on_both_engines(grep, layout):
    """rg's JSON for one 5 MB line of x searched for xxx is about 100 MB of submatches, past
    what the ripgrep engine keeps: it hands the search to the Python engine rather than
    report no matches."""
    put(layout.ws, "long.txt", "x" * 5_000_000 + "\nshort xxx line\n")
    content = await call(grep, pattern="xxx", output_mode="content")
    assert content.value["num_matches"] == 2
    first, second = content.value["content"].split("\n")
    assert first == "long.txt:1:" + "x" * 2000 + "… [line cut at 2000 characters]"
    assert second == "long.txt:2:short xxx line"
    assert "note" not in content.value
    count = await call(grep, pattern="xxx", output_mode="count")
    assert count.value["counts"] == [{"file": "long.txt", "count": 2}]
    assert content.value["engine"] == count.value["engine"] == "re2"


async def test_an_empty_file_has_no_line_to_match(grep, layout):
    put(layout.ws, "empty.txt", "")
    put(layout.ws, "blank.txt", "\n")
    result = await call(grep, pattern="^$", output_mode="count")
    assert result.value["counts"] == [{"file": "blank.txt", "count": 1}]


async def test_grep_skips_binary_files_symlinks_and_dot_git(grep, tree):
    result = await call(grep, pattern="secret|binary|git")
    assert result.value["files"] == []
    assert "No matches found" in result.value["note"]
    explicit = await call(grep, pattern="helper", path="blob.bin")
    assert explicit.ok and explicit.value["num_files"] == 0
    assert "binary" in explicit.value["note"]


async def test_grep_in_an_ignored_folder_named_explicitly_searches_it(grep, tree):
    result = await call(grep, pattern="helper", path="build")
    assert result.value["files"] == ["build/out.py"]


async def test_over_200_matches_truncate_to_a_sidecar_that_grep_can_search(grep, layout):
    put(layout.ws, "many.txt", "".join(f"match {n}\n" for n in range(250)))
    result = await call(grep, pattern="match", output_mode="content")
    assert result.truncated
    lines = result.value["content"].split("\n")
    assert len(lines) == 200 and lines[-1] == "many.txt:200:match 199"
    assert result.value["num_matches"] == 250
    assert result.output_path is not None
    assert f"the full output is in {result.output_path} (read it" in (result.text or "")
    again = await call(grep, pattern="match 249$", output_mode="content", path=str(sidecar(result)))
    assert again.value["content"].endswith("many.txt:250:match 249")


async def test_head_limit_is_the_callers_choice_and_writes_no_sidecar(grep, layout):
    put(layout.ws, "many.txt", "".join(f"match {n}\n" for n in range(250)))
    result = await call(grep, pattern="match", output_mode="content", head_limit=5)
    assert not result.truncated and result.output_path is None
    assert len(result.value["content"].split("\n")) == 5
    assert "head_limit=5" in result.value["note"]


async def test_grep_refuses_paths_outside_the_workspace_and_nul_in_the_pattern(grep, tree, layout):
    for path in ("../ws_evil", str(layout.evil / "secret.txt"), "outside-link", "leak.py"):
        with pytest.raises(PermissionDeniedError):
            await call(grep, pattern="secret", path=path)
    with pytest.raises(PathRejectedError):
        await call(grep, pattern="x", path="src\x00")
    with pytest.raises(Exception, match="NUL"):
        await call(grep, pattern="a\x00b")


async def test_a_grep_that_runs_out_of_time_is_an_error(grep, tree):
    request = ExecRequest(
        spec=grep.spec,
        arguments={"pattern": "helper"},
        timeout_s=0.0001,
        context=CallContext(session_id=SESSION),
    )
    result = await grep.run(request)
    assert not result.ok and "timed out" in err(result)


@pytest.mark.skipif(not HAVE_RG, reason="ripgrep (rg) is not on PATH; nothing to compare with")
async def test_both_engines_give_the_same_results(tree, sessions):
    python = GrepTool(tree, sessions, engine="python")
    ripgrep = GrepTool(tree, sessions, engine="ripgrep")
    cases: list[dict[str, Any]] = [
        {"pattern": "helper"},
        {"pattern": "helper", "output_mode": "content", "context": 1},
        {"pattern": "h.lper", "output_mode": "count", "case_insensitive": True},
        {"pattern": "def \\w+", "output_mode": "content", "glob": "src/**"},
        {"pattern": "main\\(\\):\\n\\s+return", "output_mode": "content", "multiline": True},
    ]
    for args in cases:
        a = await call(python, **args)
        b = await call(ripgrep, **args)
        assert a.ok and b.ok
        assert {**a.value, "engine": None} == {**b.value, "engine": None}, args


async def test_a_pattern_starting_with_a_dash_is_searched_not_taken_as_a_flag(grep, layout):
    put(layout.ws, "flags.txt", "run --pre=evil\n--follow me\n")
    result = await call(grep, pattern="--follow", output_mode="content")
    assert result.value["content"] == "flags.txt:2:--follow me"


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read a mode-000 folder")
async def test_unreadable_folders_give_partial_results_with_a_note(grep, layout):
    put(layout.ws, "ok/a.txt", "needle\n")
    locked = layout.ws / "locked"
    put(layout.ws, "locked/b.txt", "needle\n")
    locked.chmod(0)
    try:
        result = await call(grep, pattern="needle")
    finally:
        locked.chmod(0o755)
    assert result.ok and result.value["files"] == ["ok/a.txt"]
    assert "unreadable" in result.value["note"]


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="renameat2's number is x86_64's")
async def test_a_folder_swapped_for_a_symlink_during_the_walk_is_never_listed_through(
    glob: GlobTool, layout: Layout
):
    """glob walks in the server, outside the sandbox: a folder swapped for a symlink to
    elsewhere after its parent was listed was listed through, naming the files outside the
    workspace (the red-team pass of 2026-11-29). Each folder is now listed through a
    descriptor checked to be that folder."""
    (layout.ws / "d").mkdir()
    (layout.ws / "d" / "inside.txt").write_text("x\n", encoding="utf-8")
    (layout.ws / "swap").symlink_to(layout.evil, target_is_directory=True)  # secret.txt
    seen = 0
    async with flipping(layout.ws / "d", layout.ws / "swap"):
        with anyio.move_on_after(5):
            while True:
                result = await call(glob, pattern="**/*.txt")
                assert "secret.txt" not in str(result.value), f"listed after {seen}"
                seen += 1
    assert seen > 50
