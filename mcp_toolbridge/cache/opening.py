"""The opening of a stdio session, kept in the start-up cache: the exact answers the MCP SDK
gave to the requests a client sent before its first call (``initialize`` and
``notifications/initialized``, or ``server/discover``; then ``tools/list``), so that the next
start with the same inputs answers them before the SDK is even imported (``cache/front.py``).

A snapshot is trusted only for exactly what its answers were a function of:

- its file name: a digest of the command line, the working directory, the whole environment
  (whatever the catalog, the policy and the settings read of it), the interpreter and the
  user; its header (every cache file's): this package's version and source;
- its inputs, checked at every use: every manifest folder's listing, every file the loaders
  read or probed (their own records), the policy, secrets and project policy files, the
  real folder each folder the policy names (the workspace, ``{user-data}``, ``{ad-hoc}``)
  stands for (a link moved to another project is a miss), and the real path of each path
  pattern the policy grants or a tool requires (up to its first wildcard: whether a tool is
  listed can depend on where it leads); a file is compared by its
  signature when it had settled when it was read, else by its bytes;
- each request as the client wrote it, id aside (method and params: the protocol era, the
  client's capabilities and version), in order, nothing unrecorded before it.

Anything else is a miss and the start is the normal one. An answer is a result as the SDK
wrote it, replayed with the request's own id; an opening during which the server sent the
client anything of its own, or answered with an error, is not kept.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from blake3 import blake3

from mcp_toolbridge.cache.files import settled_signature, signature, unchanged_file
from mcp_toolbridge.cache.folder import CacheFolder, digest

KIND = "opening"
PREFIX = "opening-"
METHODS = frozenset(
    {"initialize", "notifications/initialized", "server/discover", "tools/list", "ping"}
)
"""What an opening may hold: requests whose answers depend on nothing but the inputs."""
MAX_MESSAGES = 12
MAX_ANSWER_BYTES = 16 << 20
KEPT_OPENINGS = 4
"""Openings kept per snapshot (clients of both eras, or of several kinds, sharing a server)."""
Input = tuple[str, str, object, object]
"""("read", path, BLAKE3 of its bytes or None when unreadable, its signature when settled),
("probe", path, whether it is a file, None), ("folder", path, digest of its listing,
None), ("entry", path, "-" for nothing there, None), or ("real", path, the path it resolves
to through its links, None)."""
Exchange = tuple[str, str | None]
"""A client message (its canonical JSON, id aside) and, for a request, the result the SDK
answered (JSON text as written); None for a notification."""
Opening = tuple[Exchange, ...]


def snapshot_name(argv: Sequence[str], cwd: str, environ: dict[str, str]) -> str:
    """The file a start with this command line, folder, environment, interpreter and
    installed distributions keeps its openings in."""
    uid = str(os.getuid()) if hasattr(os, "getuid") else ""
    env = json.dumps(sorted(environ.items()))
    key = digest(json.dumps(list(argv)), cwd, env, sys.executable, sys.version, uid, _installed())
    return PREFIX + key.hex()[:32] + ".bin"


def _installed() -> bytes:
    """The distributions installed where this interpreter imports from (their
    ``*.dist-info`` names carry their versions): an upgraded MCP SDK may answer otherwise."""
    folders = [p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages")]
    return digest(*(_listing(folder) or b"" for folder in folders))


def message_key(text: str | bytes) -> tuple[str, int | str | None] | None:
    """A client line as an opening holds it (canonical JSON without its id) and its id (None
    for a notification); None when it cannot be part of an opening."""
    try:
        frame = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(frame, dict) or frame.get("jsonrpc") != "2.0":
        return None
    if frame.get("method") not in METHODS:
        return None
    is_request = "id" in frame  # an id of null is no notification: the SDK's to judge
    request_id = frame.pop("id", None)
    if is_request and (not isinstance(request_id, int | str) or isinstance(request_id, bool)):
        return None
    if is_request == (frame["method"] == "notifications/initialized"):
        return None
    canonical = json.dumps(frame, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return canonical, request_id


def answer_line(result: str, request_id: int | str) -> bytes:
    """The SDK's answer line for ``request_id`` with the recorded result."""
    quoted = json.dumps(request_id, ensure_ascii=False)
    return f'{{"jsonrpc":"2.0","id":{quoted},"result":{result}}}\n'.encode()


def with_id(text: str | bytes, request_id: str) -> str:
    """A request line given another id (the one its replay to the SDK carries)."""
    frame = json.loads(text)
    frame["id"] = request_id
    return json.dumps(frame, ensure_ascii=False)


