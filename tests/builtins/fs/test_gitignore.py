"""The .gitignore matcher used by glob and grep, checked against git itself where available."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mcp_toolbridge.builtins.fs import gitignore
from mcp_toolbridge.builtins.fs.walk import IgnoreOracle, WalkReport, expand_braces, walk_files

ROOT_RULES = """\
# comment
*.log
!important.log
/root-only.txt
build/
docs/**/*.tmp
a/**/z
\\#literal
trailing.txt{spaces}
cache
!cache/keep
[Tt]emp?.md
""".format(spaces="   ")
NESTED_RULES = "local.txt\n/anchored.txt\n!*.log\n"

FILES = [
    "app.log",
    "important.log",
    "sub/deep.log",
    "sub/important.log",
    "root-only.txt",
    "sub/root-only.txt",
    "build/x.py",
    "sub/build/y.py",
    "buildfile/x.py",
    "docs/a.tmp",
    "docs/x/y/b.tmp",
    "a/z",
    "a/b/c/z",
    "#literal",
    "trailing.txt",
    "cache/keep",
    "cache/other",
    "Temp1.md",
    "temp12.md",
    "pkg/local.txt",
    "pkg/anchored.txt",
    "pkg/inner/anchored.txt",
    "pkg/inner/local.txt",
    "pkg/debug.log",
    "plain.txt",
]


def make_tree(root: Path) -> None:
    (root / ".gitignore").write_text(ROOT_RULES, encoding="utf-8")
    (root / "pkg").mkdir()
    (root / "pkg" / ".gitignore").write_text(NESTED_RULES, encoding="utf-8")
    for rel in FILES:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x", encoding="utf-8")


def walked(root: Path) -> set[str]:
    entries = walk_files(
        root, ignore_base=root, report=WalkReport(), deadline=float("inf"), max_entries=10_000
    )
    return {e.rel for e in entries if not e.ignored} - {".gitignore", "pkg/.gitignore"}


def git_unignored(root: Path) -> set[str]:
    """The files below ``root`` that git itself does not ignore (``root`` becomes a repo)."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    listed = subprocess.run(
        ["git", "-C", str(root), "ls-files", "--others", "--exclude-standard"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return set(listed)


def test_the_walk_applies_root_and_nested_rules(tmp_path):
    make_tree(tmp_path)
    assert walked(tmp_path) == {
        "important.log",
        "sub/important.log",
        "sub/root-only.txt",
        "buildfile/x.py",
        "temp12.md",
        "pkg/inner/anchored.txt",
        "pkg/debug.log",
        "plain.txt",
    }


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_the_walk_agrees_with_git_check_ignore(tmp_path):
    make_tree(tmp_path)
    assert walked(tmp_path) == git_unignored(tmp_path) - {".gitignore", "pkg/.gitignore"}


def test_the_oracle_agrees_with_the_walk(tmp_path):
    make_tree(tmp_path)
    oracle = IgnoreOracle(tmp_path, tmp_path)
    kept = {rel for rel in FILES if not oracle.ignored(tmp_path / rel)}
    assert kept == walked(tmp_path)


def test_rules_parse_escapes_negation_and_directory_only_patterns():
    rules = gitignore.parse("\\!bang\nlogs/\n!x\n")
    assert rules.decide("!bang", False) is True
    assert rules.decide("logs", True) is True
    assert rules.decide("logs", False) is None
    assert rules.decide("x", False) is False


def test_brace_alternatives_expand_including_nested_groups():
    assert expand_braces("*.{ts,tsx}") == ["*.ts", "*.tsx"]
    assert sorted(expand_braces("{a,b{c,d}}.py")) == ["a.py", "bc.py", "bd.py"]
    assert expand_braces("{solo}.py") == ["{solo}.py"]


def test_a_run_of_double_stars_matches_like_one_as_in_git():
    rules = gitignore.parse("a/**/**/z\nkeep/**/**\n")
    assert rules.decide("a/z", False) is True
    assert rules.decide("a/b/c/z", False) is True
    assert rules.decide("keep/x/y", False) is True
    assert rules.decide("keep", True) is None  # a trailing /** is what is inside, not the folder


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_double_star_runs_agree_with_git_check_ignore(tmp_path):
    (tmp_path / ".gitignore").write_text("a/**/**/z\nkeep/**/**\n", encoding="utf-8")
    paths = ["a/z", "a/b/c/z", "a/zz", "keep/x/y", "keeper/x"]
    for rel in paths:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x", encoding="utf-8")
    assert walked(tmp_path) == git_unignored(tmp_path) - {".gitignore"} == {"a/zz", "keeper/x"}
