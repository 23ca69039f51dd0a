"""``python -m mcp_toolbridge`` and the ``mcp-toolbridge`` console script."""

import gc
import sys


def _import_cli() -> None:
    import mcp_toolbridge.cli  # noqa: F401 (the server's modules, the MCP SDK's among them)


def run() -> None:
    # Start-up allocates hundreds of thousands of long-lived objects (the SDK's and our
    # pydantic models, a catalog) and no garbage worth collecting: the cyclic collector ran
    # ~200 times during the imports alone, ~15 % of a start's CPU time. It stays off until the
    # start is done (cli.allocator.started), and what the start made is frozen then.
    gc.disable()
    from mcp_toolbridge.cache import answer_opening

    # A warm stdio start answers its opening from the start-up cache while the rest imports.
    answer_opening(sys.argv[1:], _import_cli)
    from mcp_toolbridge.cli import main

    raise SystemExit(main())


if __name__ == "__main__":
    run()
