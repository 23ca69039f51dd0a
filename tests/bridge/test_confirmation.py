"""Permissions through the MCP server: ask -> elicitation in both eras, headless denial,
unsolicited answers, denied tools hidden, and every call audited."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from mcp_toolbridge.bridge.asking import ALLOW_ALWAYS, ALLOW_ONCE, REJECT
from mcp_toolbridge.bridge.gate import (
    DISMISSED,
    HEADLESS_DENIED,
    NO_CHOICE,
    NOT_ASKED,
    NOT_CONSENT,
)
from mcp_toolbridge.builtins.question import DISMISSED_REASON, NOT_ASKED_MESSAGE
from mcp_toolbridge.runtime import Settings
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool
from tests.support.results import text_of
from tests.support.served import served_client

MODES = ["auto", "legacy"]

POLICY = """
default_action = "allow"

[[rules]]
permission = "guarded"
action = "ask"

[[rules]]
permission = "forbidden"
action = "deny"
"""


def _setup(tmp_path: Path) -> Settings:
    agentcli_manifest(
        tmp_path / "m",
        [echo_tool("guarded"), echo_tool("forbidden"), echo_tool("free")],
        {"echo": ECHO},
    )
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY, encoding="utf-8")
    return Settings(
        paths=[tmp_path / "m"],
        policy_file=policy,
        workspace=tmp_path,
        audit_path=tmp_path / "audit.ndjson",
    )


CANCEL = "cancel"
"""A Person's choice that is no choice: the client answers ``cancel`` (headless Claude Code
answers every question so, at once, with nobody asked)."""


NO_DECISION = "accepted with no decision"
"""A Person's choice that is no choice either: the client answers ``accept`` with nothing in
the form (a client that accepts every form as it is shown)."""


class Person:
    """The human at the client: answers each confirmation with the next scripted choice."""

    def __init__(self, *choices: str | None) -> None:
        self.choices = list(choices)
        self.asked: list[str] = []

    async def __call__(
        self, context: Any, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        assert isinstance(params, types.ElicitRequestFormParams)
        self.asked.append(params.message)
        choice = self.choices.pop(0)
        if choice is None:
            return types.ElicitResult(action="decline")
        if choice == CANCEL:
            return types.ElicitResult(action="cancel")
        if choice == NO_DECISION:
            return types.ElicitResult(action="accept", content={})
        return types.ElicitResult(action="accept", content={"decision": choice})


def _audit(settings: Settings) -> list[dict[str, Any]]:
    assert settings.audit_path is not None
    lines = settings.audit_path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.parametrize("mode", MODES)
async def test_denied_tool_is_not_listed(tmp_path: Path, mode: str) -> None:
    async with served_client(_setup(tmp_path), mode) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "forbidden" not in names and {"guarded", "free"} <= names


@pytest.mark.parametrize("mode", MODES)
async def test_ask_runs_the_tool_after_the_person_allows_once(tmp_path: Path, mode: str) -> None:
    person = Person(ALLOW_ONCE, ALLOW_ONCE)
    settings = _setup(tmp_path)
    async with served_client(settings, mode, elicitation_callback=person) as client:
        result = await client.call_tool("guarded", {"text": "go"})
        assert result.is_error is False and result.structured_content == {"echo": {"text": "go"}}
        assert "guarded" in person.asked[0]
        await client.call_tool("guarded", {"text": "again"})
        assert len(person.asked) == 2
    answers = [line["answer"] for line in _audit(settings) if line["answer"] != "pending"]
    assert answers == ["once", "once"]


async def test_a_2026_call_waiting_for_its_answer_is_audited_pending_not_failed(
    tmp_path: Path,
) -> None:
    settings = _setup(tmp_path)
    async with served_client(settings, "auto", elicitation_callback=Person(ALLOW_ONCE)) as client:
        result = await client.call_tool("guarded", {"text": "go"})
        assert result.is_error is False
    waiting, ran = _audit(settings)
    assert (waiting["outcome"], waiting["answer"], waiting["decision"]) == (
        "pending",
        "pending",
        "ask",
    )
    assert waiting["isError"] is False and waiting["errorCode"] is None
    assert waiting["exitCode"] is None and waiting["argv"] is None
    assert (ran["outcome"], ran["answer"], ran["isError"]) == ("ok", "once", False)


@pytest.mark.parametrize("mode", MODES)
async def test_allow_always_is_remembered_for_the_session(tmp_path: Path, mode: str) -> None:
    person = Person(ALLOW_ALWAYS)
    async with served_client(_setup(tmp_path), mode, elicitation_callback=person) as client:
        assert (await client.call_tool("guarded", {"text": "1"})).is_error is False
        assert (await client.call_tool("guarded", {"text": "1"})).is_error is False
        assert len(person.asked) == 1


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("choice", [REJECT, None])
async def test_reject_or_decline_denies_without_running(
    tmp_path: Path, mode: str, choice: str | None
) -> None:
    settings = _setup(tmp_path)
    async with served_client(settings, mode, elicitation_callback=Person(choice)) as client:
        result = await client.call_tool("guarded", {"text": "no"})
        assert result.is_error is True
        assert "rejected" in text_of(result)
    final = [line for line in _audit(settings) if line["answer"] != "pending"]
    assert final[-1]["answer"] == "reject" and final[-1]["exitCode"] is None


@pytest.mark.parametrize("mode", MODES)
async def test_a_cancelled_confirmation_is_refused_as_not_asked_never_as_a_rejection(
    tmp_path: Path, mode: str
) -> None:
    """The client answers the question with ``cancel`` (2025: the elicitation's result;
    2026-07-28: the retry's input response): nobody chose, so the model is not told a person
    rejected the call. It is refused as a call that could not be asked, with the way to allow
    it, and the audit line says ``cancel``."""
    settings = _setup(tmp_path)
    person = Person(CANCEL)
    async with served_client(settings, mode, elicitation_callback=person) as client:
        result = await client.call_tool("guarded", {"text": "x"})
    text = text_of(result)
    assert len(person.asked) == 1
    assert result.is_error is True and result.structured_content is None
    assert (result.meta or {}).get("toolbridge/code") == "permission.denied"
    assert text.startswith(f"{DISMISSED}. {NOT_CONSENT} (asked by ")
    assert "rejected" not in text
    assert text.endswith("To allow it, start the server with --allow guarded.")
    final = [line for line in _audit(settings) if line["answer"] != "pending"]
    assert [(r["answer"], r["decision"], r["outcome"]) for r in final] == [
        ("cancel", "deny", "denied")
    ]
    assert final[0]["exitCode"] is None


@pytest.mark.parametrize("mode", MODES)
async def test_a_confirmation_accepted_without_a_choice_is_not_a_rejection(
    tmp_path: Path, mode: str
) -> None:
    """The client answers ``accept`` with an empty form (the TypeScript SDK's client did, from
    a handler that accepts what it is shown): nobody chose Reject, so the model is not told a
    person rejected the call (it was: 'the person you are working with rejected this call').
    Refused as a question nobody answered, with the way to allow it; audited as ``cancel``."""
    settings = _setup(tmp_path)
    person = Person(NO_DECISION)
    async with served_client(settings, mode, elicitation_callback=person) as client:
        result = await client.call_tool("guarded", {"text": "x"})
    text = text_of(result)
    assert result.is_error is True and len(person.asked) == 1
    assert text.startswith(f"{NO_CHOICE}. {NOT_CONSENT} (asked by ")
    assert "rejected" not in text
    assert text.endswith("To allow it, start the server with --allow guarded.")
    final = [line for line in _audit(settings) if line["answer"] != "pending"]
    assert [(r["answer"], r["outcome"]) for r in final] == [("cancel", "denied")]


@pytest.mark.parametrize("mode", MODES)
async def test_a_question_the_client_cancels_is_not_a_declined_one(
    tmp_path: Path, mode: str
) -> None:
    """The question tool, both eras: a cancelled form is a question nobody could answer, a
    declined one the person's refusal."""
    settings = Settings(workspace=tmp_path, audit=False, locked=("question",))
    questions = {"questions": [{"question": "Which database?"}]}
    async with served_client(
        settings, mode, locked=True, elicitation_callback=_answering("cancel")
    ) as client:
        cancelled = await client.call_tool("question", questions)
    async with served_client(
        settings, mode, locked=True, elicitation_callback=_answering("decline")
    ) as client:
        declined = await client.call_tool("question", questions)
    assert cancelled.is_error and declined.is_error
    assert text_of(cancelled) == NOT_ASKED_MESSAGE.format(reason=DISMISSED_REASON)
    assert text_of(declined).startswith("The user declined to answer")


def _answering(action: str) -> Any:
    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action=action)

    return answer


