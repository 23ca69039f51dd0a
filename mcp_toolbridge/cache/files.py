"""When a file a cache depends on is still the file it was: its signature, and when that
signature can be trusted without reading the file again. Shared by every cache that records
the files it was made from (``loaders/cache.py``, ``opening.py``)."""

from __future__ import annotations

import os
import time

from blake3 import blake3

Signature = tuple[int, int, int, int, int]
"""A file's device, inode, size, modification and change times (ns)."""

SETTLED_NS = 2_000_000_000
"""A file last changed longer ago than this when it was read keeps its signature: a later
write changes its change time (ctime, which no user can set back), so an equal signature
means equal bytes. A file changed more recently could change again within the same clock
tick, keeping its signature; it is hashed again every time (git's "racily clean" rule)."""


def signature(info: os.stat_result) -> Signature:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def settled_signature(before: Signature | None, after: Signature | None) -> Signature | None:
    """The signature to keep for a file read between two looks at it: the first, when the
    file did not change meanwhile and had settled (:data:`SETTLED_NS`); else None (it will
    be hashed when it is checked)."""
    if before is None or after != before:
        return None
    return before if time.time_ns() - max(before[3], before[4]) > SETTLED_NS else None


def unchanged_file(path: str, digest: object, settled: object) -> bool:
    """Whether ``path`` still holds the bytes whose BLAKE3 is ``digest`` (None: it could not
    be read). A settled file whose signature is the one recorded is not read again; any other
    is hashed."""
    try:
        if settled is not None and signature(os.stat(path)) == settled:
            return True
        with open(path, "rb") as fh:
            return blake3(fh.read()).digest() == digest
    except OSError:
        return digest is None
