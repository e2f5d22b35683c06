"""The OpenAI face with the official `openai` SDK, one step past the basics: models.retrieve, response_format
(parse, streamed parse, json_object), and the client's own tools (sync and streamed, with sessions)."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import orjson
import pydantic
import pytest

from tests.server.runs_helpers import agent_doc

OWN_ADD = {"type": "python", "name": "tests.agent.conftest:add"}
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


class GetWeather(pydantic.BaseModel):
    """The weather of a city"""

    city: str


class Weather(pydantic.BaseModel):
    city: str
    temp: float


def client_of(srv: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=srv.url + "/v1", api_key="none", max_retries=0)


def test_models_retrieve_and_an_unknown_model(fake_llm: Any, serve: Any) -> None:
    srv = serve({"helper.json": agent_doc(fake_llm([]).url)})
    client = client_of(srv)
    model = client.models.retrieve("helper")
    assert (model.id, model.object, model.owned_by) == ("helper", "model", "chainreact-agent")
    with pytest.raises(openai.NotFoundError) as caught:
        client.models.retrieve("nope")
    assert caught.value.code == "model_not_found"


def both_calls(city: str = "Oslo") -> dict[str, Any]:
    return {"text": "Let me check.",
            "tool_calls": [{"id": "own", "name": "add", "arguments": {"a": 2, "b": 3}},
                           {"id": "w1", "name": "get_weather", "arguments": {"city": city}}]}


def test_client_tools_end_the_answer_with_their_calls_and_the_results_go_on(fake_llm: Any,
                                                                           serve: Any) -> None:
    llm = fake_llm([both_calls(), {"text": "5, and Oslo is at -3 C."}])
    srv = serve({"helper.json": agent_doc(llm.url, tools=[OWN_ADD])})
    client = client_of(srv)
    question = {"role": "user", "content": "2+3, and the weather in Oslo?"}

    first = client.chat.completions.create(model="helper", messages=[question], tools=[WEATHER])
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls or []
    assert [(c.function.name, orjson.loads(c.function.arguments)) for c in calls] == [
        ("get_weather", {"city": "Oslo"})]
    assert choice.message.content == "Let me check."
    # the model was offered the agent's tools and the client's; the agent's own call ran in that step
    assert [t["function"]["name"] for t in llm.chat_requests[0].body["tools"]] == ["add", "get_weather"]
    assert len(llm.chat_requests) == 1

    answer = {"role": "tool", "tool_call_id": calls[0].id, "content": "-3 C"}
    second = client.chat.completions.create(
        model="helper", tools=[WEATHER],
        messages=[question, choice.message.model_dump(exclude_none=True), answer])
    assert second.choices[0].finish_reason == "stop"
    assert second.choices[0].message.content == "5, and Oslo is at -3 C."
    # the same run went on: the model sees its own call ids, both results, after one prompt
    sent = llm.chat_requests[1].messages
    results = [(m["tool_call_id"], m["content"]) for m in sent if m["role"] == "tool"]
    assert results == [("own", "5"), ("w1", "-3 C")]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool"]

    # the same results again: that run no longer waits
    told = choice.message.model_dump(exclude_none=True)
    with pytest.raises(openai.ConflictError) as caught:
        client.chat.completions.create(model="helper", tools=[WEATHER], messages=[question, told, answer])
    assert caught.value.code == "run_not_waiting"


def test_client_tools_streamed_with_the_sdks_stream_helper(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([{**both_calls("Rome"), "arg_chunks": 3}, {"text": "5; Rome: 24 C.", "chunks": 3}])
    srv = serve({"helper.json": agent_doc(llm.url, tools=[OWN_ADD])})
    client = client_of(srv)
    tool = openai.pydantic_function_tool(GetWeather, name="get_weather")  # strict, as the SDK makes it
    question = {"role": "user", "content": "2+3 and Rome?"}
    with client.chat.completions.stream(model="helper", messages=[question], tools=[tool]) as stream:
        deltas = [e.delta for e in stream if e.type == "content.delta"]
        first = stream.get_final_completion()
    assert "".join(deltas) == "Let me check."
    message = first.choices[0].message
    assert first.choices[0].finish_reason == "tool_calls"
    call = (message.tool_calls or [])[0]
    assert call.function.parsed_arguments == GetWeather(city="Rome")
    assert llm.chat_requests[0].body["tools"][1]["function"]["strict"] is True

    answer = {"role": "tool", "tool_call_id": call.id, "content": "24 C"}
    chunks = list(client.chat.completions.create(
        model="helper", stream=True, tools=[tool],
        messages=[question, message.model_dump(exclude_none=True, exclude={"parsed"}), answer]))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "5; Rome: 24 C."
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_client_tools_in_a_session_and_the_whole_history_sent_back(fake_llm: Any, serve: Any,
                                                                   tmp_path: Any) -> None:
    llm = fake_llm([both_calls(), {"text": "5; -3 C."}, {"text": "Bring a coat."}])
    srv = serve({"helper.json": agent_doc(llm.url, tools=[OWN_ADD])}, state=f"sqlite:///{tmp_path}/s.db")
    client = client_of(srv)
    question = {"role": "user", "content": "2+3 and Oslo?"}
    first = client.chat.completions.create(model="helper", user="ann", messages=[question],
                                           tools=[WEATHER])
    told = first.choices[0].message.model_dump(exclude_none=True)
    result = {"role": "tool", "tool_call_id": told["tool_calls"][0]["id"], "content": "-3 C"}
    second = client.chat.completions.create(model="helper", user="ann", messages=[question, told, result],
                                            tools=[WEATHER])
    answer = {"role": "assistant", "content": second.choices[0].message.content}
    # a chat UI sends the whole conversation again, its tool calls and results included
    third = client.chat.completions.create(
        model="helper", user="ann", tools=[WEATHER],
        messages=[question, told, result, answer, {"role": "user", "content": "What should I wear?"}])
    assert third.choices[0].message.content == "Bring a coat."
    sent = llm.chat_requests[2].messages
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool", "assistant", "user"]
    assert sent[-1]["content"] == "What should I wear?"


SCHEMA_TURNS = [{"text": '{"city": "Oslo"}'}, {"text": '{"city": "Oslo", "temp": -3}', "chunks": 3}]


def test_response_format_parse_and_the_re_ask(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([*SCHEMA_TURNS, *SCHEMA_TURNS, {"text": '{"ok": true}'}])
    srv = serve({"helper.json": agent_doc(llm.url)})
    client = client_of(srv)
    ask = [{"role": "user", "content": "Weather in Oslo as JSON"}]
    done = client.chat.completions.parse(model="helper", messages=ask, response_format=Weather)
    assert done.choices[0].message.parsed == Weather(city="Oslo", temp=-3)
    fmt = llm.chat_requests[0].body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "Weather"
    assert fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"]["required"] == ["city", "temp"]
    reask = llm.chat_requests[1].messages
    assert reask[-2] == {"role": "assistant", "content": '{"city": "Oslo"}'}
    assert "temp" in reask[-1]["content"]

    # streamed: only the answer that passed reaches the client (the SDK parses the joined deltas)
    with client.chat.completions.stream(model="helper", messages=ask, response_format=Weather) as stream:
        text = "".join(e.delta for e in stream if e.type == "content.delta")
        final = stream.get_final_completion()
    assert orjson.loads(text) == {"city": "Oslo", "temp": -3}
    assert final.choices[0].message.parsed == Weather(city="Oslo", temp=-3)

    plain = client.chat.completions.create(model="helper", messages=ask,
                                           response_format={"type": "json_object"})
    assert orjson.loads(plain.choices[0].message.content or "") == {"ok": True}
    assert llm.chat_requests[-1].body["response_format"] == {"type": "json_object"}


def test_bad_options_and_options_for_a_chain_are_refused(fake_llm: Any, serve: Any) -> None:
    chain = {"ruleChain": {"id": "echo", "name": "Echo"}, "metadata": {"nodes": [
        {"id": "t", "type": "jsTransform",
         "configuration": {"jsScript": "return {msg: msg, metadata: metadata, msgType: msgType};"}}],
        "connections": []}}
    srv = serve({"helper.json": agent_doc(fake_llm([]).url, tools=[OWN_ADD]), "echo.json": chain})
    ask = [{"role": "user", "content": "x"}]
    for body, code, words in (
            ({"model": "echo", "tools": [WEATHER]}, "unsupported_parameter", "is a chain"),
            ({"model": "helper", "tools": [{"type": "function", "function": {"name": "add"}}]},
             "invalid_request", "'add' is a tool of the agent itself"),
            ({"model": "helper", "tool_choice": {"type": "function", "function": {"name": "nope"}}},
             "invalid_request", "not among the tools"),
            ({"model": "helper", "response_format": {"type": "json_schema", "json_schema": {"name": "a b"}}},
             "invalid_request", "response_format.json_schema.name")):
        r = httpx.post(srv.url + "/v1/chat/completions", json={**body, "messages": ask}, timeout=10)
        assert r.status_code == 400, r.text
        assert r.json()["error"]["code"] == code and words in r.json()["error"]["message"]


def test_tool_results_that_name_no_waiting_run_and_missing_results(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([{"text": "It is -3 C in Oslo."},
                    {"tool_calls": [{"id": "a", "name": "get_weather", "arguments": {"city": "Oslo"}},
                                    {"id": "b", "name": "get_weather", "arguments": {"city": "Rome"}}]},
                    {"text": "Cold and warm."}])
    srv = serve({"helper.json": agent_doc(llm.url)})
    client = client_of(srv)
    # a conversation whose tool round is not ours (another model's ids): a new run gets it as it is
    history = [{"role": "user", "content": "Oslo?"},
               {"role": "assistant", "content": None, "tool_calls": [
                   {"id": "call_x", "type": "function", "function": {"name": "get_weather",
                                                                     "arguments": '{"city":"Oslo"}'}}]},
               {"role": "tool", "tool_call_id": "call_x", "content": "-3 C"}]
    plain = client.chat.completions.create(model="helper", messages=history, tools=[WEATHER])
    assert plain.choices[0].message.content == "It is -3 C in Oslo."
    assert llm.chat_requests[0].messages[1:] == [
        {"role": "user", "content": "Oslo?"},
        {"role": "assistant", "content": "", "tool_calls": history[1]["tool_calls"]},
        {"role": "tool", "tool_call_id": "call_x", "content": "-3 C"}]

    ask = [{"role": "user", "content": "Oslo and Rome?"}]
    first = client.chat.completions.create(model="helper", messages=ask, tools=[WEATHER])
    told = first.choices[0].message.model_dump(exclude_none=True)
    ids = [c["id"] for c in told["tool_calls"]]
    assert len(ids) == 2 and all(i.startswith("call_") for i in ids)
    with pytest.raises(openai.BadRequestError) as caught:  # one result of two: the run goes on waiting
        client.chat.completions.create(model="helper", tools=[WEATHER], messages=[
            *ask, told, {"role": "tool", "tool_call_id": ids[0], "content": "-3 C"}])
    assert caught.value.code == "invalid_tool_results" and "no answer for 'b'" in caught.value.message
    done = client.chat.completions.create(model="helper", tools=[WEATHER], messages=[
        *ask, told, {"role": "tool", "tool_call_id": ids[0], "content": "-3 C"},
        {"role": "tool", "tool_call_id": ids[1], "content": [{"type": "text", "text": "24 C"}]}])
    assert done.choices[0].message.content == "Cold and warm."
    assert [m["content"] for m in llm.chat_requests[2].messages if m["role"] == "tool"] == ["-3 C", "24 C"]


def test_a_strict_format_never_met_fails_the_request_naming_the_problems(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([{"text": "no"}, {"text": "[]"}, {"text": '{"city": 1}'}])
    srv = serve({"helper.json": agent_doc(llm.url)})
    with pytest.raises(openai.InternalServerError) as caught:
        client_of(srv).chat.completions.parse(model="helper", response_format=Weather,
                                              messages=[{"role": "user", "content": "Oslo?"}])
    assert "does not match the requested response format after 3 attempt(s)" in caught.value.message
    assert len(llm.chat_requests) == 3
