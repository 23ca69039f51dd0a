"""Secrets nobody declared: finding them in what tools print and in what a model sends, with a
maintained engine and rule set (betterleaks), and redacting them as ``[REDACTED:<rule-id>]``.
The policy file's ``[secret_scan]`` table (its model is here) switches rules, allows findings
and turns the scan off. engine.py is the only importer of ``betterleaks``.

May import: the vocabulary only."""

from mcp_toolbridge.leaks.engine import ENGINE, OFF_BY_DEFAULT, OWN_RULES, Engine, Found
from mcp_toolbridge.leaks.scan import OFF, SecretScan, marker, summary
from mcp_toolbridge.leaks.settings import AllowEntry, SecretScanSettings

__all__ = [
    "ENGINE",
    "OFF",
    "OFF_BY_DEFAULT",
    "OWN_RULES",
    "AllowEntry",
    "Engine",
    "Found",
    "SecretScan",
    "SecretScanSettings",
    "marker",
    "summary",
]
