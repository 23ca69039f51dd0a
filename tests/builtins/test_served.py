"""The locked tools served over MCP by a real client: the same pipeline as manifest tools
(validation, capability check, rules, the bash sub-policy, confirmation, audit), sampling for
task and elicitation for question, and the choice of tools with --locked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from mcp_toolbridge.bridge import NOT_CHECKED
from mcp_toolbridge.bridge.asking import ALLOW_ONCE
from mcp_toolbridge.bridge.gate import HEADLESS_DENIED
from mcp_toolbridge.builtins import LOCKED_IDS, parse_locked
from mcp_toolbridge.builtins.question import HEADLESS_MESSAGE, NOT_ASKED_MESSAGE
from mcp_toolbridge.builtins.task.tool import NO_SAMPLING_MESSAGE
from mcp_toolbridge.cli.main import main
from mcp_toolbridge.errors import ConfigError
from mcp_toolbridge.runtime import load_catalog
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool
from tests.support.results import text_of
from tests.support.served import error_text, locked_settings, served_client
from tests.support.web_fixture import Reply, serving

MODES = ["auto", "legacy"]


@pytest.mark.parametrize("mode", MODES)
async def test_every_locked_tool_is_listed_beside_the_manifest_tools(tmp_path, mode):
    async with served_client(locked_settings(tmp_path), mode, locked=True) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {*LOCKED_IDS, "echo"}
    assert tools["read"].annotations is not None and tools["read"].annotations.read_only_hint
    assert tools["bash"].annotations is not None
    assert not tools["bash"].annotations.read_only_hint


@pytest.mark.parametrize("mode", MODES)
async def test_read_works_inside_the_workspace_and_is_refused_in_a_prefix_twin(tmp_path, mode):
    settings = locked_settings(tmp_path)
    assert settings.workspace is not None
    (settings.workspace / "notes.txt").write_text("alpha\nbeta\n", encoding="utf-8")
    async with served_client(settings, mode, locked=True) as client:
        ok = await client.call_tool("read", {"file_path": "notes.txt"})
        assert not ok.is_error
        assert text_of(ok) == "     1\talpha\n     2\tbeta"
        twin = str(settings.workspace) + "_evil/secret.txt"
        refused = await client.call_tool("read", {"file_path": twin})
        assert "outside" in error_text(refused) or "denied" in error_text(refused).lower()
        invalid = await client.call_tool("read", {"file_path": 7})
        assert "invalid arguments" in error_text(invalid)
    lines = [json.loads(x) for x in settings.audit_path.read_text().splitlines()]  # type: ignore[union-attr]
    assert [line["tool"] for line in lines] == ["read", "read", "read"]
    assert [line["decision"] for line in lines] == ["allow", "deny", "deny"]
    assert lines[2]["decidedBy"] == NOT_CHECKED.rule


@pytest.mark.parametrize("mode", MODES)
async def test_write_asks_and_a_headless_client_gets_the_fixed_refusal(tmp_path, mode):
    settings = locked_settings(tmp_path)
    assert settings.workspace is not None
    async with served_client(settings, mode, locked=True) as client:
        result = await client.call_tool("write", {"file_path": "out.txt", "content": "x"})
    assert HEADLESS_DENIED in error_text(result)
    assert not (settings.workspace / "out.txt").exists()


async def test_write_runs_once_the_person_allows_it(tmp_path):
    settings = locked_settings(tmp_path)
    assert settings.workspace is not None
    asked: list[str] = []

    async def person(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": ALLOW_ONCE})

    async with served_client(
        settings, "legacy", locked=True, elicitation_callback=person
    ) as client:
        result = await client.call_tool("write", {"file_path": "out.txt", "content": "hello"})
    assert not result.is_error, result
    assert (settings.workspace / "out.txt").read_text() == "hello"
    assert len(asked) == 1 and "'write'" in asked[0]


BASH_GIT_ALLOWED = """
default_action = "by-safety"
[requires]
fs.read = ["{workspace}"]
fs.write = ["{workspace}"]
[[rules]]
permission = "bash"
pattern = { prefix = "echo " }
action = "allow"
"""


async def test_bash_runs_an_allowed_command_and_asks_for_what_follows_it(tmp_path):
    settings = locked_settings(tmp_path, BASH_GIT_ALLOWED)
    async with served_client(settings, locked=True) as client:
        ok = await client.call_tool("bash", {"command": "echo hello"})
        assert not ok.is_error, ok
        assert text_of(ok) == "hello\nexit code 0"
        chained = await client.call_tool("bash", {"command": "echo hi; rm -rf ~/nothing-here"})
        assert HEADLESS_DENIED in error_text(chained)
        wrapped = await client.call_tool("bash", {"command": "echo $(rm -rf ~/nothing-here)"})
        assert HEADLESS_DENIED in error_text(wrapped)


BASH_AUDIT = """
default_action = "by-safety"
[requires]
fs.read = ["{workspace}"]
fs.write = ["{workspace}"]
[[rules]]
permission = "bash"
pattern = { prefix = "git " }
action = "allow"
[[rules]]
permission = "bash"
pattern = { prefix = "cat " }
action = "allow"
[[rules]]
permission = "fs.read"
pattern = "secrets/**"
action = "deny"
"""


async def test_bash_refuses_the_audited_bypasses_behind_prefix_allows(tmp_path):
    """Issue 4's audit: under `git ` and `cat ` prefix allows, nothing here reaches a file
    outside the workspace, runs a program through git, or reads a denied path."""
    settings = locked_settings(tmp_path, BASH_AUDIT)
    workspace = settings.workspace
    assert workspace is not None
    base = workspace.parent
    (workspace / "notes.txt").write_text("workspace notes\n", encoding="utf-8")
    (workspace / "secrets").mkdir()
    (workspace / "secrets" / "key.env").write_text("TOKEN=hunter2\n", encoding="utf-8")
    (workspace / "dirlink").symlink_to(base / "ws_evil")
    refused = [
        f"git log --output={base}/x/pwn",
        f"git -C {base}/ws_evil init",
        f'git config alias.x "!touch {base}/pwnA"',
        f"git config core.pager 'touch {base}/pwnA'",
        f"git -c core.pager='touch {base}/pwnA' log",
        f"cat {base}/ws_evil/secret.txt",
        "cat ../ws_evil/secret.txt",
        "cat dirlink/secret.txt",
        "cat */secret.txt",
        "cat secrets/key.env",
        "cat notes.txt; cat ../ws_evil/secret.txt",
        f"cat /dev/fd/../../..{base}/ws_evil/secret.txt",  # /dev/fd/.. is /proc/self
        f"cat notes.txt > /dev/fd/../../..{base}/pwnB",
        "cat /dev/fd/../cwd/notes.txt",  # the server's working directory, not bash's
    ]
    async with served_client(settings, locked=True) as client:
        for command in refused:
            result = await client.call_tool("bash", {"command": command})
            error = error_text(result)
            assert "top secret" not in error and "hunter2" not in error, command
        ok = await client.call_tool("bash", {"command": "cat notes.txt"})
        assert not ok.is_error, ok
        assert text_of(ok).startswith("workspace notes")
    assert not (base / "x").exists()
    assert not (base / "ws_evil" / ".git").exists()
    assert not (base / "pwnA").exists() and not (base / "pwnB").exists()
    lines = [json.loads(x) for x in settings.audit_path.read_text().splitlines()]  # type: ignore[union-attr]
    assert [line["decision"] for line in lines] == ["deny"] * len(refused) + ["allow"]


async def test_question_asks_the_person_through_elicitation(tmp_path):
    async def person(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        field = next(iter(params.requested_schema["properties"]))
        return types.ElicitResult(action="accept", content={field: "blue"})

    async with served_client(
        locked_settings(tmp_path), "legacy", locked=True, elicitation_callback=person
    ) as client:
        result = await client.call_tool(
            "question",
            {"questions": [{"question": "Which colour?", "options": [{"label": "blue"}]}]},
        )
    assert not result.is_error, result
    assert result.structured_content == {"answers": [["blue"]]}


async def test_questions_waiting_on_the_person_hold_no_place_of_the_running_calls(tmp_path):
    """A question waits on a person, not on this machine: with one place for running calls
    (--max-concurrency 1) and two questions open, another call still runs at once; before,
    the questions held the places and every caller's tools waited for the answers."""
    asked = [anyio.Event(), anyio.Event()]
    answer = anyio.Event()

    async def person(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        field = next(iter(params.requested_schema["properties"]))
        asked[0 if not asked[0].is_set() else 1].set()
        await answer.wait()
        return types.ElicitResult(action="accept", content={field: "blue"})

    settings = locked_settings(tmp_path, max_concurrency=1)
    ask = {"questions": [{"question": "Which colour?", "options": [{"label": "blue"}]}]}
    answered: list[types.CallToolResult] = []
    async with served_client(
        settings, "legacy", locked=True, elicitation_callback=person
    ) as client:

        async def question() -> None:
            answered.append(await client.call_tool("question", ask))

        with anyio.fail_after(20):
            async with anyio.create_task_group() as group:
                group.start_soon(question)
                group.start_soon(question)
                for event in asked:
                    await event.wait()
                echoed = await client.call_tool("echo", {"text": "meanwhile"})
                assert not echoed.is_error, echoed
                answer.set()
    assert [r.structured_content for r in answered] == [{"answers": [["blue"]]}] * 2


async def test_question_the_client_could_not_ask_is_a_headless_style_tool_error(tmp_path):
    """2025 era: the client declared elicitation and answers the form with -32601. The model
    gets the question tool's refusal with the reason (the same code as a headless session's),
    never an answer and never an internal error."""

    async def refuse(context: Any, params: types.ElicitRequestParams) -> types.ErrorData:
        return types.ErrorData(code=types.METHOD_NOT_FOUND, message="Method not found")

    settings = locked_settings(tmp_path)
    ask = {"questions": [{"question": "Which colour?", "options": [{"label": "blue"}]}]}
    async with served_client(settings, "legacy", locked=True) as headless:
        nobody = await headless.call_tool("question", ask)
    async with served_client(
        settings, "legacy", locked=True, elicitation_callback=refuse
    ) as client:
        result = await client.call_tool("question", ask)
    reason = f"the question ended with error {types.METHOD_NOT_FOUND}: Method not found"
    assert error_text(result) == NOT_ASKED_MESSAGE.format(reason=reason)
    assert error_text(nobody) == HEADLESS_MESSAGE
    assert (result.meta or {})["toolbridge/code"] == (nobody.meta or {})["toolbridge/code"]
    assert (result.meta or {})["toolbridge/code"] != "server.internal"


class Model:
    """The client's model for sampling: first asks to read a file, then answers."""

    def __init__(self) -> None:
        self.requests: list[types.CreateMessageRequestParams] = []

    async def __call__(
        self, context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResultWithTools:
        self.requests.append(params)
        if len(self.requests) == 1:
            return types.CreateMessageResultWithTools(
                role="assistant",
                content=[
                    types.ToolUseContent(id="t1", name="read", input={"file_path": "notes.txt"})
                ],
                model="scripted",
                stop_reason="toolUse",
            )
        last = params.messages[-1].content_as_list[0]
        assert isinstance(last, types.ToolResultContent)
        text = last.content[0]
        assert isinstance(text, types.TextContent)
        found = "alpha" in text.text
        return types.CreateMessageResultWithTools(
            role="assistant",
            content=[types.TextContent(type="text", text=f"the file says alpha: {found}")],
            model="scripted",
            stop_reason="endTurn",
        )


async def _task_on_notes(tmp_path: Path, model: Any) -> types.CallToolResult:
    """A task asked about notes.txt (it says "alpha") by a 2025 client whose model is
    ``model`` (a sampling callback)."""
    settings = locked_settings(tmp_path)
    assert settings.workspace is not None
    (settings.workspace / "notes.txt").write_text("alpha\n", encoding="utf-8")
    async with served_client(
        settings,
        "legacy",
        locked=True,
        sampling_callback=model,
        sampling_capabilities=types.SamplingCapability(tools=types.SamplingToolsCapability()),
    ) as client:
        return await client.call_tool(
            "task", {"description": "read notes", "prompt": "What does notes.txt say?"}
        )


async def test_task_runs_a_subagent_on_the_clients_model_through_sampling(tmp_path):
    model = Model()
    result = await _task_on_notes(tmp_path, model)
    assert not result.is_error, result
    assert text_of(result) == (
        "the file says alpha: True\n\n(general subagent: 2 turn(s); tool calls: read)"
    )
    offered = {tool.name for tool in model.requests[0].tools or []}
    assert "read" in offered and "echo" in offered
    assert not {"todo", "question", "task"} & offered


async def test_a_sampling_request_the_client_fails_ends_the_task_with_the_reason(tmp_path):
    """The client declared sampling, ran the first turn, then answered the second request
    with an error: the task is a tool error that says why and what was done, never an
    internal error."""
    model = Model()

    async def failing_second(
        context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResultWithTools | types.ErrorData:
        if model.requests:
            return types.ErrorData(code=types.INTERNAL_ERROR, message="model overloaded")
        return await model(context, params)

    result = await _task_on_notes(tmp_path, failing_second)
    assert result.is_error
    assert error_text(result) == (
        "the subagent stopped at turn 2: the client could not run its model (the request "
        f"for a message ended with error {types.INTERNAL_ERROR}: model overloaded); tool "
        "calls made: read. Nothing more was done: do the work yourself with your tools."
    )
    assert (result.meta or {})["toolbridge/code"] == "exec.failed"


@pytest.mark.parametrize("mode", MODES)
async def test_task_without_sampling_is_a_clearerror_text(tmp_path, mode):
    async with served_client(locked_settings(tmp_path), mode, locked=True) as client:
        result = await client.call_tool("task", {"description": "x", "prompt": "do it"})
    assert error_text(result) == NO_SAMPLING_MESSAGE


async def test_todo_is_per_session_and_replaced_on_each_call(tmp_path):
    settings = locked_settings(tmp_path)
    item = {"content": "write tests", "status": "in_progress"}
    async with served_client(settings, locked=True) as client:
        first = await client.call_tool("todo", {"todos": [item]})
        assert text_of(first) == (
            "Todo list: 0 completed, 1 in progress, 0 pending.\n[~] write tests"
        )
        cleared = await client.call_tool("todo", {"todos": []})
        assert text_of(cleared) == "The todo list is empty."


def test_locked_chooses_which_tools_are_served(tmp_path):
    assert parse_locked("all") == LOCKED_IDS
    assert parse_locked("none") == ()
    assert parse_locked("grep, read") == ("read", "grep")
    with pytest.raises(ConfigError, match="unknown tool 'reed'"):
        parse_locked("read,reed")
    settings = locked_settings(tmp_path, locked=("read", "tool_search"))
    loaded = load_catalog(settings, locked=True)
    # the proxy comes with tool_search (listed only when the list is deferred)
    assert [s.name for s in loaded.catalog.specs()] == ["read", "tool_search", "call_tool", "echo"]


def test_a_bad_web_search_table_stops_loading_naming_the_policy_file(tmp_path):
    settings = locked_settings(tmp_path, '[web_search]\nproviders = [{ kind = "bing" }]\n')
    with pytest.raises(ConfigError) as caught:
        load_catalog(settings, locked=True)
    assert str(settings.policy_file) in caught.value.message
    assert "providers" in caught.value.message


def test_web_search_declares_the_configured_providers_host(tmp_path):
    table = '[[web_search.providers]]\nkind = "searxng"\nurl = "https://searx.example.org"\n'
    loaded = load_catalog(locked_settings(tmp_path, table), locked=True)
    spec = loaded.catalog.get("web_search")
    assert spec is not None
    assert spec.spec.requires.net_hosts == ("searx.example.org",)


def test_the_cli_calls_a_locked_tool_through_the_same_pipeline(tmp_path, capsys):
    settings = locked_settings(tmp_path)
    assert settings.workspace is not None
    (settings.workspace / "a.txt").write_text("one\n", encoding="utf-8")
    argv = ["call", "glob", str(settings.paths[0]), "--args", '{"pattern": "*.txt"}']
    code = main([*argv, "--no-audit", "--workspace", str(settings.workspace)])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["files"] == ["a.txt"]
    code = main(["call", "glob", "--args", "{}", "--locked", "read", "--no-audit"])
    assert code != 0


WEB_POLICY = """
default_action = "by-safety"
[requires]
fs.read = ["{workspace}"]
net.hosts = ["127.0.0.1"]
[web_fetch]
allow_loopback = true
"""


async def test_web_fetch_follows_the_policy_for_hosts_and_redirects(tmp_path):
    page = Reply(body=b"<html><body><h1>Title</h1><p>Hello there.</p></body></html>")
    with serving({"/page": page}) as web:
        routes = {
            "/same": Reply(status=302, headers={"Location": web.url("/page")}),
            "/away": Reply(status=302, headers={"Location": web.url("/page", host="localhost")}),
        }
        with serving(routes) as hops:
            async with served_client(locked_settings(tmp_path, WEB_POLICY), locked=True) as client:
                fetched = await client.call_tool("web_fetch", {"url": hops.url("/same")})
                assert not fetched.is_error, fetched
                assert "Hello there." in text_of(fetched)
                away = await client.call_tool("web_fetch", {"url": hops.url("/away")})
                assert "redirect 1" in error_text(away) and "refused" in error_text(away)
                denied = await client.call_tool("web_fetch", {"url": "http://example.org/"})
                assert "example.org" in error_text(denied)


def test_expose_search_without_tool_search_is_refused_at_start(capsys):
    assert main(["serve", "--expose", "search", "--locked", "read,grep"]) == 2
    assert "--expose search needs tool_search" in capsys.readouterr().err


class Searcher:
    """A subagent model for a large catalog: searches, calls what it found, then answers."""

    def __init__(self) -> None:
        self.requests: list[types.CreateMessageRequestParams] = []

    async def __call__(
        self, context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResultWithTools:
        self.requests.append(params)
        steps: list[types.SamplingMessageContentBlock] = [
            types.ToolUseContent(id="s", name="tool_search", input={"query": "select:big_07"}),
            types.ToolUseContent(id="c", name="big_07", input={"text": "found"}),
            types.TextContent(type="text", text="done"),
        ]
        block = steps[len(self.requests) - 1]
        stop = "endTurn" if isinstance(block, types.TextContent) else "toolUse"
        return types.CreateMessageResultWithTools(
            role="assistant", content=[block], model="scripted", stop_reason=stop
        )


async def test_a_subagent_in_a_large_catalog_can_call_what_its_tool_search_found(tmp_path):
    settings = locked_settings(tmp_path)
    tools = [echo_tool(f"big_{i:02d}") for i in range(70)]
    agentcli_manifest(settings.paths[0], tools, {"echo": ECHO})
    model = Searcher()
    async with served_client(
        settings,
        "legacy",
        locked=True,
        sampling_callback=model,
        sampling_capabilities=types.SamplingCapability(tools=types.SamplingToolsCapability()),
    ) as client:
        result = await client.call_tool("task", {"description": "x", "prompt": "use big_07"})
    assert not result.is_error, result
    assert text_of(result).endswith("tool calls: tool_search, big_07)")
    first = {tool.name for tool in model.requests[0].tools or []}
    second = {tool.name for tool in model.requests[1].tools or []}
    assert "big_07" not in first and "big_07" in second
    answer = model.requests[2].messages[-1].content_as_list[0]
    assert isinstance(answer, types.ToolResultContent) and not answer.is_error


async def test_a_truncated_reads_sidecar_file_is_readable_and_greppable_in_the_same_session(
    tmp_path,
):
    settings = locked_settings(tmp_path)
    assert settings.workspace is not None
    lines = "".join(f"line {i} {'x' * 200}\n" for i in range(3000))
    (settings.workspace / "big.txt").write_text(lines, encoding="utf-8")
    async with served_client(settings, locked=True) as client:
        big = await client.call_tool("read", {"file_path": "big.txt", "limit": 3000})
        assert not big.is_error, big
        assert big.meta is not None
        sidecar = big.meta.get("output_path")
        assert isinstance(sidecar, str) and not sidecar.startswith(str(settings.workspace))
        again = await client.call_tool("read", {"file_path": sidecar, "offset": 2999})
        assert not again.is_error, again
        assert "  2999\tline 2998 " in text_of(again)  # the sidecar holds the numbered lines
        found = await client.call_tool(
            "grep", {"pattern": "line 2999 ", "path": sidecar, "output_mode": "content"}
        )
        assert not found.is_error, found
        assert text_of(found) == f"{sidecar}:3000:  3000\tline 2999 {'x' * 200}"
        # A file beside the sidecar folder is still outside the scope.
        beside = Path(sidecar).parent.parent / f"{Path(sidecar).parent.name}-beside.txt"
        beside.write_text("not yours\n", encoding="utf-8")
        try:
            elsewhere = await client.call_tool("read", {"file_path": str(beside)})
        finally:
            beside.unlink()
        assert "outside the granted fs.read scope" in error_text(elsewhere)


def test_a_malformed_skill_is_a_notice_and_the_server_still_loads(tmp_path):
    settings = locked_settings(tmp_path)
    bad = settings.skills_dirs[0] / "bad"
    bad.mkdir(parents=True)
    (bad / "SKILL.md").write_text("no front matter here\n", encoding="utf-8")
    loaded = load_catalog(settings, locked=True)
    assert not loaded.errors
    notices = [p for p in loaded.problems if "skill not loaded" in p.message]
    assert len(notices) == 1 and notices[0].path.endswith("SKILL.md")
    assert "skill" in loaded.catalog


async def test_the_default_policy_asks_before_reading_environment_files(tmp_path):
    settings = locked_settings(tmp_path)
    assert settings.workspace is not None
    (settings.workspace / ".env").write_text("TOKEN=secret\n", encoding="utf-8")
    (settings.workspace / "app").mkdir()
    (settings.workspace / "app" / ".env.local").write_text("TOKEN=secret\n", encoding="utf-8")
    async with served_client(settings, locked=True) as client:
        for path in (".env", "app/.env.local"):
            refused = await client.call_tool("read", {"file_path": path})
            assert HEADLESS_DENIED in error_text(refused)
            assert "secret" not in json.dumps(refused.model_dump())
