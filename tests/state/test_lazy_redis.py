"""A server without ``--state redis://...`` never imports the Redis client (about 0.2 s of its
start-up: redis-py brings the OpenTelemetry SDK along)."""

from __future__ import annotations

from mcp_toolbridge.state import RedisLink
from tests.support.fresh_python import run_json_script


def test_serving_imports_no_redis_client_until_a_link_is_made() -> None:
    code = (
        "import json, sys\n"
        "import mcp_toolbridge.cli.main, mcp_toolbridge.cli.serve, mcp_toolbridge.cli.http\n"
        "import mcp_toolbridge.server, mcp_toolbridge.state, mcp_toolbridge.console\n"
        "before = sorted(m for m in sys.modules if m == 'redis' or m.startswith('redis.'))\n"
        "from mcp_toolbridge.state import RedisLink\n"
        "RedisLink('redis://127.0.0.1:1/0')\n"
        "print(json.dumps([before, 'redis.asyncio' in sys.modules]))\n"
    )
    assert run_json_script(code) == [[], True]


async def test_a_link_to_nothing_fails_closed_with_the_redis_client_loaded_late() -> None:
    link = RedisLink("redis://127.0.0.1:1/0", timeout_s=1.0)
    try:
        assert await link.ping() is False  # connection refused: StateUnavailable inside
    finally:
        await link.aclose()
