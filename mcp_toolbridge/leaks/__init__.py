"""Secrets nobody declared: finding them in what tools print and in what a model sends, with a
maintained engine and rule set (betterleaks), and redacting them as ``[REDACTED:<rule-id>]``
(markers.py: the marker, and counting it where a file tool must not write it over a secret;
prefilter.py: which texts the engine cannot find anything in, from its own rules; urls.py: a
URL's credentials replaced without its host; cuts.py: redacting what a cut shows of a longer
text, scanned with the text around the cut).
The policy file's ``[secret_scan]`` table (its model is here) switches rules, allows findings
and turns the scan off. engine.py is the only importer of ``betterleaks``.

May import: the vocabulary only."""

from typing import TYPE_CHECKING

from mcp_toolbridge.lazy import on_first_use

if TYPE_CHECKING:
    from mcp_toolbridge.leaks.cuts import redact_cut
    from mcp_toolbridge.leaks.engine import ENGINE, OFF_BY_DEFAULT, OWN_RULES, Engine, Found
    from mcp_toolbridge.leaks.markers import MARKER, count_markers, marker, markers_in
    from mcp_toolbridge.leaks.scan import OFF, SecretScan, scanned_text, summary
    from mcp_toolbridge.leaks.settings import AllowEntry, SecretScanSettings

__getattr__ = on_first_use(
    __name__,
    {
        "mcp_toolbridge.leaks.cuts": ("redact_cut",),
        "mcp_toolbridge.leaks.engine": (
            "ENGINE",
            "OFF_BY_DEFAULT",
            "OWN_RULES",
            "Engine",
            "Found",
        ),
        "mcp_toolbridge.leaks.markers": (
            "MARKER",
            "count_markers",
            "marker",
            "markers_in",
        ),
        "mcp_toolbridge.leaks.scan": (
            "OFF",
            "SecretScan",
            "scanned_text",
            "summary",
        ),
        "mcp_toolbridge.leaks.settings": (
            "AllowEntry",
            "SecretScanSettings",
        ),
    },
)

__all__ = [
    "ENGINE",
    "MARKER",
    "OFF",
    "OFF_BY_DEFAULT",
    "OWN_RULES",
    "AllowEntry",
    "Engine",
    "Found",
    "SecretScan",
    "SecretScanSettings",
    "count_markers",
    "marker",
    "markers_in",
    "redact_cut",
    "scanned_text",
    "summary",
]
