"""The file-system locked tools: read, write, edit, glob and grep, and their parts (paths in
the workspace, atomic writes and locks, edits, the folder walk, .gitignore, grep engines)."""

from mcp_toolbridge.builtins.fs.atomic import PathLocks
from mcp_toolbridge.builtins.fs.edit import SPEC as EDIT_SPEC
from mcp_toolbridge.builtins.fs.edit import EditTool
from mcp_toolbridge.builtins.fs.glob_grep import GlobTool, GrepTool
from mcp_toolbridge.builtins.fs.glob_grep_specs import GLOB_SPEC, GREP_SPEC
from mcp_toolbridge.builtins.fs.read import SPEC as READ_SPEC
from mcp_toolbridge.builtins.fs.read import ReadTool
from mcp_toolbridge.builtins.fs.visibility import ReadVerdict, read_verdict
from mcp_toolbridge.builtins.fs.write import SPEC as WRITE_SPEC
from mcp_toolbridge.builtins.fs.write import WriteTool

__all__ = [
    "EDIT_SPEC",
    "GLOB_SPEC",
    "GREP_SPEC",
    "READ_SPEC",
    "WRITE_SPEC",
    "EditTool",
    "GlobTool",
    "GrepTool",
    "PathLocks",
    "ReadTool",
    "ReadVerdict",
    "WriteTool",
    "read_verdict",
]
