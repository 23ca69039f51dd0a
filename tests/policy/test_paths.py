from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_toolbridge.errors import ErrorCode
from mcp_toolbridge.policy.paths import (
    PathRejectedError,
    canonical_root,
    canonicalize,
    glob_regex,
    is_within,
    split_glob,
)


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace and an outside folder next to each other, both canonical."""
    root = canonical_root(tmp_path)
    workspace = root / "app"
    outside = root / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("s", encoding="utf-8")
    return workspace, outside


def test_relative_paths_resolve_against_the_base_not_the_process_cwd(layout):
    workspace, _ = layout
    assert canonicalize("src/main.py", base=workspace) == workspace / "src" / "main.py"


def test_dotdot_that_climbs_out_of_the_workspace_lands_outside(layout):
    workspace, outside = layout
    path = canonicalize("../outside/secret.txt", base=workspace)
    assert path == outside / "secret.txt"
    assert not is_within(path, workspace)


def test_dotdot_through_a_missing_directory_is_applied_lexically(layout):
    workspace, outside = layout
    path = canonicalize("missing/../../outside", base=workspace)
    assert path == outside


def test_a_sibling_sharing_the_name_prefix_is_not_inside(layout):
    workspace, _ = layout
    evil = workspace.parent / "app_evil"
    evil.mkdir()
    assert not is_within(canonicalize(str(evil / "x"), base=workspace), workspace)
    assert not is_within(Path("/srv/app_evil"), Path("/srv/app"))
    assert is_within(Path("/srv/app"), Path("/srv/app"))
    assert is_within(Path("/srv/app/a/b"), Path("/srv/app"))
    assert is_within(Path("/srv"), Path("/"))


def test_a_symlink_inside_that_points_outside_resolves_outside(layout):
    workspace, outside = layout
    (workspace / "link.txt").symlink_to(outside / "secret.txt")
    path = canonicalize("link.txt", base=workspace)
    assert path == outside / "secret.txt"
    assert not is_within(path, workspace)


def test_a_dangling_symlink_is_followed_to_its_outside_target(layout):
    workspace, outside = layout
    (workspace / "dangling").symlink_to(outside / "not-yet-created.txt")
    path = canonicalize("dangling", base=workspace)
    assert path == outside / "not-yet-created.txt"
    assert not is_within(path, workspace)


def test_a_new_file_under_a_symlinked_parent_directory_resolves_outside(layout):
    workspace, outside = layout
    (workspace / "data").symlink_to(outside, target_is_directory=True)
    path = canonicalize("data/new/file.txt", base=workspace)
    assert path == outside / "new" / "file.txt"
    assert not is_within(path, workspace)


def test_a_symlink_that_stays_inside_is_accepted(layout):
    workspace, _ = layout
    (workspace / "real").mkdir()
    (workspace / "alias").symlink_to(workspace / "real", target_is_directory=True)
    assert canonicalize("alias/f", base=workspace) == workspace / "real" / "f"


def test_a_symlink_loop_is_refused(layout):
    workspace, _ = layout
    (workspace / "a").symlink_to(workspace / "b")
    (workspace / "b").symlink_to(workspace / "a")
    with pytest.raises(PathRejectedError, match="symlink loop"):
        canonicalize("a/x", base=workspace)


@pytest.mark.parametrize(
    "bad", ["a\x00b", "evil\x00/../../etc/passwd", "x\ny", "tab\there", "\x7f", "\x9b"]
)
def test_nul_and_control_characters_are_refused_with_an_args_error(layout, bad):
    workspace, _ = layout
    with pytest.raises(PathRejectedError) as info:
        canonicalize(bad, base=workspace)
    assert info.value.code == ErrorCode.ARGS_INVALID
    assert "control character" in str(info.value)


def test_an_empty_path_is_refused(layout):
    workspace, _ = layout
    with pytest.raises(PathRejectedError, match="empty"):
        canonicalize("", base=workspace)


def test_a_symlinked_workspace_root_compares_equal_to_its_real_path(tmp_path):
    real = canonical_root(tmp_path) / "real"
    real.mkdir()
    alias = tmp_path / "alias"
    alias.symlink_to(real, target_is_directory=True)
    root = canonical_root(alias)
    assert root == real
    assert is_within(canonicalize(str(alias / "f"), base=root), root)


def test_glob_double_star_spans_directories_and_single_star_does_not():
    regex = glob_regex("/w/**/*.py")
    assert regex.match("/w/a.py")
    assert regex.match("/w/x/y/a.py")
    assert not regex.match("/w/x/a.pyc")
    single = glob_regex("/w/*.py")
    assert single.match("/w/.hidden.py")
    assert not single.match("/w/x/a.py")
    tail = glob_regex("/w/**")
    assert tail.match("/w") and tail.match("/w/a/b")
    assert not tail.match("/w_evil/a")
    run = glob_regex("/w/**/**/x")
    assert run.match("/w/x") and run.match("/w/a/b/x")


def test_glob_classes_and_question_marks_stay_inside_one_component():
    regex = glob_regex("/w/[!a]?.txt")
    assert regex.match("/w/bc.txt")
    assert not regex.match("/w/ac.txt")
    assert not regex.match("/w//c.txt")
    assert glob_regex("/w/[[&~|]x").match("/w/&x")


def test_split_glob_separates_the_literal_directory():
    assert split_glob("/w/src/**/*.py") == ("/w/src", "**/*.py")
    assert split_glob("/w/src/file") == ("/w/src/file", "")
    assert split_glob("/*") == ("/", "*")


@given(st.lists(st.sampled_from(["a", "b", "..", ".", "a_evil", "app"]), max_size=6))
def test_canonical_results_never_contain_dot_components(parts):
    base = Path("/nonexistent-base/app")
    path = canonicalize("/".join(parts) or ".", base=base)
    assert path.is_absolute()
    assert ".." not in path.parts and "." not in path.parts
    expected = os.path.normpath(os.path.join(base, *parts)) if parts else str(base)
    assert str(path) == expected


def test_a_link_the_server_may_not_read_is_refused_saying_why(tmp_path):
    """``os.path.realpath`` raises when it may not read a link on the way (``/proc/1/root``
    of another user's process, or pid 1 in a container run as root): the path check failed
    with that exception, an internal error in every tool (the red-team pass of 2026-11-29)."""
    try:
        os.readlink("/proc/1/root")
    except OSError:
        with pytest.raises(PathRejectedError, match="cannot be resolved: Permission denied"):
            canonicalize("/proc/1/root/etc/passwd", base=tmp_path)
    else:
        pytest.skip("this process may read /proc/1/root here")
    with pytest.raises(PathRejectedError, match=r"\(301 characters\) cannot be looked up"):
        canonicalize("x" * 300, base=Path("/"))


def test_a_path_longer_than_the_system_looks_up_is_refused_before_it_is_resolved(tmp_path):
    """Resolving a path costs time that grows with the square of its length: a 100 KB path
    held the server for 38.7 s (the second red-team pass of 2026-11-29). One the system could
    not look up anyway (PATH_MAX, 4,096 bytes) is refused before it is resolved."""
    with pytest.raises(PathRejectedError, match=r"is 100,002 bytes long, and the system looks"):
        canonicalize("a/" * 50_000 + "b", base=Path("/"))
    with pytest.raises(PathRejectedError, match=r"no path of 4,096 bytes or more"):
        canonicalize("é" * 2_048, base=Path("/"))  # 4,097 bytes, 2,049 characters
