"""The command line: argument parsing and the verbs (serve, lint, list, search, call, inspect,
export, replay, config, doctor, policy), the event loop choice, reload on change, client configs
and their install links, and what launches this installation.

May import: everything below it (runtime, server, and the packages they use)."""

from mcp_toolbridge.cli.main import main

__all__ = ["main"]
