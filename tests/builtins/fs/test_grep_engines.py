"""grep without ripgrep: RE2 runs what it can express with Python's meaning, Python's ``re``
runs the rest in a child process killed at the deadline, and no pattern holds the event loop."""

from __future__ import annotations

import os
import re

import anyio
import pytest

from mcp_toolbridge.builtins.fs import grep_re2
from mcp_toolbridge.builtins.fs.glob_grep import GrepTool
from mcp_toolbridge.builtins.session import Sessions
from mcp_toolbridge.errors import ErrorCode
from mcp_toolbridge.executors.base import ExecRequest
from mcp_toolbridge.host import CallContext
from tests.support.builtin_fs import SESSION, Layout, call, err, flipping
from tests.support.loop_lag import loop_lag

LINES = [
    "def main(): return 42",
    "café naïve ÉCOLE façade",
    "x\u2003y\u00a0z \t tab",
    "arabic ٣٤ digits and ²",
    "under_score ΩMEGA ωmega",
    "",
    "   ",
    "a+b=c; [brackets] {braces} $dollar ^caret",
    "end\r",
    "ſtraße KELVIN \u212a",
    "foo.bar foo_bar foobar",
]
TEXT = "\n".join(LINES) + "\n"

PATTERNS = [
    r"\d+",
    r"\w+ \w+",
    r"\s\S",
    r"^\s*$",
    r"[\s\S]{3}",
    r"(?i)école",
    r"(?i)kelvin",
    r"(?i:MEGA) ω",
    r"^end$",
    r"\Aend\Z",
    r"foo\.bar|foo_bar",
    r"[\[\]{}]+",
    r"\$dollar \^caret",
    r"x{,2}y",
    r"(?a)\w+",
    r"(?a)\d",
    r"[^a-z ]",
    r"c.f",
    r"a+?b",
    r"(?x) f o o  # spaced",
    r"(ab|cd)*e",
    r"[\d\s]+",
    r"\W+",
]


def _python_lines(pattern: str, *, ignore_case: bool = False) -> list[int]:
    regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    return [n for n, line in enumerate(LINES) if regex.search(line)]


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("ignore_case", [False, True])
def test_re2_finds_the_lines_python_re_finds(pattern: str, ignore_case: bool):
    translated = grep_re2.translate(pattern, ignore_case=ignore_case, multiline=False)
    data = TEXT.encode("utf-8")
    found = list(grep_re2.line_matches(translated, data, first_only=False))
    assert found == _python_lines(pattern, ignore_case=ignore_case), translated.source


