"""The question tool of a headless client is asked in the console too: the person answers
its form there (a choice, several choices, free text) or declines it, and the model gets the
answers or the refusal, as from a client's own elicitation."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.console.conftest import Person, serving
from tests.console.test_approvals import _call

pytestmark = pytest.mark.anyio

QUESTIONS = {
    "questions": [
        {
            "question": "Which database?",
            "options": [{"label": "postgres"}, {"label": "sqlite"}],
        },
        {
            "question": "Which regions?",
            "options": [{"label": "eu"}, {"label": "us"}, {"label": "ap"}],
            "multi_select": True,
        },
        {"question": "Anything else?"},
    ]
}
_CSRF = re.compile(r'name="csrf" (?:value|content)="(?P<csrf>[0-9a-f]+)"')


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_headless_clients_question_is_answered_in_the_console(
    tmp_path: Path, mode: str
) -> None:
    async with (
        serving(tmp_path, stateless=True, locked=("question",)) as stack,
        Person.at(stack.console) as me,
    ):
        result: list[Any] = []
        async with anyio.create_task_group() as group:
            group.start_soon(_call, stack.url, mode, "question", QUESTIONS, result)
            [waiting] = await me.waiting()
            page = await me.page()
            assert "Which database?" in page and 'type="checkbox"' in page
            csrf = _CSRF.search(page)
            assert csrf is not None
            posted = await me.http.post(
                f"{me.base}/answer/{waiting}",
                data={
                    "csrf": csrf["csrf"],
                    "choice": "answer",
                    "q1": ["sqlite"],
                    "q2": ["eu", "ap", "not an option"],
                    "q3": ["ship it on friday"],
                },
            )
            assert posted.status_code == 303
        called = result[0]
        assert not called.is_error, called
        assert called.structured_content == {
            "answers": [["sqlite"], ["eu", "ap"], ["ship it on friday"]]
        }


async def test_a_question_declined_in_the_console_is_the_persons_refusal(tmp_path: Path) -> None:
    async with (
        serving(tmp_path, stateless=True, locked=("question",)) as stack,
        Person.at(stack.console) as me,
    ):
        result: list[Any] = []
        async with anyio.create_task_group() as group:
            group.start_soon(_call, stack.url, "auto", "question", QUESTIONS, result)
            [waiting] = await me.waiting()
            await me.answer(waiting, "decline")
        assert result[0].is_error
        assert "declined" in result[0].content[0].text
