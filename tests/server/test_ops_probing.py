"""Bad input, route by route: malformed JSON, wrong types, huge bodies, unknown ids, path tricks in ids, a
slow client. Each gets a clear 4xx and nothing else changes (the catalog is the same afterwards). And the
warning when binding to a non-loopback host without keys."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from chainreact.cli.serve_cmds import _loopback

from .ops_support import key, serve
from .test_server import agent_doc, echo_chain


def _state(url: str) -> Any:
    return (httpx.get(url + "/v1/models").json(), httpx.get(url + "/api/v1/rules").json(),
            httpx.get(url + "/api/v1/rules/echo").json())


def _raw(port: int, request: bytes, *, trickle: bytes = b"", every: float = 0.0,
         limit: float = 10.0) -> bytes:
    """Send `request` on a raw socket (no client normalises the path), then `trickle` byte by byte; the
    answer as bytes (until the server closes, or `limit` seconds)."""
    with socket.create_connection(("127.0.0.1", port), timeout=limit) as s:
        s.sendall(request)
        got = b""
        deadline = time.monotonic() + limit
        for b in trickle:
            s.setblocking(False)
            try:
                chunk = s.recv(65536)
                got += chunk
                if not chunk or b"\r\n\r\n" in got:
                    break
            except BlockingIOError:
                pass
            s.setblocking(True)
            try:
                s.sendall(bytes([b]))
            except OSError:  # the server closed on us
                break
            time.sleep(every)
            assert time.monotonic() < deadline, "the server never answered the trickle"
        s.setblocking(True)
        s.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            while chunk := s.recv(65536):
                got += chunk
                if b"\r\n\r\n" in got and b"connection: close" not in got.lower():
                    break
        except (TimeoutError, ConnectionResetError):
            pass
        return got


def test_bad_input_on_every_route_is_a_clear_4xx_and_changes_nothing(fake_llm: Any, tmp_path: Path) -> None:
    llm = fake_llm([{"text": "fine"}])
    docs = {"helper.json": agent_doc(llm.url), "echo.json": echo_chain()}
    with serve(tmp_path / "s", docs, body_limit=4096) as srv:
        before = _state(srv.url)
        u = srv.url
        big = b'{"n": "' + b"x" * 5000 + b'"}'
        cases: list[tuple[httpx.Response, int, str]] = [
            # malformed JSON, wrong types
            (httpx.post(u + "/api/v1/rules/echo", content=b"{nope"), 400, "not valid JSON"),
            (httpx.post(u + "/api/v1/rules/echo", json={"ruleChain": "x", "metadata": 3}), 400, "ruleChain"),
            (httpx.post(u + "/api/v1/rules/echo", json=[1, 2]), 400, "JSON object"),
            (httpx.post(u + "/api/v1/rules/echo/v1/chat/completions", content=b"[["), 400, "not valid JSON"),
            (httpx.post(u + "/v1/chat/completions", json={"model": 7, "messages": [{"role": "user"}]}), 400,
             "model"),
            # huge bodies, on every route that takes one
            (httpx.post(u + "/api/v1/rules/echo", content=big), 413, "limit"),
            (httpx.post(u + "/api/v1/rules/echo/execute/T", content=big), 413, "limit"),
            (httpx.post(u + "/api/v1/rules/echo/notify/T", content=big), 413, "limit"),
            (httpx.post(u + "/v1/chat/completions", content=big), 413, "limit"),
            # unknown ids
            (httpx.get(u + "/api/v1/rules/nope"), 404, "nope"),
            (httpx.delete(u + "/api/v1/rules/nope"), 404, "nope"),
            (httpx.post(u + "/api/v1/rules/nope/execute/T", json={}), 404, "nope"),
            (httpx.post(u + "/api/v1/rules/nope/notify/T", json={}), 404, "nope"),
            # path tricks in ids: dot segments, encoded slashes and backslashes, control characters, length
            (httpx.delete(u + "/api/v1/rules/%2e%2e"), 400, "'..'"),
            (httpx.post(u + "/api/v1/rules/%2E", json=echo_chain()), 400, "'.'"),
            (httpx.delete(u + "/api/v1/rules/..%2Fecho"), 404, "Not Found"),
            (httpx.post(u + "/api/v1/rules/..%2F..%2Fecho/execute/T", json={}), 404, "Not Found"),
            (httpx.post(u + "/api/v1/rules/a%5C..%5Cecho", json=echo_chain()), 400, "backslash"),
            (httpx.post(u + "/api/v1/rules/ec%00ho", json=echo_chain()), 400, "control"),
            (httpx.post(u + "/api/v1/rules/" + "e" * 300, json=echo_chain()), 400, "256"),
            (httpx.get(u + "/api/v1/rules/" + "e" * 5000), 400, "256"),
        ]
        for resp, status, needle in cases:
            assert resp.status_code == status, (resp.request.url, resp.text)
            assert needle in resp.json()["error"]["message"], (resp.request.url, resp.text)
        # raw dot segments (a client would normalise them away)
        answer = _raw(srv.port, b"DELETE /api/v1/rules/.. HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 400"), answer
        answer = _raw(srv.port, b"DELETE /api/v1/rules/../rules/echo HTTP/1.1\r\nHost: x\r\n"
                                b"Connection: close\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 404"), answer
        # a declared huge length is refused without reading anything
        answer = _raw(srv.port, b"POST /api/v1/rules/echo/execute/T HTTP/1.1\r\nHost: x\r\n"
                                b"Content-Length: 1000000000\r\n\r\n{")
        assert answer.startswith(b"HTTP/1.1 413"), answer
        # a URL far beyond any id: refused by the server (a 4xx or the connection closed), never served
        answer = _raw(srv.port, b"GET /api/v1/rules/" + b"e" * 200_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        assert answer == b"" or answer[9:10] == b"4", answer[:100]
        assert _state(srv.url) == before


def test_a_client_trickling_its_body_gets_408(fake_llm: Any, tmp_path: Path) -> None:
    llm = fake_llm([{"text": "fine"}])
    docs = {"helper.json": agent_doc(llm.url), "echo.json": echo_chain()}
    with serve(tmp_path / "s", docs, body_timeout=0.5) as srv:
        before = _state(srv.url)
        head = (b"POST /api/v1/rules/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 400\r\n\r\n")
        answer = _raw(srv.port, head, trickle=json.dumps(echo_chain()).encode()[:399], every=0.05)
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert b"did not arrive within 0.5 s" in answer
        assert _state(srv.url) == before
        # a normal client is still served
        assert httpx.post(srv.url + "/api/v1/rules/echo/execute/T", json={"n": 1}).status_code == 200


def _serve_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # Nothing to serve: the command warns (or not) and exits before it binds anything.
    (tmp_path / "empty").mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "chainreact", "serve", str(tmp_path / "empty"), *args],
                          capture_output=True, text=True, timeout=60)


def test_warning_when_binding_beyond_loopback_without_keys(tmp_path: Path) -> None:
    (tmp_path / "keys.json").write_text(json.dumps({"keys": [key("k", "secret")]}))
    warned = _serve_cli(tmp_path, "--host", "0.0.0.0")
    assert "warning: serving on 0.0.0.0 without --keys" in warned.stderr
    assert warned.returncode == 1 and "nothing to serve" in warned.stderr
    quiet = _serve_cli(tmp_path, "--host", "0.0.0.0", "--keys", str(tmp_path / "keys.json"))
    assert "warning" not in quiet.stderr and "nothing to serve" in quiet.stderr, quiet.stderr
    assert [_loopback(h) for h in ("127.0.0.1", "127.1.2.3", "::1", "localhost", "0.0.0.0", "::", "10.0.0.1",
                                   "example.com")] == [True] * 4 + [False] * 4


def test_bad_rate_limit_flag_is_refused_before_loading(tmp_path: Path) -> None:
    proc = _serve_cli(tmp_path, "--rate-limit", "lots")
    assert proc.returncode != 0 and "--rate-limit" in proc.stderr and "N/minute" in proc.stderr
    proc = _serve_cli(tmp_path, "--login-rate-limit", "0/minute")
    assert proc.returncode != 0 and "--login-rate-limit" in proc.stderr and "N >= 1" in proc.stderr
