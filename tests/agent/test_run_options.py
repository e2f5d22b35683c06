"""A run's options (agent/run_options.py, answer_format.py): external tools stop the run like an interrupt
and a later Resume with their results goes on; tool_choice reaches the first model call only when it
forces a call; an answer format is sent with every call and its answer checked and asked again."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from chainreact.agent import (
    EXTERNAL,
    AnswerFormatError,
    Resume,
    RunOptions,
    answer_format,
    external_tools,
    pending_external,
)
from chainreact.agent.run_options import check_tool_choice
from chainreact.errors import ConfigError
from chainreact.testing import FakeLLM
from chainreact.types import RetryEvent

from .conftest import call, make_agent

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def resume_with(result: Any, answers: dict[str, Any]) -> Resume:
    i = result.interruption
    return Resume(result.messages, result.steps, i.pending, {}, answers, result.metadata["run_id"])


async def test_an_external_call_stops_the_run_after_the_agents_own_calls_and_a_resume_goes_on(
        server: FakeLLM) -> None:
    server.add_turns([
        {"text": "Checking.", "tool_calls": [call("add", {"a": 2, "b": 3}, id="own"),
                                             call("get_weather", {"city": "Oslo"}, id="ext")]},
        {"tool_calls": [call("get_weather", {"city": "Rome"}, id="ext2")]},
        {"text": "5, and Oslo is cold while Rome is warm."},
    ])
    agent = make_agent(server)
    options = RunOptions(tuple(external_tools([WEATHER])))
    first = await agent.run("sum and weather", options=options)
    assert first.stop_reason == "interrupted"
    pending = pending_external(first)
    assert pending is not None and [(c.id, c.name) for c in pending] == [("ext", "get_weather")]
    assert [q.kind for q in first.interruption.questions] == [EXTERNAL]
    # the agent's own call of that step ran first; its result is in the history already
    assert [(m.tool_call_id, m.content) for m in first.messages if m.role == "tool"] == [("own", "5")]
    # the model was offered both the agent's tools and the caller's
    offered = [t["function"]["name"] for t in server.chat_requests[0].body["tools"]]
    assert offered == ["add", "get_weather"]

    second = await agent.run(resume=resume_with(first, {"ext": "cold"}), options=options)
    assert second.stop_reason == "interrupted" and [c.id for c in pending_external(second) or []] == ["ext2"]
    third = await agent.run(resume=resume_with(second, {"ext2": {"content": "warm", "is_error": False}}),
                            options=options)
    assert third.content == "5, and Oslo is cold while Rome is warm."
    sent = server.chat_requests[2].messages
    assert [(m["tool_call_id"], m["content"]) for m in sent if m["role"] == "tool"] == [
        ("own", "5"), ("ext", "cold"), ("ext2", "warm")]


async def test_without_options_the_callers_tool_is_unknown_and_a_clash_is_refused(server: FakeLLM) -> None:
    server.add_turns([{"tool_calls": [call("get_weather", {"city": "Oslo"})]}, {"text": "no tool"}])
    agent = make_agent(server)
    result = await agent.run("weather")  # no options: the model called a tool the run does not have
    assert result.content == "no tool"
    assert "unknown tool 'get_weather'" in server.chat_requests[1].messages[-1]["content"]
    clash = RunOptions(tuple(external_tools([{"type": "function", "function": {"name": "add"}}])))
    with pytest.raises(ConfigError, match="'add' is already a tool of the agent"):
        await agent.plan(options=clash)


async def test_a_forced_tool_choice_holds_for_the_first_call_only(server: FakeLLM) -> None:
    server.add_turns([{"tool_calls": [call("add", {"a": 1, "b": 1})]}, {"text": "2"}])
    agent = make_agent(server)
    forced = RunOptions(tool_choice={"type": "function", "name": "add"})  # the Responses API's flat form
    assert (await agent.run("1+1", options=forced)).content == "2"
    first, second = (r.body for r in server.chat_requests)
    assert first["tool_choice"] == {"type": "function", "function": {"name": "add"}}
    assert second["tool_choice"] == "auto"
    server.add_turns([{"text": "no tools for me"}])
    await agent.run("hi", options=RunOptions(tool_choice="none"))
    assert server.chat_requests[-1].body["tool_choice"] == "none"
    check_tool_choice("required", ["add"])
    with pytest.raises(ConfigError, match="not among the tools"):
        check_tool_choice({"type": "function", "function": {"name": "nope"}}, ["add"])
    with pytest.raises(ConfigError, match="tool_choice must be"):
        check_tool_choice("always", ["add"])


SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}, "temp": {"type": "number"}},
          "required": ["city", "temp"], "additionalProperties": False}


@pytest.mark.parametrize("stream", [False, True])
async def test_an_answer_that_misses_the_schema_is_asked_again(server: FakeLLM, stream: bool) -> None:
    fenced = "```json\n" + orjson.dumps({"city": "Oslo", "temp": -3}).decode() + "\n```"
    server.add_turns([{"text": '{"city": "Oslo"}'}, {"text": fenced}])
    agent = make_agent(server, tools=[])
    fmt = answer_format({"type": "json_schema", "json_schema": {"name": "weather", "schema": SCHEMA,
                                                                 "strict": True}})
    events = [ev async for ev in agent.stream("weather?", options=RunOptions(answer=fmt))] if stream else []
    result = None if stream else await agent.run("weather?", options=RunOptions(answer=fmt))
    content = events[-1].content if stream else result.content
    assert orjson.loads(content) == {"city": "Oslo", "temp": -3}  # the fence is removed
    first, second = (r.body for r in server.chat_requests)
    assert first["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "weather", "schema": SCHEMA, "strict": True}}
    assert second["response_format"] == first["response_format"]
    assert "temp" in second["messages"][-1]["content"] and second["messages"][-1]["role"] == "user"
    if stream:
        retries = [e for e in events if isinstance(e, RetryEvent)]
        assert [(e.error_type, e.attempt) for e in retries] == [("AnswerFormatError", 1)]
    else:  # the rejected attempt and the re-ask are not part of the run's history
        assert [m.role for m in result.messages] == ["system", "user", "assistant"]
        assert result.usage.total_tokens > 0


async def test_a_strict_format_fails_the_run_and_a_loose_one_gives_the_last_answer(server: FakeLLM) -> None:
    agent = make_agent(server, tools=[])
    server.add_turns([{"text": "not json"}, {"text": "[1]"}, {"text": "still not"}])
    strict = answer_format({"type": "json_schema", "json_schema": {"name": "w", "schema": SCHEMA,
                                                                    "strict": True}})
    with pytest.raises(AnswerFormatError, match="after 3 attempt"):
        await agent.run("x", options=RunOptions(answer=strict))
    server.add_turns([{"text": "nope"}, {"text": "nope"}, {"text": "nope either"}])
    loose = answer_format({"type": "json_object"})
    assert (await agent.run("x", options=RunOptions(answer=loose))).content == "nope either"
    assert server.chat_requests[-1].body["response_format"] == {"type": "json_object"}


def test_format_and_tool_definitions_are_checked_with_the_field_named() -> None:
    assert answer_format({"type": "text"}) is None
    for bad, where in (({"type": "xml"}, "response_format.type"),
                       ({"type": "json_schema", "json_schema": {"name": "a b"}}, "json_schema.name"),
                       ({"type": "json_schema", "json_schema": {"name": "a", "schema": []}}, "schema")):
        with pytest.raises(ConfigError, match=where):
            answer_format(bad)
    flat = answer_format({"type": "json_schema", "name": "w", "schema": SCHEMA})  # Responses API form
    assert flat is not None and flat.name == "w" and not flat.strict
    for bad, where in (([{"type": "web_search"}], "only function tools"),
                       ([{"type": "function", "function": {"name": "a.b"}}], r"tools\[0\].function.name"),
                       ([WEATHER, WEATHER], "two tools are named")):
        with pytest.raises(ConfigError, match=where):
            external_tools(bad)
    again = RunOptions.from_dict(orjson.loads(orjson.dumps(RunOptions(
        tuple(external_tools([WEATHER])), "required", flat).to_dict())))
    assert again is not None and again.external[0].spec() == external_tools([WEATHER])[0].spec()
    assert again.tool_choice == "required" and again.answer == flat
