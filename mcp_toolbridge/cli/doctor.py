"""``doctor``: check this machine, and the server launch a client would make, as it makes it.

Without ``--client`` it checks this installation as ``serve`` would run here, with the options
given. With ``--client NAME`` it checks the entry ``config --client NAME`` writes (or, with
``--config FILE``, the entry in that client config file that starts mcp-toolbridge), started
the way that client starts servers: its PATH (Claude Desktop, a GUI app, gets launchd's
minimal one on macOS: the classic ``spawn uvx ENOENT``) and its working directory.

Each check prints one line, ``ok`` or ``problem``, and a problem the fix on the next; what a
line quotes shows each character that hides or rewrites text as its escape (``host.visible``).
The exit status is 1 when there is a problem. The checks: the command resolves (and its script's
interpreter exists), the workspace exists and is not ``/`` or the home folder, the policy
parses, the manifests load, the OS sandbox works here (the sandbox's own probe says what stops
it), the index cache is writable, whether grep runs ripgrep or its built-in engine, and
whether tool_search also searches by meaning (the ``semantic`` extra).
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio

from mcp_toolbridge.cache import CACHE_DIR_ENV, default_cache_dir
from mcp_toolbridge.catalog import semantic_status
from mcp_toolbridge.cli.clients import CLIENTS, SERVER_NAME, client_config, serving_options
from mcp_toolbridge.cli.console import EXIT_OK, EXIT_PROBLEMS, counted, out, shown
from mcp_toolbridge.cli.entries import (
    Finding,
    argv_of,
    check_key,
    check_secrets,
    client_environ,
    entry_from_file,
    filled_in,
    shown_problems,
    variable_fix,
)
from mcp_toolbridge.cli.installed import (
    in_pipx_cache,
    in_uv_cache,
    server_command,
    source_problem,
)
from mcp_toolbridge.cli.programs import missing_programs
from mcp_toolbridge.errors import ToolbridgeError
from mcp_toolbridge.executors import probe_sandbox
from mcp_toolbridge.runtime import Settings, load_catalog, load_policy
from mcp_toolbridge.sandbox import Limits, Sandbox
from mcp_toolbridge.workspace import unfit_reason

GUI_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"
"""The PATH launchd gives an app started from the Dock or the Finder on macOS."""

VERBS = ("serve", "replay")

Parse = Callable[[Sequence[str]], argparse.Namespace]
SettingsOf = Callable[[argparse.Namespace], Settings]


@dataclass(frozen=True)
class ClientLaunch:
    """How a client starts servers: its PATH and working directory (None: the caller's)."""

    path: str
    cwd: str | None
    note: str


def client_launch(client: str | None, environ: dict[str, str]) -> ClientLaunch:
    here = environ.get("PATH", os.defpath)
    if client == "claude-desktop":
        return ClientLaunch(GUI_PATH, "/", "a GUI app: launchd's minimal PATH on macOS, in /")
    if client in ("vscode", "cursor"):
        # They read the login shell's environment at start, so PATH is the user's; their
        # working directory is not documented: the worst case, /.
        return ClientLaunch(here, "/", "the login shell's PATH, in a folder nobody chose")
    if client == "claude-code":
        return ClientLaunch(here, None, "the terminal's PATH, in the project folder")
    return ClientLaunch(here, None, "this shell")


def _entry(args: argparse.Namespace) -> dict[str, Any] | Finding:
    if args.config is not None:
        return entry_from_file(args.config)
    if args.client is None:
        return {"command": server_command()[0], "args": [*server_command()[1:], "serve"]}
    try:
        made = client_config(
            args.client,
            args.paths,
            policy=args.policy,
            workspace=args.workspace,
            options=serving_options(args, expose=False),
        )
    except ToolbridgeError as exc:
        return Finding(
            False, "workspace", exc.message, "run this in the project, or --workspace DIR"
        )
    entry: dict[str, Any] = made[CLIENTS[args.client].top_key][SERVER_NAME]
    return entry


def check_command(command: str, launch: ClientLaunch, title: str) -> list[Finding]:
    """The command resolves under the client's PATH, lasts, and its interpreter exists."""
    if "/" not in command:
        found = shutil.which(command, path=launch.path)
        if found is None:
            here = shutil.which(command)
            fix = (
                f'write its absolute path in the entry: "command": "{Path(here).absolute()}"'
                if here
                else f"install {command}, then write its absolute path in the entry"
            )
            return [
                Finding(
                    False,
                    "command",
                    f"{command} is not on {title}'s PATH ({launch.path}): it fails with "
                    f"`spawn {command} ENOENT`",
                    fix,
                )
            ]
        resolved = Path(found)
    else:
        resolved = Path(command)
        if not (resolved.is_file() and os.access(resolved, os.X_OK)):
            return [
                Finding(
                    False,
                    "command",
                    f"{command} is not an executable file",
                    "run `mcp-toolbridge config --client NAME` from the installation to use",
                )
            ]
    findings = [_lasting(resolved), _interpreter(resolved, launch)]
    return [f for f in findings if f is not None] or [Finding(True, "command", str(resolved))]


def _lasting(command: Path) -> Finding | None:
    prefix = command.parent.parent
    if in_uv_cache(prefix) or in_pipx_cache(prefix):
        return Finding(
            False,
            "command",
            f"{command} is in a launcher's cache, which is pruned",
            "name the launcher and the package: `uvx --from SOURCE mcp-toolbridge` "
            "(`mcp-toolbridge config` run through uvx writes it)",
        )
    if command.resolve().is_relative_to(Path(tempfile.gettempdir()).resolve()):
        return Finding(
            False,
            "command",
            f"{command} is in a temporary folder",
            "install it where it lasts (`uv tool install mcp-toolbridge` or `pipx install "
            "mcp-toolbridge`) and write the config from there",
        )
    return None


def _interpreter(command: Path, launch: ClientLaunch) -> Finding | None:
    """A script's ``#!`` interpreter must exist (a removed virtualenv leaves its scripts)."""
    try:
        with command.open("rb") as handle:
            first = handle.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", "replace").split()
    if not words:
        return None
    interpreter = words[0]
    if Path(interpreter).name == "env" and len(words) > 1:
        if shutil.which(words[1], path=launch.path) is None:
            return Finding(
                False,
                "command",
                f"{command} runs `{words[1]}`, which is not on the client's PATH",
                "reinstall mcp-toolbridge so that its script names its interpreter by path",
            )
        return None
    if not Path(interpreter).is_file():
        return Finding(
            False,
            "command",
            f"{command} runs {interpreter}, which no longer exists (its environment was "
            "removed or moved)",
            "reinstall mcp-toolbridge, then write the client's config again",
        )
    return None


def _serve_options(
    entry: dict[str, Any], launch: ClientLaunch, parse: Parse, args: argparse.Namespace
) -> argparse.Namespace | Finding:
    """The entry's ``serve`` arguments, parsed as serve parses them, the client's folder
    variable put in (relative paths are taken from the client's folder by
    :func:`_from_client_folder`)."""
    argv = argv_of(entry)[1:]
    kind = CLIENTS.get(args.client or "")
    if kind is not None and (folder := kind.folder(args.config)) is not None:
        argv = folder.expand(argv)
    verb = next((i for i, a in enumerate(argv) if a in VERBS), None)
    if verb is None:
        return Finding(
            False,
            "arguments",
            f"the entry starts no server (no `serve` in {argv})",
            "write the entry `mcp-toolbridge config --client NAME` prints",
        )
    try:
        parsed = parse(argv[verb:])
    except SystemExit:
        return Finding(False, "arguments", "the entry's arguments do not parse (above)", "fix them")
    return parsed


def _from_client_folder(
    parsed: argparse.Namespace, launch: ClientLaunch, title: str
) -> list[Finding]:
    """The entry's relative manifest and policy paths made absolute from the folder the client
    starts servers in, as the server reads them; a problem for each that is not there (a path
    written from the project, which the client does not start in)."""
    base = Path(launch.cwd) if launch.cwd else Path.cwd()
    given = [*parsed.paths, *([parsed.policy] if parsed.policy is not None else [])]
    problems = []
    for path in [p for p in given if not p.is_absolute() and not (base / p).exists()]:
        meant = Path.cwd() / path
        where = f': "{meant}"' if launch.cwd and meant.exists() else ""
        problems.append(
            Finding(
                False,
                "arguments",
                f"{path} is relative, and {title} starts servers in {base}, where it is "
                f"{base / path}, which is not there",
                f"write its absolute path in the entry{where}",
            )
        )
    parsed.paths = [p if p.is_absolute() else base / p for p in parsed.paths]
    if parsed.policy is not None and not parsed.policy.is_absolute():
        parsed.policy = base / parsed.policy
    return problems


def check_workspace(given: Path | None, launch: ClientLaunch, title: str) -> Finding:
    if given is not None and "${" in str(given):
        return Finding(True, "workspace", f"{given}: the folder {title} has open")
    if given is None:
        if launch.cwd is None:
            folder = Path.cwd()
            reason = unfit_reason(folder)
            if reason is None:
                return Finding(True, "workspace", f"{folder} (the working directory)")
            return Finding(
                False,
                "workspace",
                f"none: the working directory is {reason}; the file tools and bash refuse "
                "every call until a client sends MCP roots",
                "run it in the project folder, or add --workspace DIR",
            )
        return Finding(
            False,
            "workspace",
            f"none: {title} starts servers in {launch.cwd} and the entry names no "
            "--workspace, so the file tools and bash refuse every call",
            "add --workspace DIR to the entry (`mcp-toolbridge config --client ... "
            "--workspace DIR` writes it)",
        )
    if not given.is_dir():
        return Finding(False, "workspace", f"{given} is not a folder", "create it, or name another")
    reason = unfit_reason(given)
    if reason is not None:
        return Finding(
            False,
            "workspace",
            f"{given} is {reason}: it would open everything in it to the file tools and bash",
            "name the project folder with --workspace DIR",
        )
    return Finding(True, "workspace", str(given.resolve()))


def check_policy(settings: Settings) -> Finding:
    try:
        load_policy(settings)
    except ToolbridgeError as exc:
        return Finding(
            False, "policy", exc.message, "correct the policy file (docs/permissions.md)"
        )
    where = settings.policy_file or "the built-in default"
    return Finding(True, "policy", f"{where} parses")


NOT_CHECKED = Finding(
    False,
    "manifests",
    "not checked: they load under the policy, which does not",
    "correct the policy, then run doctor again",
)


def check_manifests(settings: Settings) -> list[Finding]:
    """The manifests load and their programs start; and, when tools declare secrets, that
    those are set (``secrets``)."""
    try:
        loaded = load_catalog(settings, locked=True)
    except ToolbridgeError as exc:
        return [Finding(False, "manifests", exc.message, "fix the settings named")]
    manifests = len(loaded.manifests.manifests)
    if loaded.errors:
        shown = shown_problems([p.render() for p in loaded.errors])
        valid = len(loaded.catalog.manifest_names())
        skip = f", or serve the {counted(valid, 'valid tool')} with --skip-invalid" if valid else ""
        fix = f"fix them (`mcp-toolbridge lint PATH` lists every one){skip}"
        if (given := variable_fix([p.message for p in loaded.errors])) is not None:
            fix = f"{given}; {fix}"  # AgentPM's environment.vars
        return [
            Finding(False, "manifests", f"{counted(len(loaded.errors), 'problem')}: {shown}", fix)
        ]
    specs = loaded.catalog.specs()
    own = [spec for spec in specs if not spec.is_locked]
    missing = missing_programs(own, settings.environ.get("PATH", ""))
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        found = Finding(
            False,
            "manifests",
            f"{counted(len(missing), 'tool')} cannot start: {'; '.join(missing[:3])}{more}",
            "install the program, or correct the command in the manifest (chmod +x a script)",
        )
    else:
        locked = loaded.catalog.locked_count()
        said = f"{counted(len(own), 'tool')} from {counted(manifests, 'manifest')}"
        found = Finding(True, "manifests", f"{said}, and {counted(locked, 'locked tool')}")
    secrets = check_secrets(own, dict(settings.environ), settings.secrets_file)
    return [found, *([secrets] if secrets is not None else [])]


def check_sandbox(settings: Settings, environ: dict[str, str]) -> Finding:
    try:
        config = load_policy(settings).file.sandbox
        mode, mask = settings.sandbox or config.mode, tuple(config.mask)
        limits: Limits | None = Limits.of(config)
    except ToolbridgeError:  # reported by the policy check; the default [sandbox] meanwhile
        mode, mask, limits = settings.sandbox or "auto", (), None
    if mode == "off":
        return Finding(True, "sandbox", "off: tools run without the OS sandbox (as asked)")
    sandbox = Sandbox.from_environ(mode, environ, mask, limits)
    try:  # reported here, not on stderr
        support = anyio.run(functools.partial(probe_sandbox, sandbox, say=False))
    finally:
        sandbox.close()
    if support.ok:
        said = f"bubblewrap works here ({sandbox.bwrap}); mode {mode}"
        said += f"; limits: {sandbox.describe_limits()}"
        said += f"; {sandbox.describe_filter()}"
        return Finding(True, "sandbox", said)
    what = (
        "the server refuses to start (--sandbox required)"
        if mode == "required"
        else "tools run WITHOUT it"
    )
    fix = "\n".join(
        [
            *support.explain()[1:],
            "or start with --sandbox off to run tools without it knowingly",
        ]
    )
    return Finding(False, "sandbox", f"{support.reason}; {what}", fix)


def check_cache(settings: Settings) -> Finding:
    if not settings.cache:
        return Finding(True, "index cache", "off (--no-index-cache)")
    folder = default_cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".doctor-"):
            pass
    except OSError as exc:
        return Finding(
            False,
            "index cache",
            f"{folder} is not writable ({exc.strerror or exc}); every start rebuilds the index",
            f"set {CACHE_DIR_ENV} to a writable folder, or start with --no-index-cache",
        )
    seen = folder.stat()
    if seen.st_uid != os.getuid() or seen.st_mode & 0o022:
        return Finding(
            False,
            "index cache",
            f"{folder} is not yours, or others may write it; the cache is not used there",
            f"chmod go-w {folder}, or set {CACHE_DIR_ENV} to a folder of your own",
        )
    return Finding(True, "index cache", f"{folder} is writable")


