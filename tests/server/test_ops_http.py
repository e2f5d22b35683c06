"""Rate limits (429 + Retry-After, recovery on an injected clock), CORS (off unless configured), and the
structured access log (one JSON line per request, no secret in it)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from chainreact.errors import ConfigError
from chainreact.server import KeyStore
from chainreact.server.ratelimit import UNLIMITED, Rate, RateLimiter, parse_rate

from .ops_support import key, serve
from .test_server import agent_doc, echo_chain


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_parse_rate_forms_and_errors() -> None:
    assert parse_rate("60/minute") == Rate(60, 60.0)
    assert parse_rate("5 / seconds") == Rate(5, 1.0)
    assert parse_rate("1000/h") == Rate(1000, 3600.0)
    assert parse_rate("unlimited") == UNLIMITED
    for bad in ("60", "0/minute", "x/minute", "60/fortnight", 60):
        with pytest.raises(ConfigError, match="N/minute"):
            parse_rate(bad)


def test_token_bucket_refuses_then_refills() -> None:
    clock = Clock()
    limiter = RateLimiter(clock=clock)
    rate = Rate(3, 60.0)  # 3 at once, then one every 20 s
    assert [limiter.take("k", rate) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.take("k", rate) == pytest.approx(20.0)
    clock.now += 10
    assert limiter.take("k", rate) == pytest.approx(10.0)
    clock.now += 10
    assert limiter.take("k", rate) == 0.0
    assert limiter.take("other", rate) == 0.0  # buckets are per caller


def test_keys_file_rate_limit_field(tmp_path: Path) -> None:
    (tmp_path / "keys.json").write_text(json.dumps({"keys": [key("a", "ka", rateLimit="10/second"),
                                                             key("b", "kb")]}))
    store = KeyStore.load(tmp_path / "keys.json")
    assert [k.rate_limit for k in store.keys] == [Rate(10, 1.0), None]
    (tmp_path / "bad.json").write_text(json.dumps({"keys": [key("a", "ka", rateLimit="lots")]}))
    with pytest.raises(ConfigError, match=r"\$\.keys\[0\].*rateLimit"):
        KeyStore.load(tmp_path / "bad.json")


def test_per_key_rate_limit_refuses_with_429_and_recovers(fake_llm: Any, tmp_path: Path) -> None:
    llm = fake_llm([{"text": "hi"}])
    clock = Clock()
    keys = {"keys": [key("slow", "slow-key", rateLimit="2/minute", permissions=["admin"]),
                     key("free", "free-key", rateLimit="unlimited", permissions=["admin"]),
                     key("default", "default-key", permissions=["admin"])]}
    docs = {"helper.json": agent_doc(llm.url), "echo.json": echo_chain()}
    with serve(tmp_path / "s", docs, keys=keys, rate_limit="3/minute", clock=clock) as srv:
        def get(path: str, secret: str) -> httpx.Response:
            return httpx.get(srv.url + path, headers={"Authorization": f"Bearer {secret}"})

        assert [get("/v1/models", "slow-key").status_code for _ in range(2)] == [200, 200]
        refused = get("/v1/models", "slow-key")
        assert refused.status_code == 429
        assert refused.headers["retry-after"] == "30"  # one request per 30 s at 2/minute
        err = refused.json()["error"]
        assert err["code"] == "rate_limit_exceeded" and err["type"] == "requests" and "param" in err
        # elsewhere than /v1 the plain error shape; the same bucket (per key, across routes)
        plain = get("/api/v1/rules", "slow-key")
        assert plain.status_code == 429 and plain.json() == {"error": {
            "message": plain.json()["error"]["message"], "code": "rate_limit_exceeded"}}
        # the official SDK sees its RateLimitError
        client = openai.OpenAI(base_url=srv.url + "/v1", api_key="slow-key", max_retries=0)
        with pytest.raises(openai.RateLimitError):
            client.models.list()
        # other keys are not affected; a key without its own rate gets the server default (3/minute)
        assert [get("/v1/models", "free-key").status_code for _ in range(10)] == [200] * 10
        assert [get("/v1/models", "default-key").status_code for _ in range(4)] == [200, 200, 200, 429]
        clock.now += 29
        assert get("/v1/models", "slow-key").status_code == 429
        clock.now += 1
        assert get("/v1/models", "slow-key").status_code == 200
        assert get("/v1/models", "slow-key").status_code == 429
        # an unknown key is refused by auth, before (and without spending) any rate
        assert get("/v1/models", "nope").status_code == 401


def test_default_rate_limit_without_keys_is_per_client_address(fake_llm: Any, tmp_path: Path) -> None:
    llm = fake_llm([{"text": "hi"}])
    clock = Clock()
    docs = {"helper.json": agent_doc(llm.url)}
    with serve(tmp_path / "s", docs, rate_limit="1/second", clock=clock) as srv:
        assert httpx.get(srv.url + "/v1/models").status_code == 200
        r = httpx.get(srv.url + "/v1/models")
        assert r.status_code == 429 and r.headers["retry-after"] == "1"
        assert httpx.get(srv.url + "/healthz").status_code == 200  # health checks are never limited
        clock.now += 1
        assert httpx.get(srv.url + "/v1/models").status_code == 200


def test_cors_is_off_unless_configured(fake_llm: Any, tmp_path: Path) -> None:
    llm = fake_llm([{"text": "hi"}])
    preflight = {"Origin": "http://ui.example", "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "authorization, content-type"}
    with serve(tmp_path / "off", {"helper.json": agent_doc(llm.url)}) as srv:
        r = httpx.options(srv.url + "/v1/chat/completions", headers=preflight)
        assert not [h for h in r.headers if h.lower().startswith("access-control-")]
        r = httpx.get(srv.url + "/v1/models", headers={"Origin": "http://ui.example"})
        assert r.status_code == 200
        assert not [h for h in r.headers if h.lower().startswith("access-control-")]
    docs = {"helper.json": agent_doc(llm.url)}
    with serve(tmp_path / "on", docs, cors_origins=["http://ui.example"]) as srv:
        r = httpx.options(srv.url + "/v1/chat/completions", headers=preflight)
        assert r.status_code == 200
        assert r.headers["access-control-allow-origin"] == "http://ui.example"
        assert "POST" in r.headers["access-control-allow-methods"]
        assert "authorization" in r.headers["access-control-allow-headers"].lower()
        r = httpx.get(srv.url + "/v1/models", headers={"Origin": "http://ui.example"})
        assert r.headers["access-control-allow-origin"] == "http://ui.example"
        # another origin gets no allowance
        r = httpx.options(srv.url + "/v1/chat/completions", headers={**preflight, "Origin": "http://evil.example"})
        assert r.status_code == 400 and "access-control-allow-origin" not in r.headers
        r = httpx.get(srv.url + "/v1/models", headers={"Origin": "http://evil.example"})
        assert "access-control-allow-origin" not in r.headers


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_access_log_is_one_json_line_per_request_without_secrets(fake_llm: Any, tmp_path: Path) -> None:
    llm = fake_llm([{"text": "the answer"}])
    logger = logging.getLogger("chainreact.server.access")
    handler, level = _Lines(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    keys = {"keys": [key("ci-bot", "sk-TOPSECRET-123", permissions=["admin"])]}
    try:
        with serve(tmp_path / "s", {"helper.json": agent_doc(llm.url)}, keys=keys, access_log=True) as srv:
            auth = {"Authorization": "Bearer sk-TOPSECRET-123"}
            r = httpx.post(srv.url + "/v1/chat/completions?token=QUERYSECRET", headers=auth,
                           json={"model": "helper", "messages": [{"role": "user", "content": "BODYSECRET"}]})
            assert r.status_code == 200
            assert httpx.get(srv.url + "/v1/models",
                             headers={"Authorization": "Bearer sk-WRONG-456"}).status_code == 401
            assert httpx.get(srv.url + "/api/v1/rules/nope", headers=auth).status_code == 404
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert len(handler.lines) == 3
    entries = [json.loads(line) for line in handler.lines]
    first = entries[0]
    assert {k: first[k] for k in ("method", "path", "route", "status", "key", "client")} == {
        "method": "POST", "path": "/v1/chat/completions", "route": "/v1/chat/completions", "status": 200,
        "key": "ci-bot", "client": "127.0.0.1"}
    assert first["duration_ms"] > 0 and first["ts"].endswith("Z")
    assert (entries[1]["status"], entries[1]["key"]) == (401, None)
    assert (entries[2]["route"], entries[2]["path"], entries[2]["status"]) == ("/api/v1/rules/{id}",
                                                                              "/api/v1/rules/nope", 404)
    text = "\n".join(handler.lines)
    for secret in ("TOPSECRET", "WRONG-456", "QUERYSECRET", "BODYSECRET", "Bearer", "the answer"):
        assert secret not in text


def test_no_access_log_unless_asked(fake_llm: Any, tmp_path: Path) -> None:
    llm = fake_llm([{"text": "x"}])
    logger = logging.getLogger("chainreact.server.access")
    handler, level = _Lines(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        with serve(tmp_path / "s", {"helper.json": agent_doc(llm.url)}) as srv:
            assert httpx.get(srv.url + "/v1/models").status_code == 200
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert handler.lines == []
