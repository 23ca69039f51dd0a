"""The command line as typed: the top-level parser, each verb's options, and the Settings a
parsed command line loads and serves with.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mcp_toolbridge import __version__
from mcp_toolbridge.builtins import LOCKED_IDS, parse_locked
from mcp_toolbridge.cli.config import add_client_option
from mcp_toolbridge.cli.serve import add_serve_options
from mcp_toolbridge.cli.values import one_allowed, positive, seconds
from mcp_toolbridge.errors import ConfigError
from mcp_toolbridge.executors import DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT_S
from mcp_toolbridge.runtime import Settings

POLICY_SHOW = "policy show"
"""The key of ``policy show``'s parser among the verbs' parsers."""


def _add_load_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="*",
        default=[],  # not required (argparse marks a "*" positional without one required)
        type=user_path,
        metavar="PATH",
        help="manifest files or folders to search (default: the bundled examples)",
    )
    parser.add_argument(
        "--keep-names",
        action="store_true",
        help="serve manifest ids as written (SEP-986: [A-Za-z0-9._-]{1,128}, dots allowed) "
        "instead of sanitizing them to [A-Za-z0-9_-]{1,64}; for clients that accept dots",
    )
    parser.add_argument(
        "--pin",
        action="append",
        default=[],
        metavar="NAME",
        help="always list this tool, whatever --expose says (an MCP name or manifest id; "
        "globs such as 'git_*' allowed; repeatable; also the policy's [discovery] pin)",
    )
    parser.add_argument(
        "--no-index-cache",
        action="store_true",
        help="load every manifest and build the search index afresh, and cache nothing "
        "(default: unchanged manifests and the index come from the user cache folder)",
    )


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout",
        type=seconds,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help="default per-call deadline when a manifest sets none (default 60)",
    )
    parser.add_argument(
        "--max-concurrency",
        type=positive,
        default=None,
        metavar="N",
        help="calls executing at once (default 2 x cores); question and task, which wait on a "
        "person or the client's model, are not counted",
    )
    parser.add_argument(
        "--max-output",
        type=positive,
        default=DEFAULT_MAX_OUTPUT_BYTES,
        metavar="BYTES",
        help="cap on a tool's stdout and on an HTTP response (default 10 MiB)",
    )
    parser.add_argument(
        "--secrets",
        type=_file_or_none,
        default=None,
        metavar="FILE",
        help="TOML file of secret values (empty: none)",
    )
    parser.add_argument(
        "--audit",
        type=user_path,
        default=None,
        metavar="FILE",
        help="append one NDJSON line per call here (default: the user data directory)",
    )
    parser.add_argument("--no-audit", action="store_true", help="write no audit log")


def _add_policy_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--policy",
        type=_file_or_none,
        default=None,
        metavar="FILE",
        help="the operator's policy (TOML); default (or empty): the built-in default policy",
    )
    parser.add_argument(
        "--allow",
        action="append",
        type=one_allowed,
        default=[],
        metavar="NAME[=PATTERN]",
        help="allow without asking, over the policy: a tool or capability (NAME=PATTERN: one "
        "path, host or command of it), a glob of tool names ('fx_*'), or every tool of a "
        "manifest (its file or folder: ./manifests/fx); repeatable, one name each, e.g. "
        "--allow fs_rm --allow 'bash=git status'",
    )
    parser.add_argument(
        "--workspace",
        type=user_path,
        default=None,
        metavar="DIR",
        help="the folder the file tools and bash work in (default: the client's MCP roots, "
        "else the working directory unless it is / or the home folder)",
    )
    parser.add_argument(
        "--ad-hoc",
        type=user_path,
        action="append",
        default=[],
        metavar="DIR",
        help="a folder the {ad-hoc} policy variable expands to (repeatable; default none)",
    )
    parser.add_argument(
        "--sandbox",
        choices=["auto", "required", "off"],
        default=None,
        help="run every process a call starts in an OS sandbox built from the tool's "
        "capabilities: auto (default: where the platform can), required (refuse to start "
        "without it), off; default: the policy's [sandbox] mode",
    )
    parser.add_argument(
        "--locked",
        type=_locked_names,
        default=LOCKED_IDS,
        metavar="LIST",
        help="which locked tools to serve: all (default), none, or a comma-separated list "
        "such as read,glob,grep,tool_search",
    )
    parser.add_argument(
        "--skills",
        type=user_path,
        action="append",
        default=[],
        metavar="DIR",
        help="a folder of skills (SKILL.md folders) for the skill tool; repeatable "
        "(default: <workspace>/.toolbridge/skills and the user data directory's skills)",
    )


def _file_or_none(text: str) -> Path | None:
    """A file option's value; empty means none, as a launcher that fills options in from
    settings the user left blank writes it (an MCP bundle's ``--policy=${user_config.policy}``)."""
    return user_path(text) if text else None


def user_path(text: str) -> Path:
    """A path given on the command line, a leading ``~`` the home folder as a shell reads it:
    a client starts servers without a shell, so ``--workspace ~/code/proj`` copied into its
    config arrives as written."""
    try:
        return Path(text).expanduser()
    except RuntimeError:  # no home folder can be determined: the path as written
        return Path(text)


def _locked_names(text: str) -> tuple[str, ...]:
    try:
        return parse_locked(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def _serve(verbs: Subparsers) -> None:
    serve = verbs.add_parser("serve", help="serve the tools over MCP (stdio, or HTTP)")
    _add_serve_options(serve)


def _replay(verbs: Subparsers) -> None:
    replay = verbs.add_parser(
        "replay", help="serve recorded results (serve --record DIR) instead of running tools"
    )
    replay.add_argument("recording", type=user_path, metavar="DIR", help="the --record folder")
    _add_serve_options(replay)


def _lint(verbs: Subparsers) -> None:
    lint = verbs.add_parser("lint", help="check manifests; exit 1 when there are problems")
    _add_load_options(lint)
    _add_policy_options(lint)
    lint.add_argument(
        "--format", choices=["text", "json"], default="text", help="how to print (default text)"
    )


def _list(verbs: Subparsers) -> None:
    listing = verbs.add_parser("list", help="list the tools the manifests declare")
    _add_load_options(listing)
    _add_policy_options(listing)
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _call(verbs: Subparsers) -> None:
    call = verbs.add_parser("call", help="call one tool through the same pipeline as MCP")
    call.add_argument("tool", metavar="TOOL", help="the MCP name or the manifest id")
    call.add_argument("--args", default="{}", metavar="JSON", help="the arguments object")
    _add_load_options(call)
    _add_run_options(call)
    _add_policy_options(call)


def _search(verbs: Subparsers) -> None:
    search = verbs.add_parser("search", help="search the tools as tool_search does")
    search.add_argument("query", metavar="QUERY", help="what the tool should do, in words")
    _add_load_options(search)
    _add_policy_options(search)
    search.add_argument("-k", type=int, default=5, metavar="N", help="how many results (5)")
    search.add_argument("--json", action="store_true", help="print JSON")


def _policy(verbs: Subparsers) -> argparse.ArgumentParser:
    policy = verbs.add_parser("policy", help="show the effective policy (policy show)")
    policy_verbs = policy.add_subparsers(dest="policy_verb", metavar="VERB")
    show: argparse.ArgumentParser = policy_verbs.add_parser(
        "show", help="the merged policy as JSON, rule by rule"
    )
    _add_load_options(show)
    _add_policy_options(show)
    who = show.add_argument_group("as a caller (what an identified caller gets over HTTP)")
    who.add_argument("--as", dest="as_subject", metavar="SUBJECT", help="the access token's sub")
    who.add_argument("--as-client", metavar="CLIENT_ID", help="the OAuth client it came through")
    who.add_argument(
        "--as-group", action="append", default=[], metavar="GROUP", help="a group (repeatable)"
    )
    who.add_argument(
        "--as-scope", action="append", default=[], metavar="SCOPE", help="a scope (repeatable)"
    )
    policy.set_defaults(policy_help=policy.format_help())
    return show


def _export(verbs: Subparsers) -> None:
    export = verbs.add_parser("export", help="print the tools as OpenAI functions or MCP tools")
    export.add_argument(
        "--format", choices=["openai", "mcp"], required=True, help="OpenAI functions or MCP tools"
    )
    _add_load_options(export)
    _add_policy_options(export)


def _inspect(verbs: Subparsers) -> None:
    inspect = verbs.add_parser("inspect", help="print a tool's full Tool Interface record (JSON)")
    inspect.add_argument("tool", metavar="TOOL", help="the MCP name or the manifest id")
    _add_load_options(inspect)
    _add_run_options(inspect)
    _add_policy_options(inspect)
    _add_expose_option(inspect)


def _doctor(verbs: Subparsers) -> None:
    doctor = verbs.add_parser(
        "doctor",
        help="check this machine and the server a client would start, as it starts it; "
        "exit 1 on a problem",
    )
    add_client_option(doctor, required=False)
    doctor.add_argument(
        "--config",
        type=user_path,
        default=None,
        metavar="FILE",
        help="check the entry of this client config file that starts mcp-toolbridge "
        "(default: the entry `config --client NAME` writes)",
    )
    _add_load_options(doctor)
    _add_policy_options(doctor)


def _config(verbs: Subparsers) -> None:
    config = verbs.add_parser("config", help="print a client's config for this installation")
    add_client_option(config)
    _add_load_options(config)
    _add_policy_options(config)
    _add_expose_option(config, default=None)  # None: the mode that fits the client


def _console_url(verbs: Subparsers) -> None:
    console_url = verbs.add_parser(
        "console-url",
        help="print a one-time URL that opens the console of a server running on this machine "
        "(as this user)",
    )
    console_url.add_argument(
        "--pid", type=int, default=None, metavar="PID", help="only the server of this process"
    )


Subparsers = Any  # argparse's _SubParsersAction (private)
VERBS: dict[str, Callable[[Subparsers], object]] = {
    "serve": _serve,
    "replay": _replay,
    "lint": _lint,
    "list": _list,
    "call": _call,
    "search": _search,
    "policy": _policy,
    "export": _export,
    "inspect": _inspect,
    "config": _config,
    "doctor": _doctor,
    "console-url": _console_url,
}


def _parser(
    only: str | None = None,
) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The top-level parser, and each verb's parser by name; with ``only``, that verb's
    alone (building all twelve costs a start ≈ 3 ms of CPU; a command line that names its verb
    first needs only that one)."""
    parser = argparse.ArgumentParser(
        prog="mcp-toolbridge",
        description="Serve agentcli, AgentPM and Runloop tool manifests as MCP tools.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    found: dict[str, argparse.ArgumentParser] = {}
    for name, build in VERBS.items():
        if only is None or name == only:
            made = build(verbs)
            if isinstance(made, argparse.ArgumentParser):  # policy's own verb: show
                found[POLICY_SHOW] = made
    return parser, {**verbs.choices, **found}


def _add_serve_options(parser: argparse.ArgumentParser) -> None:
    _add_load_options(parser)
    _add_run_options(parser)
    _add_policy_options(parser)
    _add_expose_option(parser)
    parser.add_argument(
        "--skip-invalid",
        action="store_true",
        help="serve the valid tools when some manifests have problems (they are logged)",
    )
    parser.add_argument(
        "--record",
        type=user_path,
        default=None,
        metavar="DIR",
        help="write CT_TOOL_CALL/CT_TOOL_RESULT frames of every call as JSONL into DIR",
    )
    add_serve_options(parser)


EXPOSE_HELP = (
    "list every tool (all), or the locked tools, tool_search, call_tool and the pinned tools "
    "(search); auto: search past 64 manifest tools"
)


def _add_expose_option(parser: argparse.ArgumentParser, default: str | None = "auto") -> None:
    parser.add_argument(
        "--expose", choices=["auto", "search", "all"], default=default, help=EXPOSE_HELP
    )


def _settings(args: argparse.Namespace) -> Settings:
    return Settings(
        paths=args.paths,
        timeout_s=getattr(args, "timeout", DEFAULT_TIMEOUT_S),
        max_output_bytes=getattr(args, "max_output", DEFAULT_MAX_OUTPUT_BYTES),
        max_concurrency=getattr(args, "max_concurrency", None),
        secrets_file=getattr(args, "secrets", None),
        policy_file=getattr(args, "policy", None),
        workspace=getattr(args, "workspace", None),
        audit_path=getattr(args, "audit", None),
        audit=not getattr(args, "no_audit", False),
        locked=getattr(args, "locked", LOCKED_IDS),
        skills_dirs=tuple(getattr(args, "skills", ())),
        ad_hoc=tuple(getattr(args, "ad_hoc", ())),
        keep_names=getattr(args, "keep_names", False),
        sandbox=getattr(args, "sandbox", None),
        pins=tuple(getattr(args, "pin", ())),
        allow=tuple(getattr(args, "allow", ())),
        cache=not getattr(args, "no_index_cache", False),
        progress=True,
    )


_TOP_LEVEL = frozenset({"-h", "--help", "--version"})


def _verb_first(given: list[str]) -> list[str]:
    """The command line with its verb first: the options written before the verb
    (``--sandbox off serve``) move to just after it, in their order, so that the verb's own
    parser reads them wherever they were. Unchanged when the verb already comes first, when
    there is no verb, when ``--help`` or ``--version`` comes before it (the top-level parser
    answers those), or when a word that is neither an option, an option's value nor a verb
    comes first (argparse then says what is wrong)."""
    if not given or given[0] in VERBS:
        return given
    _, verbs = _parser()  # every verb's options: which of them take a value
    options: dict[str, bool] = {}
    for parser in verbs.values():
        for action in parser._actions:
            for option in action.option_strings:
                options[option] = options.get(option, False) or action.nargs != 0
    at = 0
    while at < len(given):
        word = given[at]
        if word in VERBS:
            return [word, *given[:at], *given[at + 1 :]]
        if word in _TOP_LEVEL or word == "--" or not word.startswith("-"):
            return given
        at += 2 if "=" not in word and _takes_value(word, options) else 1
    return given


def _takes_value(option: str, options: dict[str, bool]) -> bool:
    """Whether ``option`` (as typed: whole, or an unambiguous prefix of a long option, as
    argparse accepts) reads the next word as its value."""
    if option in options:
        return options[option]
    if not option.startswith("--"):
        return False  # -k5: the value is attached
    found = [takes for name, takes in options.items() if name.startswith(option)]
    return bool(found) and all(found)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line parsed (argparse exits with status 2 on a usage error).

    Options may come before the verb (``--sandbox off serve``; see :func:`_verb_first`), and
    a verb's options before, between or after its positional arguments
    (``call TOOL DIR --args JSON``), and a usage error shows that verb's usage, not the
    top-level one: the verb's own parser parses everything after the verb, intermixed.
    ``policy`` has a verb of its own (argparse mixes no subparsers with intermixed parsing):
    ``policy show`` (or ``policy --show``), options anywhere, is parsed by show's parser;
    ``policy`` without it by policy's, which prints its help."""
    given = _verb_first(list(sys.argv[1:] if argv is None else argv))
    parser, verbs = _parser(given[0] if given and given[0] in VERBS else None)
    if given and given[0][:1] not in ("", "-") and given[0] not in VERBS:
        import difflib  # a misspelt verb alone: not on every start

        from mcp_toolbridge.cli.unknown import VERBS_ELSEWHERE

        if (elsewhere := VERBS_ELSEWHERE.get(given[0].lower())) is not None:
            parser.error(f"unknown verb {given[0]!r}; {elsewhere}")
        if meant := difflib.get_close_matches(given[0], VERBS, n=1):  # argparse says no more
            parser.error(f"unknown verb {given[0]!r}; did you mean {meant[0]!r}?")
    if not given or given[0] not in verbs or given[0] == POLICY_SHOW:
        return parser.parse_args(given)  # --version, --help, a missing or unknown verb
    if given[0] == "policy":
        rest = given[1:]
        if "--show" in rest:  # the earlier spelling of `policy show`
            rest = [a for a in rest if a != "--show"]
        elif "show" in rest:
            rest.remove("show")
        else:
            return parser.parse_args(given)  # policy's help, or its usage error
        args = verbs[POLICY_SHOW].parse_intermixed_args(rest)
        args.verb, args.policy_verb = "policy", "show"
        return args
    args = verbs[given[0]].parse_intermixed_args(given[1:])
    args.verb = given[0]
    if getattr(args, "no_audit", False) and args.audit is not None:
        verbs[given[0]].error("--audit FILE and --no-audit exclude each other: drop one")
    return args


def settings_of(args: argparse.Namespace) -> Settings:
    """The Settings a parsed command line loads and serves with."""
    return _settings(args)
