"""The start-up caches' files: the per-user cache folder, whose files are written atomically
and read back only when authentic (``folder.py``), and big tables kept in columns that read
back fast (``columns.py``), the rule that tells whether a file a cache was made from is
still that file (``files.py``); and the opening of a stdio session, kept to answer the next
start's first requests before the server is imported (``opening.py``, ``front.py``). What is
cached, and when it is trusted, is decided by the modules that cache (``loaders/cache.py``,
``catalog/index_cache.py``, ``runtime/cache.py``, ``opening.py``).

May import: the vocabulary only (it is part of it)."""

from mcp_toolbridge.cache.columns import Compact, compact, expand
from mcp_toolbridge.cache.files import Signature, settled_signature, signature, unchanged_file
from mcp_toolbridge.cache.folder import (
    CACHE_DIR_ENV,
    BlobPlace,
    Blobs,
    CacheFolder,
    default_cache_dir,
    digest,
    fingerprint,
)
from mcp_toolbridge.cache.front import answer_opening
from mcp_toolbridge.cache.opening import (
    Handoff,
    Input,
    Recorder,
    file_input,
    folder_input,
    folder_inputs,
    forget,
    handed_over,
    real_input,
    take,
)

__all__ = [
    "CACHE_DIR_ENV",
    "BlobPlace",
    "Blobs",
    "CacheFolder",
    "Compact",
    "Handoff",
    "Input",
    "Recorder",
    "Signature",
    "answer_opening",
    "compact",
    "default_cache_dir",
    "digest",
    "expand",
    "file_input",
    "fingerprint",
    "folder_input",
    "folder_inputs",
    "forget",
    "handed_over",
    "real_input",
    "settled_signature",
    "signature",
    "take",
    "unchanged_file",
]
