"""FakeLLM fault injection, observed from real httpx clients over real sockets."""

from __future__ import annotations

import base64
import json
import socket
from typing import Any

import httpx
import pytest

from chainreact.testing import FakeLLM

from .fakellm_helpers import body, deltas, joined, post, sse_chunks, sse_data


@pytest.fixture
def client() -> Any:
    with httpx.Client(timeout=10) as c:
        yield c


def test_status_with_retry_after_and_default_error_body(client: httpx.Client) -> None:
    with FakeLLM([{"status": 429, "headers": {"Retry-After": "2"}}, {"text": "after"}]) as srv:
        r = post(client, srv.url, stream=True)
        ok = post(client, srv.url)
    assert r.status_code == 429
    assert r.headers["retry-after"] == "2"
    err = r.json()["error"]
    assert err["type"] == "rate_limit_error" and err["code"] == "rate_limit_exceeded"
    assert "429" in err["message"]
    assert ok.json()["choices"][0]["message"]["content"] == "after"  # same connection still usable


def test_status_with_message_str_body_and_dict_body(client: httpx.Client) -> None:
    turns = [
        {"status": 400, "message": "messages[1].content is required"},
        {"status": 503, "body": "upstream connect error or disconnect/reset before headers"},
        {"status": 401, "body": {"error": {"message": "bad key", "code": 401}}},
        {"status": 502, "body": "<html>bad gateway</html>", "headers": {"Content-Type": "text/html"}},
    ]
    with FakeLLM(turns) as srv:
        r400, r503, r401, r502 = (post(client, srv.url) for _ in range(4))
    assert r400.status_code == 400
    assert r400.json()["error"] == {
        "message": "messages[1].content is required",
        "type": "invalid_request_error",
        "code": "invalid_request",
    }
    assert r503.status_code == 503 and r503.headers["content-type"].startswith("text/plain")
    assert r503.text == "upstream connect error or disconnect/reset before headers"
    assert r401.json() == {"error": {"message": "bad key", "code": 401}}
    assert r502.headers["content-type"] == "text/html" and r502.text == "<html>bad gateway</html>"


def test_status_2xx_without_body_is_a_normal_answer(client: httpx.Client) -> None:
    with FakeLLM([{"status": 201, "text": "created?"}]) as srv:
        r = post(client, srv.url)
    assert r.status_code == 201 and r.json()["choices"][0]["message"]["content"] == "created?"


@pytest.mark.parametrize("stream", [False, True])
def test_reset_raises_a_connection_error_in_httpx(client: httpx.Client, stream: bool) -> None:
    with FakeLLM([{"fault": "reset"}, {"text": "recovered"}]) as srv:
        with pytest.raises(httpx.TransportError):
            post(client, srv.url, stream=stream)
        # The client must be able to go on with a fresh connection.
        assert post(client, srv.url).json()["choices"][0]["message"]["content"] == "recovered"


async def test_reset_raises_in_async_httpx() -> None:
    async with FakeLLM([{"fault": "reset"}]) as srv, httpx.AsyncClient() as client:
        with pytest.raises(httpx.TransportError):
            await client.post(srv.url + "/chat/completions", json=body(True))


def test_reset_is_a_tcp_rst_before_any_byte() -> None:
    with (
        FakeLLM([{"fault": "reset"}]) as srv,
        socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s,
    ):
        payload = json.dumps(body()).encode()
        s.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\n\r\n%b" % (len(payload), payload)
        )
        # SO_LINGER 0 makes the close an RST: recv raises instead of returning b"" (an orderly FIN).
        with pytest.raises(ConnectionResetError):
            s.recv(1024)


def test_disconnect_mid_stream_after_n_chunks(client: httpx.Client) -> None:
    turn = {"text": "one two three four five", "fault": "disconnect", "after_chunks": 2}
    received: list[str] = []
    with FakeLLM([turn, {"text": "next"}]) as srv:
        with (
            pytest.raises(httpx.RemoteProtocolError),
            client.stream("POST", srv.url + "/chat/completions", json=body(True)) as r,
        ):
            assert r.status_code == 200
            for line in r.iter_lines():
                if line.startswith("data: "):
                    received.append(line[6:])
        assert post(client, srv.url).json()["choices"][0]["message"]["content"] == "next"
    assert len(received) == 2
    assert "[DONE]" not in received
    assert "".join(json.loads(d)["choices"][0]["delta"]["content"] for d in received) == "one two"
    assert all(json.loads(d)["choices"][0]["finish_reason"] is None for d in received)


