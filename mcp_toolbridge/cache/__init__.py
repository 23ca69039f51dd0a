"""The start-up caches' files: the per-user cache folder, whose files are written atomically
and read back only when authentic (``folder.py``), and big tables kept in columns that read
back fast (``columns.py``). What is cached, and when it is trusted, is decided by the modules
that cache (``loaders/cache.py``, ``catalog/index_cache.py``, ``runtime_cache.py``).

May import: the vocabulary only (it is part of it)."""

from mcp_toolbridge.cache.columns import Compact, compact, expand
from mcp_toolbridge.cache.folder import (
    CACHE_DIR_ENV,
    BlobPlace,
    Blobs,
    CacheFolder,
    default_cache_dir,
    digest,
    fingerprint,
)

__all__ = [
    "CACHE_DIR_ENV",
    "BlobPlace",
    "Blobs",
    "CacheFolder",
    "Compact",
    "compact",
    "default_cache_dir",
    "digest",
    "expand",
    "fingerprint",
]
