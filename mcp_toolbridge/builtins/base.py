"""Built-in tools: the locked set, served through the same Bridge.call as manifest tools."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

from mcp_toolbridge.errors import ErrorCode, ExecError
from mcp_toolbridge.model import BuiltinTransport, Format, Safety, Source, ToolSpec

if TYPE_CHECKING:  # the executors' request types: a declaration imports no executor module
    from mcp_toolbridge.executors import ExecRequest, ExecResult

BUILTIN_SOURCE = Source(path="<builtin>", index=0, format=Format.BUILTIN)
TEXT_MAX = 4_096
"""The longest path, file pattern, regular expression or search query a locked tool takes
(``maxLength``): the system looks up no path longer (PATH_MAX), and a longer one only costs
the server time (a 100 KB path took seconds to resolve, a 3.5 MB query seconds to rank)."""


def builtin_spec(
    name: str,
    *,
    title: str,
    description: str,
    input_schema: dict[str, Any],
    safety: Safety,
    holds_place: bool = True,
    **facts: Any,
) -> ToolSpec:
    """A locked tool's declaration: its id is its name, its namespace ``builtin``, the model
    sees the runtime schema as it is, and calls go to the built-in executor by name.
    ``holds_place``: see BuiltinTransport. ``facts``: the rest of ToolSpec (requires,
    argument_roles, timeout_s, ...)."""
    return ToolSpec(
        name=name,
        id=name,
        namespace="builtin",
        title=title,
        description=description,
        input_schema=input_schema,
        runtime_input_schema=input_schema,
        transport=BuiltinTransport(name=name, holds_place=holds_place),
        safety=safety,
        source=BUILTIN_SOURCE,
        **facts,
    )


class BuiltinTool(Protocol):
    """One locked tool: its declaration and its implementation."""

    @property
    def spec(self) -> ToolSpec: ...

    async def run(self, request: ExecRequest) -> ExecResult: ...


class BuiltinExecutor:
    """Dispatches calls of builtin-transport tools to their implementation by name."""

    def __init__(self, tools: Iterable[BuiltinTool]) -> None:
        self._tools = {tool.spec.name: tool for tool in tools}

    def tool(self, name: str) -> BuiltinTool | None:
        """The implementation of the built-in ``name``, if served."""
        return self._tools.get(name)

    async def run(self, request: ExecRequest) -> ExecResult:
        tool = self._tools.get(request.spec.name)
        if tool is None:
            raise ExecError(
                f"the built-in tool {request.spec.name} is not available in this server",
                tool=request.spec.name,
                code=ErrorCode.EXEC_UNSUPPORTED,
            )
        return await tool.run(request)
