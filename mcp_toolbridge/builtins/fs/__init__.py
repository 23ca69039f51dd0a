"""The file-system locked tools: read, write, edit, glob and grep, and their parts (paths in
the workspace, atomic writes and locks, edits, the folder walk, .gitignore, grep engines)."""

from typing import TYPE_CHECKING

from mcp_toolbridge.builtins.fs.edit_spec import SPEC as EDIT_SPEC
from mcp_toolbridge.builtins.fs.read_spec import SPEC as READ_SPEC
from mcp_toolbridge.builtins.fs.write_spec import SPEC as WRITE_SPEC
from mcp_toolbridge.lazy import on_first_use

if TYPE_CHECKING:
    from mcp_toolbridge.builtins.fs.atomic import PathLocks
    from mcp_toolbridge.builtins.fs.edit import EditTool
    from mcp_toolbridge.builtins.fs.glob_grep import GlobTool, GrepTool
    from mcp_toolbridge.builtins.fs.glob_grep_specs import GLOB_SPEC, GREP_SPEC
    from mcp_toolbridge.builtins.fs.read import ReadTool
    from mcp_toolbridge.builtins.fs.visibility import ReadVerdict, read_verdict
    from mcp_toolbridge.builtins.fs.write import WriteTool

__getattr__ = on_first_use(
    __name__,
    {
        "mcp_toolbridge.builtins.fs.atomic": ("PathLocks",),
        "mcp_toolbridge.builtins.fs.edit": ("EditTool",),
        "mcp_toolbridge.builtins.fs.glob_grep": (
            "GlobTool",
            "GrepTool",
        ),
        "mcp_toolbridge.builtins.fs.glob_grep_specs": (
            "GLOB_SPEC",
            "GREP_SPEC",
        ),
        "mcp_toolbridge.builtins.fs.read": ("ReadTool",),
        "mcp_toolbridge.builtins.fs.visibility": (
            "ReadVerdict",
            "read_verdict",
        ),
        "mcp_toolbridge.builtins.fs.write": ("WriteTool",),
    },
)

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
