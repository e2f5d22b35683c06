"""Fault cases of issue 23 for the HTTP server: hostile or malformed requests that used to reach the server's
code (a 500, an exception in a stream) or hold its event loop. Each failed before its fix."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.ops_support import key, serve
from tests.server.runs_helpers import agent_doc


@pytest.fixture
def helper(fake_llm: Any, tmp_path: Path) -> Any:
    llm = fake_llm([{"text": "fine"}] * 40)
    with serve(tmp_path / "s", {"helper.json": agent_doc(llm.url)}) as srv:
        yield srv


@pytest.mark.parametrize("given", [b"\xb2", b"\xb9\xb3", b"1\xbd", b"-1", b"1e3", b"9" * 19, b"0x10", b"7 x"])
def test_a_malformed_last_event_id_is_400(helper: Any, given: bytes) -> None:
    # `"²".isdigit()` is true, and int("²") raised in the stream: the connection broke mid-answer.
    run = httpx.post(f"{helper.url}/api/v1/agents/helper/runs", json={"input": "x"}, timeout=30).json()
    resp = httpx.get(f"{helper.url}/api/v1/runs/{run['id']}/events", headers={"Last-Event-ID": given},
                     timeout=30)
    assert resp.status_code == 400, resp.text
    assert resp.json()["error"]["code"] == "invalid_event_id"
    assert "non-negative event id" in resp.json()["error"]["message"]


def test_a_valid_last_event_id_still_resumes(helper: Any) -> None:
    run = httpx.post(f"{helper.url}/api/v1/agents/helper/runs", json={"input": "x"}, timeout=30).json()
    url = f"{helper.url}/api/v1/runs/{run['id']}/events"
    every = httpx.get(url, timeout=30).text
    after = httpx.get(url, headers={"Last-Event-ID": "1"}, timeout=30).text
    assert "id: 1\n" in every and "id: 1\n" not in after and "id: 2\n" in after
    assert httpx.get(url + "?after=\u0661", timeout=30).status_code == 400  # an Arabic-Indic digit


CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
BAD_MESSAGES = [
    ([{"role": "assistant", "tool_calls": "abc"}], "messages[0].tool_calls"),
    ([{"role": "assistant", "tool_calls": ["x"]}], "messages[0].tool_calls[0]"),
    ([{"role": "assistant", "tool_calls": [{**CALL, "function": "f"}]}],
     "messages[0].tool_calls[0].function"),
    ([{"role": "assistant", "tool_calls": [CALL, {**CALL, "id": 1}]}], "messages[0].tool_calls[1].id"),
    ([{"role": "assistant", "tool_calls": [{**CALL, "function": {"name": 3}}]}],
     "messages[0].tool_calls[0].function.name"),
    ([{"role": "assistant", "tool_calls": [{**CALL, "function": {"name": "f", "arguments": 7}}]}],
     "messages[0].tool_calls[0].function.arguments"),
    ([{"role": "assistant", "tool_calls": [{**CALL, "type": "nope"}]}], "messages[0].tool_calls[0].type"),
    ([{"role": "user", "content": "hi"}, {"role": "user", "tool_calls": [CALL]}], "messages[1].tool_calls"),
    ([{"role": "user", "content": 5}], "messages[0].content"),
    ([{"role": "user", "content": {"a": 1}}], "messages[0].content"),
    ([{"role": "user", "content": [5]}], "messages[0].content[0]"),
    ([{"role": "user", "content": [{"text": "x"}]}], "messages[0].content[0].type"),
    ([{"role": "user", "content": [{"type": "text", "text": 5}]}], "messages[0].content[0].text"),
    ([{"role": "user", "content": [{"type": "image_url", "image_url": 5}]}],
     "messages[0].content[0].image_url"),
    ([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": []}}]}],
     "messages[0].content[0].image_url.url"),
    ([{"role": "system", "content": [{"type": "image_url", "image_url": {"url": "data:,"}}]}],
     "messages[0].content[0].type"),
    ([{"role": "assistant", "content": 1.5}], "messages[0].content"),
    ([{"role": "tool", "content": "x", "tool_call_id": 5}], "messages[0].tool_call_id"),
    ([{"role": "tool", "content": "x"}], "messages[0].tool_call_id"),
    ([{"role": "user", "content": "x", "name": 5}], "messages[0].name"),
    ([{"role": "assistant", "content": "x", "reasoning_content": ["r"]}], "messages[0].reasoning_content"),
    ([{"role": "wizard", "content": "x"}], "messages[0].role"),
    ([{"role": "user", "content": "x"}, "hello"], "messages[1]"),
]


@pytest.mark.parametrize(("messages", "path"), BAD_MESSAGES, ids=[p for _, p in BAD_MESSAGES])
def test_malformed_client_messages_are_400_with_the_fields_path(helper: Any, messages: Any,
                                                                path: str) -> None:
    # Before: 500 "'str' object has no attribute 'get'" for tool_calls, or the wrong type went on to the
    # model (a failed run, or the model endpoint's own error).
    chat = httpx.post(f"{helper.url}/v1/chat/completions", json={"model": "helper", "messages": messages},
                      timeout=30)
    assert chat.status_code == 400, chat.text
    err = chat.json()["error"]
    assert err["param"] == path and err["message"].startswith(path + " ")
    assert err["code"] == "invalid_messages"
    runs = httpx.post(f"{helper.url}/api/v1/agents/helper/runs", json={"messages": messages}, timeout=30)
    assert runs.status_code == 400, runs.text
    assert runs.json()["error"]["message"].startswith(path + " ")


def test_well_formed_messages_of_every_kind_still_run(helper: Any) -> None:
    messages = [{"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
                {"role": "user", "content": [{"type": "text", "text": "look"},
                                             {"type": "image_url",
                                              "image_url": {"url": "data:,", "detail": "low"}}],
                 "name": "ann"},
                {"role": "assistant", "content": None, "tool_calls": [CALL], "reasoning_content": None},
                {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "ok"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "done"}], "refusal": None},
                {"role": "user", "content": "and now?"}]
    chat = httpx.post(f"{helper.url}/v1/chat/completions", json={"model": "helper", "messages": messages},
                      timeout=30)
    assert chat.status_code == 200, chat.text
    assert chat.json()["choices"][0]["message"]["content"] == "fine"


@pytest.mark.parametrize(("items", "path"), [
    ([{"role": "user", "content": [{"type": "input_text", "text": 5}]}], "input[0].content[0].text"),
    ([{"role": "assistant", "content": [{"type": "refusal"}]}], "input[0].content[0].refusal"),
    ([{"type": "function_call", "call_id": "c", "name": "f", "arguments": {"a": 1}}], "input[0].arguments"),
])
def test_malformed_responses_input_items_are_400_with_the_fields_path(helper: Any, items: Any,
                                                                      path: str) -> None:
    # Before: a text part's number became the text "5", an object's arguments became "{}".
    resp = httpx.post(f"{helper.url}/v1/responses", json={"model": "helper", "input": items}, timeout=30)
    assert resp.status_code == 400, resp.text
    assert resp.json()["error"]["param"] == path and resp.json()["error"]["message"].startswith(path + " ")


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "probe", "version": "0"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@pytest.mark.parametrize("keyed", [True, False], ids=["per key", "per address"])
def test_mcp_obeys_the_rate_limit(fake_llm: Any, tmp_path: Path, keyed: bool) -> None:
    # Before: /mcp had its own guard, which checked the key and nothing else: no 429 ever.
    pytest.importorskip("mcp")
    llm = fake_llm([])
    keys = {"keys": [key("ui", "ui-key", rateLimit="2/minute")]} if keyed else None
    headers = {**MCP_HEADERS, "Authorization": "Bearer ui-key"} if keyed else MCP_HEADERS
    with serve(tmp_path / "s", {"helper.json": agent_doc(llm.url)}, keys=keys,
               rate_limit=None if keyed else "2/minute") as srv:
        answers = [httpx.post(srv.url + "/mcp", json=INIT, headers=headers, timeout=30) for _ in range(3)]
        assert [a.status_code for a in answers] == [200, 200, 429], [a.text for a in answers]
        assert answers[2].json()["error"]["code"] == "rate_limit_exceeded"
        assert int(answers[2].headers["retry-after"]) >= 1
        if keyed:  # a refused key spends nothing, and an unknown one is still 401
            assert httpx.post(srv.url + "/mcp", json=INIT, headers=MCP_HEADERS).status_code == 401


def _huge_header(port: int, total: int) -> tuple[bytes, int]:
    """Send a request whose one header grows to `total` bytes, 1 MiB at a time; (the answer, bytes the
    server let us send before it answered or closed)."""
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ")
        chunk = b"a" * (1 << 20)
        try:
            while sent < total:
                s.sendall(chunk)
                sent += len(chunk)
            s.sendall(b"\r\n\r\n")
        except OSError:  # the server closed the connection on us
            pass
        return _answer(s), sent


def _answer(s: socket.socket) -> bytes:
    """What the server sends until it closes (or resets) the connection."""
    answer = b""
    try:
        while part := s.recv(65536):
            answer += part
    except OSError:
        pass
    return answer


def _head(port: int, size: int, body: bytes = b"", path: bytes = b"/healthz") -> bytes:
    """One request whose headers take about `size` bytes, sent in one write; the status line back."""
    filler = b"X-Filler: " + b"f" * max(0, size - 60) + b"\r\n"
    method = b"POST" if body else b"GET"
    length = b"Content-Length: %d\r\n" % len(body) if body else b""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        s.sendall(method + b" " + path + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + length + filler
                  + b"\r\n" + body)
        return _answer(s).split(b"\r\n", 1)[0]


@pytest.mark.parametrize("http", ["httptools", "h11"])
def test_a_huge_request_header_is_431_and_is_not_read(tmp_path: Path, http: str) -> None:
    # Before (httptools, the default): a 100 MB header was read whole, held the loop 4-11 s and grew RSS
    # 180 MB, then the request was served; h11 stopped at 16 KiB with a 400.
    with serve(tmp_path / "s", {}, http=http) as srv:
        answer, sent = _huge_header(srv.port, 64 << 20)
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
        assert b"headers_too_large" in answer and b"65536 bytes" in answer
        assert sent < 32 << 20, f"the server read {sent >> 20} MiB of headers"
        assert httpx.get(srv.url + "/healthz").status_code == 200


@pytest.mark.parametrize("http", ["httptools", "h11"])
def test_the_header_limit_counts_the_whole_head_and_never_the_body(tmp_path: Path, http: str) -> None:
    with serve(tmp_path / "s", {}, http=http, header_limit=4096, body_limit=4 << 20) as srv:
        assert _head(srv.port, 3000) == b"HTTP/1.1 200 OK"
        assert _head(srv.port, 5000).startswith(b"HTTP/1.1 431 ")  # whole in one write: still counted
        # a large body in the same write as a small head is the body's business (here: 404, no such route)
        assert _head(srv.port, 100, body=b"x" * (3 << 20), path=b"/nothing").startswith(b"HTTP/1.1 404")
    with serve(tmp_path / "d", {}, http=http) as srv:  # the default: 64 KiB
        assert _head(srv.port, 60_000) == b"HTTP/1.1 200 OK"
        assert _head(srv.port, 70_000).startswith(b"HTTP/1.1 431 ")


@pytest.mark.parametrize("keyed", [True, False], ids=["per key", "per address"])
def test_rulego_mcp_path_obeys_the_rate_limit(fake_llm: Any, tmp_path: Path, keyed: bool) -> None:
    # RuleGo's MCP address (/api/v1/mcp/{apiKey}/message) is the same server as /mcp: the same limits.
    pytest.importorskip("mcp")
    llm = fake_llm([])
    keys = {"keys": [key("ui", "ui-key", rateLimit="2/minute")]} if keyed else None
    with serve(tmp_path / "s", {"helper.json": agent_doc(llm.url)}, keys=keys,
               rate_limit=None if keyed else "2/minute") as srv:
        url = f"{srv.url}/api/v1/mcp/ui-key/message?session_id=00000000000000000000000000000000"
        answers = [httpx.post(url, json=INIT, timeout=30) for _ in range(3)]
        # The first two pass the limits and reach the transport (no such SSE session: 404 or 400).
        assert [a.status_code != 429 for a in answers] == [True, True, False], [a.text for a in answers]
        assert answers[2].json()["error"]["code"] == "rate_limit_exceeded"
        if keyed:  # an unknown key in the path is still 401
            bad = httpx.post(url.replace("ui-key", "nope"), json=INIT, timeout=30)
            assert bad.status_code == 401