# -- inputs ----------------------------------------------------------------------------------


def file_input(path: str | Path) -> Input:
    """A file as it is now: its bytes' digest (None: unreadable) and its settled signature."""
    where = os.path.abspath(path)
    try:
        before = signature(os.stat(where))
        with open(where, "rb") as fh:
            data = fh.read()
        after = signature(os.stat(where))
    except OSError:
        return ("read", where, None, None)
    return ("read", where, blake3(data).digest(), settled_signature(before, after))


def real_input(path: str | Path, resolved: str | None = None) -> Input:
    """A path with what it resolves to through its links: ``resolved`` when the answers were
    made from what it resolved to then (a tool's required path, compiled at the load), else
    what it resolves to now."""
    where = os.path.abspath(path)
    return ("real", where, os.path.realpath(where) if resolved is None else resolved, None)


def _scan(path: str) -> tuple[bytes | None, list[tuple[str, bool]]]:
    """A digest of a folder's listing (None: not a readable folder), and its subfolders
    (whether each is a symbolic link). A link counts with the real path it leads to: the
    loaders read two links to one manifest once, so the other's target is no file read."""
    try:
        with os.scandir(path) as entries:
            listed = [(e.name, e.is_dir(), e.is_symlink()) for e in entries]
    except OSError:
        return None, []
    found = digest(*sorted(_listed(path, *entry) for entry in listed))
    return found, [(os.path.join(path, name), link) for name, is_dir, link in listed if is_dir]


def _listed(folder: str, name: str, is_dir: bool, link: bool) -> str:
    target = os.path.realpath(os.path.join(folder, name)) if link else ""
    return f"{name}/{int(is_dir)}/{target}"


def _listing(path: str) -> bytes | None:
    return _scan(path)[0]


def folder_input(path: str | Path) -> Input:
    """One folder with a digest of its listing (a file or nothing there otherwise)."""
    where = os.path.abspath(path)
    return _folder_input(where, _scan(where)[0])


def _folder_input(where: str, listing: bytes | None) -> Input:
    if listing is not None:
        return ("folder", where, listing, None)
    return file_input(where) if os.path.isfile(where) else ("entry", where, "-", None)


def folder_inputs(roots: Iterable[str | Path]) -> list[Input]:
    """Every folder under ``roots`` (and each root itself, a file or absent) with a digest of
    its listing: a manifest added, removed or renamed anywhere changes one. Symlinked folders
    are followed, each real folder once."""
    found: list[Input] = []
    seen: set[str] = set()
    stack = [(os.path.abspath(root), True) for root in roots]
    while stack:
        path, linked = stack.pop()
        if linked:  # only a link (or a root) can lead back to a folder already walked
            real = os.path.realpath(path)
            if real in seen:
                continue
            seen.add(real)
        listing, folders = _scan(path)
        found.append(_folder_input(path, listing))
        stack.extend(folders)
    return found


def unchanged(inputs: Iterable[Input]) -> bool:
    """Whether every input is as recorded."""
    for kind, path, value, settled in inputs:
        if kind == "folder":
            if _listing(path) != value:
                return False
        elif kind == "entry":
            if _entry(path) != value:
                return False
        elif kind == "probe":
            if os.path.isfile(path) != value:
                return False
        elif kind == "real":
            if os.path.realpath(path) != value:
                return False
        elif not unchanged_file(path, value, settled):
            return False
    return True


def _entry(path: str) -> str:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return "-"
    return "d" if stat.S_ISDIR(mode) else "f"


# -- the snapshot ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    inputs: tuple[Input, ...]
    openings: tuple[Opening, ...]


def read_snapshot(folder: CacheFolder, name: str) -> Snapshot | None:
    """The snapshot stored under ``name`` when there is one (no cache folder or key is made
    to look: a start that never recorded one costs a ``stat``)."""
    if not folder.path(name).is_file():
        return None
    found = folder.read(name, KIND)
    return found if isinstance(found, Snapshot) else None


@dataclass
class Handoff:
    """What the front (``cache/front.py``) did before the server existed, for the stdio
    transport of this process to take over: the bytes it read and did not answer, whether
    stdin ended, and the client messages it answered, to be given to the SDK again (requests
    under ids of their own, their answers dropped and compared with the ones sent)."""

    folder: Path
    name: str
    pending: bytes = b""
    ended: bool = False
    replayed: list[tuple[str, str | None, str | None]] = field(default_factory=list)
    """(line, private id or None for a notification, the result sent)."""
    snapshot: Snapshot | None = None
    """The snapshot found (valid or not), so a recording adds to it rather than replace it."""
    valid: bool = False


