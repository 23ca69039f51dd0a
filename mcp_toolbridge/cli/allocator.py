"""Keep the server's resident memory from ratcheting up after large tool outputs (glibc).

glibc serves large allocations with mmap and returns them to the system when freed, but it
raises its mmap threshold after the first such block is freed (up to 32 MiB on 64-bit), so the
next output buffers of a few MiB come from the heap, whose high-water mark stays resident.
Pinning the threshold at 1 MiB keeps every output buffer in mmap: measured with the soak
benchmark, 5,000 calls with 10 MiB output bombs grew the server by +72 MiB without it and by
+2.6 MiB with it (docs/reliability.md). An operator's own MALLOC_MMAP_THRESHOLD_ wins.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform

M_MMAP_THRESHOLD = -3
"""mallopt's parameter number for the mmap threshold (malloc.h)."""
THRESHOLD_BYTES = 1024 * 1024


def pin_mmap_threshold(environ: dict[str, str] | None = None) -> bool:
    """Fix glibc's mmap threshold at 1 MiB; True when it was set. No-op elsewhere."""
    env = os.environ if environ is None else environ
    if "MALLOC_MMAP_THRESHOLD_" in env or platform.libc_ver()[0] != "glibc":
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        return bool(libc.mallopt(M_MMAP_THRESHOLD, THRESHOLD_BYTES))
    except (OSError, AttributeError):
        return False
