"""What each locked tool's successful result costs a model, and how it reads, in the two forms
a client may show it: the JSON of the structured result (what Claude Code and VS Code show
whenever a result carries structuredContent) against the text the tool writes.

    .venv/bin/python benchmarks/result_forms.py [--root DIR]

Every call runs in this process through ``Bridge.call``, with a policy that allows it, on
realistic inputs:

- over ``--root`` (default: this repository) as the workspace: read of a ~300-line Python
  source (``mcp_toolbridge/executors/exec_tool.py``); grep of ``async def`` (content) and
  ``anyio`` (files) in the package; glob ``**/*.py``; bash ``git log --stat -5`` (skipped
  outside a git work tree) and ``ls -l`` of a folder;
- over a scratch copy of that source: edit (a three-line block) and write (a 40-line file);
- todo (six items), question (two questions answered through a scripted client), task (a
  subagent on a scripted client's model that greps once and writes a Markdown report);
- on a web server on 127.0.0.1: web_fetch of the README as text/markdown and of an HTML
  documentation page (pydoc's of ``textwrap``), web_search through a SearXNG-shaped provider
  (five results);
- skill (a skill whose body is ``docs/errors.md``), tool_search over a generated catalog of
  200 tools (``benchmarks/catalog_gen.py``).

Forms: ``json`` is ``JSON.stringify(value)`` (compact, non-ASCII kept), ``text`` the result's
text content. No tokenizer is used (tiktoken installs, but fetches its encodings from the
network at first use, which a machine without that access cannot), so the figures are proxies:
characters; pre-tokenizer pieces (runs of letters or digits, runs of other symbols, runs of
whitespace, and each JSON escape such as ``\\n`` or ``\\"`` on its own: roughly the first split
a BPE tokenizer makes, so a lower bound on its token count); the JSON escapes a model reads
through (``\\n``, ``\\t``, ``\\"``, ``\\\\``, ``\\uXXXX``); and the lines shown.
"""

from __future__ import annotations

import argparse
import json
import pydoc
import re
import shutil
import subprocess
import tempfile
import textwrap
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from benchmarks.catalog_gen import generate
from mcp_toolbridge.bridge import Bridge
from mcp_toolbridge.host import (
    Answer,
    CallContext,
    SamplingRequest,
    SamplingResult,
    TextBlock,
    ToolUseBlock,
)
from mcp_toolbridge.runtime import Settings, load_catalog, open_bridge
from tests.support.scripted_host import ScriptedHost
from tests.support.web_fixture import Reply, Route, WebServer, serving

ROOT = Path(__file__).resolve().parent.parent
SOURCE = "mcp_toolbridge/executors/exec_tool.py"
POLICY = """
extends = "none"
default_action = "allow"
[requires]
fs.read = ["{{workspace}}"]
fs.write = ["{{workspace}}"]
net.hosts = ["127.0.0.1"]
[web_fetch]
allow_loopback = true
[[web_search.providers]]
kind = "searxng"
url = "{search}"
"""
_PIECES = re.compile(r"\\(?:u[0-9a-fA-F]{4}|.)|[^\W_]+|[^\w\s\\]+|_+|\s+")
"""A JSON escape (``\\n``, ``\\"``, ``\\u00e9``), a run of letters or digits, of other
symbols, of underscores, of whitespace."""
_ESCAPES = re.compile(r'\\(?:u[0-9a-fA-F]{4}|["\\/bfnrt])')

