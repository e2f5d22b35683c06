"""POST /v1/responses with the official `openai` SDK (create, the streaming helper that validates the event
sequence, function tools run by the client, previous_response_id) and the OpenAI Agents SDK's Responses
model with a function tool the SDK runs itself, against a real server and the scripted model."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import openai
import orjson
import pydantic
import pytest

from tests.server.runs_helpers import agent_doc, wait_status
from tests.server.test_flows_routes import answer, helpdesk

WEATHER = {"type": "function", "name": "get_weather", "description": "The weather of a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                          "additionalProperties": False}, "strict": True}


def client_of(srv: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=srv.url + "/v1", api_key="none", max_retries=0)


def test_create_with_instructions_and_usage(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([{"text": "Paris."}])
    srv = serve({"helper.json": agent_doc(llm.url)})
    r = client_of(srv).responses.create(model="helper", input="Capital of France?", instructions="Be brief.")
    assert r.status == "completed" and r.output_text == "Paris." and r.model == "helper"
    assert [o.type for o in r.output] == ["message"]
    assert r.usage is not None and r.usage.total_tokens == r.usage.input_tokens + r.usage.output_tokens > 0
    sent = llm.chat_requests[0].messages
    assert sent == [{"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Capital of France?"}]


def test_stream_event_sequence(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([{"text": "Paris is the capital.", "chunks": 3, "reasoning": "Easy one."},
                    {"text": "Rome.", "chunks": 2}])
    srv = serve({"helper.json": agent_doc(llm.url)})
    # the SDK's helper accumulates the events and refuses a sequence it cannot follow
    with client_of(srv).responses.stream(model="helper", input="Capital of France?") as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert deltas == ["Paris is ", "the ", "capital."] or "".join(deltas) == "Paris is the capital."
    assert final.output_text == "Paris is the capital." and final.status == "completed"
    assert [o.type for o in final.output] == ["reasoning", "message"]
    assert final.output[0].content[0].text == "Easy one."
    # on the wire: SSE with event names, sequence numbers counting from 0
    with httpx.stream("POST", srv.url + "/v1/responses", timeout=30,
                      json={"model": "helper", "input": "Italy?", "stream": True}) as r:
        lines = [line for line in r.iter_lines() if line.startswith(("event: ", "data: "))]
    names = [line[7:] for line in lines if line.startswith("event: ")]
    datas = [orjson.loads(line[6:]) for line in lines if line.startswith("data: ")]
    assert [d["type"] for d in datas] == names
    assert [d["sequence_number"] for d in datas] == list(range(len(datas)))
    assert names == ["response.created", "response.in_progress", "response.output_item.added",
                     "response.content_part.added", "response.output_text.delta",
                     "response.output_text.delta",
                     "response.output_text.done", "response.content_part.done", "response.output_item.done",
                     "response.completed"]
    assert datas[-1]["response"]["output"][0]["content"][0]["text"] == "Rome."


@pytest.mark.parametrize("stream", [False, True])
def test_function_tools_run_by_the_client(fake_llm: Any, serve: Any, stream: bool) -> None:
    llm = fake_llm([{"tool_calls": [{"id": "own", "name": "add", "arguments": {"a": 1, "b": 2}},
                                    {"id": "w", "name": "get_weather", "arguments": {"city": "Oslo"}}]},
                    {"text": "3, and it snows in Oslo."}])
    own = {"type": "python", "name": "tests.agent.conftest:add"}
    srv = serve({"helper.json": agent_doc(llm.url, tools=[own])})
    client = client_of(srv)
    ask = [{"role": "user", "content": "1+2, and Oslo's weather?"}]
    if stream:
        with client.responses.stream(model="helper", input=ask, tools=[WEATHER]) as s:
            events = [e.type for e in s]
            first = s.get_final_response()
        assert "response.function_call_arguments.done" in events
    else:
        first = client.responses.create(model="helper", input=ask, tools=[WEATHER])
    calls = [o for o in first.output if o.type == "function_call"]
    assert [(c.name, orjson.loads(c.arguments)) for c in calls] == [("get_weather", {"city": "Oslo"})]
    offered = llm.chat_requests[0].body["tools"][1]["function"]
    assert offered == {k: v for k, v in WEATHER.items() if k != "type"}
    # the Agents SDK way: the whole input again, the response's items, then the function's output
    again = [*ask, *(o.model_dump(exclude_none=True) for o in first.output),
             {"type": "function_call_output", "call_id": calls[0].call_id, "output": "snow, -3 C"}]
    second = client.responses.create(model="helper", input=again, tools=[WEATHER])
    assert second.output_text == "3, and it snows in Oslo."
    sent = llm.chat_requests[1].messages
    tool_msgs = [(m["tool_call_id"], m["content"]) for m in sent if m["role"] == "tool"]
    assert tool_msgs == [("own", "3"), ("w", "snow, -3 C")]


def test_previous_response_id_with_state_and_without(fake_llm: Any, serve: Any, tmp_path: Any) -> None:
    llm = fake_llm([{"text": "Hello Ann."}, {"text": "You are Ann."}, {"text": "Hi."}])
    srv = serve({"helper.json": agent_doc(llm.url)}, state=f"sqlite:///{tmp_path}/s.db")
    client = client_of(srv)
    one = client.responses.create(model="helper", input="I am Ann.")
    two = client.responses.create(model="helper", input="Who am I?", previous_response_id=one.id)
    assert two.output_text == "You are Ann." and two.previous_response_id == one.id
    assert [(m["role"], m["content"]) for m in llm.chat_requests[1].messages] == [
        ("system", "You help."), ("user", "I am Ann."), ("assistant", "Hello Ann."), ("user", "Who am I?")]

    plain = serve({"helper.json": agent_doc(llm.url)})  # no --state: finished runs are not kept
    first = client_of(plain).responses.create(model="helper", input="Hi")
    with pytest.raises(openai.NotFoundError) as caught:
        client_of(plain).responses.create(model="helper", input="again", previous_response_id=first.id)
    assert caught.value.code == "previous_response_not_found" and "--state" in caught.value.message


def test_a_flow_continued_by_previous_response_id_a_chain_and_errors(fake_llm: Any, serve: Any) -> None:
    chain = {"ruleChain": {"id": "echo", "name": "Echo"}, "metadata": {"nodes": [
        {"id": "t", "type": "jsTransform", "configuration": {
            "jsScript": "return {msg: 'you said ' + msg.messages[msg.messages.length - 1].content, "
                        "metadata: metadata, msgType: msgType};"}}], "connections": []}}
    llm = fake_llm([answer("I can help with that."), answer("Done, anything else?", done=True)])
    srv = serve({"helpdesk.json": helpdesk(llm.url), "echo.json": chain, "helper.json": agent_doc(llm.url)})
    client = client_of(srv)
    said = client.responses.create(model="echo", input="ping")
    assert said.output_text == "you said ping"
    with client.responses.stream(model="echo", input="pong") as s:
        assert s.get_final_response().output_text == "you said pong"

    first = client.responses.create(model="helpdesk", input="My printer is broken")
    assert first.output_text == "Hello!\n\nI can help with that."
    with client.responses.stream(model="helpdesk", input="It works now", previous_response_id=first.id) as s:
        second = s.get_final_response()
    assert second.output_text == "Done, anything else?\n\nGoodbye."  # the session went on to its end

    for body, status, code in (({"model": "nope", "input": "x"}, 404, "model_not_found"),
                               ({"model": "helper", "input": [{"type": "web_search_call"}]}, 400,
                                "invalid_input"),
                               ({"model": "helper", "input": "x", "conversation": "c1"}, 400,
                                "unsupported_parameter"),
                               ({"model": "echo", "input": "x", "tools": [WEATHER]}, 400,
                                "unsupported_parameter"),
                               ({"model": "echo", "input": "x", "previous_response_id": "resp_0123"}, 400,
                                "previous_response_not_found"),
                               ({"model": "helper", "input": "x", "text": {"format": {"type": "yaml"}}}, 400,
                                "invalid_request")):
        r = httpx.post(srv.url + "/v1/responses", json=body, timeout=10)
        assert (r.status_code, r.json()["error"]["code"]) == (status, code), r.text


def test_the_agents_sdk_runs_its_function_tool_against_a_served_agent(fake_llm: Any, serve: Any) -> None:
    agents = pytest.importorskip("agents")
    llm = fake_llm([{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]},
                    {"text": "It snows in Oslo."},
                    {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Rome"}}], "arg_chunks": 2},
                    {"text": "Rome is sunny.", "chunks": 2}])
    srv = serve({"helper.json": agent_doc(llm.url)})
    ran: list[str] = []

    @agents.function_tool
    def get_weather(city: str) -> str:
        """The weather of a city."""
        ran.append(city)
        return "snow" if city == "Oslo" else "sun"

    async def main() -> tuple[Any, Any]:
        agents.set_tracing_disabled(True)
        client = openai.AsyncOpenAI(base_url=srv.url + "/v1", api_key="none", max_retries=0)
        model = agents.OpenAIResponsesModel(model="helper", openai_client=client)
        agent = agents.Agent(name="weather", instructions="Use the tool.", tools=[get_weather], model=model)
        done = await agents.Runner.run(agent, "Weather in Oslo?")
        streamed = agents.Runner.run_streamed(agent, "Weather in Rome?")
        async for _ in streamed.stream_events():
            pass
        return done, streamed

    done, streamed = asyncio.run(main())
    assert done.final_output == "It snows in Oslo." and streamed.final_output == "Rome is sunny."
    assert ran == ["Oslo", "Rome"]
    back = [m for m in llm.chat_requests[1].messages if m["role"] == "tool"]
    assert [m["content"] for m in back] == ["snow"]
    assert llm.chat_requests[0].messages[0] == {"role": "system", "content": "Use the tool."}


def test_every_shape_validates_against_the_sdks_own_models(fake_llm: Any, serve: Any) -> None:
    """The SDK parses leniently; its pydantic models, validated strictly, pin each field's name and type."""
    from openai.types.chat import ChatCompletion, ChatCompletionChunk
    from openai.types.responses import Response, ResponseStreamEvent

    calls = {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}], "reasoning": "Hm."}
    llm = fake_llm([calls, {"text": "Snow.", "reasoning": "Easy.", "chunks": 2}, calls, calls, calls])
    srv = serve({"helper.json": agent_doc(llm.url)})
    events = pydantic.TypeAdapter(ResponseStreamEvent)

    def sse(path: str, body: dict[str, Any]) -> list[Any]:
        with httpx.stream("POST", srv.url + path, json={**body, "stream": True}, timeout=30) as r:
            return [orjson.loads(line[6:]) for line in r.iter_lines()
                    if line.startswith("data: ") and line != "data: [DONE]"]

    first = sse("/v1/responses", {"model": "helper", "input": "Oslo?", "tools": [WEATHER]})
    for data in first:
        events.validate_python(data)
    done = first[-1]["response"]
    Response.model_validate(done)
    call = next(o for o in done["output"] if o["type"] == "function_call")
    second = sse("/v1/responses", {"model": "helper", "tools": [WEATHER], "input": [
        {"type": "function_call_output", "call_id": call["call_id"], "output": "snow"}]})
    kinds = [events.validate_python(d).type for d in second]
    assert "response.reasoning_text.delta" in kinds and kinds[-1] == "response.completed"
    Response.model_validate(second[-1]["response"])
    plain = httpx.post(srv.url + "/v1/responses", json={"model": "helper", "input": "x", "tools": [WEATHER]},
                       timeout=30).json()
    Response.model_validate(plain)

    chat_tool = {"type": "function", "function": {k: v for k, v in WEATHER.items() if k != "type"}}
    ask = {"model": "helper", "messages": [{"role": "user", "content": "Oslo?"}], "tools": [chat_tool]}
    for chunk in sse("/v1/chat/completions", ask):
        ChatCompletionChunk.model_validate(chunk)
    ChatCompletion.model_validate(httpx.post(srv.url + "/v1/chat/completions", json=ask, timeout=30).json())


def test_a_client_that_leaves_a_response_stream_cancels_its_run(fake_llm: Any, serve: Any,
                                                                 tmp_path: Any) -> None:
    llm = fake_llm([{"text": "y" * 300, "chunks": 300, "chunk_delay": 0.05}], loop=True)
    srv = serve({"helper.json": agent_doc(llm.url)}, state=f"sqlite:///{tmp_path}/s.db")
    body = {"model": "helper", "stream": True, "input": "talk"}
    rid = None
    with httpx.Client(timeout=10) as client, client.stream("POST", srv.url + "/v1/responses", json=body) as r:
        for line in r.iter_lines():
            event = orjson.loads(line[6:]) if line.startswith("data: ") else {}
            if event.get("type") == "response.created":
                rid = event["response"]["id"]
            if event.get("type") == "response.output_text.delta":
                break  # the answer is streaming; now the client closes the connection
    assert rid is not None and rid.startswith("resp_")
    assert wait_status(srv.url, rid[len("resp_"):])["status"] == "cancelled"
