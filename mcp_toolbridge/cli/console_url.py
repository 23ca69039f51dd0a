"""The console's one-time URLs outside the server: printed on stderr, each next one once the one
before is spent, and kept for ``mcp-toolbridge console-url`` (docs/console.md, "Opening it").

A server with a console keeps its URLs not yet spent in one file of its own,
``<runtime dir>/console/<pid>.json`` (``platformdirs.user_runtime_dir``: ``$XDG_RUNTIME_DIR``
on Linux, a per-user tmpfs of mode 0700 that logging out empties): the folder is made 0700,
the file 0600, written to a temporary name and renamed over the old one, rewritten each time
a URL is spent, removed when the server ends. ``console-url`` reads the files there whose
server still runs (its process id, and the time it started, unchanged) and prints their URLs;
it reads nothing a file of another user's or with wider permissions holds, and removes the
files of servers that are gone. Whoever can read that folder is the same user (or root), who
could read the server's stderr log anyway.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import stat
import warnings
from pathlib import Path
from typing import Any

import anyio.to_thread

from mcp_toolbridge.cli.console import EXIT_OK, EXIT_PROBLEMS, err, out

APP = "mcp-toolbridge"
WHERE = {"console": "the console", "mounted": "the console at the MCP server's /console"}
MAX_FILE_BYTES = 16_384


def urls_dir() -> Path:
    """Where servers keep their console URLs: this user's runtime folder."""
    import platformdirs  # only a server with a console, or console-url, needs it

    with warnings.catch_warnings():  # its fallback, when XDG_RUNTIME_DIR is unset, is fine
        warnings.simplefilter("ignore")
        return Path(platformdirs.user_runtime_dir(APP)) / "console"


def _started(pid: int) -> str | None:
    """When process ``pid`` started (``/proc/<pid>/stat``, field 22), to tell a running
    server from a process that got its id later; None where that cannot be read."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


def _private_dir(folder: Path) -> bool:
    """``folder`` exists (made now if need be), is this user's and no one else's."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        seen = folder.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(seen.st_mode) and seen.st_uid == os.getuid() and not seen.st_mode & 0o077


class UrlFile:
    """This server's file of console URLs not yet spent."""

    def __init__(self, folder: Path | None = None, pid: int | None = None) -> None:
        self.folder = folder or urls_dir()
        self.pid = pid or os.getpid()
        self.path = self.folder / f"{self.pid}.json"
        self.urls: dict[str, str] = {}
        self.usable = True
        """False once the folder proved unsafe or unwritable (said once on stderr)."""

    def _write(self) -> None:
        if not self.usable:
            return
        if not _private_dir(self.folder):
            self.usable = False
            err(f"mcp-toolbridge: console-url will not find this server: {self.folder} is not "
                "a folder of this user's alone")  # fmt: skip
            return
        facts = {"pid": self.pid, "started": _started(self.pid), "urls": self.urls}
        temp = self.folder / f".{self.pid}.{secrets.token_hex(4)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        try:
            fd = os.open(temp, flags, 0o600)
            with os.fdopen(fd, "w") as file:
                json.dump(facts, file)
            os.replace(temp, self.path)
        except OSError as exc:
            self.usable = False
            err(f"mcp-toolbridge: console-url will not find this server: {exc}")
            temp.unlink(missing_ok=True)

    async def keep(self, where: str, url: str | None) -> None:
        """Keep ``url`` as the one not yet spent of ``where`` (``console`` or ``mounted``)."""
        if url is not None:
            self.urls[where] = url
            await anyio.to_thread.run_sync(self._write)

    def remove(self) -> None:
        """The server ends: its URLs open nothing more."""
        self.path.unlink(missing_ok=True)


def running(folder: Path) -> list[dict[str, Any]]:
    """The URL files of servers still running, oldest process first; files of servers that
    are gone are removed."""
    found: list[dict[str, Any]] = []
    if not folder.is_dir() or not _private_dir(folder):
        return []
    try:
        names = sorted(folder.glob("*.json"))
    except OSError:
        return []
    for path in names:
        try:
            seen = path.lstat()
            if not stat.S_ISREG(seen.st_mode) or seen.st_uid != os.getuid():
                continue
            if seen.st_mode & 0o077 or seen.st_size > MAX_FILE_BYTES:
                continue
            facts = json.loads(path.read_text())
            pid = int(facts["pid"])
            urls = {str(k): str(v) for k, v in dict(facts["urls"]).items()}
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if path.stem != str(pid):
            continue
        if not _alive(pid) or (facts.get("started") not in (None, _started(pid))):
            path.unlink(missing_ok=True)
            continue
        found.append({"pid": pid, "urls": urls})
    return sorted(found, key=lambda f: int(f["pid"]))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process took the id
        return False
    return True


def print_urls(args: argparse.Namespace) -> int:
    """``console-url``: the URLs not yet spent of the running servers' consoles; exit 1 when
    no running server has one."""
    servers = [s for s in running(urls_dir()) if args.pid in (None, s["pid"])]
    lines = [(s["pid"], where, url) for s in servers for where, url in s["urls"].items()]
    if not lines:
        which = f"process {args.pid} is no server" if args.pid is not None else "there is no server"
        err(
            f"mcp-toolbridge: {which} running as this user on this machine with a console "
            "(serve --console [HOST:]PORT) and a URL to open"
        )
        return EXIT_PROBLEMS
    if len(lines) == 1:
        out(lines[0][2])
        return EXIT_OK
    for pid, where, url in lines:
        out(f"pid {pid}, {WHERE.get(where, where)}: {url}")
    return EXIT_OK
