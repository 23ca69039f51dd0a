"""How to start this installation again, from a client's config: the command a config names.

An installation in a virtualenv (``pip``, ``pipx install``, ``uv tool install``) is started by
the absolute path of its ``mcp-toolbridge`` script. One that ``uvx`` or ``pipx run`` made in
its cache is ephemeral (the cache is pruned, and the next run may make another), so a config
names the launcher and the package instead, from where this one came (PEP 610's
``direct_url.json``): ``uvx --from /path/to/the.whl mcp-toolbridge`` for a local wheel or
folder, ``--from git+URL@COMMIT`` for a VCS install, ``mcp-toolbridge@VERSION`` from an index.
The launcher is named by its absolute path: clients started from a GUI (Claude Desktop on
macOS) give servers a minimal PATH without ``~/.local/bin`` (``spawn uvx ENOENT``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlsplit

DIST = "mcp-toolbridge"
SCRIPT = "mcp-toolbridge"

_UV_CACHE_BUCKET = re.compile(r"(environments|archive|builds)-v\d+")


def in_uv_cache(prefix: Path) -> bool:
    """Whether ``prefix`` (an environment) is one uv made in its cache for ``uvx``."""
    cache = os.environ.get("UV_CACHE_DIR")
    if cache and prefix.is_relative_to(Path(cache).absolute()):
        return True
    parts = prefix.parts
    return any(
        _UV_CACHE_BUCKET.fullmatch(part) and "uv" in parts[:i] for i, part in enumerate(parts)
    )


def in_pipx_cache(prefix: Path) -> bool:
    """Whether ``prefix`` is an environment ``pipx run`` made in its cache (``pipx install``
    puts environments under ``venvs/``, which last)."""
    parts = prefix.parts
    if "pipx" not in parts or "venvs" in parts:
        return False
    return any(part in (".cache", "cache") for part in parts)


def in_temporary_folder(prefix: Path) -> bool:
    """Whether ``prefix`` lies in the system's temporary folder (removed at some point)."""
    try:
        return prefix.resolve().is_relative_to(Path(tempfile.gettempdir()).resolve())
    except OSError:
        return False


def install_source() -> str:
    """Where this installation came from, as uvx's ``--from`` and pipx's ``--spec`` take it: a
    local path, a VCS or archive URL, else ``mcp-toolbridge==VERSION`` (from an index)."""
    try:
        dist = metadata.distribution(DIST)
    except metadata.PackageNotFoundError:
        return DIST
    pinned = f"{DIST}=={dist.version}"
    text = dist.read_text("direct_url.json")
    if not text:
        return pinned
    try:
        direct = json.loads(text)
    except json.JSONDecodeError:
        return pinned
    url = direct.get("url") if isinstance(direct, dict) else None
    if not isinstance(url, str):
        return pinned
    vcs = direct.get("vcs_info")
    if isinstance(vcs, dict) and isinstance(vcs.get("vcs"), str):
        commit = vcs.get("commit_id")
        return f"{vcs['vcs']}+{url}" + (f"@{commit}" if isinstance(commit, str) else "")
    parts = urlsplit(url)
    if parts.scheme == "file":
        return unquote(parts.path)
    return url


_EXTRA_MARKER = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def installed_extras() -> list[str]:
    """The extras of this installation (``[semantic]``) whose every requirement is installed
    here, as uvx ``--from 'mcp-toolbridge[semantic]'`` made it; never ``dev``."""
    try:
        requires = metadata.distribution(DIST).requires or []
    except metadata.PackageNotFoundError:
        return []
    needs: dict[str, list[str]] = {}
    for requirement in requires:
        marker = _EXTRA_MARKER.search(requirement)
        name = _NAME.match(requirement)
        if marker is not None and name is not None and marker.group(1) != "dev":
            needs.setdefault(marker.group(1), []).append(name.group(0))
    return sorted(extra for extra, names in needs.items() if all(map(_installed, names)))


def _installed(name: str) -> bool:
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def with_extras(source: str, extras: Sequence[str]) -> str:
    """``source`` (as :func:`install_source` gives it) asking for ``extras`` too: a path takes
    them after it, a pinned requirement in brackets, a URL as a PEP 508 direct reference."""
    if not extras:
        return source
    wanted = f"[{','.join(extras)}]"
    if source.startswith(f"{DIST}=="):
        return f"{DIST}{wanted}=={source.partition('==')[2]}"
    if local_source(source):
        return source + wanted
    return f"{DIST}{wanted} @ {source}"


