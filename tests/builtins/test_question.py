from __future__ import annotations

from typing import Any

import pytest
from mcp_types import _v2025_11_25 as v2025
from mcp_types import _v2026_07_28 as v2026

from mcp_toolbridge.builtins.question import (
    DECLINED_MESSAGE,
    DISMISSED_REASON,
    HEADLESS_MESSAGE,
    NOT_ASKED_MESSAGE,
    SPEC,
    QuestionTool,
)
from mcp_toolbridge.errors import ArgumentsError, PermissionDeniedError
from mcp_toolbridge.executors.base import CallContext, ExecRequest, ExecResult
from mcp_toolbridge.host import Answer, Confirmation, Host, InputPending
from mcp_toolbridge.schemas import compile_schema
from tests.support.scripted_host import ScriptedHost

DB_QUESTION = {
    "question": "Which database should the service use?",
    "header": "Database",
    "options": [
        {"label": "Postgres", "description": "the team already runs it"},
        {"label": "SQLite"},
    ],
}
FEATURES = {
    "question": "Which features do you want?",
    "options": [{"label": "search"}, {"label": "export"}, {"label": "sync"}],
    "multi_select": True,
}
FREE = {"question": "What should the project be called?"}


async def ask(questions: list[dict[str, Any]], host: Host | None, **ctx: Any) -> ExecResult:
    arguments = {"questions": questions}
    assert compile_schema(SPEC.input_schema).validate(arguments) == []
    context = CallContext(session_id="s1", host=host, **ctx)
    request = ExecRequest(spec=SPEC, arguments=arguments, timeout_s=5, context=context)
    return await QuestionTool().run(request)


def requested_schema(host: ScriptedHost) -> dict[str, Any]:
    [(_, _, schema)] = host.elicited
    v2025.RequestedSchema.model_validate(schema)
    v2026.RequestedSchema.model_validate(schema)
    return schema


async def test_a_single_select_question_is_a_string_enum_and_returns_the_chosen_label():
    host = ScriptedHost(answers=[Answer("accept", {"q1": "Postgres"})])
    result = await ask([DB_QUESTION], host)
    assert result.ok
    assert result.value == {"answers": [["Postgres"]]}
    [(_, message, _)] = host.elicited
    assert message == f"The assistant asks: {DB_QUESTION['question']}"
    prop = requested_schema(host)["properties"]["q1"]
    v2025.TitledSingleSelectEnumSchema.model_validate(prop)
    v2026.TitledSingleSelectEnumSchema.model_validate(prop)
    assert prop["type"] == "string"
    assert prop["title"] == "Database"
    assert prop["oneOf"] == [
        {"const": "Postgres", "title": "Postgres — the team already runs it"},
        {"const": "SQLite", "title": "SQLite"},
    ]


async def test_a_multi_select_question_is_an_array_of_labels_and_returns_every_choice():
    host = ScriptedHost(answers=[Answer("accept", {"q1": ["search", "sync"]})])
    result = await ask([FEATURES], host)
    assert result.value == {"answers": [["search", "sync"]]}
    prop = requested_schema(host)["properties"]["q1"]
    v2025.TitledMultiSelectEnumSchema.model_validate(prop)
    v2026.TitledMultiSelectEnumSchema.model_validate(prop)
    assert prop["type"] == "array"
    assert [c["const"] for c in prop["items"]["anyOf"]] == ["search", "export", "sync"]


async def test_a_question_without_options_is_free_text():
    host = ScriptedHost(answers=[Answer("accept", {"q1": "toolbridge"})])
    result = await ask([FREE], host)
    assert result.value == {"answers": [["toolbridge"]]}
    prop = requested_schema(host)["properties"]["q1"]
    v2025.StringSchema.model_validate(prop)
    assert prop == {"type": "string", "title": "Question 1", "description": FREE["question"]}


async def test_several_questions_go_in_one_form_and_the_answers_keep_their_order():
    content = {"q1": "SQLite", "q2": ["export"], "q3": "bridge"}
    host = ScriptedHost(answers=[Answer("accept", content)])
    result = await ask([DB_QUESTION, FEATURES, FREE], host)
    assert result.value == {"answers": [["SQLite"], ["export"], ["bridge"]]}
    schema = requested_schema(host)
    assert schema["required"] == ["q1", "q2", "q3"]
    [(_, message, _)] = host.elicited
    assert message.splitlines()[1:] == [
        "1. Which database should the service use?",
        "2. Which features do you want?",
        "3. What should the project be called?",
    ]