@pytest.mark.parametrize("mode", MODES)
async def test_client_without_elicitation_is_headless_and_ask_is_a_fixed_denial(
    tmp_path: Path, mode: str
) -> None:
    settings = _setup(tmp_path)
    async with served_client(settings, mode) as client:
        result = await client.call_tool("guarded", {"text": "x"})
        assert result.is_error is True
        assert text_of(result).startswith(HEADLESS_DENIED)
        assert (await client.call_tool("free", {"text": "x"})).is_error is False
    records = _audit(settings)
    assert [r["tool"] for r in records] == ["guarded", "free"]
    assert records[0]["answer"] == "headless" and records[0]["decision"] == "deny"


async def test_unsolicited_answer_without_sealed_state_never_runs_the_tool(tmp_path: Path) -> None:
    """2026 era: inputResponses sent with no requestState are ignored; the server asks."""
    async with served_client(
        _setup(tmp_path), "auto", elicitation_callback=Person(ALLOW_ONCE)
    ) as client:
        forged = types.ElicitResult(action="accept", content={"decision": ALLOW_ONCE})
        result = await client.session.call_tool(
            "guarded",
            {"text": "sneaky"},
            input_responses={"confirm:guarded": forged},
            allow_input_required=True,
        )
        assert isinstance(result, types.InputRequiredResult)
        assert "confirm:guarded" in (result.input_requests or {})