def check_grep(launch: ClientLaunch) -> Finding:
    found = shutil.which("rg", path=launch.path)
    if found is not None:
        return Finding(True, "grep", f"ripgrep {os.path.realpath(found)}")
    here = shutil.which("rg")
    where = f" (ripgrep at {here} is not on that PATH)" if here else ""
    return Finding(True, "grep", f"the built-in engine (RE2): no rg on PATH{where}")


def check_search() -> Finding:
    """Never a problem: whether tool_search also searches by meaning (the semantic extra)."""
    status = semantic_status()
    if status.startswith("on: "):
        return Finding(True, "search", f"by words and by meaning: {status[4:]}")
    missing = "numpy not installed" if "numpy" in status else status.removeprefix("off: ")
    return Finding(
        True,
        "search",
        f"by words only: {missing} (pip install 'mcp-toolbridge[semantic]' adds search by meaning)",
    )


def diagnose(args: argparse.Namespace, parse: Parse, settings_of: SettingsOf) -> list[Finding]:
    environ = dict(os.environ)
    launch = client_launch(args.client, environ)
    title = CLIENTS[args.client].title if args.client else "this shell"
    findings: list[Finding] = []
    entry = _entry(args)
    if isinstance(entry, Finding):
        return [entry]
    if args.config is not None and args.client is not None:
        findings += [f for f in [check_key(args.config, args.client)] if f is not None]
    given_env = entry.get("env")
    if isinstance(given_env, dict) and isinstance(given_env.get("PATH"), str):
        launch = replace(launch, path=given_env["PATH"])  # the spawn looks the command up in it
    findings += check_command(str(entry.get("command", "")), launch, title)
    if (gone := source_problem(argv_of(entry)[1:], launch.cwd)) is not None:
        findings = [f for f in findings if not f.ok] + [Finding(False, "command", *gone)]
    parsed = _serve_options(entry, launch, parse, args) if args.client or args.config else args
    if isinstance(parsed, Finding):
        return [*findings, parsed]
    if args.client or args.config:
        findings += _from_client_folder(parsed, launch, title)
    given = parsed.workspace
    filled = None if given is None else filled_in(given, args.client, environ)
    if isinstance(filled, Finding):
        findings.append(filled)
        given = None
    else:
        given = filled
        if given is not None and not given.is_absolute() and "${" not in str(given):
            given = (Path(launch.cwd) if launch.cwd else Path.cwd()) / given
        findings.append(check_workspace(given, launch, title))
    usable = given if given is not None and "${" not in str(given) else None
    client_env = client_environ(args.client, environ, entry, launch.path)
    settings = replace(settings_of(parsed), workspace=usable, environ=client_env, progress=False)
    policy = check_policy(settings)
    findings.append(policy)
    if policy.ok:
        findings += check_manifests(settings)
    else:  # the catalog is composed under the policy: no line would read as nothing to check
        findings.append(NOT_CHECKED)
    findings.append(check_sandbox(settings, client_env))
    findings.append(check_cache(settings))
    findings.append(check_grep(launch))
    findings.append(check_search())
    return findings


def run_doctor(args: argparse.Namespace, parse: Parse, settings_of: SettingsOf) -> int:
    """Print every check (stdout); 1 when one found a problem. ``parse`` and ``settings_of``
    read a command line as the command line does (cli/parsing.py)."""
    if args.client is None:
        what = f"the entry in {args.config}" if args.config else "this installation"
        head = f"mcp-toolbridge doctor: {what}, as `serve` would run here"
    else:
        launch = client_launch(args.client, dict(os.environ))
        source = f"the entry in {args.config}" if args.config else "the entry `config` writes"
        title = CLIENTS[args.client].title
        head = (
            f"mcp-toolbridge doctor: {title}, {source}, started as {title} starts servers "
            f"({launch.note})"
        )
    out(shown(head))
    findings = diagnose(args, parse, settings_of)
    for finding in findings:
        out(shown(finding.render()))  # it quotes the entry: a planted config's escapes too
    problems = sum(not f.ok for f in findings)
    out(counted(problems, "problem", none="no problems"))
    sys.stdout.flush()
    return EXIT_PROBLEMS if problems else EXIT_OK


__all__ = ["GUI_PATH", "Finding", "diagnose", "run_doctor"]
