"""OpenAI's clients one step past the basics, against `chainreact serve`: the client's own tools, a
response_format, and the Responses API with a function tool the client runs.

The served agent has a tool of its own (`add`). The client brings `get_weather`, which it runs itself:
when the model calls it, the answer ends with `finish_reason: "tool_calls"` (the agent's own call of that
step ran first), the client runs it and sends the result, and the same run goes on. The same through
`POST /v1/responses`, as `function_call` / `function_call_output` items.

Runs offline against chainreact's scripted model: `python examples/server_openai_clients.py`.
"""

import json
import tempfile
from pathlib import Path

import openai
import pydantic

from chainreact.server import Catalog, create_app, serve_in_background
from chainreact.testing import FakeLLM

AGENT = {"id": "helper", "type": "ai/agent", "name": "helper", "configuration": {
    "url": "", "key": "unused", "model": "fake-model", "systemPrompt": "You help.",
    "tools": [{"type": "python", "name": "add", "config": {"function": "demo_tools:add"}}]}}

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


class Weather(pydantic.BaseModel):
    city: str
    temp: float


def both(city: str) -> dict:
    """A model turn calling the agent's own tool and the client's."""
    return {"tool_calls": [{"name": "add", "arguments": {"a": 19, "b": 23}},
                           {"name": "get_weather", "arguments": {"city": city}}]}


def get_weather(city: str) -> str:  # the client's tool: it runs here, in the client
    return {"Oslo": "-3 C, snow", "Rome": "24 C, sun"}[city]


SCRIPT = [
    both("Oslo"), {"text": "19 + 23 = 42; Oslo: -3 C, snow."},
    {"text": '{"city": "Oslo"}'}, {"text": '{"city": "Oslo", "temp": -3}'},  # the first misses "temp"
    both("Rome"), {"text": "42, and Rome is sunny."},
]


def main() -> None:
    with FakeLLM(SCRIPT) as llm, tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "helper.json").write_text(json.dumps({**AGENT, "configuration": {
            **AGENT["configuration"], "url": llm.url}}))
        with serve_in_background(create_app(Catalog.load([Path(tmp)]))) as base:
            client = openai.OpenAI(base_url=base + "/v1", api_key="unused")
            print("model:", client.models.retrieve("helper").owned_by)

            # 1. chat completions with a tool the client runs
            messages = [{"role": "user", "content": "19 + 23, and the weather in Oslo?"}]
            first = client.chat.completions.create(model="helper", messages=messages, tools=[WEATHER])
            choice = first.choices[0]
            call = choice.message.tool_calls[0]
            print(f"chat: finish_reason={choice.finish_reason}, call {call.function.name}"
                  f"{call.function.arguments}")
            messages += [choice.message.model_dump(exclude_none=True),
                         {"role": "tool", "tool_call_id": call.id,
                          "content": get_weather(**json.loads(call.function.arguments))}]
            done = client.chat.completions.create(model="helper", messages=messages, tools=[WEATHER])
            print("chat:", done.choices[0].message.content)

            # 2. a response format: checked, and asked again when the answer does not match
            parsed = client.chat.completions.parse(model="helper", response_format=Weather, messages=[
                {"role": "user", "content": "The weather in Oslo, as JSON"}])
            print("parsed:", repr(parsed.choices[0].message.parsed))

            # 3. the Responses API: function_call out, function_call_output back
            tool = {"type": "function", **WEATHER["function"]}
            asked = [{"role": "user", "content": "19 + 23, and Rome?"}]
            r = client.responses.create(model="helper", input=asked, tools=[tool])
            fc = next(o for o in r.output if o.type == "function_call")
            print(f"responses: {fc.type} {fc.name}{fc.arguments}")
            back = {"type": "function_call_output", "call_id": fc.call_id,
                    "output": get_weather(**json.loads(fc.arguments))}
            r = client.responses.create(model="helper", tools=[tool],
                                        input=[*asked, *(o.model_dump(exclude_none=True) for o in r.output),
                                               back])
            print("responses:", r.output_text)
            # what the model saw in the last run: both tool results, the agent's and the client's
            print("model saw:", [m["content"] for m in llm.chat_requests[-1].messages if m["role"] == "tool"])


if __name__ == "__main__":
    main()
