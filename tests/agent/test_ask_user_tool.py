"""ask_user and require_approval on the agent alone (no store): the interrupt, and a hand-made Resume."""

from __future__ import annotations

import pytest

from chainreact.agent import Resume
from chainreact.agent.interrupts import AnswerError, AskUserTool, approval_decision, require_approval
from chainreact.errors import ConfigError
from chainreact.testing import FakeLLM
from chainreact.tools import tool
from chainreact.tools.registry import create_builtin

from .conftest import call, make_agent

deleted: list[str] = []


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    deleted.append(path)
    return f"deleted {path}"


def resume_of(result, answers):  # type: ignore[no-untyped-def]
    i = result.interruption
    return Resume(result.messages, result.steps, i.pending, {}, answers, result.metadata["run_id"])


async def test_ask_user_builtin_by_name_and_a_refused_answer_asks_again(server: FakeLLM) -> None:
    server.add_turns([{"tool_calls": [call("ask_user", {"question": "Size?", "schema": {"enum": ["S", "M"]}},
                                           id="q")]},
                      {"text": "M it is"}])
    agent = make_agent(server, tools=["ask_user"])
    first = await agent.run("order")
    assert first.stop_reason == "interrupted"
    # A hand-made Resume is not checked by a store: the tool itself refuses and asks again.
    again = await agent.run(resume=resume_of(first, {"q": "XL"}))
    assert again.stop_reason == "interrupted"
    assert "the previous answer was refused" in again.interruption.questions[0].question
    final = await agent.run(resume=resume_of(again, {"q": "M"}))
    assert final.content == "M it is"
    assert [m.content for m in final.messages if m.role == "tool"] == ["M"]


async def test_require_approval_in_python(server: FakeLLM) -> None:
    deleted.clear()
    server.add_turns([{"tool_calls": [call("delete_file", {"path": "x"}, id="d")]}, {"text": "ok"}])
    agent = make_agent(server, tools=[require_approval(delete_file)])
    first = await agent.run("rm x")
    q = first.interruption.questions[0]
    assert (q.kind, q.tool, deleted) == ("approval", "delete_file", [])
    assert (await agent.run(resume=resume_of(first, {"d": True}))).content == "ok"
    assert deleted == ["x"]


def test_approval_shapes_and_ask_user_config() -> None:
    assert approval_decision("reject") == {"approve": False, "reason": None, "arguments": None}
    assert approval_decision({"arguments": {"a": 1}})["approve"] is True
    for bad in ("maybe", {"approve": False, "arguments": {}}, {"why": 1}, {}):
        with pytest.raises(AnswerError):
            approval_decision(bad)
    t = create_builtin("ask_user", {"schema": {"type": "integer"}})
    assert isinstance(t, AskUserTool) and t.schema == {"type": "integer"}
    with pytest.raises(ConfigError, match="unknown config key"):
        create_builtin("ask_user", {"shema": {}})
