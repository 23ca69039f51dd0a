"""Secrets nobody declared, through the SDK client in both protocol eras: real tools (a
manifest exec tool, bash, read) print real-looking secrets, which reach the client as
``[REDACTED:<rule-id>]`` with the rest of the output kept, in the result, in the log lines
sent while the tool runs and in the whole output read back as a resource; a secret in the
arguments of a tool that can reach the network asks (headless: refused), naming the rule and
never the value; audit lines hold rule ids and counts; the policy's allow-list and ``off``
let secrets through."""

from __future__ import annotations

import json
import random
import string
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog, open_runtime
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer
from tests.support.manifests import NOT_DESTRUCTIVE, agentcli_manifest
from tests.support.served import OPEN_LOOPBACK_POLICY, error_text, locked_settings, served_client

pytestmark = pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")  # setLevel
MODES = ["auto", "legacy"]
ALNUM = string.ascii_letters + string.digits
_rng = random.Random(25)


def _r(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


AWS_ID = "AKIA" + _r("QRSTUVWXYZ234567", 16)
AWS_SECRET = _r(ALNUM + "/+", 40)
GITHUB = "ghp_" + _r(ALNUM, 36)
SLACK = (
    f"xoxb-{_rng.randint(10**11, 10**12 - 1)}-{_rng.randint(10**12, 10**13 - 1)}-{_r(ALNUM, 24)}"
)
DB_PASSWORD = _r(ALNUM, 18)
STRIPE = "sk_live_" + _r(ALNUM, 40)
PEM_BODY = "\n".join(_r(ALNUM + "+/", 64) for _ in range(10))
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----"
SECRETS = [AWS_SECRET, GITHUB, SLACK, DB_PASSWORD, STRIPE, PEM_BODY[:64]]

LEAKY = f"""
import json, sys
print("starting with token {GITHUB}", file=sys.stderr, flush=True)
print(json.dumps({{
    "env": "export AWS_ACCESS_KEY_ID={AWS_ID}\\nexport AWS_SECRET_ACCESS_KEY={AWS_SECRET}",
    "remote": "https://x-access-token:{GITHUB}@github.com/acme/widgets.git",
    "slack": "{SLACK}",
    "database": "postgres://app:{DB_PASSWORD}@db.internal:5432/app",
    "key": {json.dumps(PEM)},
    "commit": "9f2c1e0b7d4a5c3e8f6a1b2c3d4e5f60718293a4",
    "count": 3,
}}))
"""
DOTENV = f"""# local settings
DEBUG=true
STRIPE_SECRET_KEY={STRIPE}
SLACK_BOT_TOKEN={SLACK}
DATABASE_URL=postgres://app:{DB_PASSWORD}@db.internal:5432/app
"""
POLICY = OPEN_LOOPBACK_POLICY
CLOSED = "http://127.0.0.1:9"
"""Nothing listens there: an allowed fetch fails at once, and nothing leaves the machine."""


def _leaky_tool() -> dict[str, Any]:
    return {
        "name": "leaky",
        "description": "Print a deployment's settings",
        "schema": {"type": "object", "properties": {}, "additionalProperties": False},
        "command": ["./tools/bin/leaky"],
        "annotations": NOT_DESTRUCTIVE,
    }


def _settings(tmp_path: Path, policy: str = POLICY) -> Settings:
    settings = locked_settings(tmp_path, policy)
    folder = tmp_path / "leaky"
    agentcli_manifest(folder, [_leaky_tool()], {"leaky": LEAKY})
    assert settings.workspace is not None
    (settings.workspace / ".env").write_text(DOTENV, encoding="utf-8")
    (settings.workspace / "tok.txt").write_text(f"token={GITHUB}\n", encoding="utf-8")
    return replace(settings, paths=[*settings.paths, folder])


def _audit_text(settings: Settings) -> str:
    assert settings.audit_path is not None
    return settings.audit_path.read_text(encoding="utf-8")


def _audit(settings: Settings) -> list[dict[str, Any]]:
    return [json.loads(line) for line in _audit_text(settings).splitlines()]


def _no_secret_in(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text


class Logs:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.tool_spoke = anyio.Event()

    async def __call__(self, params: types.LoggingMessageNotificationParams) -> None:
        self.lines.append(str(params.data))
        if params.logger == "leaky":
            self.tool_spoke.set()


@pytest.mark.parametrize("mode", MODES)
async def test_a_tool_that_prints_secrets_returns_them_redacted_and_the_rest_kept(
    tmp_path: Path, mode: str
) -> None:
    settings = _settings(tmp_path)
    logs = Logs()
    level: dict[str, Any] = {"log_level": "info"} if mode == "auto" else {}
    async with served_client(settings, mode, locked=True, logging_callback=logs, **level) as client:
        if mode == "legacy":
            await client.set_logging_level("info")
        result = await client.call_tool("leaky", {})
        with anyio.fail_after(10):  # the line's notification may arrive after the result
            await logs.tool_spoke.wait()
    assert not result.is_error, result
    value = result.structured_content
    assert value is not None
    assert value["env"] == (
        "export AWS_ACCESS_KEY_ID=[REDACTED:aws-access-token]\n"
        "export AWS_SECRET_ACCESS_KEY=[REDACTED:aws-secret-access-key]"
    )
    assert (
        value["remote"]
        == "https://x-access-token:[REDACTED:github-pat]@github.com/acme/widgets.git"
    )
    assert value["slack"] == "[REDACTED:slack-bot-token]"
    assert value["database"] == "postgres://app:[REDACTED:url-password]@db.internal:5432/app"
    assert value["key"] == "[REDACTED:private-key]"
    assert value["commit"] == "9f2c1e0b7d4a5c3e8f6a1b2c3d4e5f60718293a4"  # ids and hashes stay
    assert value["count"] == 3
    [block] = [c for c in result.content if isinstance(c, types.TextContent)]
    _no_secret_in(block.text)
    _no_secret_in(json.dumps(value))
    assert "[REDACTED:github-pat]" in block.text
    tool_lines = [line for line in logs.lines if "starting with token" in line]
    assert tool_lines == ["starting with token [REDACTED:github-pat]"]
    _no_secret_in("\n".join(logs.lines))
    line = _audit(settings)[-1]
    assert line["tool"] == "leaky" and line["outcome"] == "ok"
    assert line["redacted"]["github-pat"] == 1
    assert {"slack-bot-token", "url-password", "private-key", "github-pat"} <= set(line["redacted"])
    assert line.get("argumentSecrets") is None
    _no_secret_in(_audit_text(settings))


@pytest.mark.parametrize("mode", MODES)
async def test_bash_and_read_of_a_dotenv_come_back_redacted(tmp_path: Path, mode: str) -> None:
    settings = _settings(tmp_path)
    async with served_client(settings, mode, locked=True) as client:
        shown = await client.call_tool("bash", {"command": "cat .env"})
        read = await client.call_tool("read", {"file_path": ".env"})
    for result in (shown, read):
        assert not result.is_error, result
        [block] = [c for c in result.content if isinstance(c, types.TextContent)]
        _no_secret_in(block.text)
        assert "STRIPE_SECRET_KEY=[REDACTED:stripe-access-token]" in block.text
        assert "SLACK_BOT_TOKEN=[REDACTED:slack-bot-token]" in block.text
        assert "postgres://app:[REDACTED:url-password]@db.internal" in block.text
        assert "DEBUG=true" in block.text and "# local settings" in block.text
    lines = _audit(settings)
    assert [line["tool"] for line in lines[-2:]] == ["bash", "read"]
    assert [line["redacted"]["slack-bot-token"] for line in lines[-2:]] == [1, 1], lines
    _no_secret_in(_audit_text(settings))


@pytest.mark.parametrize("mode", MODES)
async def test_a_truncated_output_read_back_is_redacted_too(tmp_path: Path, mode: str) -> None:
    settings = _settings(tmp_path)
    loaded = load_catalog(settings, BUILTIN_SPECS, locked=True)
    async with open_runtime(settings, loaded) as runtime:
        server = ToolbridgeServer(
            runtime.bridge,
            on_session_end=runtime.end_session,
            sidecar_dir=runtime.sessions.sidecar_dir,
        )
        async with Client(server.server, mode=mode, raise_exceptions=True) as client:
            result = await client.call_tool("bash", {"command": "seq 1 100000 && cat tok.txt"})
            assert not result.is_error, result
            [link] = [c for c in result.content if isinstance(c, types.ResourceLink)]
            read = await client.read_resource(link.uri)
            assert result.meta is not None  # the file itself is the tool's own output
            whole = await anyio.Path(result.meta["output_path"]).read_text(encoding="utf-8")
            assert GITHUB in whole
    [contents] = read.contents
    assert isinstance(contents, types.TextResourceContents)
    assert "\n100000\ntoken=[REDACTED:github-pat]\n" in contents.text
    assert "\n99999\n" in contents.text


@pytest.mark.parametrize("mode", MODES)
async def test_a_secret_in_the_arguments_of_an_open_world_tool_is_refused_headless(
    tmp_path: Path, mode: str
) -> None:
    settings = _settings(tmp_path)
    async with served_client(settings, mode, locked=True) as client:
        result = await client.call_tool(
            "web_fetch", {"url": f"{CLOSED}/v1/repos?access_token={GITHUB}"}
        )
    message = error_text(result)
    assert "needs a person's confirmation" in message
    assert "secret scan: the arguments carry 1 secret(s) (github-pat ×1)" in message
    assert "[[secret_scan.allow]]" in message
    assert GITHUB not in message
    line = _audit(settings)[-1]
    assert (line["tool"], line["decision"], line["decisionScope"], line["answer"]) == (
        "web_fetch",
        "deny",
        "secrets",
        "headless",
    )
    assert line["argumentSecrets"] == {"github-pat": 1}
    _no_secret_in(_audit_text(settings))


class Person:
    """Rejects every confirmation and remembers what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(
        self, context: Any, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        assert isinstance(params, types.ElicitRequestFormParams)
        self.asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": "Reject"})


@pytest.mark.parametrize("mode", MODES)
async def test_a_secret_in_the_arguments_of_an_open_world_tool_asks_naming_the_rule(
    tmp_path: Path, mode: str
) -> None:
    settings = _settings(tmp_path)
    person = Person()
    async with served_client(settings, mode, locked=True, elicitation_callback=person) as client:
        result = await client.call_tool("web_fetch", {"url": f"{CLOSED}/post?token={SLACK}"})
        clean = await client.call_tool("read", {"file_path": "tok.txt"})  # closed world: no ask
    assert "rejected this call" in error_text(result)
    [question] = person.asked
    assert "secret scan: the arguments carry 1 secret(s) (slack-bot-token ×1)" in question
    assert "[REDACTED:slack-bot-token]" in question and SLACK not in question
    assert not clean.is_error
    assert _audit(settings)[-2]["answer"] == "reject"


@pytest.mark.parametrize("mode", MODES)
async def test_the_allow_list_and_off_let_secrets_through(tmp_path: Path, mode: str) -> None:
    allowing = (
        POLICY
        + '[[secret_scan.allow]]\ntool = "leaky"\nrule = "github-pat"\n'
        + '[[secret_scan.allow]]\npattern = "^xoxb-"\n'
    )
    (tmp_path / "a").mkdir()
    settings = _settings(tmp_path / "a", allowing)
    async with served_client(settings, mode, locked=True) as client:
        value = (await client.call_tool("leaky", {})).structured_content
        fetched = await client.call_tool("web_fetch", {"url": f"{CLOSED}/post?token={SLACK}"})
    assert value is not None
    assert GITHUB in value["remote"] and value["slack"] == SLACK
    assert value["key"] == "[REDACTED:private-key]"
    assert "secret scan" not in error_text(fetched)  # allowed: it ran (and failed to connect)
    assert "github-pat" not in _audit(settings)[-2]["redacted"]

    (tmp_path / "b").mkdir()
    off = _settings(tmp_path / "b", POLICY + '[secret_scan]\nmode = "off"\n')
    async with served_client(off, mode, locked=True) as client:
        value = (await client.call_tool("leaky", {})).structured_content
    assert value is not None and value["key"] == PEM and AWS_SECRET in value["env"]
    assert _audit(off)[-1]["redacted"] is None


@pytest.mark.parametrize("mode", MODES)
async def test_a_secret_in_the_arguments_of_a_closed_world_tool_is_counted_with_its_result(
    tmp_path: Path, mode: str
) -> None:
    """A tool that cannot reach the network runs without asking, and its arguments are
    scanned after the call, with its result (in one pass of the prefilter when neither holds
    anything, the trivial call): the audit line records the rule and the count all the same,
    never the value."""
    settings = _settings(tmp_path)
    assert settings.workspace is not None
    (settings.workspace / "plain.txt").write_text("nothing to see here\n", encoding="utf-8")
    async with served_client(settings, mode, locked=True) as client:
        missing = await client.call_tool("read", {"file_path": f"notes-{GITHUB}.txt"})
        trivial = await client.call_tool("read", {"file_path": "plain.txt"})
    assert missing.is_error and GITHUB not in error_text(missing)
    assert not trivial.is_error
    secret_line, trivial_line = _audit(settings)[-2:]
    assert secret_line["decision"] == "allow" and secret_line.get("answer") is None
    assert secret_line["argumentSecrets"] == {"github-pat": 1}
    assert trivial_line["outcome"] == "ok"
    assert trivial_line.get("argumentSecrets") is None and trivial_line.get("redacted") is None
    _no_secret_in(_audit_text(settings))
