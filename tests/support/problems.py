"""Load problems as the tests compare them."""

from __future__ import annotations

import dataclasses

from mcp_toolbridge.errors import Problem


def unlined(problem: Problem) -> str:
    """``problem`` as printed, without its line: the tests of a message's text do not also
    pin where it is written (tests/loaders/test_json_lines.py does)."""
    return dataclasses.replace(problem, line=None).render()
