"""FakeLLM's HTTP/1.1 layer at the byte level, over raw sockets."""

from __future__ import annotations

import json
import socket
from typing import BinaryIO

import pytest

from chainreact.testing import FakeLLM


def _read_response(f: BinaryIO) -> tuple[int, dict[str, str], bytes]:
    """Read one fixed-length response from a buffered socket file."""
    status_line = f.readline()
    status = int(status_line.split()[1])
    headers: dict[str, str] = {}
    while (line := f.readline()) not in (b"\r\n", b""):
        k, _, v = line.decode().partition(":")
        headers[k.strip().lower()] = v.strip()
    body = f.read(int(headers.get("content-length", "0")))
    return status, headers, body


def _chat_request(payload: bytes, extra: bytes = b"") -> bytes:
    return (
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\n"
        + extra
        + b"content-length: %d\r\n\r\n" % len(payload)
        + payload
    )


def test_chunked_request_body_is_accepted_and_recorded() -> None:
    payload = json.dumps({"model": "m", "messages": [{"role": "user", "content": "chunked"}]}).encode()
    chunked = b"".join(b"%x\r\n%b\r\n" % (len(p), p) for p in (payload[:10], payload[10:])) + b"0\r\n\r\n"
    with FakeLLM([{"text": "ok"}]) as srv, socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
        s.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: t\r\ntransfer-encoding: chunked\r\n\r\n" + chunked
        )
        status, _, body = _read_response(s.makefile("rb"))
    assert status == 200
    assert json.loads(body)["choices"][0]["message"]["content"] == "ok"
    assert srv.chat_requests[0].raw == payload
    assert srv.chat_requests[0].messages[0]["content"] == "chunked"


def test_pipelined_requests_and_expect_continue_on_one_socket() -> None:
    p = json.dumps({"messages": []}).encode()
    with (
        FakeLLM([{"text": "first"}, {"text": "second"}]) as srv,
        socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s,
    ):
        s.sendall(_chat_request(p) + _chat_request(p, b"expect: 100-continue\r\n"))
        f = s.makefile("rb")
        first = _read_response(f)
        interim = _read_response(f)
        second = _read_response(f)
    assert json.loads(first[2])["choices"][0]["message"]["content"] == "first"
    assert interim[0] == 100
    assert second[0] == 200 and json.loads(second[2])["choices"][0]["message"]["content"] == "second"
    assert first[1]["connection"] == "keep-alive"


def test_connection_close_and_http10() -> None:
    p = json.dumps({"messages": []}).encode()
    with FakeLLM([{"text": "a"}, {"text": "b"}]) as srv:
        for req in (
            _chat_request(p, b"connection: close\r\n"),
            _chat_request(p).replace(b"HTTP/1.1", b"HTTP/1.0", 1),
        ):
            with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
                s.sendall(req)
                f = s.makefile("rb")
                status, headers, _ = _read_response(f)
                assert status == 200 and headers["connection"] == "close"
                assert f.read() == b""  # the server closed its side


@pytest.mark.parametrize(
    "garbage",
    [b"NONSENSE\r\n\r\n", b"POST /v1/chat/completions HTTP/1.1\r\ncontent-length: banana\r\n\r\n"],
)
def test_bad_request_gets_400_and_consumes_no_turn(garbage: bytes) -> None:
    with FakeLLM([{"text": "kept"}]) as srv:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
            s.sendall(garbage)
            status, _, body = _read_response(s.makefile("rb"))
        assert status == 400 and b"bad" in body
        assert srv.remaining == [{"text": "kept"}]


def test_client_vanishing_mid_request_does_not_break_the_server() -> None:
    with FakeLLM([{"text": "still here"}]) as srv:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
            s.sendall(b'POST /v1/chat/completions HTTP/1.1\r\ncontent-length: 100\r\n\r\n{"a"')
        with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
            s.sendall(_chat_request(b"{}"))
            status, _, body = _read_response(s.makefile("rb"))
    assert status == 200 and json.loads(body)["choices"][0]["message"]["content"] == "still here"
