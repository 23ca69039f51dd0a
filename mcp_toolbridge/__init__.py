"""mcp-toolbridge: serve tool manifests as MCP tools, safely."""

__version__ = "0.1.0"