TODOS = [
    {"content": "Reproduce the failing test in tests/server", "status": "completed"},
    {"content": "Find where the result form is decided", "status": "completed"},
    {"content": "Make bash and web_fetch text only", "status": "in_progress"},
    {"content": "Name the sidecar path in truncated notes", "status": "pending"},
    {"content": "Update docs/builtins.md with the figures", "status": "pending"},
    {"content": "Run ruff, mypy and the touched tests", "status": "pending"},
]
QUESTIONS = [
    {
        "question": "Which database should the new service use?",
        "header": "Database",
        "options": [{"label": "PostgreSQL"}, {"label": "SQLite"}],
    },
    {"question": "Anything the migration must keep?", "header": "Constraints"},
]
ANSWERS = {"q1": "PostgreSQL", "q2": "Keep the audit table and its indexes as they are"}
REPORT = """\
The subprocess executor lives in `mcp_toolbridge/executors/subprocess.py`; `run_process` is \
the one entry point, and three callers use it:

- `executors/exec_tool.py` runs manifest tools (`ExecTool._run`, line 98), with the \
arguments file and the "json" or "first object" stdout modes;
- `builtins/bash.py` runs `bash -c` with a scrubbed environment (`BashTool.run`);
- `builtins/fs/glob_grep.py` runs ripgrep with a fixed argv.

All three pass `timeout_s` and `max_output_bytes`; only bash keeps a stderr tail \
(`stderr_tail_bytes`). Cancellation kills the process group in every case \
(`_kill_group`, "SIGTERM then SIGKILL after the grace period").
"""
SEARCH_RESULTS = [
    {
        "title": "Tasks and task groups — AnyIO documentation",
        "url": "https://anyio.readthedocs.io/en/stable/tasks.html",
        "content": "A task group is an asynchronous context manager that makes sure that all "
        "its child tasks are finished one way or another after the context block is exited.",
    },
    {
        "title": "Cancellation and timeouts — AnyIO documentation",
        "url": "https://anyio.readthedocs.io/en/stable/cancellation.html",
        "content": "The ability to cancel tasks is the foremost advantage of the asynchronous "
        "programming model. Threads, on the other hand, cannot be forcibly killed.",
    },
    {
        "title": 'Python "TaskGroup" vs anyio task groups - Stack Overflow',
        "url": "https://stackoverflow.com/questions/78000000/taskgroup-vs-anyio",
        "content": "asyncio.TaskGroup was added in Python 3.11; anyio's task groups work on "
        "both asyncio and trio and support cancel scopes with deadlines.",
    },
    {
        "title": "agronholm/anyio: High level asynchronous concurrency and networking",
        "url": "https://github.com/agronholm/anyio",
        "content": "High level compatibility layer for multiple asynchronous event loop "
        "implementations on Python.",
    },
    {
        "title": "Structured concurrency in Python with AnyIO",
        "url": "https://example.org/blog/structured-concurrency-anyio",
        "content": "Start tasks with start_soon, wait for readiness with start(), and let "
        "the task group propagate the first exception as an ExceptionGroup.",
    },
]


def measure(text: str) -> dict[str, int]:
    return {
        "chars": len(text),
        "pieces": len(_PIECES.findall(text)),
        "escapes": len(_ESCAPES.findall(text)),
        "lines": text.count("\n") + 1,
    }


@dataclass(frozen=True)
class Call:
    tool: str
    label: str
    arguments: dict[str, Any]
    bridge: str = "repo"
    host: ScriptedHost | None = None


def _search_route(seen: Any) -> Reply:
    body = {"query": seen.query["q"][0], "results": SEARCH_RESULTS}
    return Reply(200, json.dumps(body).encode(), "application/json")


@contextmanager
def _web(root: Path) -> Iterator[WebServer]:
    readme = (root / "README.md").read_bytes()
    html = pydoc.HTMLDoc().page("textwrap", pydoc.HTMLDoc().docmodule(textwrap)).encode()
    routes: dict[str, Route] = {
        "/README.md": Reply(body=readme, content_type="text/markdown; charset=utf-8"),
        "/textwrap.html": Reply(body=html),
        "/search": _search_route,
    }
    with serving(routes) as server:
        yield server


def _sampled(report: str) -> list[Any]:
    """A subagent's model: one grep, then the report."""
    use = ToolUseBlock(id="t1", name="grep", input={"pattern": "run_process", "path": "."})

    async def answer(request: SamplingRequest) -> SamplingResult:
        return SamplingResult(content=(TextBlock(report),), stop_reason="endTurn")

    return [SamplingResult(content=(use,), stop_reason="toolUse"), answer]


