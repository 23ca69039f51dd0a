"""question: ask the person structured questions through MCP elicitation.

All questions go in one flat form: one property per question (``q1``, ``q2``, ...). A question
with options is a single-select string (``oneOf`` of ``const``/``title``) or, with
``multi_select``, a multi-select array (``items.anyOf``), the two enum shapes MCP elicitation
forms allow (2025-11-25 and 2026-07-28). A question without options is a free string. What the
person is shown (the message, titles, descriptions, option titles) carries every character that
hides or rewrites text as its escape (``host.visible``), the option values too.

A client that cannot ask (headless, or no elicitation capability) is asked in the web console
when the server serves one (``CallContext.console``: the form waits there as long as the
call may run); without one it gets :data:`HEADLESS_MESSAGE` at once, word for word the same
every time; one that tries and cannot (it answers the form with an error, the connection
closes: :class:`~mcp_toolbridge.host.CouldNotAsk`) gets :data:`NOT_ASKED_MESSAGE` with the
reason, and so does one that answers ``cancel`` (the form was dismissed unanswered, or nobody
was there: headless Claude Code cancels every form at once); only a ``decline`` is the
person's refusal, :data:`DECLINED_MESSAGE`. None of them is
ever an answer or consent.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from mcp_toolbridge.builtins.question_spec import SPEC as SPEC  # the tool's own, as before
from mcp_toolbridge.errors import ArgumentsError, PermissionDeniedError
from mcp_toolbridge.executors import ExecRequest, ExecResult
from mcp_toolbridge.host import CouldNotAsk, visible

HEADLESS_MESSAGE = (
    "question is unavailable: nobody can be asked in this session (the client does not "
    "support MCP elicitation, or it runs headless). No answer was given. Continue with your "
    "best judgement and state the assumptions you make."
)
NOT_ASKED_MESSAGE = (
    "question is unavailable: the client could not ask the person ({reason}). No answer was "
    "given. Continue with your best judgement and state the assumptions you make."
)
"""The error when asking failed; ``{reason}`` is the host's reason."""
DISMISSED_REASON = (
    "it dismissed the form unanswered: it was closed without an answer, or nobody was there "
    "to answer"
)
"""The reason of :data:`NOT_ASKED_MESSAGE` when the client answered the form with cancel."""
ASKS = "The assistant asks:"
"""How the form of one question begins (several: ``The assistant has N questions for you:``),
never as a confirmation does (``bridge/asking.py``'s ``ASSISTANT_WANTS``)."""
DECLINED_MESSAGE = (
    "The user declined to answer the questions. No answer was given. Continue with your "
    "best judgement, or ask differently if an answer is essential."
)


def _field(index: int) -> str:
    return f"q{index + 1}"


def _option_title(option: Mapping[str, Any]) -> str:
    label = str(option["label"])
    description = option.get("description")
    return visible(f"{label} — {description}" if description else label)


def _check(questions: Sequence[Mapping[str, Any]]) -> None:
    for n, question in enumerate(questions, start=1):
        options = question.get("options") or []
        labels = [str(option["label"]) for option in options]
        repeated = sorted({label for label in labels if labels.count(label) > 1})
        if repeated:
            raise ArgumentsError(
                f"question {n}: option labels must be distinct; repeated: {', '.join(repeated)}",
                tool=SPEC.name,
            )
        if question.get("multi_select") and not options:
            raise ArgumentsError(
                f"question {n}: multi_select needs options; add options or drop multi_select",
                tool=SPEC.name,
            )


def form_schema(questions: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The elicitation form: a flat object with one required property per question."""
    properties: dict[str, Any] = {}
    for index, question in enumerate(questions):
        prop: dict[str, Any] = {
            "title": visible(str(question.get("header") or f"Question {index + 1}")),
            "description": visible(str(question["question"])),
        }
        options = question.get("options") or []
        choices = [{"const": visible(str(o["label"])), "title": _option_title(o)} for o in options]
        if not options:
            prop["type"] = "string"
        elif question.get("multi_select"):
            prop.update(type="array", items={"anyOf": choices})
        else:
            prop.update(type="string", oneOf=choices)
        properties[_field(index)] = prop
    return {"type": "object", "properties": properties, "required": list(properties)}


def form_message(questions: Sequence[Mapping[str, Any]]) -> str:
    # Said to come from the assistant, as several questions are: a question that copies a
    # confirmation's words ("The assistant wants to run the tool ...") still reads as one.
    if len(questions) == 1:
        return visible(f"{ASKS} {questions[0]['question']}")
    lines = [f"The assistant has {len(questions)} questions for you:"]
    lines += [f"{n}. {q['question']}" for n, q in enumerate(questions, start=1)]
    return visible("\n".join(lines))


def form_key(questions: Sequence[Mapping[str, Any]]) -> str:
    """Stable across retries of the same call (MCP multi-round-trip requests)."""
    digest = hashlib.sha256(json.dumps(questions, sort_keys=True).encode("utf-8"))
    return f"question:{digest.hexdigest()[:16]}"


def _as_answer(raw: Any) -> list[str]:
    if raw is None:
        return []
    if isinstance(raw, list):
        return [str(item) for item in raw]
    return [str(raw)]


class QuestionTool:
    """The question built-in: asks through the caller's Host."""

    spec = SPEC

    async def run(self, request: ExecRequest) -> ExecResult:
        ctx = request.context
        if SPEC.name in ctx.denied_tools:
            raise PermissionDeniedError(
                "question is not available to a subagent; put open questions in your answer",
                tool=SPEC.name,
            )
        host = ctx.console if ctx.headless else ctx.host  # the console: where one is served
        if host is None:
            return ExecResult(ok=False, error=HEADLESS_MESSAGE)
        questions: list[Mapping[str, Any]] = list(request.arguments["questions"])
        _check(questions)
        try:
            answer = await host.elicit(
                form_key(questions), form_message(questions), form_schema(questions)
            )
        except CouldNotAsk as exc:  # never an answer: a tool error, as when headless
            return ExecResult(ok=False, error=NOT_ASKED_MESSAGE.format(reason=exc.reason))
        if answer.action == "cancel":  # nobody answered: as if the person could not be asked
            return ExecResult(ok=False, error=NOT_ASKED_MESSAGE.format(reason=DISMISSED_REASON))
        if answer.action != "accept":
            return ExecResult(ok=False, error=DECLINED_MESSAGE)
        content = answer.content or {}
        answers = [_as_answer(content.get(_field(i))) for i in range(len(questions))]
        text = "The user answered:\n" + "\n".join(
            f"- {q['question']} → {', '.join(a) if a else '(no answer)'}"
            for q, a in zip(questions, answers, strict=True)
        )
        return ExecResult(ok=True, value={"answers": answers}, text=text)