@pytest.mark.parametrize(
    "pattern", [r"\w+\n\w+", r"^\s*$", r"(?s)café.*?ÉCOLE", r"\d\n.", r"main.*42$", r"\Adef"]
)
def test_re2_finds_the_spans_python_re_finds_over_the_whole_text(pattern: str):
    translated = grep_re2.translate(pattern, ignore_case=False, multiline=True)
    spans = grep_re2.span_matches(translated, TEXT.encode("utf-8"), first_only=False)
    found = sorted({n for span in spans for n in span})
    regex = re.compile(pattern, re.MULTILINE | re.DOTALL)
    starts = [0]
    for line in LINES[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    expected: set[int] = set()
    for match in regex.finditer(TEXT):
        first = max(i for i, s in enumerate(starts) if s <= match.start())
        end = max(match.start(), match.end() - 1)
        last = max(i for i, s in enumerate(starts) if s <= end)
        expected.update(range(first, min(last, len(LINES) - 1) + 1))
    assert found == sorted(expected), translated.source


@pytest.mark.parametrize(
    "pattern",
    [
        r"(a)\1",
        r"a(?=b)",
        r"(?<!x)a",
        r"(?>a+)b",
        r"a*+",
        r"(a)?(?(1)b|c)",
        r"a{1001}",
        r"[^\W\d]",
    ],
)
def test_what_re2_cannot_express_is_left_to_python(pattern: str):
    with pytest.raises(grep_re2.Unexpressible):
        grep_re2.translate(pattern, ignore_case=False, multiline=False)


def test_a_word_boundary_is_run_by_re2_on_ascii_text_only():
    assert grep_re2.translate(r"\bfoo", ignore_case=False, multiline=False).ascii_only
    assert not grep_re2.translate(r"(?a)\bfoo", ignore_case=False, multiline=False).ascii_only


@pytest.fixture
def grep(layout: Layout, sessions: Sessions) -> GrepTool:
    return GrepTool(layout.ws, sessions, engine="python")


async def test_a_word_boundary_on_non_ascii_text_keeps_pythons_meaning(grep, layout):
    (layout.ws / "ascii.txt").write_text("a foo\n", encoding="utf-8")
    (layout.ws / "accent.txt").write_text("éfoo\n foo\n", encoding="utf-8")
    result = await call(grep, pattern=r"\bfoo", output_mode="content")
    assert result.value["engine"] == "re2+python"
    lines = sorted(result.value["content"].split("\n"))
    assert lines == ["accent.txt:2: foo", "ascii.txt:1:a foo"]  # not "éfoo": é is a word char


async def test_the_backtracking_engine_gives_content_with_context(grep, layout):
    (layout.ws / "a.txt").write_text("one\nx two\nthree\nx four\n", encoding="utf-8")
    result = await call(grep, pattern=r"(?<=x )t\w+", output_mode="content", context=1)
    assert result.value["engine"] == "python"
    assert result.value["content"] == "a.txt-1-one\na.txt:2:x two\na.txt-3-three"


async def test_a_catastrophic_pattern_runs_in_linear_time_on_re2(grep, layout):
    (layout.ws / "a.txt").write_text("a" * 200_000 + "b\n", encoding="utf-8")
    async with loop_lag() as lag:
        result = await call(grep, pattern=r"(a+)+$", output_mode="count")
    assert result.ok and result.value["engine"] == "re2"
    assert result.value["num_matches"] == 0
    assert lag.worst_s < 0.05, lag.worst_s


async def test_a_catastrophic_backtracking_pattern_times_out_at_its_deadline(grep, layout):
    """``(a+)+(?=c)`` needs backtracking (look-ahead): Python's re runs it in a child, which is
    killed at the deadline while the event loop keeps ticking."""
    (layout.ws / "a.txt").write_text("a" * 5_000 + "b\n", encoding="utf-8")
    request = ExecRequest(
        spec=grep.spec,
        arguments={"pattern": r"(a+)+(?=c)"},
        timeout_s=1.0,
        context=CallContext(session_id=SESSION),
    )
    # Unkilled, the child would search for ever: the call ending at all proves the kill (the
    # limit only guards against that hang; how soon it ends is the machine's load).
    with anyio.fail_after(60):
        async with loop_lag() as lag:
            result = await grep.run(request)
    assert result.code == ErrorCode.EXEC_TIMEOUT and "timed out" in err(result)
    assert lag.worst_s < 0.05, lag.worst_s


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="renameat2's number is x86_64's")
async def test_a_folder_swapped_for_a_symlink_during_the_search_is_never_read_through(
    grep: GrepTool, layout: Layout
):
    """The in-process engine (RE2, run where rg is missing or gives up) walks the workspace
    and then reads each file it listed, in the server, outside the sandbox. A folder it
    listed swapped for a symlink before the read showed the file outside the workspace
    (the red-team pass of 2026-11-29); now a file opened outside the searched folder is
    skipped as unreadable."""
    (layout.ws / "d").mkdir()
    (layout.ws / "d" / "secret.txt").write_text("nothing here\n", encoding="utf-8")
    (layout.ws / "swap").symlink_to(layout.evil, target_is_directory=True)  # secret.txt
    seen = 0
    async with flipping(layout.ws / "d", layout.ws / "swap"):
        with anyio.move_on_after(5):
            while True:
                result = await call(grep, pattern="secret", output_mode="content")
                assert "top secret" not in str(result.value), f"read through after {seen}"
                seen += 1
    assert seen > 50
