"""Files in the per-user cache folder: written atomically, read back only when authentic.

Start-up caches (loaded manifests, the search index) are pickled Python objects, because
nothing else rebuilds 100,000 tool records fast enough. Unpickling runs code named by the
data, so a cache file is never unpickled unless it is authentic: each file carries a keyed
BLAKE3 MAC of its header and payload, under a per-user secret key kept beside the caches
(``key``, mode 0600, in a 0700 folder). Whoever can replace that key can sign a pickle the
next start runs: only this user's own processes may, since the sandbox shows the folder to no
tool (``sandbox/confine.py``, ``Sandbox.from_environ``). The MAC keeps out everything else:
files of another version or user, a truncated or corrupt file, a file planted through a
shared or synced folder. A file that fails any check is ignored with one warning on stderr
and rebuilt.

What another user, or a tool that may write the folder, could plant there is never trusted
before it is read: a folder that another user owns or that others may write is not used
(whoever may write it may remove the key and plant files), and the key and every file are
opened ``O_NOFOLLOW | O_NONBLOCK`` and read only when they are regular files of this user (a
link is not followed, a FIFO does not hold the start).

A file may carry blobs after its object (the pickled tools of each manifest), each with its
own MAC in the object: they are read, through a memory map, only when needed.

A file is written to a temporary name in the same folder and renamed over the old one, so a
crash mid-write leaves the old file or none, never half of one. Temporary files a crash left
behind are removed later, when they are an hour old.

BLAKE3 runs single-threaded here (≈ 1.4 GB/s): its multi-threaded mode starts a native thread
pool that a forked child (a loader, an index builder, a cache writer) inherits without its
threads, and hangs on.

The folder is ``platformdirs.user_cache_dir("mcp-toolbridge")`` (``$XDG_CACHE_HOME`` on
Linux); ``TOOLBRIDGE_CACHE_DIR`` overrides it.
"""

from __future__ import annotations

import dataclasses
import enum
import errno
import functools
import logging
import mmap
import os
import pickle
import re
import secrets
import stat
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path, PurePath
from typing import Any

from blake3 import blake3

from mcp_toolbridge import __version__

__all__ = [
    "CACHE_DIR_ENV",
    "BlobPlace",
    "Blobs",
    "CacheFolder",
    "default_cache_dir",
    "digest",
    "fingerprint",
]

log = logging.getLogger("mcp_toolbridge")

CACHE_DIR_ENV = "TOOLBRIDGE_CACHE_DIR"
MAGIC = b"mcp-toolbridge cache\n"
FORMAT = 1
"""Bumped when the layout of a cache file (not of what it holds) changes."""
KEY_BYTES = 32
MAC_BYTES = 32
_STALE_TEMP_S = 3600.0


def default_cache_dir() -> Path:
    given = os.environ.get(CACHE_DIR_ENV)
    if given:
        return Path(given)
    import platformdirs  # only a start that uses the cache needs it

    return Path(platformdirs.user_cache_dir("mcp-toolbridge"))


def digest(*parts: bytes | str) -> bytes:
    """BLAKE3 of ``parts``, each length-prefixed so that no two lists of parts collide."""
    hasher = blake3()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        hasher.update(len(data).to_bytes(8, "little"))
        hasher.update(data)
    return hasher.digest()


def fingerprint(value: object) -> bytes:
    """A digest of ``value``'s content that is the same in every process: sets are sorted,
    dataclasses and pydantic models taken field by field, compiled regexes by their source.
    What it cannot take apart counts by ``repr``, which for an object without a repr of its
    own holds its address: such a value never matches across runs (a miss, never a false
    hit)."""
    out: list[str] = []
    _canon(value, out)
    return digest("\x1f".join(out))


