"""``config``: a client's config file content for this installation."""

from __future__ import annotations

import argparse
import json

from mcp_toolbridge.cli.clients import CLIENTS, client_config, fitting_expose, serving_options
from mcp_toolbridge.cli.console import EXIT_OK, err, out


def add_client_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--client", choices=sorted(CLIENTS), required=True)


def print_config(args: argparse.Namespace) -> int:
    """Print the client's config file content for this installation."""
    kind = CLIENTS[args.client]
    fits = fitting_expose(kind, args.locked)
    snippet = client_config(
        args.client,
        args.paths,
        policy=args.policy,
        workspace=args.workspace,
        options=serving_options(args, expose=False),
        expose=args.expose or fits,
    )
    out(json.dumps(snippet, indent=2))
    err(f"{kind.title}: put this in {kind.files}; merge it with any servers already there")
    if args.expose is None and fits != "auto":
        err(f"{kind.title}: --expose {fits}: {kind.expose_why}")
    return EXIT_OK
