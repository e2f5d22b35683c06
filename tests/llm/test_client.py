"""Resilience over real sockets: retries, Retry-After, stream retry modes, failover, the breaker, wrap."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from chainreact.config import Compat
from chainreact.errors import ModelError
from chainreact.llm import ModelFn, ModelRequest, RetryPolicy, breaker_states, reset_breakers
from chainreact.llm.breaker import get_breaker
from chainreact.testing import FakeLLM
from chainreact.types import BreakerEvent, FailoverEvent, Message, RetryEvent, StreamItem, TextChunk

from .conftest import texts


@pytest.fixture(autouse=True)
def fresh_breakers() -> Iterator[None]:
    reset_breakers()  # process-wide state; a reused port must not inherit an open breaker
    yield
    reset_breakers()


def test_backoff_policy() -> None:
    p = RetryPolicy(base_delay=0.5, max_delay=3, max_retry_after=60, jitter=0.5)
    e = ModelError("x")
    assert [p.delay(n, e, lambda: 0.0) for n in (1, 2, 3, 4, 5)] == [0.5, 1, 2, 3, 3]
    assert p.delay(2, e, lambda: 1.0) == 0.5  # full jitter takes off half
    assert p.delay(1, ModelError("x", retry_after=7), lambda: 0.5) == 7
    assert p.delay(1, ModelError("x", retry_after=3600), lambda: 0.5) == 60


@pytest.mark.parametrize("status", [408, 429, 500, 501, 502, 503, 504, 505, 507, 520, 522, 524, 529, 599])
async def test_retryable_status_then_success(harness: Any, status: int) -> None:
    async with FakeLLM([{"status": status}, {"status": status}, {"text": "ok"}]) as srv:
        h = harness(url=srv.url, model="m", maxRetries=3)
        _, resp = await h.run()
        assert resp.message.content == "ok" and len(srv.chat_requests) == 3
        retries = [e for e in h.events if isinstance(e, RetryEvent)]
        assert [(e.attempt, e.status, e.delay) for e in retries] == [(1, status, 0.25), (2, status, 0.5)]
        assert h.time.sleeps == [0.25, 0.5]


async def test_retries_exhausted(harness: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="chainreact.llm")
    async with FakeLLM([{"status": 503, "message": "overloaded"}] * 3) as srv:
        h = harness(url=srv.url, model="m", maxRetries=2)
        with pytest.raises(ModelError, match="overloaded") as ei:
            await h.run()
        assert ei.value.status == 503 and len(srv.chat_requests) == 3
        assert h.kinds() == ["retry", "retry"]
        assert sum("retrying in" in r.message for r in caplog.records) == 2


async def test_max_retries_zero_means_one_attempt(harness: Any) -> None:
    async with FakeLLM([{"status": 500}]) as srv:
        with pytest.raises(ModelError):
            await harness(url=srv.url, model="m", maxRetries=-1).run()
        assert len(srv.chat_requests) == 1


@pytest.mark.parametrize("header,expected", [("7", 7.0), ("120", 60.0), ("nan", 0.25), ("-5", 0.25),
                                             ("inf", 0.25)])
async def test_retry_after_honoured_capped_and_junk_ignored(harness: Any, header: str, expected: float
                                                            ) -> None:
    async with FakeLLM([{"status": 429, "headers": {"Retry-After": header}}, {"text": "ok"}]) as srv:
        h = harness(url=srv.url, model="m")
        await h.run()
        assert h.time.sleeps == [expected]
        (ev,) = h.events
        assert isinstance(ev, RetryEvent) and ev.delay == expected and ev.status == 429


async def test_network_faults_are_retried(harness: Any) -> None:
    script = [{"fault": "reset"}, {"fault": "empty"}, {"text": "x", "fault": "malformed", "after_chunks": 0},
              {"text": "ok"}]
    async with FakeLLM(script) as srv:
        h = harness(url=srv.url, model="m", maxRetries=3)
        _, resp = await h.run()
        assert resp.message.content == "ok" and h.kinds() == ["retry"] * 3


async def test_stream_off_retries_inside_the_probe_window(harness: Any) -> None:
    script = [{"text": "one two three", "fault": "disconnect", "after_chunks": 0},
              {"text": "one two three", "fault": "no_finish", "after_chunks": 0, "chunks": 1, "status": 500},
              {"text": "one two three"}]
    async with FakeLLM(script) as srv:
        h = harness(url=srv.url, model="m")
        items, resp = await h.run(stream=True)
        assert texts(items) == "one two three" == resp.message.content
        assert len(srv.chat_requests) == 3 and h.kinds() == ["retry", "retry"]


async def test_stream_off_does_not_retry_after_output(harness: Any) -> None:
    script = [{"text": "one two three four", "fault": "disconnect", "after_chunks": 2}, {"text": "unused"}]
    async with FakeLLM(script) as srv:
        h = harness(url=srv.url, model="m", streamRetryMode="off")
        got: list[StreamItem] = []
        with pytest.raises(ModelError, match="streamRetryMode") as ei:
            async for item in h.client.call([Message("user", "x")], stream=True, on_event=h.events.append):
                got.append(item)
        assert texts(got) == "one two"  # what the caller saw before the cut
        assert not ei.value.retryable and len(srv.chat_requests) == 1 and h.events == []


async def test_stream_full_retries_mid_stream_and_emits_once(harness: Any) -> None:
    script = [{"text": "one two three four", "fault": "disconnect", "after_chunks": 2},
              {"text": "one two three four", "fault": "malformed", "after_chunks": 3},
              {"text": "one two three four"}]
    async with FakeLLM(script) as srv:
        h = harness(url=srv.url, model="m", streamRetryMode="full")
        items, resp = await h.run(stream=True)
        assert texts(items) == "one two three four" == resp.message.content
        assert [type(i) for i in items] == [TextChunk] * 4
        assert len(srv.chat_requests) == 3 and h.kinds() == ["retry", "retry"]


def failover_cfg(primary: FakeLLM, *backups: FakeLLM, **kw: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {"url": primary.url, "key": "k0", "model": "main", "maxRetries": 1,
                           "circuitCooldownSec": 30, "params": {"temperature": 0.3, "topP": 0.8}}
    cfg["failover"] = [{"url": b.url, "key": f"k{i + 1}"} for i, b in enumerate(backups)]
    cfg.update(kw)
    return cfg


async def test_failover_after_retries_inherits_and_overrides(harness: Any) -> None:
    async with FakeLLM([{"status": 500}] * 2) as p, FakeLLM([{"text": "from backup"}]) as b:
        cfg = failover_cfg(p, b)
        cfg["failover"][0].update(model="spare", params={"temperature": 0.9})
        h = harness(**cfg)
        _, resp = await h.run()
        assert resp.message.content == "from backup" and resp.endpoint == b.url
        body = b.chat_requests[0].body
        assert body["model"] == "spare" and body["temperature"] == 0.9 and body["top_p"] == 0.8
        assert b.chat_requests[0].headers["authorization"] == "Bearer k1"
        assert h.kinds() == ["retry", "breaker", "failover"]
        fo = h.events[2]
        assert isinstance(fo, FailoverEvent) and (fo.from_endpoint, fo.to_endpoint) == (p.url, b.url)


async def test_failover_model_inherited_and_chain_of_backups(harness: Any) -> None:
    async with (FakeLLM([{"status": 502}] * 2) as p, FakeLLM([{"status": 503}] * 2) as b1,
                FakeLLM([{"text": "third"}]) as b2):
        h = harness(**failover_cfg(p, b1, b2))
        _, resp = await h.run(stream=True)
        assert resp.message.content == "third" and b2.chat_requests[0].body["model"] == "main"
        assert h.kinds() == ["retry", "breaker", "failover", "retry", "failover"]


@pytest.mark.parametrize("status", [501, 505, 507, 520, 522, 524, 408])
async def test_every_5xx_408_fails_over(harness: Any, status: int) -> None:
    async with FakeLLM([{"status": status}] * 2) as p, FakeLLM([{"text": "from backup"}]) as b:
        h = harness(**failover_cfg(p, b))
        _, resp = await h.run()
        assert resp.endpoint == b.url and len(p.chat_requests) == 2
        assert h.kinds() == ["retry", "breaker", "failover"]


async def test_breaker_cooldown_is_each_configs_own(harness: Any) -> None:
    # Two agents on the same primary, cooldowns 30 s and 90 s: the second must not inherit the first's.
    async with FakeLLM([{"status": 500}] * 4) as p, FakeLLM([{"text": "b"}], loop=True) as b:
        short = harness(**failover_cfg(p, b, circuitCooldownSec=30))
        long = harness(**failover_cfg(p, b, circuitCooldownSec=90))
        await short.run()
        await long.run()
        assert short.client.breaker is not None and long.client.breaker is not None
        assert short.client.breaker is not long.client.breaker
        trips = [(e.state, e.cooldown) for e in long.events if isinstance(e, BreakerEvent)]
        assert trips == [("open", 90)]
        long.time.now += 60  # past the short cooldown, inside the long one: still skipped
        await long.run()
        assert len(p.chat_requests) == 4


async def test_one_agents_bad_key_does_not_open_the_breaker_for_others(harness: Any) -> None:
    # The endpoint refuses the key of the agent asking "bad" and serves the other one.
    def primary(body: dict[str, Any]) -> dict[str, Any]:
        if body["messages"][-1]["content"] == "bad":
            return {"status": 401, "message": "invalid api key"}
        return {"text": "from primary"}

    async with FakeLLM(primary) as p, FakeLLM([{"text": "b"}], loop=True) as b:
        bad = harness(**failover_cfg(p, b, key="sk-revoked"))
        good = harness(**failover_cfg(p, b, key="sk-valid"))
        _, r1 = await bad.run("bad")
        assert r1.endpoint == b.url and bad.client.breaker is not None
        assert bad.client.breaker.state == "open"
        _, r2 = await good.run("good")
        assert r2.endpoint == p.url and r2.message.content == "from primary"
        assert "failover" not in good.kinds()
        assert p.chat_requests[-1].headers["authorization"] == "Bearer sk-valid"
        # The fingerprint, never the key, names the breaker.
        assert all("sk-" not in k for k in breaker_states())


async def test_failover_at_once_on_401(harness: Any) -> None:
    async with FakeLLM([{"status": 401, "message": "bad key"}]) as p, FakeLLM([{"text": "ok"}]) as b:
        h = harness(**failover_cfg(p, b, maxRetries=3))
        _, resp = await h.run()
        assert resp.endpoint == b.url and len(p.chat_requests) == 1
        assert h.kinds() == ["breaker", "failover"] and "bad key" in h.events[1].error  # type: ignore[union-attr]


async def test_bad_request_does_not_fail_over(harness: Any) -> None:
    async with FakeLLM([{"status": 400, "message": "bad schema"}]) as p, FakeLLM([{"text": "ok"}]) as b:
        h = harness(**failover_cfg(p, b))
        with pytest.raises(ModelError, match="bad schema"):
            await h.run()
        assert b.chat_requests == [] and get_breaker(p.url, "main", 30, key="k0").state == "closed"


async def test_all_endpoints_failing_names_each(harness: Any) -> None:
    async with FakeLLM([{"status": 500, "message": "p down"}] * 2) as p, \
            FakeLLM([{"status": 500, "message": "b down"}] * 2) as b:
        with pytest.raises(ModelError) as ei:
            await harness(**failover_cfg(p, b)).run()
        msg = str(ei.value)
        assert "all 2 model endpoints failed" in msg and "p down" in msg and "b down" in msg


async def test_no_breaker_without_failover(harness: Any) -> None:
    async with FakeLLM([{"status": 500}] * 4) as p:
        h = harness(url=p.url, model="main", maxRetries=1)
        for _ in range(2):
            with pytest.raises(ModelError):
                await h.run()
        assert len(p.chat_requests) == 4 and "breaker" not in h.kinds() and h.client.breaker is None


async def test_breaker_open_skips_primary_then_probe_closes(harness: Any) -> None:
    async with FakeLLM([{"status": 500}] * 2 + [{"text": "primary back"}]) as p, \
            FakeLLM([{"text": "b"}], loop=True) as b:
        h = harness(**failover_cfg(p, b))
        await h.run()  # trips the breaker
        assert h.client.breaker is not None
        assert breaker_states()[h.client.breaker.key]["state"] == "open"
        h.events.clear()
        h.time.now += 29
        _, resp = await h.run()
        assert resp.endpoint == b.url and len(p.chat_requests) == 2  # primary not asked
        assert h.kinds() == ["failover"] and "circuit breaker open" in h.events[0].error  # type: ignore[union-attr]
        h.events.clear()
        h.time.now += 1
        _, resp = await h.run()
        assert resp.endpoint == p.url and resp.message.content == "primary back"
        states = [(e.previous, e.state) for e in h.events if isinstance(e, BreakerEvent)]
        assert states == [("open", "half_open"), ("half_open", "closed")]
        assert h.client.breaker is not None and h.client.breaker.cooldown == 30


async def test_exactly_one_probe_under_concurrency_and_failed_probe_doubles(harness: Any) -> None:
    # Primary: two failures trip it; then the probe is slow (so the others overlap it) and fails.
    primary_script = [{"status": 500}] * 2 + [{"status": 500, "delay": 0.3}] * 2
    async with FakeLLM(primary_script) as p, FakeLLM([{"text": "b"}], loop=True) as b:
        h = harness(**failover_cfg(p, b))
        await h.run()
        h.time.now += 30
        h.events.clear()
        results = await asyncio.gather(*(h.run(f"q{i}") for i in range(20)))
        assert all(r.endpoint == b.url for _, r in results)
        assert len(p.chat_requests) == 4  # 2 to trip + the single probe with its 1 retry
        breaker = [(e.previous, e.state, e.cooldown) for e in h.events if isinstance(e, BreakerEvent)]
        assert breaker == [("open", "half_open", 30), ("half_open", "open", 60)]
        assert len(b.chat_requests) == 1 + 20
        # The doubled cooldown holds: 59 s later the primary is still skipped.
        h.time.now += 59
        await h.run()
        assert len(p.chat_requests) == 4


async def test_concurrent_success_probe_closes_for_everyone(harness: Any) -> None:
    async with FakeLLM([{"status": 500}] * 2 + [{"text": "p", "delay": 0.3}, {"text": "p2"}]) as p, \
            FakeLLM([{"text": "b"}], loop=True) as b:
        h = harness(**failover_cfg(p, b))
        await h.run()
        h.time.now += 30
        results = await asyncio.gather(*(h.run() for _ in range(10)))
        ends = [r.endpoint for _, r in results]
        assert ends.count(p.url) == 1 and ends.count(b.url) == 9
        _, resp = await h.run()
        assert resp.endpoint == p.url and resp.message.content == "p2"


async def test_cancelled_probe_releases_the_breaker(harness: Any) -> None:
    async with FakeLLM([{"status": 500}] * 2 + [{"text": "a b c d e f", "chunk_delay": 0.05},
                                                 {"text": "fine"}]) as p, \
            FakeLLM([{"text": "b"}], loop=True) as b:
        h = harness(**failover_cfg(p, b))
        await h.run()
        h.time.now += 30
        gen = h.client.call([Message("user", "x")], stream=True, on_event=h.events.append)
        first = await gen.__anext__()
        assert isinstance(first, TextChunk)
        await gen.aclose()  # the consumer stops mid-probe
        breaker = h.client.breaker
        assert breaker is not None and breaker.state == "open"
        _, resp = await h.run()  # the next request probes again
        assert resp.endpoint == p.url and breaker.state == "closed"


async def test_wrap_runs_inside_retries_and_failover(harness: Any) -> None:
    seen: list[tuple[str, int, float]] = []

    def wrap(inner: ModelFn) -> ModelFn:
        async def fn(req: ModelRequest) -> AsyncIterator[StreamItem]:
            seen.append((req.endpoint, req.attempt, req.params.temperature))
            req = dataclasses.replace(req, params=req.params.model_copy(update={"temperature": 0.0}))
            async for item in inner(req):
                yield TextChunk(item.text.upper()) if isinstance(item, TextChunk) else item
        return fn

    async with FakeLLM([{"status": 500}] * 2) as p, FakeLLM([{"text": "abc"}]) as b:
        h = harness(**failover_cfg(p, b))
        items, resp = await h.run(stream=True, wrap=wrap)
        assert seen == [(p.url, 1, 0.3), (p.url, 2, 0.3), (b.url, 1, 0.3)]
        assert b.chat_requests[0].body["temperature"] == 0.0
        assert texts(items) == "ABC" and resp.message.content == "abc"


async def test_params_override(harness: Any) -> None:
    async with FakeLLM([{"text": "ok"}]) as srv:
        h = harness(url=srv.url, model="m", params={"temperature": 0.5})
        await h.run(params_override={"temperature": 0, "maxTokens": 9, "top_k": 4, "thinking.type": "x"})
        body = srv.chat_requests[0].body
        assert body["temperature"] == 0 and body["max_completion_tokens"] == 9
        assert body["top_k"] == 4 and body["thinking"] == {"type": "x"}


async def test_complete_and_images(harness: Any, tmp_path: Any) -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"\x01" * 8
    f = tmp_path / "p.png"
    f.write_bytes(png)
    async with FakeLLM([{"text": "a cat"}]) as srv:
        h = harness(url=srv.url, model="m", images=[str(f), "https://x/y.jpg"])
        resp = await h.client.complete([Message("system", "s"), Message("user", "what?")])
        assert resp.message.content == "a cat"
        content = srv.chat_requests[0].messages[1]["content"]
        assert content[0] == {"type": "text", "text": "what?"}
        assert content[1]["image_url"]["url"].startswith("data:image/png;base64,")
        assert content[2]["image_url"]["url"] == "https://x/y.jpg"


async def test_local_url_resolves_through_chainreact_local(harness: Any, monkeypatch: Any) -> None:
    import chainreact.local as local

    async with FakeLLM([{"text": "hi", "tool_calls": [{"name": "f", "arguments": {}, "id": "z"}]}]) as srv:
        calls = []

        async def fake_endpoint() -> Any:
            calls.append(1)
            return dataclasses.make_dataclass("Ep", ["url", "model", "compat"])(
                srv.url, "tiny", Compat.model_validate({"streamTools": False}))

        monkeypatch.setattr(local, "get_local_endpoint", fake_endpoint)
        h = harness(url="local", maxRetries=-1)
        tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
        items, resp = await h.run(stream=True, tools=tools)
        body = srv.chat_requests[0].body
        assert body["model"] == "tiny" and body["stream"] is False and calls == [1]
        assert texts(items) == "hi" and resp.message.tool_calls is not None
