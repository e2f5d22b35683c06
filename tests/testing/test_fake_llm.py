"""FakeLLM over real sockets with httpx: turn keys, recording, script handling, concurrency."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import httpx
import pytest

from chainreact.errors import ChainreactError, ConfigError
from chainreact.testing import FakeLLM, tool_steps_responder

from .fakellm_helpers import body, deltas, joined, post, sse_chunks, sse_data


@pytest.fixture
def client() -> Any:
    with httpx.Client(timeout=10) as c:
        yield c


# --- plain text -----------------------------------------------------------------------------------


def test_non_stream_text_is_a_chat_completion(client: httpx.Client) -> None:
    with FakeLLM([{"text": "Hello there world"}]) as srv:
        r = post(client, srv.url)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/json")
    data = r.json()
    assert data["object"] == "chat.completion"
    assert data["id"].startswith("chatcmpl-")
    assert isinstance(data["created"], int)
    assert data["model"] == "fake-model"
    choice = data["choices"][0]
    assert choice["index"] == 0
    assert choice["message"] == {"role": "assistant", "content": "Hello there world"}
    assert choice["finish_reason"] == "stop"
    # "hi" is 2 chars -> 1 token; 17 chars of text -> 5 tokens.
    assert data["usage"]["prompt_tokens"] == 1
    assert data["usage"]["completion_tokens"] == 5
    assert data["usage"]["total_tokens"] == 6


def test_usage_is_deterministic(client: httpx.Client) -> None:
    with FakeLLM([{"text": "same answer"}, {"text": "same answer"}]) as srv:
        u1 = post(client, srv.url).json()["usage"]
        u2 = post(client, srv.url).json()["usage"]
    assert u1 == u2


def test_stream_text_default_split_is_realistic(client: httpx.Client) -> None:
    text = "The quick brown fox jumps over the lazy dog."
    with FakeLLM([{"text": text}]) as srv:
        r = post(client, srv.url, stream=True)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/event-stream")
    assert r.headers["transfer-encoding"] == "chunked"
    chunks = sse_chunks(r.text)
    for c in chunks:
        assert c["object"] == "chat.completion.chunk"
        assert c["id"] == chunks[0]["id"]
        assert c["model"] == "fake-model"
        assert isinstance(c["created"], int)
        assert c["choices"][0]["index"] == 0
        assert set(c["choices"][0]) >= {"index", "delta", "finish_reason"}
    assert deltas(chunks)[0]["role"] == "assistant"
    assert joined(chunks, "content") == text
    content_chunks = [d for d in deltas(chunks) if d.get("content")]
    assert len(content_chunks) == 9  # one per word
    finishes = [c["choices"][0]["finish_reason"] for c in chunks]
    assert finishes[-1] == "stop" and all(f is None for f in finishes[:-1])


@pytest.mark.parametrize(("key", "value", "expected"), [("chunks", 4, 4), ("chunk_size", 5, 9)])
def test_stream_chunking(client: httpx.Client, key: str, value: int, expected: int) -> None:
    text = "abcdefghijklmnopqrstuvwxyz0123456789abcdefgh"  # 44 chars
    with FakeLLM([{"text": text, key: value}]) as srv:
        chunks = sse_chunks(post(client, srv.url, stream=True).text)
    pieces = [d["content"] for d in deltas(chunks) if d.get("content")]
    assert len(pieces) == expected
    assert "".join(pieces) == text
    if key == "chunk_size":
        assert all(len(p) == 5 for p in pieces[:-1])


def test_empty_text_stream_still_has_role_and_finish(client: httpx.Client) -> None:
    with FakeLLM([{}]) as srv:
        chunks = sse_chunks(post(client, srv.url, stream=True).text)
    assert deltas(chunks)[0] == {"role": "assistant", "content": ""}
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


# --- reasoning ------------------------------------------------------------------------------------


def test_reasoning_content_comes_before_text(client: httpx.Client) -> None:
    with FakeLLM([{"reasoning": "Let me think about it.", "text": "Answer."}] * 2) as srv:
        chunks = sse_chunks(post(client, srv.url, stream=True).text)
        message = post(client, srv.url).json()["choices"][0]["message"]
    ds = deltas(chunks)
    assert joined(chunks, "reasoning_content") == "Let me think about it."
    assert joined(chunks, "content") == "Answer."
    first_text = next(i for i, d in enumerate(ds) if d.get("content"))
    last_reasoning = max(i for i, d in enumerate(ds) if d.get("reasoning_content"))
    assert last_reasoning < first_text
    assert ds[0]["role"] == "assistant"
    assert message["reasoning_content"] == "Let me think about it."
    assert message["content"] == "Answer."


def test_reasoning_field_can_be_reasoning(client: httpx.Client) -> None:
    turn = {"reasoning": "hmm", "reasoning_field": "reasoning", "text": "ok"}
    with FakeLLM([turn, turn]) as srv:
        chunks = sse_chunks(post(client, srv.url, stream=True).text)
        message = post(client, srv.url).json()["choices"][0]["message"]
    assert joined(chunks, "reasoning") == "hmm"
    assert not any("reasoning_content" in d for d in deltas(chunks))
    assert message["reasoning"] == "hmm" and "reasoning_content" not in message


# --- tool calls -----------------------------------------------------------------------------------


def _assemble(chunks: list[dict[str, Any]]) -> dict[int, dict[str, str]]:
    calls: dict[int, dict[str, str]] = {}
    for d in deltas(chunks):
        for frag in d.get("tool_calls") or ():
            c = calls.setdefault(frag["index"], {"id": "", "name": "", "arguments": ""})
            c["id"] += frag.get("id", "")
            c["name"] += frag.get("function", {}).get("name", "")
            c["arguments"] += frag.get("function", {}).get("arguments", "")
    return calls


def test_single_tool_call_non_stream(client: httpx.Client) -> None:
    turn = {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}, "id": "call_x"}]}
    with FakeLLM([turn]) as srv:
        choice = post(client, srv.url).json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    call = choice["message"]["tool_calls"][0]
    assert call == {
        "id": "call_x",
        "type": "function",
        "function": {"name": "add", "arguments": json.dumps({"a": 1, "b": 2}, separators=(",", ":"))},
    }


def test_raw_string_arguments_are_sent_verbatim(client: httpx.Client) -> None:
    raw = '{"a": 1, "b": '  # deliberately broken JSON: clients must see exactly this
    with FakeLLM([{"tool_calls": [{"name": "add", "arguments": raw}]}] * 2) as srv:
        msg = post(client, srv.url).json()["choices"][0]["message"]
        chunks = sse_chunks(post(client, srv.url, stream=True).text)
    assert msg["tool_calls"][0]["function"]["arguments"] == raw
    assert _assemble(chunks)[0]["arguments"] == raw


def test_parallel_tool_calls_stream_with_arg_chunks(client: httpx.Client) -> None:
    turn = {
        "tool_calls": [
            {"name": "add", "arguments": {"a": 1, "b": 2}},
            {"name": "mul", "arguments": {"x": 10, "y": 20}, "id": "call_mul"},
        ],
        "arg_chunks": 3,
    }
    with FakeLLM([turn]) as srv:
        chunks = sse_chunks(post(client, srv.url, stream=True).text)
    frags = [f for d in deltas(chunks) for f in d.get("tool_calls") or ()]
    assert len(frags) == 6
    assert [f["index"] for f in frags] == [0, 0, 0, 1, 1, 1]  # not interleaved by default
    for f in (frags[0], frags[3]):
        assert f["id"] and f["type"] == "function" and f["function"]["name"]
    for f in frags[1:3] + frags[4:]:
        assert set(f) == {"index", "function"} and set(f["function"]) == {"arguments"}
    calls = _assemble(chunks)
    assert calls[0]["name"] == "add" and json.loads(calls[0]["arguments"]) == {"a": 1, "b": 2}
    assert calls[1] == {"id": "call_mul", "name": "mul", "arguments": '{"x":10,"y":20}'}
    assert calls[0]["id"] != calls[1]["id"]
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    assert deltas(chunks)[0]["role"] == "assistant"


def test_interleaved_fragments(client: httpx.Client) -> None:
    turn = {
        "tool_calls": [{"name": "a", "arguments": {"k": "aaaa"}}, {"name": "b", "arguments": {"k": "bbbb"}}],
        "arg_chunks": 2,
        "interleave": True,
    }
    with FakeLLM([turn]) as srv:
        chunks = sse_chunks(post(client, srv.url, stream=True).text)
    frags = [f for d in deltas(chunks) for f in d.get("tool_calls") or ()]
    assert [f["index"] for f in frags] == [0, 1, 0, 1]
    assert json.loads(_assemble(chunks)[1]["arguments"]) == {"k": "bbbb"}


def test_omit_index(client: httpx.Client) -> None:
    turn = {
        "tool_calls": [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}],
        "omit_index": True,
    }
    with FakeLLM([turn]) as srv:
        chunks = sse_chunks(post(client, srv.url, stream=True).text)
    frags = [f for d in deltas(chunks) for f in d.get("tool_calls") or ()]
    assert len(frags) == 2
    assert all("index" not in f for f in frags)
    assert [f["function"]["name"] for f in frags] == ["a", "b"]


def test_text_then_tool_calls_in_one_stream(client: httpx.Client) -> None:
    turn = {"text": "Let me add.", "tool_calls": [{"name": "add", "arguments": {"a": 1}}]}
    with FakeLLM([turn]) as srv:
        chunks = sse_chunks(post(client, srv.url, stream=True).text)
    ds = deltas(chunks)
    last_text = max(i for i, d in enumerate(ds) if d.get("content"))
    first_call = min(i for i, d in enumerate(ds) if d.get("tool_calls"))
    assert last_text < first_call
    assert joined(chunks, "content") == "Let me add."


async def test_tool_delay_holds_tool_calls_back_after_the_text() -> None:
    # With a long tool_delay the text must be fully readable while the tool calls are still held back;
    # stopping the server mid-pause then cuts the stream before any tool-call chunk.
    turn = {"text": "Thinking out loud.", "tool_calls": [{"name": "add", "arguments": {}}], "tool_delay": 120}
    srv = FakeLLM([turn])
    await srv.__aenter__()
    seen: list[str] = []
    try:
        async with (
            httpx.AsyncClient(timeout=30) as client,
            client.stream("POST", srv.url + "/chat/completions", json=body(True)) as r,
        ):
            lines = r.aiter_lines()
            text = ""
            while text != "Thinking out loud.":
                line = await anext(lines)
                seen.append(line)
                if line.startswith("data: "):
                    text += json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
            await asyncio.to_thread(srv.stop)
            with pytest.raises(httpx.TransportError):
                async for line in lines:
                    seen.append(line)
    finally:
        await srv.__aexit__(None, None, None)
    assert not any("tool_calls" in line for line in seen)


# --- delays (behavioural: a long delay makes a short client timeout fire) -------------------------


@pytest.mark.parametrize("turn", [{"delay": 120}, {"first_byte_delay": 120}])
def test_delay_before_headers(turn: dict[str, Any]) -> None:
    with FakeLLM([turn]) as srv, httpx.Client(timeout=0.3) as c, pytest.raises(httpx.ReadTimeout):
        post(c, srv.url)


def test_constructor_latency_applies_to_every_turn() -> None:
    with FakeLLM([{"text": "a"}], latency=120) as srv, httpx.Client(timeout=0.3) as c:
        with pytest.raises(httpx.ReadTimeout):
            post(c, srv.url)
        srv.latency = 0  # adjustable at runtime
        srv.add_turns([{"text": "b"}])
        assert post(c, srv.url).json()["choices"][0]["message"]["content"] == "b"


def test_chunk_delay_spaces_the_chunks() -> None:
    turn = {"text": "one two three", "chunk_delay": 120}
    with (
        FakeLLM([turn]) as srv,
        httpx.Client(timeout=httpx.Timeout(10, read=0.5)) as c,
        c.stream("POST", srv.url + "/chat/completions", json=body(True)) as r,
    ):
        lines = r.iter_lines()
        assert json.loads(next(lines)[6:])["choices"][0]["delta"]["content"] == "one"
        with pytest.raises(httpx.ReadTimeout):
            for _ in lines:
                pass


# --- finish_reason, usage, model -----------------------------------------------------------------


def test_finish_reason_override(client: httpx.Client) -> None:
    with FakeLLM([{"text": "cut", "finish_reason": "length"}] * 2) as srv:
        assert post(client, srv.url).json()["choices"][0]["finish_reason"] == "length"
        chunks = sse_chunks(post(client, srv.url, stream=True).text)
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"


def test_include_usage_adds_a_final_usage_chunk(client: httpx.Client) -> None:
    with FakeLLM([{"text": "abcd efgh"}, {"text": "abcd efgh"}]) as srv:
        with_usage = sse_chunks(
            post(client, srv.url, stream=True, stream_options={"include_usage": True}).text
        )
        without = sse_chunks(post(client, srv.url, stream=True).text)
    last = with_usage[-1]
    assert last["choices"] == [] and last["object"] == "chat.completion.chunk"
    assert last["usage"]["completion_tokens"] == 3  # 9 chars
    assert last["usage"]["total_tokens"] == last["usage"]["prompt_tokens"] + 3
    assert with_usage[-2]["choices"][0]["finish_reason"] == "stop"
    assert not any("usage" in c for c in without)


def test_usage_override_and_null(client: httpx.Client) -> None:
    custom = {"prompt_tokens": 11, "completion_tokens": 22, "total_tokens": 33}
    turns: list[dict[str, Any]] = [
        {"text": "x", "usage": custom},
        {"text": "x", "usage": None},
        {"text": "x", "usage": None},
    ]
    with FakeLLM(turns) as srv:
        assert post(client, srv.url).json()["usage"] == custom
        assert "usage" not in post(client, srv.url).json()
        chunks = sse_chunks(post(client, srv.url, stream=True, stream_options={"include_usage": True}).text)
    assert not any("usage" in c for c in chunks)


def test_model_names(client: httpx.Client) -> None:
    with FakeLLM([{"text": "x"}, {"text": "y", "model": "other-model"}], model="my-model") as srv:
        assert post(client, srv.url).json()["model"] == "my-model"
        assert post(client, srv.url).json()["model"] == "other-model"
        models = client.get(srv.url + "/models").json()
        one = client.get(srv.url + "/models/my-model")
        missing = client.get(srv.url + "/models/nope")
    assert models["object"] == "list" and [m["id"] for m in models["data"]] == ["my-model"]
    assert one.json()["id"] == "my-model"
    assert missing.status_code == 404


def test_unknown_route_and_wrong_method(client: httpx.Client) -> None:
    with FakeLLM([{"text": "x"}]) as srv:
        r404 = client.post(srv.url + "/embeddings", json={})
        r405 = client.get(srv.url + "/chat/completions")
        assert srv.remaining  # neither consumed the turn
    assert r404.status_code == 404
    assert "no route for POST /v1/embeddings" in r404.json()["error"]["message"]
    assert r405.status_code == 405


def test_invalid_json_body_is_400_and_consumes_no_turn(client: httpx.Client) -> None:
    with FakeLLM([{"text": "x"}]) as srv:
        r = client.post(srv.url + "/chat/completions", content=b"{not json", headers={"content-type": "x"})
        assert r.status_code == 400 and "not valid JSON" in r.json()["error"]["message"]
        assert post(client, srv.url).status_code == 200
        assert srv.requests[0].body is None and srv.requests[0].raw == b"{not json"


# --- expect ---------------------------------------------------------------------------------------


def test_expect_match_and_mismatch(client: httpx.Client) -> None:
    turns = [
        {"text": "ok", "expect": {"model": "fake-model", "@last_message": {"role": "user", "content": "hi"}}},
        {"text": "never", "expect": {"model": "gpt-x", "temperature": 0}},
        {"text": "ok", "expect": {"@headers": {"Authorization": "Bearer k"}}},
    ]
    with FakeLLM(turns) as srv:
        ok = post(client, srv.url)
        bad = post(client, srv.url)
        hdr = client.post(srv.url + "/chat/completions", json=body(), headers={"authorization": "Bearer k"})
    assert ok.status_code == 200
    assert bad.status_code == 418
    msg = bad.json()["error"]["message"]
    assert "turn 1" in msg
    assert "model: expected 'gpt-x', got 'fake-model'" in msg
    assert "temperature: expected 0, but the request has no such field" in msg
    assert hdr.status_code == 200


# --- recording, script control --------------------------------------------------------------------


def test_requests_are_recorded(client: httpx.Client) -> None:
    with FakeLLM([{"text": "a"}, {"text": "b"}]) as srv:
        client.get(srv.url + "/models")
        post(client, srv.url, temperature=0.5)
        client.post(srv.url + "/chat/completions?debug=1", json=body(True), headers={"X-Trace": "abc"})
    assert [r.path for r in srv.requests] == ["/v1/models", "/v1/chat/completions", "/v1/chat/completions"]
    chat = srv.chat_requests
    assert len(chat) == 2
    first, second = chat
    assert first.method == "POST"
    assert first.body == body(temperature=0.5)
    assert json.loads(first.raw) == first.body
    assert first.headers["content-type"] == "application/json"
    assert all(k == k.lower() for k in first.headers)
    assert first.messages == [{"role": "user", "content": "hi"}]
    assert first.turn_index == 0 and second.turn_index == 1
    assert second.headers["x-trace"] == "abc" and second.query == "debug=1"
    assert srv.requests[0].body is None and srv.requests[0].method == "GET"


def test_exhausted_script_answers_500(client: httpx.Client) -> None:
    with FakeLLM([{"text": "a"}, {"text": "b"}]) as srv:
        post(client, srv.url)
        post(client, srv.url)
        r = post(client, srv.url)
    assert r.status_code == 500
    assert r.json()["error"]["message"] == "FakeLLM script exhausted after 2 turns"


def test_add_turns_remaining_consumed(client: httpx.Client) -> None:
    with FakeLLM([]) as srv:
        assert post(client, srv.url).status_code == 500
        srv.add_turns([{"text": "one"}, {"text": "two"}])
        assert srv.remaining == [{"text": "one"}, {"text": "two"}]
        assert post(client, srv.url).json()["choices"][0]["message"]["content"] == "one"
        assert srv.remaining == [{"text": "two"}]
        with pytest.raises(AssertionError, match="1 scripted turn"):
            srv.assert_all_consumed()
        post(client, srv.url)
        assert srv.remaining == [] and srv.consumed == 2
        srv.assert_all_consumed()


def test_loop_mode_repeats(client: httpx.Client) -> None:
    with FakeLLM([{"text": "a"}, {"text": "b"}], loop=True) as srv:
        got = [post(client, srv.url).json()["choices"][0]["message"]["content"] for _ in range(5)]
    assert got == ["a", "b", "a", "b", "a"]


def test_callable_script_sees_the_request(client: httpx.Client) -> None:
    def respond(req: dict[str, Any]) -> dict[str, Any]:
        return {"text": f"you said {req['messages'][-1]['content']}"}

    with FakeLLM(respond) as srv:
        r = post(client, srv.url)
        with pytest.raises(ChainreactError):
            srv.add_turns([{"text": "x"}])
    assert r.json()["choices"][0]["message"]["content"] == "you said hi"


def test_async_callable_and_failing_callable(client: httpx.Client) -> None:
    async def respond(req: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0)
        if req.get("temperature") == 1:
            raise RuntimeError("boom")
        if req.get("temperature") == 2:
            return {"text": "x", "bogus": 1}
        return {"text": "async ok"}

    with FakeLLM(respond) as srv:
        ok = post(client, srv.url)
        boom = post(client, srv.url, temperature=1)
        invalid = post(client, srv.url, temperature=2)
    assert ok.json()["choices"][0]["message"]["content"] == "async ok"
    assert boom.status_code == 500 and "RuntimeError: boom" in boom.json()["error"]["message"]
    assert invalid.status_code == 500 and "'bogus'" in invalid.json()["error"]["message"]


def test_tool_steps_responder(client: httpx.Client) -> None:
    responder = tool_steps_responder(2)
    with FakeLLM(responder) as srv:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
        for k in range(2):
            msg = client.post(srv.url + "/chat/completions", json={"messages": messages}).json()
            call = msg["choices"][0]["message"]["tool_calls"][0]
            assert call["function"]["name"] == "add"
            assert json.loads(call["function"]["arguments"]) == {"a": k, "b": 1}
            messages += [
                msg["choices"][0]["message"],
                {"role": "tool", "tool_call_id": call["id"], "content": "1"},
            ]
        final = client.post(srv.url + "/chat/completions", json={"messages": messages, "stream": True})
    chunks = sse_chunks(final.text)
    text_chunks = [d for d in deltas(chunks) if d.get("content")]
    assert len(text_chunks) == 20
    assert "2 tool steps" in joined(chunks, "content")
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


# --- validation -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("turn", "needle"),
    [
        ({"txt": "typo"}, "unknown turn key(s) 'txt'"),
        ({"text": 5}, "'text' must be str"),
        ({"chunks": True}, "'chunks' must be int"),
        ({"chunks": 0}, "'chunks' must be >= 1"),
        ({"fault": "explode"}, "'fault' must be one of"),
        ({"tool_calls": [{"arguments": {}}]}, "tool_calls[0]: 'name' must be a string"),
        ({"chunks": 2, "chunk_size": 2}, "either 'chunks' or 'chunk_size'"),
        ({"raw_body": "x", "fault": "malformed"}, "only the faults"),
        ({"raw_body_b64": "***"}, "not valid base64"),
    ],
)
def test_invalid_turns_are_rejected_with_a_clear_message(turn: dict[str, Any], needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        FakeLLM([{"text": "fine"}, turn])
    assert "turn 1" in str(info.value)
    assert needle in str(info.value)


def test_start_twice_and_busy_port() -> None:
    with FakeLLM([]) as srv:
        with pytest.raises(ChainreactError, match="already running"):
            srv.start()
        with pytest.raises(ChainreactError, match="could not listen"):
            FakeLLM([], port=srv.port).start()
    srv.stop()  # second stop is harmless
    with pytest.raises(ChainreactError, match="not running"):
        _ = srv.url


def test_stopped_server_refuses_connections() -> None:
    with FakeLLM([{"text": "x"}]) as srv:
        port = srv.port
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), timeout=5):
        pass


# --- connections ----------------------------------------------------------------------------------


def test_keep_alive_reuses_one_connection(client: httpx.Client) -> None:
    with FakeLLM([{"text": f"t{i}"} for i in range(3)] + [{"text": "s", "chunks": 3}]) as srv:
        answers = [post(client, srv.url).json()["choices"][0]["message"]["content"] for _ in range(3)]
        streamed = joined(sse_chunks(post(client, srv.url, stream=True).text), "content")
        client.get(srv.url + "/models")
    assert answers == ["t0", "t1", "t2"] and streamed == "s"
    peers = {r.peer for r in srv.requests}
    assert len(peers) == 1 and None not in peers


async def test_async_context_manager_inside_running_loop() -> None:
    async with FakeLLM([{"text": "async"}]) as srv, httpx.AsyncClient() as client:
        r = await client.post(srv.url + "/chat/completions", json=body())
    assert r.json()["choices"][0]["message"]["content"] == "async"


async def test_200_concurrent_streaming_requests() -> None:
    n = 200
    turn = {"text": "concurrent streaming works fine", "chunks": 5}
    async with FakeLLM([turn] * n) as srv:
        limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
        async with httpx.AsyncClient(limits=limits, timeout=60) as client:

            async def one(i: int) -> bytes:
                async with client.stream(
                    "POST", srv.url + "/chat/completions", json=body(True, user=str(i))
                ) as r:
                    assert r.status_code == 200
                    return await r.aread()

            raw = await asyncio.gather(*(one(i) for i in range(n)))
    texts = [joined(sse_chunks(b.decode()), "content") for b in raw]
    assert texts == ["concurrent streaming works fine"] * n
    assert len(srv.chat_requests) == n
    assert len({r.peer for r in srv.chat_requests}) > 1  # really concurrent connections


def test_sse_helper_parses_multiline_and_crlf() -> None:
    # The test-local parser must itself be right, or the tests above prove nothing.
    assert sse_data("data: a\r\ndata: b\r\n\r\ndata:c\n\n: comment\n\n") == ["a\nb", "c"]
