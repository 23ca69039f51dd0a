"""``serve --loop``: which event loop anyio is asked for."""

from __future__ import annotations

import pytest

from mcp_toolbridge.cli import event_loop
from mcp_toolbridge.cli.event_loop import backend_options, uvloop_installed
from mcp_toolbridge.errors import ConfigError


def test_asyncio_asks_for_nothing_special() -> None:
    assert backend_options("asyncio") == {}


@pytest.mark.skipif(not uvloop_installed(), reason="uvloop is not installed here")
def test_auto_and_uvloop_ask_for_uvloop_where_it_is_installed() -> None:
    assert backend_options("auto") == backend_options("uvloop") == {"use_uvloop": True}


def test_without_uvloop_auto_falls_back_and_uvloop_is_refused_with_the_way_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(event_loop, "uvloop_installed", lambda: False)
    assert backend_options("auto") == {}
    with pytest.raises(ConfigError, match="--loop asyncio"):
        backend_options("uvloop")
