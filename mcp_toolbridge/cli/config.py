"""``config``: a client's config file content for this installation, and its install links;
``doctor``, which checks such a config as the client launches it, is reached from here (its
module is imported by that verb alone)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from mcp_toolbridge.cli.clients import (
    CLIENTS,
    SERVER_NAME,
    client_config,
    fitting_expose,
    serving_options,
)
from mcp_toolbridge.cli.console import EXIT_OK, err, out
from mcp_toolbridge.cli.installed import temporary_warning
from mcp_toolbridge.cli.links import install_links

if TYPE_CHECKING:
    from mcp_toolbridge.cli.doctor import Parse, SettingsOf


def add_client_option(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    parser.add_argument(
        "--client", choices=sorted(CLIENTS), required=required, help="the MCP client"
    )


def print_config(args: argparse.Namespace) -> int:
    """Print the client's config file content for this installation (stdout), where it goes
    and the client's install links (stderr)."""
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
    for link in install_links(args.client, SERVER_NAME, snippet[kind.top_key][SERVER_NAME]):
        err(f"{link.what}:\n  {link.text}")
    warning = temporary_warning()
    if warning is not None:
        err(f"mcp-toolbridge: {warning}")
    for gone in _missing(args):
        err(
            f"mcp-toolbridge: {gone}; correct it, then check the entry with "
            f"`mcp-toolbridge doctor --client {args.client}`"
        )
    return EXIT_OK


def _missing(args: argparse.Namespace) -> list[str]:
    """What the entry names that is not there: a manifest path, the policy file, the
    workspace folder (a client variable such as ``${workspaceFolder}`` is not checked)."""
    stops = "the server this entry starts would refuse to start"
    found = [f"{path} does not exist: {stops}" for path in args.paths if not path.exists()]
    if args.policy is not None and not args.policy.is_file():
        found.append(f"the policy file {args.policy} does not exist: {stops}")
    workspace = args.workspace
    if workspace is not None and "${" not in str(workspace) and not workspace.is_dir():
        found.append(
            f"the workspace {workspace} is not a folder: the file tools and bash of the server "
            "this entry starts would fail every call"
        )
    return found


def run_doctor(args: argparse.Namespace, parse: Parse, settings_of: SettingsOf) -> int:
    """The ``doctor`` verb (doctor.py, imported by this verb, not by every start)."""
    from mcp_toolbridge.cli.doctor import run_doctor as run

    return run(args, parse, settings_of)


__all__ = ["add_client_option", "print_config", "run_doctor"]
