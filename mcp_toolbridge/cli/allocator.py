"""The process's memory: the cyclic garbage collector paused during a start (see
:func:`started`), and the server's resident memory kept from ratcheting up after large tool
outputs (glibc).

The entry point (``__main__.run``) disables the collector before importing anything: a start
makes hundreds of thousands of long-lived objects (modules, classes, the SDK's and our
pydantic models, a catalog) and no garbage, and collections during it only rescan them (≈ 200
of them during the imports alone, ≈ 15 % of a start's CPU time). When the start is over,
:func:`started` freezes what it made (``gc.freeze``: moved to a generation no later collection
scans) and turns collection back on.

glibc serves large allocations with mmap and returns them to the system when freed, but it
raises its mmap threshold after the first such block is freed (up to 32 MiB on 64-bit), so the
next output buffers of a few MiB come from the heap, whose high-water mark stays resident.
Pinning the threshold at 1 MiB keeps every output buffer in mmap: measured with the soak
benchmark, 5,000 calls with 10 MiB output bombs grew the server by +72 MiB without it and by
+2.6 MiB with it (docs/reliability.md). An operator's own MALLOC_MMAP_THRESHOLD_ wins.
"""

from __future__ import annotations

import gc
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
    import ctypes  # here: a stdio server pins once its first tools/list is answered

    try:  # the process's own symbols, glibc's among them (find_library runs ldconfig: 5 ms)
        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(M_MMAP_THRESHOLD, THRESHOLD_BYTES))
    except (OSError, AttributeError):
        return False


def started() -> None:
    """The start is over: freeze what it made and collect from here on (a no-op when the
    collector was not paused, as when ``main`` is called in process)."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
