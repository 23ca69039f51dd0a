#!/usr/bin/env python3
"""Write the HAProxy configuration for mcp-toolbridge replicas (docs/deploy.md).

    python3 deploy/haproxy.py --listen 0.0.0.0:8700 r1=10.0.0.11:8765 r2=10.0.0.12:8765 ...

Each replica is named as it was started (``serve --replica NAME``); its 2025-era session ids
start with ``NAME.``, and the configuration sends a request carrying such a session id to
that replica (clients such as Claude Code and Cursor send no cookies back, so the id is what
there is to route on). When that replica is down, the request goes to another one, which
answers 404 for a session it does not hold, and the client starts a new session (MCP's rule).
Everything else (initialize, 2026-07-28 requests, which need no routing) is balanced over the
replicas that are ready (``/readyz``: a stopping replica or one that lost Redis takes no new
traffic; a request it refuses while draining, 503 before reading it, is sent to another
replica). Streams are long: SSE responses and resumed GET streams stay open while a call
runs, so the client and server timeouts are an hour.

What HAProxy answers itself is a JSON-RPC error an MCP client shows its caller (a non-2xx JSON
body): above all 502, when the replica serving a request stopped before answering (killed,
crashed): it names the replica and says that a tool call may have run (its audit line, written
by a survivor, says ``lost``). HAProxy sends that 502 only to the first request of a client
connection, so each client connection carries one request (``option httpclose``;
``--keep-alive`` leaves it out, see docs/deploy.md for what each costs).

Standard library only: operators run it where HAProxy is configured; scripts/cluster and the
tests run this same file.
"""

from __future__ import annotations

import argparse
import json
import re
import sys

NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
CHECK = "check inter 500ms fall 2 rise 1"


LOST = -32001
"""The code of the error a survivor ends a 2025-era stream with, for the same loss."""
UNAVAILABLE = -32000
STOPPED = (
    "the server replica serving this request (%s) stopped before answering: it was killed, "
    "crashed or lost its machine (the load balancer got no answer from it). A tool call may "
    "have done part of its work: another replica records it in the audit log with outcome "
    "lost within seconds. Check the effects of the call before making it again; any other "
    "request may be sent again now, another replica answers it"
)
NONE_READY = (
    "no replica of this service can take requests now: they are starting, stopping, or "
    "cannot reach the shared state (Redis). Nothing was run. Retry in a few seconds; a "
    "2025-era session whose replica stopped then gets 404: start a new session"
)
SLOW = (
    "the server replica serving this request (%s) did not start its answer within the time "
    "the load balancer waits (timeout server): it is stuck or overloaded. A tool call may "
    "have done part of its work: check its effects before making it again"
)


def _answer(status: int, code: int, message: str) -> str:
    """HAProxy's own answer ``status`` as a JSON-RPC error with no id (HAProxy cannot know
    it; a client takes it as its request's): an MCP SDK client shows the error of a non-2xx
    JSON body to its caller. ``%s`` in ``message`` is the name of the server (the replica)."""
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}})
    kind = "lf-string" if "%s" in message else "string"
    return f"    http-error status {status} content-type application/json {kind} '{body}'"


ONE_REQUEST_PER_CONNECTION = [
    "    # One request per client connection: HAProxy answers 502 only to the first request",
    "    # of a connection; a later one whose replica dies is cut without a word, for the",
    "    # client to send it again, which a tool call must not be (it may have run).",
    "    option httpclose",
]
ANSWERS = [
    "    # What the load balancer answers itself, as JSON-RPC errors an MCP client shows (a",
    "    # non-2xx JSON body): a replica that stopped mid-request (%s: the server's name), none",
    "    # ready, one too slow. A response already under way (SSE) cannot be changed: it ends.",
    _answer(502, LOST, STOPPED),
    _answer(503, UNAVAILABLE, NONE_READY),
    _answer(504, LOST, SLOW),
]


def render(
    listen: str,
    replicas: list[tuple[str, str]],
    *,
    resolve: bool = False,
    keep_alive: bool = False,
) -> str:
    """The configuration text for HAProxy 2.6 or later. ``resolve``: the addresses are DNS
    names that may not resolve yet and may move (Kubernetes pods): start anyway, and look
    them up again through the system's resolvers. ``keep_alive``: keep client connections
    open between requests (cheaper for clients far away; but a request whose replica dies,
    past the first of its connection, is then cut without HAProxy's 502)."""
    lines = [
        "# mcp-toolbridge replicas behind HAProxy: written by deploy/haproxy.py",
        "global",
        "    maxconn 4096",
        "",
    ]
    if resolve:
        lines += ["resolvers system", "    parse-resolv-conf", "    hold valid 5s", ""]
    lines += [
        "defaults",
        "    mode http",
        "    timeout connect 5s",
        "    timeout client 1h",
        "    timeout server 1h",
        "    timeout http-request 30s",
        "    option redispatch",
        "    retries 2",
        "    # A replica that is draining (SIGTERM) answers new work 503 before reading it, and a",
        "    # connection refused never reached one: both go to another replica. A response cut",
        "    # short is not retried (the call may have run).",
        "    retry-on conn-failure 503",
        "    option http-buffer-request",
        *([] if keep_alive else ONE_REQUEST_PER_CONNECTION),
        *ANSWERS,
    ]
    if resolve:
        lines.append("    default-server init-addr last,libc,none resolvers system")
    lines += [
        "",
        "frontend mcp",
        f"    bind {listen}",
    ]
    for name, _ in replicas:
        routed = f"{{ req.hdr(mcp-session-id) -m beg {name}. }}"
        lines.append(f"    use_backend replica_{name} if {routed}")
    lines += [
        "    default_backend replicas",
        "",
        "backend replicas",
        "    balance roundrobin",
        "    option httpchk GET /readyz",
    ]
    lines += [f"    server {name} {address} {CHECK}" for name, address in replicas]
    for name, address in replicas:
        lines += ["", f"backend replica_{name}"]
        lines.append(f"    server {name} {address} track replicas/{name}")
        lines += [
            f"    server {other} {where} track replicas/{other} backup"
            for other, where in replicas
            if other != name
        ]
    return "\n".join(lines) + "\n"


def _replica(text: str) -> tuple[str, str]:
    name, sep, address = text.partition("=")
    if not sep or not NAME.match(name) or ":" not in address:
        expected = "expected NAME=HOST:PORT, e.g. r1=10.0.0.11:8765"
        raise argparse.ArgumentTypeError(f"{text!r}: {expected}")
    return name, address


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listen", default="0.0.0.0:8700", help="where HAProxy listens")
    parser.add_argument(
        "--resolve",
        action="store_true",
        help="the addresses are DNS names (Kubernetes pods): resolve them at run time",
    )
    parser.add_argument(
        "--keep-alive",
        action="store_true",
        help="keep client connections open between requests (no 502 for a request whose "
        "replica dies past the first of its connection: it is cut without a word)",
    )
    parser.add_argument("replicas", nargs="+", type=_replica, metavar="NAME=HOST:PORT")
    args = parser.parse_args(argv)
    sys.stdout.write(
        render(args.listen, args.replicas, resolve=args.resolve, keep_alive=args.keep_alive)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