async def test_forged_request_state_is_rejected(tmp_path: Path) -> None:
    async with served_client(
        _setup(tmp_path), "auto", elicitation_callback=Person(ALLOW_ONCE)
    ) as client:
        forged = types.ElicitResult(action="accept", content={"decision": ALLOW_ONCE})
        state = json.dumps({"v": 1, "answers": {"confirm:guarded": {"action": "accept"}}})
        with pytest.raises(Exception, match="requestState"):
            await client.session.call_tool(
                "guarded",
                {"text": "sneaky"},
                input_responses={"confirm:guarded": forged},
                request_state=state,
                allow_input_required=True,
            )


def _refusing_client(code: int, message: str) -> Any:
    """A client that declares elicitation and answers every question with a JSON-RPC error."""

    async def refuse(context: Any, params: types.ElicitRequestParams) -> types.ErrorData:
        return types.ErrorData(code=code, message=message)

    return refuse


@pytest.mark.parametrize(
    ("code", "message"),
    [(types.METHOD_NOT_FOUND, "Method not found"), (-32000, "the form could not be shown")],
)
async def test_a_client_that_answers_the_question_with_an_error_is_refused_like_a_headless_one(
    tmp_path: Path, code: int, message: str
) -> None:
    """2025 era: the client declared elicitation, then answered elicitation/create with an
    error. The call is a refusal naming why and how to allow it, never an approval and never
    an internal error; the audit line says the person could not be reached."""
    settings = _setup(tmp_path)
    async with served_client(settings, "legacy") as headless:
        expected_hint = text_of(await headless.call_tool("guarded", {"text": "x"}))
    expected_hint = expected_hint.split(") ", 1)[1]  # after "(asked by RULE)"
    refuse = _refusing_client(code, message)
    async with served_client(settings, "legacy", elicitation_callback=refuse) as client:
        result = await client.call_tool("guarded", {"text": "x"})
        assert (await client.call_tool("free", {"text": "x"})).is_error is False
    text = text_of(result)
    assert result.is_error is True and result.structured_content is None
    assert (result.meta or {}).get("toolbridge/code") == "permission.denied"
    reason = f"the question ended with error {code}: {message}"
    assert text.startswith(f"{NOT_ASKED} ({reason}). {NOT_CONSENT} (asked by ")
    assert text.endswith(expected_hint) and "--allow guarded" in expected_hint
    records = _audit(settings)[1:]  # the first is the headless client's
    assert [r["tool"] for r in records] == ["guarded", "free"]
    assert records[0]["answer"] == "unreachable" and records[0]["decision"] == "deny"
    assert records[0]["outcome"] == "denied" and records[0]["exitCode"] is None
    assert records[0]["errorCode"] == "permission.denied"