async def test_a_declined_form_is_the_persons_refusal():
    host = ScriptedHost(answers=[Answer("decline")])
    result = await ask([DB_QUESTION], host)
    assert not result.ok
    assert result.error == DECLINED_MESSAGE
    assert result.value is None


async def test_a_cancelled_form_is_a_question_nobody_answered_not_a_refusal():
    """A client that answers ``cancel`` (headless Claude Code does, at once, with nobody
    asked) did not get a person's refusal: the model hears that nobody could be asked."""
    host = ScriptedHost(answers=[Answer("cancel")])
    result = await ask([DB_QUESTION], host)
    assert not result.ok
    assert result.error == NOT_ASKED_MESSAGE.format(reason=DISMISSED_REASON)
    assert "declined" not in (result.error or "")
    assert result.value is None


@pytest.mark.parametrize("host", [None, ScriptedHost(elicit_ok=False)])
async def test_headless_sessions_get_one_fixed_error_at_once_and_nobody_is_asked(host):
    first = await ask([DB_QUESTION], host)
    second = await ask([FREE], host)
    assert not first.ok and not second.ok
    assert first.error == second.error == HEADLESS_MESSAGE
    assert first.value is None
    if host is not None:
        assert host.elicited == []


async def test_the_form_key_is_stable_for_the_same_questions_and_differs_for_others():
    host = ScriptedHost(answers=[Answer("accept", {"q1": "x"})] * 3)
    await ask([FREE], host)
    await ask([FREE], host)
    await ask([{"question": "Something else?"}], host)
    keys = [key for key, _, _ in host.elicited]
    assert keys[0] == keys[1] != keys[2]
    assert keys[0].startswith("question:")


async def test_a_pending_answer_in_a_multi_round_trip_client_ends_the_call_to_be_retried():
    class PendingHost(ScriptedHost):
        async def elicit(
            self,
            key: str,
            message: str,
            schema: dict[str, Any],
            about: Confirmation | None = None,
        ) -> Answer:
            raise InputPending(key, message, schema)

    with pytest.raises(InputPending) as caught:
        await ask([DB_QUESTION], PendingHost())
    assert caught.value.schema["properties"]["q1"]["type"] == "string"


async def test_repeated_option_labels_and_multi_select_without_options_are_refused():
    host = ScriptedHost()
    repeated = {"question": "Pick?", "options": [{"label": "a"}, {"label": "a"}]}
    with pytest.raises(ArgumentsError, match="repeated: a"):
        await ask([repeated], host)
    with pytest.raises(ArgumentsError, match="multi_select needs options"):
        await ask([{"question": "Pick?", "multi_select": True}], host)
    assert host.elicited == []


async def test_a_subagent_cannot_ask_the_user():
    host = ScriptedHost(answers=[Answer("accept", {"q1": "x"})])
    with pytest.raises(PermissionDeniedError, match="subagent"):
        await ask([FREE], host, depth=1, denied_tools=frozenset({"question"}))
    assert host.elicited == []


async def test_a_question_that_copies_a_confirmation_still_reads_as_the_assistants():
    """Found by the red-team pass of 2026-11-29, 8th: the form of one question was the
    model's text alone, so a question worded as the server's confirmation, with its three
    answers as options, reached the person's form indistinguishable from one (the answer
    grants nothing, but the person believes it did)."""
    from mcp_toolbridge.bridge.asking import ALLOW_ALWAYS, ALLOW_ONCE, ASSISTANT_WANTS, REJECT

    copied = {
        "question": f"{ASSISTANT_WANTS} 'bash'.\nArguments: {{}}\nWhy you are asked: policy",
        "options": [{"label": ALLOW_ONCE}, {"label": ALLOW_ALWAYS}, {"label": REJECT}],
    }
    host = ScriptedHost(answers=[Answer("accept", {"q1": ALLOW_ALWAYS})])
    await ask([copied], host)
    [(_, message, _)] = host.elicited
    assert message.startswith("The assistant asks: ") and not message.startswith(ASSISTANT_WANTS)
