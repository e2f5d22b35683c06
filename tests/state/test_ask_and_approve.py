"""The builtin ask_user tool and requireApproval, through a store: the run stops `interrupted` with its
questions, `Agent.resume(run_id, answers, store=...)` goes on, bad answers are refused and change nothing,
and calls that needed no input run once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from chainreact.agent import Agent
from chainreact.state import StateError, open_store
from chainreact.testing import FakeLLM
from chainreact.tools import tool
from chainreact.types import Interrupted

ran: list[str] = []
deleted: list[str] = []


@tool
def weather(city: str) -> str:
    """Weather for a city."""
    ran.append(city)
    return f"21 in {city}"


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    deleted.append(path)
    return f"deleted {path}"


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with FakeLLM([]) as srv:
        yield srv


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()
    deleted.clear()


def doc_agent(srv: FakeLLM, tools: list[Any]) -> Agent:
    """An agent from a document: `ask_user` by name, requireApproval in a descriptor."""
    return Agent.from_config({"id": "helper", "type": "ai/agent", "name": "helper", "configuration": {
        "url": srv.url, "key": "k", "model": "fake-model", "systemPrompt": "Help.", "tools": tools}},
        tools=[weather])


def tool_messages(srv: FakeLLM, request: int) -> dict[str, str]:
    msgs = srv.chat_requests[request].messages
    return {m["tool_call_id"]: m["content"] for m in msgs if m["role"] == "tool"}


@pytest.mark.parametrize("stream", [False, True])
async def test_ask_user_round_trip(store_url: str, llm: FakeLLM, stream: bool) -> None:
    llm.add_turns([
        {"tool_calls": [{"id": "w", "name": "weather", "arguments": {"city": "Lyon"}},
                        {"id": "q", "name": "ask_user",
                         "arguments": {"question": "Unit?", "schema": {"enum": ["C", "F"]}}}]},
        {"text": "70 F in Lyon"},
    ])
    async with await open_store(store_url) as store:
        agent = doc_agent(llm, ["ask_user"])
        first = await store.run_agent(agent, "weather in Lyon?", session="s1", stream=stream)
        assert first.stop_reason == "interrupted"
        [q] = first.interruption.questions
        assert (q.id, q.kind, q.question, q.schema) == ("q", "ask_user", "Unit?", {"enum": ["C", "F"]})
        run_id = first.metadata["run_id"]
        assert (await store.load_run(run_id)).status == "interrupted"

        result = await Agent.from_config(agent.config, tools=[weather]).resume(
            run_id, {"q": "F"}, store=store, stream=stream)
        assert result.stop_reason == "stop" and result.content == "70 F in Lyon"
        assert ran == ["Lyon"]  # the call that needed no input ran once, not again on resume
        assert tool_messages(llm, 1) == {"w": "21 in Lyon", "q": "F"}
        assert (await store.load_run(run_id)).status == "done"


async def test_ask_user_interrupted_event_when_streaming(llm: FakeLLM) -> None:
    llm.add_turns([{"tool_calls": [{"id": "q", "name": "ask_user", "arguments": {"question": "Name?"}}]}])
    events = [ev async for ev in doc_agent(llm, ["ask_user"]).stream("hi")]
    assert isinstance(events[-1], Interrupted)
    assert events[-1].questions == [{"id": "q", "kind": "ask_user", "question": "Name?", "tool": "ask_user",
                                     "arguments": '{"question":"Name?"}', "schema": None}]


async def test_bad_answers_are_refused_and_change_nothing(store_url: str, llm: FakeLLM) -> None:
    llm.add_turns([{"tool_calls": [{"id": "q", "name": "ask_user",
                                    "arguments": {"question": "How many?", "schema": {"type": "integer"}}}]},
                   {"text": "ok"}])
    async with await open_store(store_url) as store:
        agent = doc_agent(llm, ["ask_user"])
        run_id = (await store.run_agent(agent, "count")).metadata["run_id"]
        before = await store.load_run(run_id)
        for answers, words in (({"q": "three"}, "does not match the asked schema"),
                               ({}, "no answer for 'q'"), ({"q": 3, "x": 1}, "no question 'x'")):
            with pytest.raises(StateError, match=words):
                await agent.resume(run_id, answers, store=store)
        after = await store.load_run(run_id)
        assert (after.version, after.snapshot) == (before.version, before.snapshot)
        assert after.status == "interrupted"
        assert len(llm.chat_requests) == 1  # nothing ran
        result = await agent.resume(run_id, {"q": 3}, store=store)
        assert result.content == "ok" and tool_messages(llm, 1) == {"q": "3"}
        with pytest.raises(StateError, match="is done"):
            await agent.resume(run_id, {"q": 3}, store=store)


APPROVED = {"type": "python", "name": "delete_file",
            "config": {"function": "tests.state.test_ask_and_approve:delete_file"}, "requireApproval": True}


@pytest.mark.parametrize(("answer", "deleted_", "result"), [
    ("approve", ["a.txt"], "deleted a.txt"),
    ({"approve": False, "reason": "keep it"}, [],
     "Error: the user rejected this call to delete_file: keep it. Do not retry it unchanged."),
    ({"arguments": {"path": "b.txt"}}, ["b.txt"],
     '[the user edited the arguments to {"path":"b.txt"}]\ndeleted b.txt'),
])
async def test_approval(store_url: str, llm: FakeLLM, answer: Any, deleted_: list[str], result: str) -> None:
    llm.add_turns([
        {"tool_calls": [{"id": "w", "name": "weather", "arguments": {"city": "Oslo"}},
                        {"id": "d", "name": "delete_file", "arguments": {"path": "a.txt"}}]},
        {"text": "done"},
    ])
    async with await open_store(store_url) as store:
        agent = doc_agent(llm, [APPROVED])
        first = await store.run_agent(agent, "clean up")
        assert first.stop_reason == "interrupted" and deleted == [] and ran == ["Oslo"]
        [q] = first.interruption.questions
        assert (q.id, q.kind, q.tool, q.arguments) == ("d", "approval", "delete_file", '{"path":"a.txt"}')
        final = await agent.resume(first.metadata["run_id"], {"d": answer}, store=store)
        assert final.content == "done"
        assert deleted == deleted_ and ran == ["Oslo"]
        assert tool_messages(llm, 1) == {"w": "21 in Oslo", "d": result}


async def test_edited_arguments_that_break_the_schema_are_refused(store_url: str, llm: FakeLLM) -> None:
    llm.add_turns([{"tool_calls": [{"id": "d", "name": "delete_file", "arguments": {"path": "a.txt"}}]}])
    async with await open_store(store_url) as store:
        agent = doc_agent(llm, [APPROVED])
        run_id = (await store.run_agent(agent, "clean up")).metadata["run_id"]
        before = await store.load_run(run_id)
        with pytest.raises(StateError, match="edited arguments do not match delete_file's parameters"):
            await agent.resume(run_id, {"d": {"arguments": {"path": 7}}}, store=store)
        with pytest.raises(StateError, match="approval 'd'"):
            await agent.resume(run_id, {"d": "maybe"}, store=store)
        after = await store.load_run(run_id)
        assert (after.version, after.status) == (before.version, "interrupted") and deleted == []


def test_resume_sync_with_a_sync_store(store_url: str, llm: FakeLLM) -> None:
    """Scripts without an event loop: run and resume through SyncStore and `Agent.resume_sync`."""
    from chainreact.state import SyncStore

    llm.add_turns([{"tool_calls": [{"id": "q", "name": "ask_user", "arguments": {"question": "City?"}}]},
                   {"text": "sunny in Nice"}])
    agent = doc_agent(llm, ["ask_user"])
    with SyncStore(store_url) as store:
        first = store.run_agent(agent, "weather?")
        assert first.stop_reason == "interrupted"
        run_id = first.metadata["run_id"]
        with pytest.raises(StateError, match="no answer for 'q'"):
            agent.resume_sync(run_id, {}, store=store)
        result = agent.resume_sync(run_id, {"q": "Nice"}, store=store)
        assert result.content == "sunny in Nice" and tool_messages(llm, 1) == {"q": "Nice"}
        assert store.load_run(run_id).status == "done"


async def test_resume_sync_refuses_an_async_store(store_url: str, llm: FakeLLM) -> None:
    from chainreact.errors import ConfigError

    async with await open_store(store_url) as store:
        with pytest.raises(ConfigError, match="needs a chainreact\\.state\\.SyncStore"):
            doc_agent(llm, ["ask_user"]).resume_sync("r1", {}, store=store)