_handed: list[Handoff] = []


def hand_over(handoff: Handoff) -> None:
    """Leave ``handoff`` for this process's stdio server (called once, by the front)."""
    _handed[:] = [handoff]


def handed_over() -> Handoff | None:
    """What the front left, if this process went through it (not taken: see :func:`take`)."""
    return _handed[0] if _handed else None


def take() -> Handoff | None:
    """What the front left, once: the stdio transport takes it."""
    return _handed.pop() if _handed else None


# -- recording -------------------------------------------------------------------------------


class Recorder:
    """Watches the lines of a stdio session from its start and keeps its opening: the client
    messages up to the first that cannot be part of one, each request with the result the
    SDK wrote for it. Kept (:meth:`save`) each time every request read so far is answered,
    until the server writes anything else (the answered part stays kept: it came first): a
    client that lists and leaves may have the server killed before it has read its EOF.
    ``old``: the snapshot found under ``name`` (its openings are kept beside this one when
    its inputs are these)."""

    def __init__(
        self,
        folder: CacheFolder,
        name: str,
        inputs: Sequence[Input],
        old: Snapshot | None = None,
    ) -> None:
        self._folder = folder
        self._name = name
        self._inputs = tuple(inputs)
        self._kept = list(old.openings) if old is not None and old.inputs == self._inputs else []
        self._messages: list[tuple[str, int | str | None]] = []
        self._results: dict[int | str, str] = {}
        self._size = 0
        self.closed = False
        """No more client messages are taken."""
        self.spoiled = False
        """The server wrote something that is not a result to a recorded request."""

    def read(self, text: str) -> None:
        if self.closed:
            return
        found = message_key(text)
        if found is None or len(self._messages) >= MAX_MESSAGES:
            self.close()
            return
        self._messages.append(found)

    def close(self) -> None:
        """The opening is over (a message that is no part of one, or the end of stdin)."""
        self.closed = True

    def written(self, line: str) -> None:
        if self.spoiled:
            return
        try:
            frame = json.loads(line)
        except ValueError:
            frame = None
        request_id = frame.get("id") if isinstance(frame, dict) else None
        if not isinstance(request_id, int | str):
            request_id = None
        recorded = request_id is not None and any(i == request_id for _, i in self._messages)
        if not recorded and self.closed and self._all_answered():
            return  # after the opening: a call's answer, its progress, whatever
        if not isinstance(frame, dict) or "result" not in frame or not recorded:
            self.spoiled = True  # the server's own message, or an error: not an opening
            return
        prefix = f'{{"jsonrpc":"2.0","id":{json.dumps(request_id, ensure_ascii=False)},"result":'
        if not (line.startswith(prefix) and line.rstrip("\n").endswith("}")):
            self.spoiled = True
            return
        result = line.rstrip("\n")[len(prefix) : -1]
        self._size += len(result)
        assert request_id is not None
        self._results[request_id] = result
        if self._all_answered():
            self.save()

    def _all_answered(self) -> bool:
        return all(i is None or i in self._results for _, i in self._messages)

    def opening(self) -> Opening:
        """The answered part of the opening, in order."""
        kept: list[Exchange] = []
        for key, request_id in self._messages:
            if request_id is None:
                kept.append((key, None))
            elif request_id in self._results:
                kept.append((key, self._results[request_id]))
            else:
                break
        return tuple(kept)

    def save(self) -> None:
        """Store the opening answered so far beside the others kept for the same inputs (an
        opening it extends is replaced: it answers the same, and more)."""
        if self.spoiled or self._size > MAX_ANSWER_BYTES:
            return
        opening = self.opening()
        if not any(result is not None for _, result in opening) or opening in self._kept:
            return
        others = [o for o in self._kept if o != opening[: len(o)]]
        self._kept = [opening, *others][:KEPT_OPENINGS]
        self._folder.write(self._name, KIND, Snapshot(self._inputs, tuple(self._kept)))
        self._folder.prune(PREFIX, keep=[self._name], most=16)


def forget(folder: Path, name: str) -> None:
    """Remove a snapshot that proved wrong (an answer the SDK gave differently)."""
    CacheFolder(folder).path(name).unlink(missing_ok=True)