def calls(root: Path, web: WebServer) -> list[Call]:
    found = [
        Call("read", "300-line Python file", {"file_path": SOURCE}),
        Call(
            "grep",
            "content, package",
            {"pattern": "async def", "path": "mcp_toolbridge", "output_mode": "content"},
        ),
        Call("grep", "files, package", {"pattern": "anyio", "path": "mcp_toolbridge"}),
        Call("glob", "**/*.py, package", {"pattern": "**/*.py", "path": "mcp_toolbridge"}),
        Call("bash", "ls -l a folder", {"command": "ls -l mcp_toolbridge/builtins"}),
    ]
    inside = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--is-inside-work-tree"],
        capture_output=True,
        check=False,
    )
    if inside.returncode == 0:
        found.append(Call("bash", "git log --stat -5", {"command": "git log --stat -5"}))
    source = (root / SOURCE).read_text(encoding="utf-8").splitlines(keepends=True)
    block = next(
        "".join(source[n : n + 3]) for n in range(len(source)) if source[n].startswith("def ")
    )
    found += [
        Call(
            "edit",
            "a three-line block",
            {"file_path": "copy.py", "old_string": block, "new_string": block.upper()},
            bridge="scratch",
        ),
        Call(
            "write",
            "a 40-line file",
            {"file_path": "new.py", "content": "".join(source[:40])},
            bridge="scratch",
        ),
        Call("todo", "six items", {"todos": TODOS}),
        Call(
            "question",
            "two questions",
            {"questions": QUESTIONS},
            host=ScriptedHost(answers=[Answer("accept", ANSWERS)]),
        ),
        Call(
            "task",
            "a Markdown report",
            {"description": "find callers", "prompt": "Who calls run_process?"},
            host=ScriptedHost(replies=_sampled(REPORT)),
        ),
        Call("web_search", "five results", {"query": "anyio task groups"}),
        Call("web_fetch", "README as text/markdown", {"url": web.url("/README.md")}),
        Call("web_fetch", "HTML documentation page", {"url": web.url("/textwrap.html")}),
        Call("skill", "body: docs/errors.md", {"name": "errors"}),
        Call("tool_search", "200-tool catalog", {"query": "create a calendar event"}),
    ]
    return found


@asynccontextmanager
async def _bridge(settings: Settings) -> AsyncIterator[Bridge]:
    loaded = load_catalog(settings, locked=True)
    if loaded.errors:
        raise SystemExit(f"the catalog did not load: {loaded.errors}")
    async with open_bridge(settings, loaded) as bridge:
        yield bridge


def _skill(scratch: Path, root: Path) -> Path:
    body = (root / "docs" / "errors.md").read_text(encoding="utf-8")
    folder = scratch / "skills" / "errors"
    folder.mkdir(parents=True)
    front = "---\nname: errors\ndescription: How mcp-toolbridge reports errors\n---\n"
    (folder / "SKILL.md").write_text(front + body, encoding="utf-8")
    (folder / "examples.md").write_text("# Examples\n", encoding="utf-8")
    return scratch / "skills"


async def run(root: Path) -> list[tuple[str, str, dict[str, dict[str, int]]]]:
    rows = []
    with tempfile.TemporaryDirectory() as name, _web(root) as web:
        scratch = Path(name)
        policy = scratch / "policy.toml"
        policy.write_text(POLICY.format(search=web.url("")), encoding="utf-8")
        generate(200, scratch / "catalog", "agentcli")
        (scratch / "ws").mkdir()
        shutil.copyfile(root / SOURCE, scratch / "ws" / "copy.py")
        # No OS sandbox: in a git worktree, the repository's data is outside the workspace.
        common: dict[str, Any] = {"policy_file": policy, "audit": False, "sandbox": "off"}
        repo = Settings(
            paths=[scratch / "catalog"],
            workspace=root,
            skills_dirs=(_skill(scratch, root),),
            **common,
        )
        copy = Settings(paths=[], workspace=scratch / "ws", **common)
        async with _bridge(repo) as on_repo, _bridge(copy) as on_copy:
            bridges = {"repo": on_repo, "scratch": on_copy}
            for call in calls(root, web):
                ctx = CallContext(session_id="bench", host=call.host)
                outcome = await bridges[call.bridge].call(call.tool, call.arguments, ctx)
                if not outcome.ok or outcome.text is None:
                    raise SystemExit(f"{call.tool} {call.arguments} failed: {outcome.error}")
                forms = {
                    "json": json.dumps(outcome.value, ensure_ascii=False, separators=(",", ":")),
                    "text": outcome.text,
                }
                rows.append((call.tool, call.label, {k: measure(t) for k, t in forms.items()}))
    return rows


def table(rows: list[tuple[str, str, dict[str, dict[str, int]]]]) -> str:
    out = [
        "| call | form | chars | pieces | escapes | lines | pieces vs text |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for tool, label, forms in rows:
        base = forms["text"]["pieces"]
        for name in ("json", "text"):
            m = forms[name]
            ratio = f"{m['pieces'] / base:.2f}x" if base else "-"
            call = f"{tool} ({label})" if name == "json" else ""
            out.append(
                f"| {call} | {name} | {m['chars']:,} | {m['pieces']:,} | {m['escapes']:,} | "
                f"{m['lines']:,} | {ratio} |"
            )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the workspace (default: repo)")
    args = parser.parse_args()
    print(table(anyio.run(run, args.root.resolve())))


if __name__ == "__main__":
    main()
