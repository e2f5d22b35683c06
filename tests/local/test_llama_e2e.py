"""End to end against the real embedded model: llama.cpp's server with SmolLM2-135M (the `local` extra).

These make real model calls. They also pin the server's quirks that chainreact works around
(docs/local-model.md), so that if llama-cpp-python ever changes them, a test tells us.
Skipped when the extra is missing, except under CI (CI=true), where missing it is a failure.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from chainreact.local import LocalEndpoint, get_local_endpoint, local_extra_available, stop_local_sync
from chainreact.local import server as srv

_missing = local_extra_available()
if _missing and os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    raise RuntimeError(f"CI must run the embedded-model tests, but module {_missing!r} is not installed")

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(bool(_missing), reason=f"the 'local' extra is not installed (no {_missing!r} module)"),
]

ADD_TOOL = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two numbers and return their sum.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    },
}
SYSTEM = {"role": "system", "content": "You are a calculator assistant. To add numbers, call the add tool."}
ASK = {"role": "user", "content": "What is 17 + 25? Use the add tool."}


@pytest.fixture(scope="module")
def endpoint() -> Iterator[LocalEndpoint]:
    os.environ.pop(srv.LOCAL_URL_ENV, None)
    ep = asyncio.run(get_local_endpoint())
    yield ep
    stop_local_sync()


@pytest.fixture(scope="module")
def client(endpoint: LocalEndpoint) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=endpoint.url, timeout=180) as c:
        yield c


def chat(client: httpx.Client, **body: Any) -> httpx.Response:
    body.setdefault("temperature", 0)
    body.setdefault("max_tokens", 48)
    return client.post("/chat/completions", json=body)


def sse_chunks(raw: bytes) -> list[dict[str, Any]]:
    events = [line[len(b"data: "):] for line in raw.split(b"\n") if line.startswith(b"data: ")]
    assert events and events[-1] == b"[DONE]", raw[-200:]
    return [json.loads(e) for e in events[:-1]]


def test_endpoint_shape(endpoint: LocalEndpoint, client: httpx.Client) -> None:
    assert endpoint.url.startswith("http://127.0.0.1:") and endpoint.url.endswith("/v1")
    assert endpoint.managed and endpoint.compat.streamTools is False
    models = client.get("/models").json()
    assert [m["id"] for m in models["data"]] == [endpoint.model]


def test_plain_chat_call(client: httpx.Client) -> None:
    r = chat(client, messages=[{"role": "user", "content": "Say hello in one short sentence."}])
    assert r.status_code == 200, r.text
    data = r.json()
    choice = data["choices"][0]
    assert choice["message"]["role"] == "assistant"
    assert isinstance(choice["message"]["content"], str) and choice["message"]["content"].strip()
    assert choice["finish_reason"] in ("stop", "length")
    usage = data["usage"]
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_streaming_text_call(client: httpx.Client) -> None:
    r = chat(client, messages=[{"role": "user", "content": "Count from one to five."}], stream=True)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/event-stream")
    chunks = sse_chunks(r.content)
    assert len(chunks) >= 3  # role chunk, text chunk(s), finish chunk: it really streams
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text.strip()
    assert chunks[-1]["choices"][0]["finish_reason"] in ("stop", "length")


def test_tool_call_non_streaming(client: httpx.Client) -> None:
    r = chat(client, messages=[SYSTEM, ASK], tools=[ADD_TOOL], tool_choice="auto", max_tokens=100)
    assert r.status_code == 200, r.text
    choice = r.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    msg = choice["message"]
    assert msg["content"] is None  # the server's own answers carry null beside tool_calls
    (call,) = msg["tool_calls"]
    assert call["type"] == "function" and call["id"]
    assert call["function"]["name"] == "add"
    args = json.loads(call["function"]["arguments"])  # grammar-constrained: always valid JSON
    assert set(args) == {"a", "b"}
    assert all(isinstance(v, int | float) for v in args.values())


def test_streaming_with_tools_sends_the_call_as_chunks(endpoint: LocalEndpoint) -> None:
    # llama-cpp-python's own chat format answered this with an empty 200 and reset the connection;
    # chainreact's tool turn (llama_entry.py) sends the call as chunks. (Compat.streamTools stays False:
    # the turn is made whole before it is sent, so streaming it gains nothing.)
    with httpx.Client(base_url=endpoint.url, timeout=180) as own:
        r = chat(own, messages=[SYSTEM, ASK], tools=[ADD_TOOL], tool_choice="auto", stream=True)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        chunks = sse_chunks(r.content)
        again = chat(own, messages=[{"role": "user", "content": "Say hi."}])  # the connection still works
    assert again.status_code == 200
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert deltas[0] == {"role": "assistant"}
    (call,) = deltas[1]["tool_calls"]
    assert call["index"] == 0 and call["function"]["name"] == "add"
    assert json.loads(call["function"]["arguments"]) == {"a": 17, "b": 25}
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_null_content_beside_tool_calls_is_still_a_500(client: httpx.Client) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 17, "b": 25}'}}
    result = {"role": "tool", "tool_call_id": "c1", "content": "42"}
    statuses = {}
    for label, extra in (("null", {"content": None}), ("missing", {}), ("empty", {"content": ""})):
        assistant = {"role": "assistant", "tool_calls": [call], **extra}
        r = chat(client, messages=[SYSTEM, ASK, assistant, result], tools=[ADD_TOOL], tool_choice="auto")
        statuses[label] = r.status_code
    # null is refused by the server's request validation, before any chat format; chainreact's
    # Message.to_openai sends "" for that reason. A missing content was a template error, now gone.
    assert statuses == {"null": 500, "missing": 200, "empty": 200}


@pytest.mark.parametrize("choice", ["required", None, {"type": "function", "function": {"name": "add"}}],
                         ids=["required", "missing", "named"])
def test_every_tool_choice_but_none_calls_after_the_users_message(client: httpx.Client, choice: Any) -> None:
    # "required" was a 500 and a missing tool_choice ignored the tools; now OpenAI's rules, and the turn
    # that follows the user's message is a call (tool_prompt.effective_choice).
    body: dict[str, Any] = {"messages": [SYSTEM, ASK], "tools": [ADD_TOOL], "max_tokens": 100}
    if choice is not None:
        body["tool_choice"] = choice
    r = chat(client, **body)
    assert r.status_code == 200, r.text
    choice0 = r.json()["choices"][0]
    assert choice0["finish_reason"] == "tool_calls"
    assert json.loads(choice0["message"]["tool_calls"][0]["function"]["arguments"]) == {"a": 17, "b": 25}


def test_tool_choice_none_answers_in_text(client: httpx.Client) -> None:
    r = chat(client, messages=[SYSTEM, ASK], tools=[ADD_TOOL], tool_choice="none")
    msg = r.json()["choices"][0]["message"]
    assert r.status_code == 200 and not msg.get("tool_calls") and msg["content"].strip()


def test_after_the_result_the_model_answers(client: httpx.Client) -> None:
    # The failure of issue 25: llama-cpp-python's format made the model call add again after every result.
    call = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 17, "b": 25}'}}
    msgs = [SYSTEM, ASK, {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "42"}]
    r = chat(client, messages=msgs, tools=[ADD_TOOL], tool_choice="auto", max_tokens=60)
    choice0 = r.json()["choices"][0]
    assert choice0["finish_reason"] == "stop" and not choice0["message"].get("tool_calls")
    assert "42" in choice0["message"]["content"] and "\n" not in choice0["message"]["content"]


def test_tool_results_reach_the_model(client: httpx.Client) -> None:
    # llama-cpp-python's own template drops `tool` messages; chainreact's chat format renders them
    # (llama_entry.py). Without that, this answer is unrelated text (measured: a "rewrite the text" prompt).
    call = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 17, "b": 25}'}}
    msgs = [SYSTEM, ASK, {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "42"}]
    r = chat(client, messages=msgs, max_tokens=40)
    assert r.status_code == 200
    assert "42" in r.json()["choices"][0]["message"]["content"]


def test_demo_agent_runs_on_the_embedded_model(endpoint: LocalEndpoint) -> None:
    """`chainreact run examples/demo-agent.json` (what `make demo` runs): the real agent loop, real model."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    # reuse this module's server; OPENAI_BASE_URL/OPENAI_API_KEY would send the url-less demo elsewhere
    env = {**{k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY")},
           srv.LOCAL_URL_ENV: endpoint.url}
    r = subprocess.run(
        [sys.executable, "-m", "chainreact", "run", "examples/demo-agent.json",
         "What is 17 + 25? Use the add tool.", "--json"],
        capture_output=True, text=True, cwd=root, env=env, timeout=600,
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    calls = [c for m in out["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    assert calls and json.loads(calls[0]["function"]["arguments"]) == {"a": 17, "b": 25}
    results = [m["content"] for m in out["messages"] if m["role"] == "tool"]
    assert results[0] == "42"
    assert out["content"].strip()  # the 135M model's wording varies; that it answers is the contract
    assert out["usage"]["total_tokens"] > 0