def test_disconnect_non_stream_cuts_the_body(client: httpx.Client) -> None:
    with (
        FakeLLM([{"text": "whole answer", "fault": "disconnect"}]) as srv,
        pytest.raises(httpx.RemoteProtocolError),
    ):
        post(client, srv.url)


def test_malformed_chunk_after_n_good_ones(client: httpx.Client) -> None:
    turn = {"text": "alpha beta gamma", "fault": "malformed", "after_chunks": 2}
    with FakeLLM([turn, {"text": "x", "fault": "malformed"}]) as srv:
        stream = post(client, srv.url, stream=True)
        plain = post(client, srv.url)
    data = sse_data(stream.text)
    assert data[-1] == "[DONE]"
    bad = []
    for i, d in enumerate(data[:-1]):
        try:
            json.loads(d)
        except json.JSONDecodeError:
            bad.append(i)
    assert bad == [2]  # exactly one broken event, after two good ones
    good = [json.loads(d) for i, d in enumerate(data[:-1]) if i != 2]
    assert joined(good, "content") == "alpha beta gamma"  # the rest of the stream still follows
    assert plain.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(plain.content)


def test_malformed_default_is_after_one_chunk(client: httpx.Client) -> None:
    with FakeLLM([{"text": "a b c", "fault": "malformed"}]) as srv:
        data = sse_data(post(client, srv.url, stream=True).text)
    json.loads(data[0])
    with pytest.raises(json.JSONDecodeError):
        json.loads(data[1])


@pytest.mark.parametrize(("stream", "ctype"), [(False, "application/json"), (True, "text/event-stream")])
def test_empty_body(client: httpx.Client, stream: bool, ctype: str) -> None:
    with FakeLLM([{"text": "ignored", "fault": "empty"}]) as srv:
        r = post(client, srv.url, stream=stream)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith(ctype)
    assert r.content == b""


def test_no_finish(client: httpx.Client) -> None:
    with FakeLLM([{"text": "a b", "fault": "no_finish"}] * 2) as srv:
        chunks = sse_chunks(post(client, srv.url, stream=True, stream_options={"include_usage": True}).text)
        plain = post(client, srv.url).json()
    assert joined(chunks, "content") == "a b"
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks if c["choices"])
    assert plain["choices"][0]["finish_reason"] is None


def test_error_event_in_stream(client: httpx.Client) -> None:
    turn = {"text": "a b c d", "fault": "error_event", "after_chunks": 3, "message": "Token limit reached"}
    with FakeLLM([turn, {"fault": "error_event"}]) as srv:
        data = sse_data(post(client, srv.url, stream=True).text)
        plain = post(client, srv.url)
    assert len(data) == 5 and data[-1] == "[DONE]"
    assert [json.loads(d)["choices"][0]["delta"].get("content") for d in data[:3]] == ["a", " b", " c"]
    assert json.loads(data[3])["error"]["message"] == "Token limit reached"
    assert plain.status_code == 200 and "error" in plain.json()


def test_raw_body_b64_is_byte_exact(client: httpx.Client) -> None:
    blob = bytes(range(256))
    turn = {"raw_body_b64": base64.b64encode(blob).decode(), "content_type": "application/octet-stream"}
    with FakeLLM([turn]) as srv:
        r = post(client, srv.url)
    assert r.content == blob
    assert r.headers["content-type"] == "application/octet-stream"


def test_raw_sse_body_disconnect_after_events(client: httpx.Client) -> None:
    raw = 'data: {"a":1}\n\ndata: {"a":2}\n\ndata: {"a":3}\n\ndata: [DONE]\n\n'
    got: list[str] = []
    with (
        FakeLLM([{"raw_body": raw, "fault": "disconnect", "after_chunks": 2}]) as srv,
        pytest.raises(httpx.RemoteProtocolError),
        client.stream("POST", srv.url + "/chat/completions", json=body(True)) as r,
    ):
        assert r.headers["content-type"].startswith("text/event-stream")
        got.extend(line for line in r.iter_lines() if line)
    assert got == ['data: {"a":1}', 'data: {"a":2}']


def test_retry_scenario_reset_then_503_then_success(client: httpx.Client) -> None:
    # A typical retry script: each fault applies to its own request only.
    with FakeLLM([{"fault": "reset"}, {"status": 503}, {"text": "finally"}]) as srv:
        results: list[Any] = []
        for _ in range(2):
            try:
                results.append(post(client, srv.url, stream=True).status_code)
            except httpx.TransportError as e:
                results.append(e)
        final = sse_chunks(post(client, srv.url, stream=True).text)
    assert isinstance(results[0], httpx.TransportError)
    assert results[1] == 503
    assert joined(final, "content") == "finally"
    assert deltas(final)[0]["role"] == "assistant"
