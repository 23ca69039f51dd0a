"""The read built-in, on real files in a temporary workspace."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import anyio
import pytest

from mcp_toolbridge.builtins.fs.read import ReadTool
from mcp_toolbridge.builtins.session import Sessions
from mcp_toolbridge.errors import ErrorCode, PermissionDeniedError
from mcp_toolbridge.policy.paths import PathRejectedError
from tests.support.builtin_fs import SESSION, Layout, call, err, sidecar, sidecar_lines


@pytest.fixture
def tool(layout: Layout, sessions: Sessions) -> ReadTool:
    return ReadTool(layout.ws, sessions)


def write_lines(path: Path, count: int, *, fmt: str = "line {n}") -> None:
    path.write_text("".join(fmt.format(n=n) + "\n" for n in range(1, count + 1)), "utf-8")


def test_the_spec_declares_fs_read_in_the_workspace_and_read_only_safety(tool):
    spec = tool.spec
    assert spec.name == "read"
    assert spec.requires.fs_read == ("{workspace}",)
    assert spec.argument_roles == {"file_path": ("fs.read",)}
    assert spec.safety.read_only and spec.safety.idempotent and not spec.safety.open_world
    assert spec.safety.inferred == frozenset()
    assert spec.input_schema["additionalProperties"] is False


async def test_lines_come_numbered_cat_n_style_with_a_width_of_six(tool, layout):
    (layout.ws / "a.txt").write_text("alpha\n\tbeta\n", encoding="utf-8")
    result = await call(tool, file_path="a.txt")
    assert result.ok
    assert result.value["content"] == "     1\talpha\n     2\t\tbeta"
    assert result.value["total_lines"] == 2
    assert "next_offset" not in result.value
    assert not result.truncated


async def test_absolute_paths_inside_the_workspace_are_read(tool, layout):
    (layout.ws / "a.txt").write_text("x", encoding="utf-8")
    result = await call(tool, file_path=str(layout.ws / "a.txt"))
    assert result.value["content"] == "     1\tx"
    assert result.value["file_path"] == "a.txt"


async def test_a_long_file_gives_2000_lines_and_says_which_offset_comes_next(tool, layout):
    write_lines(layout.ws / "big.txt", 2500)
    result = await call(tool, file_path="big.txt")
    lines = result.value["content"].split("\n")
    assert len(lines) == 2000
    assert lines[-1] == "  2000\tline 2000"
    assert result.value["next_offset"] == 2001
    assert result.value["total_lines"] == 2500
    assert "offset=2001" in result.value["note"]


async def test_offset_and_limit_select_a_window(tool, layout):
    write_lines(layout.ws / "big.txt", 50)
    result = await call(tool, file_path="big.txt", offset=10, limit=3)
    assert result.value["content"] == "    10\tline 10\n    11\tline 11\n    12\tline 12"
    assert (result.value["start_line"], result.value["end_line"]) == (10, 12)
    assert result.value["next_offset"] == 13


async def test_an_offset_past_the_end_is_an_error_giving_the_line_count(tool, layout):
    (layout.ws / "short.txt").write_text("a\nb\nc", encoding="utf-8")
    result = await call(tool, file_path="short.txt", offset=10)
    assert not result.ok
    assert "3 lines" in err(result) and "offset 10" in err(result)
    just_past = await call(tool, file_path="short.txt", offset=4)
    assert not just_past.ok and "3 lines" in err(just_past)
    last = await call(tool, file_path="short.txt", offset=3)
    assert last.value["content"] == "     3\tc"


async def test_an_empty_file_is_a_success_that_says_it_is_empty(tool, layout):
    (layout.ws / "empty.txt").write_bytes(b"")
    result = await call(tool, file_path="empty.txt", offset=5)
    assert result.ok
    assert result.value["content"] == ""
    assert result.value["total_lines"] == 0
    assert "empty" in result.value["note"]


async def test_over_long_lines_are_cut_with_a_marker(tool, layout):
    (layout.ws / "min.js").write_text("x" * 5000 + "\nshort\n", encoding="utf-8")
    result = await call(tool, file_path="min.js")
    first, second = result.value["content"].split("\n")
    assert first.startswith("     1\t" + "x" * 2000 + "… [line cut at 2000 characters")
    assert "5001 bytes" in first
    assert second == "     2\tshort"
    assert "1 line(s) longer than 2000" in result.value["note"]


async def test_a_huge_single_line_is_cut_without_reading_it_whole(tool, layout):
    (layout.ws / "one.txt").write_bytes(b"y" * (3 * 1024 * 1024) + b"\nend\n")
    result = await call(tool, file_path="one.txt")
    first, second = result.value["content"].split("\n")
    assert len(first) < 2200
    assert second == "     2\tend"


async def test_output_over_200_kb_is_truncated_with_a_sidecar_and_the_next_offset(
    tool, layout, sessions
):
    write_lines(layout.ws / "wide.txt", 1500, fmt="{n:05d} " + "w" * 300)
    result = await call(tool, file_path="wide.txt")
    assert result.truncated
    assert len(result.value["content"].encode()) <= 200 * 1024
    shown = result.value["content"].split("\n")
    end = result.value["end_line"]
    assert len(shown) == end < 1500
    assert result.value["next_offset"] == end + 1
    assert f"offset={end + 1}" in result.value["note"]
    assert sidecar(result).parent == sessions.get(SESSION).sidecar_dir
    kept = sidecar_lines(result)
    assert len(kept) == 1500
    assert kept[-1].startswith("  1500\t01500 ")


async def test_the_session_sidecar_is_readable_by_read(tool, layout):
    write_lines(layout.ws / "wide.txt", 1500, fmt="{n:05d} " + "w" * 300)
    truncated = await call(tool, file_path="wide.txt")
    again = await call(tool, file_path=str(sidecar(truncated)), offset=1500, limit=1)
    assert again.ok
    assert again.value["content"].startswith("  1500\t  1500\t01500 ")


async def test_another_sessions_sidecar_is_not_readable(tool, layout):
    write_lines(layout.ws / "wide.txt", 1500, fmt="{n:05d} " + "w" * 300)
    truncated = await call(tool, file_path="wide.txt")
    with pytest.raises(PermissionDeniedError):
        await call(tool, session="other", file_path=str(sidecar(truncated)))


async def test_binary_files_are_refused_with_a_clear_message(tool, layout):
    (layout.ws / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    result = await call(tool, file_path="img.png")
    assert not result.ok
    assert "binary" in err(result) and "img.png" in err(result)


async def test_a_directory_is_refused_and_points_to_glob(tool, layout):
    (layout.ws / "src").mkdir()
    result = await call(tool, file_path="src")
    assert not result.ok
    assert "is a directory" in err(result) and "glob" in err(result)


async def test_a_missing_file_suggests_up_to_three_similar_names(tool, layout):
    for name in ("config.yaml", "config.yml", "config.json", "confi.toml", "unrelated.md"):
        (layout.ws / name).write_text("x", encoding="utf-8")
    result = await call(tool, file_path="config.yam")
    assert not result.ok
    assert "file not found: config.yam" in err(result)
    suggested = err(result).split("did you mean: ")[1]
    assert "config.yaml" in suggested and "unrelated.md" not in suggested
    assert suggested.count(",") <= 2


async def test_a_fifo_is_refused_without_blocking(tool, layout):
    os.mkfifo(layout.ws / "pipe")
    with anyio.fail_after(5):
        result = await call(tool, file_path="pipe")
    assert not result.ok
    assert "FIFO" in err(result)


async def test_a_socket_is_refused(tool, layout):
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(layout.ws / "sock"))
        result = await call(tool, file_path="sock")
    finally:
        server.close()
    assert not result.ok and "socket" in err(result)


async def test_crlf_lines_are_shown_without_carriage_returns_and_a_bom_is_hidden(tool, layout):
    (layout.ws / "win.txt").write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\n")
    result = await call(tool, file_path="win.txt")
    assert result.value["content"] == "     1\tone\n     2\ttwo"
    assert result.value["line_endings"] == "crlf"
    assert result.value["bom"] is True


async def test_invalid_utf8_is_shown_with_replacement_characters_and_a_note(tool, layout):
    (layout.ws / "latin.txt").write_bytes(b"caf\xe9\n")
    result = await call(tool, file_path="latin.txt")
    assert result.value["content"] == "     1\tcaf\ufffd"
    assert "not valid UTF-8" in result.value["note"]


async def test_a_symlink_inside_the_workspace_to_a_file_inside_is_followed(tool, layout):
    (layout.ws / "real.txt").write_text("real\n", encoding="utf-8")
    (layout.ws / "alias.txt").symlink_to(layout.ws / "real.txt")
    result = await call(tool, file_path="alias.txt")
    assert result.value["content"] == "     1\treal"
    assert result.value["file_path"] == "real.txt"


async def test_a_sibling_folder_sharing_the_workspace_prefix_is_outside(tool, layout):
    for path in (str(layout.evil / "secret.txt"), "../ws_evil/secret.txt"):
        with pytest.raises(PermissionDeniedError) as caught:
            await call(tool, file_path=path)
        assert caught.value.code is ErrorCode.PERMISSION_DENIED


async def test_a_symlink_pointing_outside_is_refused(tool, layout):
    (layout.ws / "leak.txt").symlink_to(layout.evil / "secret.txt")
    with pytest.raises(PermissionDeniedError) as caught:
        await call(tool, file_path="leak.txt")
    assert "symlink" in str(caught.value)


async def test_a_dangling_symlink_pointing_outside_is_refused(tool, layout):
    (layout.ws / "later.txt").symlink_to(layout.evil / "not-yet.txt")
    with pytest.raises(PermissionDeniedError):
        await call(tool, file_path="later.txt")


async def test_a_symlinked_parent_folder_pointing_outside_is_refused(tool, layout):
    (layout.ws / "linked").symlink_to(layout.evil, target_is_directory=True)
    with pytest.raises(PermissionDeniedError):
        await call(tool, file_path="linked/secret.txt")


async def test_proc_magic_links_resolve_to_what_they_name_and_are_refused_outside(tool, layout):
    """/proc/self/root is a symbolic link the kernel makes: followed, it names the
    outside file, so the capability check refuses it like any other link."""
    secret = layout.evil / "secret.txt"
    with pytest.raises(PermissionDeniedError):
        await call(tool, file_path=f"/proc/self/root{secret}")
    with pytest.raises(PermissionDeniedError):  # the server's own environment
        await call(tool, file_path="/proc/self/environ")


async def test_nul_and_control_characters_in_the_path_are_refused(tool, layout):
    (layout.ws / "a.txt").write_text("x", encoding="utf-8")
    for bad in ("a.txt\x00.png", "a\x1b.txt"):
        with pytest.raises(PathRejectedError) as caught:
            await call(tool, file_path=bad)
        assert caught.value.code is ErrorCode.ARGS_INVALID


def _bytes_read() -> int:
    """What this process has read so far through read(2) and friends (/proc/self/io rchar)."""
    with open("/proc/self/io", encoding="ascii") as io:
        return next(int(line.split()[1]) for line in io if line.startswith("rchar:"))


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="needs Linux /proc/self/io")
async def test_a_window_of_a_huge_file_reads_the_window_not_the_file(tool, layout):
    """2 GiB, sparse: 10,000 lines of text, then NUL bytes to the end (one huge last line)."""
    path = layout.ws / "huge.log"
    write_lines(path, 10_000)
    os.truncate(path, 2 * 1024**3)
    before = _bytes_read()
    head = await call(tool, file_path="huge.log", offset=1, limit=2)
    used = _bytes_read() - before
    assert head.value["content"] == "     1\tline 1\n     2\tline 2"
    assert head.value["total_lines"] is None and head.value["next_offset"] == 3
    assert "total_lines is unknown" in head.value["note"]
    assert used < 32 * 1024 * 1024, used
    before = _bytes_read()
    tail = await call(tool, file_path="huge.log", offset=9_999, limit=5)
    used = _bytes_read() - before
    lines = tail.value["content"].split("\n")
    assert lines[:2] == ["  9999\tline 9999", " 10000\tline 10000"]
    assert lines[2].startswith(" 10001\t") and "the whole line is over" in lines[2]
    assert tail.value["end_line"] == 10_001 and tail.value["next_offset"] == 10_002
    assert tail.value["total_lines"] is None
    assert used < 32 * 1024 * 1024, used


async def test_a_file_whose_rest_fits_the_count_limit_is_counted(tool, layout):
    path = layout.ws / "mid.txt"
    write_lines(path, 300_000)  # about 3.6 MB: under COUNT_LIMIT_BYTES
    result = await call(tool, file_path="mid.txt", limit=2)
    assert result.value["total_lines"] == 300_000 and result.value["next_offset"] == 3
