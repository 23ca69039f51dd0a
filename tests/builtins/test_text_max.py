"""The locked tools' paths, patterns and queries are bounded (``maxLength`` 4,096, TEXT_MAX):
one over-long value held the whole server for seconds, every other client waiting (the
second red-team pass of 2026-11-29: a 3.5 MB tool_search query 16 s, a 700 KB grep pattern
3.7 s, a 40 KB glob path 2.7 s). Now each is refused by the input schema at once, saying
the bound, and nothing runs."""

from __future__ import annotations

from pathlib import Path

from mcp_toolbridge.builtins.base import TEXT_MAX
from tests.support.served import error_text, locked_settings, served_client

LONG = "x" * (TEXT_MAX + 1)


async def test_an_over_long_query_pattern_or_path_is_refused_by_the_schema(tmp_path: Path):
    settings = locked_settings(tmp_path)
    calls = [
        ("tool_search", {"query": LONG}, "/query"),
        ("grep", {"pattern": LONG}, "/pattern"),
        ("grep", {"pattern": "x", "glob": LONG}, "/glob"),
        ("glob", {"pattern": LONG}, "/pattern"),
        ("glob", {"pattern": "*", "path": LONG}, "/path"),
        ("read", {"file_path": LONG}, "/file_path"),
    ]
    async with served_client(settings, locked=True) as client:
        for tool, arguments, where in calls:
            error = error_text(await client.call_tool(tool, arguments))
            expected = f"at {where}: expected at most {TEXT_MAX} characters; got {TEXT_MAX + 1}"
            assert expected in error, (tool, error[:200])
            assert len(error) < 1000, (tool, error[:200])