def _canon(value: object, out: list[str]) -> None:
    if value is None or isinstance(value, bool | int | float | str | bytes | enum.Enum):
        out.append(repr(value))
    elif isinstance(value, PurePath):
        out.append(f"path:{value}")
    elif isinstance(value, list | tuple):
        out.append(f"({type(value).__name__}")
        for item in value:
            _canon(item, out)
        out.append(")")
    elif isinstance(value, set | frozenset):
        parts = []
        for item in value:
            inner: list[str] = []
            _canon(item, inner)
            parts.append("\x1f".join(inner))
        out.append("{set")
        out.extend(sorted(parts))
        out.append("}")
    elif isinstance(value, dict):
        out.append("{dict")
        for key, item in value.items():
            _canon(key, out)
            _canon(item, out)
        out.append("}")
    elif isinstance(value, re.Pattern):
        out.append(f"re:{value.flags}:{value.pattern!r}")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        out.append(f"<{type(value).__qualname__}")
        for field in dataclasses.fields(value):
            out.append(field.name)
            _canon(getattr(value, field.name), out)
        out.append(">")
    elif isinstance(fields := getattr(type(value), "model_fields", None), dict):  # pydantic
        out.append(f"<{type(value).__qualname__}")
        for name in fields:
            out.append(name)
            _canon(getattr(value, name), out)
        out.append(">")
    else:
        out.append(repr(value))


@functools.cache
def code_fingerprint() -> str:
    """A digest of this package's source files (path, size, modification time): what a
    cache holds (tool records, problems, exposure, the index) is what this code made of
    its inputs, and a changed loader must not be served what an older one made, version
    number or not. Stat calls only (≈ 1 ms a start); any edit, checkout or reinstall
    changes a size or a time."""
    root = Path(__file__).parent.parent  # the package, not this folder
    found: list[tuple[str, int, int]] = []
    stack = [str(root)]
    while stack:
        with os.scandir(stack.pop()) as listing:
            for entry in listing:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in ("__pycache__", "examples"):
                        stack.append(entry.path)
                elif entry.name.endswith(".py"):
                    info = entry.stat()
                    found.append((entry.path, info.st_size, info.st_mtime_ns))
    return digest(repr(sorted(found))).hex()[:16]


def _head(kind: str) -> bytes:
    """A file's first bytes: what must match for its pickle to mean the same (this package's
    version and source, the file format, the interpreter: pickles name classes and their
    layout) and what it holds."""
    impl = sys.implementation
    tag = f"{FORMAT}|{__version__}|{code_fingerprint()}|{impl.name}-{impl.cache_tag}|{kind}"
    data = tag.encode()
    return MAGIC + len(data).to_bytes(2, "little") + data


BlobPlace = tuple[int, int, bytes]
"""A blob's offset in the blob area, its length, and its MAC."""


class Blobs:
    """The blob area of a cache file, mapped in memory. The mapping keeps the file read as
    it was even after a newer one replaces it."""

    def __init__(
        self, data: mmap.mmap | bytes, base: int, key: bytes, warn: Callable[[], None]
    ) -> None:
        self._data = data
        self._base = base
        self._key = key
        self._warn = warn

    def get(self, place: BlobPlace) -> bytes | None:
        """The blob at ``place``, or None when it is not what was written there."""
        at, length, mac = place
        start = self._base + at
        blob = self._data[start : start + length]
        if len(blob) != length or not secrets.compare_digest(
            blake3(blob, key=self._key).digest(), mac
        ):
            self._warn()
            return None
        return blob


def _uid() -> int:
    return os.getuid() if hasattr(os, "getuid") else 0


