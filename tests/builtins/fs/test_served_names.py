"""glob and grep, served, show a file name that holds control characters unambiguously: a
file named ``a<newline>b.txt`` must not read as two paths (``a`` and ``b.txt``), and an
escape sequence in a name must not reach a terminal. Such a path is shown in double quotes
with C escapes, as git shows it, the same in glob and in every grep mode on both engines; the
note says how, and read, given that form back, says what it is. Ordinary names (a backslash
or a quote inside) are shown as they are, and read opens them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mcp_toolbridge.builtins.fs.paths import QUOTED_NOTE, shown_path
from tests.support.results import text_of
from tests.support.served import error_text, locked_settings, served_client

ENGINES = ["python", "ripgrep"] if shutil.which("rg") else ["python"]
ODD = {
    "a\nb.txt": '"a\\nb.txt"',
    "tab\there.txt": '"tab\\there.txt"',
    "red\x1b[31m.txt": '"red\\x1b[31m.txt"',
    'sub/q"\r.txt': '"sub/q\\"\\r.txt"',
    '"quoted".txt': '"quoted".txt',  # enclosed in quotes only as a whole path
    '"whole"': '"\\"whole\\""',
}
PLAIN = ["back\\slash.txt", 'mid"quote.txt', "plain.txt"]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    if request.param == "python":
        monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    return str(request.param)


def _lines(text: str) -> list[str]:
    """The result's path lines (the note after the blank line left out)."""
    return text.split("\n\n(")[0].splitlines()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_glob_and_grep_show_names_with_control_characters_quoted(tmp_path, engine, mode):
    settings = locked_settings(tmp_path)
    workspace = settings.workspace
    assert workspace is not None
    for name in [*ODD, *PLAIN]:
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text("needle\n", encoding="utf-8")
    shown = sorted([*ODD.values(), *PLAIN])
    async with served_client(settings, mode, locked=True) as client:
        globbed = text_of(await client.call_tool("glob", {"pattern": "**/*"}))
        assert sorted(_lines(globbed)) == shown, globbed
        assert QUOTED_NOTE in globbed
        found = text_of(await client.call_tool("grep", {"pattern": "needle"}))
        assert sorted(_lines(found)[1:]) == shown, found
        assert QUOTED_NOTE in found
        counted = text_of(
            await client.call_tool("grep", {"pattern": "needle", "output_mode": "count"})
        )
        assert sorted(_lines(counted)[1:]) == sorted(f"{s}:1" for s in shown), counted
        content = text_of(
            await client.call_tool("grep", {"pattern": "needle", "output_mode": "content"})
        )
        assert sorted(_lines(content)) == sorted(f"{s}:1:needle" for s in shown), content
        assert "\x1b" not in globbed + found + counted + content
        for name in PLAIN:  # shown as it is: read opens it by that text
            opened = await client.call_tool("read", {"file_path": name})
            assert text_of(opened).endswith("needle"), name
        refused = await client.call_tool("read", {"file_path": ODD["a\nb.txt"]})
        said = error_text(refused)
        assert "how glob and grep show a name that holds control characters" in said, said
        assert "$'a\\nb.txt'" in said, said


async def test_a_listing_of_ordinary_names_has_no_note(tmp_path):
    settings = locked_settings(tmp_path)
    assert settings.workspace is not None
    for name in PLAIN:
        (settings.workspace / name).write_text("needle\n", encoding="utf-8")
    async with served_client(settings, locked=True) as client:
        globbed = text_of(await client.call_tool("glob", {"pattern": "*"}))
        found = text_of(await client.call_tool("grep", {"pattern": "needle"}))
    assert sorted(globbed.splitlines()) == sorted(PLAIN)
    assert "double quotes" not in globbed and "double quotes" not in found


def test_every_control_character_is_escaped_and_nothing_else():
    for code in [*range(0x20), *range(0x7F, 0xA0)]:
        text = shown_path(f"x{chr(code)}y")
        assert text.startswith('"x\\') and text.endswith('y"'), (code, text)
        assert all(0x20 <= ord(c) < 0x7F for c in text), (code, text)
    assert shown_path("déjà vu/ü.txt") == "déjà vu/ü.txt"


async def test_a_path_too_long_to_look_up_is_refused_saying_why_by_every_file_tool(tmp_path):
    """A name over 255 bytes, or a path over 4,096, made the path check itself fail
    (``ENAMETOOLONG`` from lstat): an internal error in read, write, edit, glob and grep (the
    red-team pass of 2026-11-29). Now the argument is refused saying why, and nothing runs."""
    settings = locked_settings(tmp_path, 'allow = ["write", "edit"]\n')
    assert settings.workspace is not None
    long_name, deep = "x" * 300, "a/" * 3000 + "f.txt"
    name_too_long = "cannot be looked up: File name too long"
    path_too_long = "expected at most 4096 characters; got 6005"  # the input schema's maxLength
    calls = [
        ("read", {"file_path": long_name}, name_too_long),
        ("read", {"file_path": deep}, path_too_long),
        ("write", {"file_path": deep, "content": "x"}, path_too_long),
        ("edit", {"file_path": long_name, "old_string": "a", "new_string": "b"}, name_too_long),
        ("glob", {"pattern": "*", "path": long_name}, name_too_long),
        ("grep", {"pattern": "x", "path": deep}, path_too_long),
    ]
    async with served_client(settings, locked=True) as client:
        for tool, arguments, why in calls:
            error = error_text(await client.call_tool(tool, arguments))
            assert why in error, (tool, error[:200])
            assert "internal error" not in error and len(error) < 1000, (tool, error[:200])
    assert list(settings.workspace.iterdir()) == []