def _uvx() -> list[str]:
    """uvx by its absolute path: beside ``$UV`` (uv sets it for what it runs), else on PATH;
    ``uv tool run`` when only uv is found. ``$UV`` is the file uv resolved, which a package
    manager's link leads to (Homebrew's /opt/homebrew/bin/uvx -> .../Cellar/uv/0.9.1/bin/uvx,
    gone at the next upgrade): the link on PATH to that same file is named when there is one."""
    uv = os.environ.get("UV")
    if uv and Path(uv).is_absolute():
        beside = Path(uv).with_name("uvx" + Path(uv).suffix)
        if beside.is_file():
            return [_by_its_link(beside)]
        return [_by_its_link(Path(uv)), "tool", "run"]
    found = shutil.which("uvx")
    return [str(Path(found).absolute())] if found else ["uvx"]


def _by_its_link(program: Path) -> str:
    """``program``, or the name on PATH that leads to the same file (a lasting link)."""
    found = shutil.which(program.name)
    if found is not None and Path(found).resolve() == program.resolve():
        return str(Path(found).absolute())
    return str(program)


def _pipx() -> list[str]:
    found = shutil.which("pipx")
    return [str(Path(found).absolute())] if found else ["pipx"]


def server_command(prefix: Path | None = None) -> list[str]:
    """How to start this installation (the environment at ``prefix``, default this one): its
    console script by its absolute path, else ``python -m``; the launcher and the package
    when uvx or ``pipx run`` runs it from their caches."""
    prefix = Path(sys.prefix) if prefix is None else prefix
    if in_uv_cache(prefix):
        source, extras = install_source(), installed_extras()
        if source.startswith(f"{DIST}==") and not extras:
            return [*_uvx(), f"{DIST}@{source.partition('==')[2]}"]
        return [*_uvx(), "--from", with_extras(source, extras), SCRIPT]
    if in_pipx_cache(prefix):
        return [
            *_pipx(),
            "run",
            "--spec",
            with_extras(install_source(), installed_extras()),
            SCRIPT,
        ]
    beside = Path(sys.executable).parent / SCRIPT
    if beside.is_file():
        return [str(beside)]
    found = shutil.which(SCRIPT)
    if found:
        return [str(Path(found).resolve())]
    return [str(Path(sys.executable).absolute()), "-m", "mcp_toolbridge"]


def temporary_warning(prefix: Path | None = None) -> str | None:
    """What to say when a config would name an installation, or the local package uvx or
    ``pipx run`` made it from, in a temporary folder."""
    prefix = Path(sys.prefix) if prefix is None else prefix
    if in_uv_cache(prefix) or in_pipx_cache(prefix):
        source = install_source()
        if not (local_source(source) and in_temporary_folder(Path(source))):
            return None
        return (
            f"the package it runs from ({source}) is in a temporary folder; a config naming "
            "it stops working when that folder is removed: keep the package where it lasts "
            f"and run config from there, or install it (`uv tool install {source}`)"
        )
    if not in_temporary_folder(prefix):
        return None
    return (
        f"this installation is in a temporary folder ({prefix}); a config naming it stops "
        "working when that folder is removed: install it where it lasts (`uv tool install "
        "mcp-toolbridge` or `pipx install mcp-toolbridge`) and run config from there"
    )


def local_source(source: str) -> bool:
    """Whether a ``--from``/``--spec`` source is a path on this machine (a wheel, an sdist, a
    folder), not a URL or a requirement of an index."""
    return "://" not in source and "+" not in source.partition("/")[0] and "/" in source


def launcher_source(argv: Sequence[str]) -> str | None:
    """The package a launcher's arguments name (``uvx --from SOURCE``, ``pipx run --spec
    SOURCE``), before the server's own arguments."""
    for i, word in enumerate(argv):
        if word in ("serve", "replay"):
            return None
        for flag in ("--from", "--spec"):
            if word == flag and i + 1 < len(argv):
                return argv[i + 1]
            if word.startswith(flag + "="):
                return word.partition("=")[2]
    return None


def source_problem(argv: Sequence[str], cwd: str | None) -> tuple[str, str] | None:
    """What stops a launcher from finding its local package again, and its fix: the path is
    not there, or lies in a temporary folder."""
    source = launcher_source(argv)
    if source is None or not local_source(source):
        return None
    if source.endswith("]") and "[" in source:  # the extras it asks for: PATH[semantic]
        source = source[: source.rindex("[")]
    path = Path(cwd or os.getcwd()) / source  # an absolute source stays itself
    fix = (
        "keep the package where it lasts and write the entry from there (`uvx --from PATH "
        "mcp-toolbridge config --client NAME`), or install it (`uv tool install PATH`)"
    )
    if not path.exists():
        return (
            f"{source}, the package the entry runs, is not there: the client cannot start it",
            fix,
        )
    if in_temporary_folder(path):
        return f"{source}, the package the entry runs, is in a temporary folder", fix
    return None