def _open_own(path: Path) -> int:
    """``path`` opened to read without following a link or waiting for a FIFO's writer
    (OSError ``ELOOP`` for a link: warned as unreadable)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    return os.open(path, flags)


def _own_file(info: os.stat_result) -> bool:
    return stat.S_ISREG(info.st_mode) and (not hasattr(os, "getuid") or info.st_uid == _uid())


class CacheFolder:
    """One cache folder. ``read``/``write`` take a file name and a ``kind`` (what the file
    must hold: a file of another kind is foreign); a failed read warns once per file."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder if folder is not None else default_cache_dir()
        self._key: bytes | None = None
        self._warned: set[str] = set()
        self.disabled = False
        """True once the folder or its key proved unusable (warned once); reads then miss
        and writes do nothing."""

    # -- the key -------------------------------------------------------------------------------

    def _ensure_folder(self) -> bool:
        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            info = self.folder.stat()
        except OSError as exc:
            self._disable(f"cannot create {self.folder}: {exc.strerror or exc}")
            return False
        if info.st_uid != _uid() or info.st_mode & 0o022:
            self._disable(
                f"{self.folder} is not this user's, or others may write it "
                f"(chmod go-w, or name another folder in {CACHE_DIR_ENV})"
            )
            return False
        return True

    def key(self) -> bytes | None:
        """The per-user MAC key, made on first use; None when the cache cannot be used."""
        if self._key is not None or self.disabled:
            return self._key
        if not self._ensure_folder():
            return None
        path = self.folder / "key"
        key = self._read_key(path)
        if key is None:
            key = self._new_key(path)
        self._key = key
        return key

    def _read_key(self, path: Path) -> bytes | None:
        try:
            fd = _open_own(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._warn(
                "key", f"cache key {path} unreadable ({exc.strerror or exc}); making a new one"
            )
            return None
        try:
            info = os.fstat(fd)
            data = os.read(fd, KEY_BYTES + 1) if stat.S_ISREG(info.st_mode) else b""
        finally:
            os.close(fd)
        private = stat.S_IMODE(info.st_mode) & 0o077 == 0
        if not (_own_file(info) and private and len(data) == KEY_BYTES):
            self._warn(
                "key",
                f"cache key {path} is not a private {KEY_BYTES}-byte file of this user; "
                "making a new one",
            )
            return None
        return data

    def _new_key(self, path: Path) -> bytes | None:
        key = secrets.token_bytes(KEY_BYTES)
        temp = self.folder / f"key.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(fd, key)
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.link(temp, path)  # atomic, and never replaces a key another process made
            except FileExistsError:
                other = self._read_key(path)
                if other is not None:
                    return other
                os.replace(temp, path)  # the existing key is broken (warned): replace it
                return key
            except OSError:  # no hard links here: rename (a racing process may win)
                os.replace(temp, path)
                return key
        except OSError as exc:
            self._disable(f"cannot write the cache key in {self.folder}: {exc.strerror or exc}")
            return None
        finally:
            temp.unlink(missing_ok=True)
        return key

    # -- files ---------------------------------------------------------------------------------

    def path(self, name: str) -> Path:
        """Where the file stored under ``name`` is: its name tagged with the code that writes
        it (``index-….<code>.bin``), so that two installs sharing this folder (a Claude
        Desktop bundle and a pip install, two checkouts) each keep their own files instead of
        discarding each other's at every start; :meth:`prune` bounds them together."""
        stem, dot, suffix = name.rpartition(".")
        tag = code_fingerprint()[:8]
        return self.folder / (f"{stem}.{tag}.{suffix}" if dot else f"{name}.{tag}")

    def read(self, name: str, kind: str) -> Any | None:
        """The object stored under ``name`` as ``kind``, or None (absent, or not authentic:
        warned once)."""
        found = self.read_with_blobs(name, kind)
        return found[0] if found is not None else None

    def read_with_blobs(self, name: str, kind: str) -> tuple[Any, Blobs] | None:
        """The object stored under ``name`` as ``kind``, and the blobs stored beside it (read
        from the file, mapped in memory, only when asked for); None when absent or not
        authentic (warned once)."""
        key = self.key()
        if key is None:
            return None
        path = self.path(name)
        try:
            with open(_open_own(path), "rb") as fh:
                info = os.fstat(fh.fileno())
                if not _own_file(info):
                    self._warn(name, f"{path} is not a regular file of this user; ignored")
                    return None
                size = info.st_size
                data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            if isinstance(exc, OSError) and exc.errno == errno.ELOOP:
                self._warn(name, f"{path} is a symbolic link, not a regular file; ignored")
            else:
                self._warn(name, f"cannot read {path} ({exc}); rebuilding it")
            return None
        head = _head(kind)
        start = len(head) + MAC_BYTES + 8
        if data[: len(MAGIC)] != MAGIC:
            self._warn(name, f"{path} is not a cache file of mcp-toolbridge; ignored")
            return None
        if data[: len(head)] != head:
            self._warn(name, f"{path} was written by another version or for another use; ignored")
            return None
        length = int.from_bytes(data[start - 8 : start], "little")
        if len(data) < start + length:
            self._warn(name, f"{path} is truncated; ignored")
            return None
        view = memoryview(data)
        meta = view[start : start + length]
        mac = blake3(head, key=key).update(view[start - 8 : start]).update(meta).digest()
        if not secrets.compare_digest(bytes(view[len(head) : len(head) + MAC_BYTES]), mac):
            self._warn(
                name, f"{path} fails its integrity check (corrupt, truncated or foreign); ignored"
            )
            return None
        try:
            value = pickle.loads(meta)
        except Exception as exc:  # authentic but unreadable: a bug, never trusted further
            self._warn(name, f"{path} cannot be read back ({exc!r}); ignored")
            return None
        finally:
            meta.release()
            view.release()
        return value, Blobs(data, start + length, key, partial(self._damaged, path, info))

    def write(
        self, name: str, kind: str, value: Any, blobs: Sequence[bytes | memoryview] = ()
    ) -> bool:
        """Store ``value`` under ``name`` as ``kind``, atomically, with ``blobs`` after it
        (their places are :func:`blob_places`; :meth:`Blobs.get` reads one back); False when
        it could not be (warned once)."""
        key = self.key()
        if key is None:
            return False
        meta = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        head = _head(kind)
        length = len(meta).to_bytes(8, "little")
        mac = blake3(head, key=key).update(length).update(meta).digest()
        path = self.path(name)
        temp = self.folder / f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with open(fd, "wb") as fh:
                fh.write(head + mac + length)
                fh.write(meta)
                for blob in blobs:
                    fh.write(blob)
            os.replace(temp, path)
        except OSError as exc:
            temp.unlink(missing_ok=True)
            self._warn(name, f"cannot write {path} ({exc.strerror or exc}); not cached")
            return False
        return True

    def blob_places(self, blobs: Sequence[bytes | memoryview]) -> list[BlobPlace] | None:
        """Where each of ``blobs`` will be when written in this order by :meth:`write`, with
        its MAC; None when the cache cannot be used."""
        key = self.key()
        if key is None:
            return None
        places = []
        at = 0
        for blob in blobs:
            places.append((at, len(blob), blake3(blob, key=key).digest()))
            at += len(blob)
        return places

    def prune(self, prefix: str, keep: Iterable[str], most: int) -> None:
        """Remove files named ``prefix*`` beyond the ``most`` most recently written (never
        those in ``keep``, whichever code wrote the rest), and temporary files a crash left
        behind."""
        kept = {self.path(name).name for name in keep}
        now = time.time()
        found: list[tuple[float, Path]] = []
        try:
            entries = list(os.scandir(self.folder))
        except OSError:
            return
        for entry in entries:
            try:
                mtime = entry.stat(follow_symlinks=False).st_mtime
            except OSError:
                continue
            if entry.name.endswith(".tmp"):
                if now - mtime > _STALE_TEMP_S:
                    Path(entry.path).unlink(missing_ok=True)
            elif entry.name.startswith(prefix) and entry.name not in kept:
                found.append((mtime, Path(entry.path)))
        found.sort(reverse=True)
        for _, path in found[max(most - len(kept), 0) :]:
            path.unlink(missing_ok=True)

    def _damaged(self, path: Path, mapped: os.stat_result) -> None:
        """A blob of ``path`` failed its check: warn once, and remove the file (unless a
        newer one replaced it since) so that the next start writes it anew."""
        self._warn(path.name, f"{path}: a stored blob fails its integrity check; ignored")
        try:
            now = path.stat()
            if (now.st_ino, now.st_dev) == (mapped.st_ino, mapped.st_dev):
                path.unlink()
        except OSError:
            pass

    # -- warnings ------------------------------------------------------------------------------

    def _warn(self, name: str, message: str) -> None:
        if name not in self._warned:
            self._warned.add(name)
            log.warning("cache: %s", message)

    def _disable(self, message: str) -> None:
        self.disabled = True
        self._warn("", f"{message}; running without the cache")
