"""A redaction marker never replaces a secret in a file. Through the SDK client in both
protocol eras: read of a real file holding a real-looking AWS key pair shows the model
``[REDACTED:<rule-id>]``; the model writing that text back whole is refused (the file keeps its
secret, byte for byte) with a message that says what the marker is and to use edit; edit
changes the lines around the secret, refuses an old_string holding the marker with its own
message, and may add a marker as text; a new file, or a file that holds the marker text
itself, takes markers from write."""

from __future__ import annotations

import random
import re
import string
from pathlib import Path

import pytest

from mcp_toolbridge.leaks import count_markers, marker
from mcp_toolbridge.runtime import Settings
from tests.support.results import text_of
from tests.support.served import OPEN_POLICY, error_text, locked_settings, served_client

MODES = ["auto", "legacy"]
_rng = random.Random(2025)
AWS_ID = "AKIA" + "".join(_rng.choice("QRSTUVWXYZ234567") for _ in range(16))
AWS_SECRET = "".join(_rng.choice(string.ascii_letters + string.digits + "/+") for _ in range(40))
DEPLOY = f"""#!/bin/sh
# deploy settings
export AWS_REGION=eu-west-1
export AWS_ACCESS_KEY_ID={AWS_ID}
export AWS_SECRET_ACCESS_KEY={AWS_SECRET}
export RETRIES=3
"""
ID_MARKER = marker("aws-access-token")
SECRET_MARKER = marker("aws-secret-access-key")
POLICY = OPEN_POLICY
_LINE_PREFIX = re.compile(r"^ *\d+\t", re.MULTILINE)


def _workspace(tmp_path: Path) -> tuple[Path, Settings]:
    settings = locked_settings(tmp_path, POLICY)
    assert settings.workspace is not None
    (settings.workspace / "deploy.sh").write_text(DEPLOY, encoding="utf-8")
    return settings.workspace, settings


def _as_read(text: str) -> str:
    """The file's content as the model saw it: read's text without its line numbers."""
    return _LINE_PREFIX.sub("", text)


@pytest.mark.parametrize("mode", MODES)
async def test_a_file_read_with_a_redacted_key_and_written_back_whole_keeps_its_secret(
    tmp_path: Path, mode: str
) -> None:
    workspace, settings = _workspace(tmp_path)
    async with served_client(settings, mode, locked=True) as client:
        read = await client.call_tool("read", {"file_path": "deploy.sh"})
        seen = _as_read(text_of(read))
        assert AWS_SECRET not in seen and AWS_ID not in seen
        assert f"export AWS_SECRET_ACCESS_KEY={SECRET_MARKER}" in seen
        rewritten = seen.replace("RETRIES=3", "RETRIES=5")
        refused = await client.call_tool("write", {"file_path": "deploy.sh", "content": rewritten})
        message = error_text(refused)
        assert (workspace / "deploy.sh").read_text(encoding="utf-8") == DEPLOY
        assert message.startswith("nothing was written: content holds [REDACTED:")
        assert SECRET_MARKER in message and ID_MARKER in message
        assert "stands for a secret the file holds" in message
        assert "with edit instead" in message
        edited = await client.call_tool(
            "edit",
            {"file_path": "deploy.sh", "old_string": "RETRIES=3", "new_string": "RETRIES=5"},
        )
        assert not edited.is_error, edited
    assert (workspace / "deploy.sh").read_text(encoding="utf-8") == DEPLOY.replace(
        "RETRIES=3", "RETRIES=5"
    )


@pytest.mark.parametrize("mode", MODES)
async def test_edit_of_a_line_with_a_marker_says_to_leave_it_out_and_around_it_works(
    tmp_path: Path, mode: str
) -> None:
    workspace, settings = _workspace(tmp_path)
    async with served_client(settings, mode, locked=True) as client:
        refused = await client.call_tool(
            "edit",
            {
                "file_path": "deploy.sh",
                "old_string": f"export AWS_SECRET_ACCESS_KEY={SECRET_MARKER}\nexport RETRIES=3",
                "new_string": f"export AWS_SECRET_ACCESS_KEY={SECRET_MARKER}\nexport RETRIES=5",
            },
        )
        message = error_text(refused)
        assert message.startswith(
            f"old_string was not found in deploy.sh: it holds {SECRET_MARKER}"
        )
        assert "stands for a secret the file holds" in message
        assert "Leave the marker out of old_string" in message
        assert "Closest lines" not in message
        assert (workspace / "deploy.sh").read_text(encoding="utf-8") == DEPLOY
        renamed = await client.call_tool(  # the text before the marker, on its line
            "edit",
            {
                "file_path": "deploy.sh",
                "old_string": "export AWS_SECRET_ACCESS_KEY=",
                "new_string": f"# was {SECRET_MARKER} until rotated\nexport AWS_SECRET_KEY=",
            },
        )
        assert not renamed.is_error, renamed
    kept = (workspace / "deploy.sh").read_text(encoding="utf-8")
    assert f"export AWS_SECRET_KEY={AWS_SECRET}\n" in kept
    assert f"# was {SECRET_MARKER} until rotated\n" in kept  # new_string may add a marker
    assert f"export AWS_ACCESS_KEY_ID={AWS_ID}\n" in kept


@pytest.mark.parametrize("mode", MODES)
async def test_write_takes_markers_in_a_new_file_and_as_often_as_the_file_holds_them(
    tmp_path: Path, mode: str
) -> None:
    workspace, settings = _workspace(tmp_path)
    doc = f"# Redaction\n\nA secret comes back as {SECRET_MARKER}.\n"
    async with served_client(settings, mode, locked=True) as client:
        created = await client.call_tool(
            "write", {"file_path": "docs/redaction.md", "content": doc}
        )
        assert not created.is_error, created
        again = doc + "\nThe rest of the output is kept.\n"
        rewritten = await client.call_tool(
            "write", {"file_path": "docs/redaction.md", "content": again}
        )
        assert not rewritten.is_error, rewritten
        twice = again + f"\nTwo keys: {SECRET_MARKER} and {ID_MARKER}.\n"
        refused = await client.call_tool(
            "write", {"file_path": "docs/redaction.md", "content": twice}
        )
        message = error_text(refused)
        assert f"{SECRET_MARKER} 2 times (the file: 1)" in message
        assert f"{ID_MARKER} 1 time (the file: 0)" in message
        added = await client.call_tool(
            "edit",
            {
                "file_path": "docs/redaction.md",
                "old_string": "The rest of the output is kept.\n",
                "new_string": f"The rest of the output is kept.\n\nTwo keys: {ID_MARKER}.\n",
            },
        )
        assert not added.is_error, added
    assert (workspace / "docs" / "redaction.md").read_text(encoding="utf-8") == (
        again + f"\nTwo keys: {ID_MARKER}.\n"
    )


def test_markers_are_counted_once_across_the_pieces_a_file_is_read_in() -> None:
    data = (f"a {SECRET_MARKER} b " * 50 + ID_MARKER + "[REDACTED:x-" * 3).encode()
    wanted = [SECRET_MARKER, ID_MARKER, marker("x")]
    whole = count_markers([data], wanted)
    assert whole == {SECRET_MARKER: 50, ID_MARKER: 1}
    for size in (1, 7, len(SECRET_MARKER), 64, 100, 1000):
        pieces = [data[i : i + size] for i in range(0, len(data), size)]
        assert count_markers(pieces, wanted) == whole, size
    assert count_markers([data], [ID_MARKER]) == {ID_MARKER: 1}
