"""The retry and failover hooks of ModelClient (ChatModelAgent's ShouldRetry, ShouldFailover,
GetFailoverModel) and the retry event they show up as, over real sockets."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from chainreact.config import AgentConfig
from chainreact.errors import ConfigError, ModelError
from chainreact.llm import ModelClient, reset_breakers
from chainreact.testing import FakeLLM
from chainreact.types import FailoverEvent, RetryEvent


@pytest.fixture(autouse=True)
def fresh_breakers() -> Iterator[None]:
    reset_breakers()
    yield
    reset_breakers()


async def test_should_retry_can_retry_a_400_and_refuse_a_503(harness: Any) -> None:
    seen: list[ModelError] = []

    def should_retry(e: ModelError) -> bool:
        seen.append(e)
        return e.status == 400

    async with FakeLLM([{"status": 400, "message": "flaky validator"}, {"text": "ok"}]) as srv:
        h = harness(client_kw={"should_retry": should_retry}, url=srv.url, model="m", maxRetries=2)
        _, resp = await h.run()
        assert resp.message.content == "ok" and len(srv.chat_requests) == 2
        assert [e.status for e in seen] == [400]
        (ev,) = h.events
        assert isinstance(ev, RetryEvent) and ev.attempt == 1 and ev.status == 400
        assert "flaky validator" in ev.error and ev.error_type == "ModelError"
    async with FakeLLM([{"status": 503}, {"text": "unused"}]) as srv:
        h = harness(client_kw={"should_retry": should_retry}, url=srv.url, model="m", maxRetries=2)
        with pytest.raises(ModelError) as ei:
            await h.run()
        assert ei.value.status == 503 and len(srv.chat_requests) == 1 and h.events == []


async def test_should_failover_decides_which_errors_move_on(harness: Any) -> None:
    async with FakeLLM([{"status": 400, "message": "context too long"}]) as p, \
            FakeLLM([{"text": "bigger model"}]) as b:
        h = harness(client_kw={"should_failover": lambda e: "context" in str(e)},
                    url=p.url, model="m", maxRetries=1, failover=[{"url": b.url, "model": "m-long"}])
        _, resp = await h.run()
        assert resp.endpoint == b.url and b.chat_requests[0].body["model"] == "m-long"
        assert h.kinds() == ["breaker", "failover"]
    async with FakeLLM([{"status": 500}] * 2) as p, FakeLLM([{"text": "unused"}]) as b:
        h = harness(client_kw={"should_failover": lambda e: False},
                    url=p.url, model="m", maxRetries=1, failover=[{"url": b.url}])
        with pytest.raises(ModelError):
            await h.run()
        assert b.chat_requests == [] and len(p.chat_requests) == 2  # retried, never failed over
        assert h.client.breaker is not None and h.client.breaker.state == "closed"


async def test_get_failover_model_endpoint_after_the_configured_ones(harness: Any) -> None:
    asked: list[int | None] = []
    async with FakeLLM([{"status": 502}] * 2) as p, FakeLLM([{"text": "dynamic"}] * 2) as b:

        async def pick(e: ModelError) -> dict[str, Any] | None:
            asked.append(e.status)
            return {"url": b.url, "key": "kb", "params": {"temperature": 0.1}} if len(asked) == 1 else None

        h = harness(client_kw={"get_failover_model": pick}, url=p.url, model="m", maxRetries=1,
                    params={"temperature": 0.7, "topP": 0.5})
        _, resp = await h.run(stream=True)
        assert resp.endpoint == b.url and resp.message.content == "dynamic" and asked == [502]
        req = b.chat_requests[0]
        assert req.headers["authorization"] == "Bearer kb" and req.body["model"] == "m"
        assert req.body["temperature"] == 0.1 and req.body["top_p"] == 0.5  # inherited like failover[]
        fo = [e for e in h.events if isinstance(e, FailoverEvent)]
        assert [(e.from_endpoint, e.to_endpoint) for e in fo] == [(p.url, b.url)]


async def test_get_failover_model_client_and_none(harness: Any) -> None:
    async with FakeLLM([{"status": 503}] * 4) as p, FakeLLM([{"text": "other client"}]) as b:
        other = ModelClient.from_config(AgentConfig.model_validate({"url": b.url, "model": "x"}))
        h = harness(client_kw={"get_failover_model": lambda e: other}, url=p.url, model="m", maxRetries=1)
        _, resp = await h.run()
        assert resp.endpoint == b.url and b.chat_requests[0].body["model"] == "x"
        await other.aclose()
        h2 = harness(client_kw={"get_failover_model": lambda e: None}, url=p.url, model="m", maxRetries=1)
        with pytest.raises(ModelError) as ei:
            await h2.run()
        assert ei.value.status == 503 and len(p.chat_requests) == 4


async def test_get_failover_model_not_asked_for_a_bad_request_bad_returns_are_errors(harness: Any) -> None:
    asked: list[ModelError] = []
    async with FakeLLM([{"status": 400}, {"status": 500}, {"status": 500}]) as p:
        h = harness(client_kw={"get_failover_model": lambda e: asked.append(e)}, url=p.url, model="m",
                    maxRetries=1)
        with pytest.raises(ModelError):
            await h.run()
        assert asked == []  # a 400 is the request's fault: no backup can help
        h = harness(client_kw={"get_failover_model": lambda e: 42}, url=p.url, model="m", maxRetries=1)
        with pytest.raises(ConfigError, match="get_failover_model must return"):
            await h.run()


async def test_each_reported_retry_and_failover_is_followed_by_a_reported_item(harness: Any) -> None:
    # The caller streaming the call's items learns of each event when it happens (agent/loop.py hands it
    # on at the Reported item), before the wait and the next attempt; the items never count as output.
    backup = [{"status": 503}, {"text": "ok", "chunks": 2}]
    async with FakeLLM([{"status": 503}] * 2) as p, FakeLLM(backup) as b:
        h = harness(url=p.url, model="m", maxRetries=1, failover=[{"url": b.url}])
        items, resp = await h.run(stream=True)
    assert h.kinds() == ["retry", "breaker", "failover", "retry"]
    assert h.marks == [1, 3, 4]  # right after the first retry, the failover, the backup's retry
    assert resp.message.content == "ok" and [type(i).__name__ for i in items] == ["TextChunk"] * 2


async def test_a_call_without_on_event_yields_no_reported_item() -> None:
    async with FakeLLM([{"status": 503}, {"text": "ok"}]) as srv:
        client = ModelClient.from_config(AgentConfig(url=srv.url, model="m"), sleep=_no_wait)
        items = [i async for i in client.call([], stream=True)]
        await client.aclose()
    assert [type(i).__name__ for i in items] == ["TextChunk", "ModelResponse"]


async def _no_wait(seconds: float) -> None:
    return None
