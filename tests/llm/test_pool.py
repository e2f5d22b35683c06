"""Connection pooling: sequential calls reuse one connection; concurrent requests each borrow a client
with one connection, so the pool's per-request bookkeeping does not grow with concurrency."""

from __future__ import annotations

import asyncio
import gc

import pytest

from chainreact.config import AgentConfig
from chainreact.errors import ModelError
from chainreact.llm import ModelClient
from chainreact.llm import pool as llm_pool
from chainreact.testing import FakeLLM
from chainreact.types import Message


async def test_sequential_calls_in_one_task_reuse_one_connection() -> None:
    with FakeLLM([{"text": "ok"}] * 5) as srv:
        client = ModelClient.from_config(AgentConfig(url=srv.url, model="m"))
        for _ in range(5):
            await client.complete([Message("user", "hi")])
        assert len({r.peer for r in srv.chat_requests}) == 1
        await client.aclose()


async def test_concurrent_requests_borrow_one_client_each_and_reuse_them() -> None:
    n = 120
    with FakeLLM([{"text": "ok", "delay": 0.05}] * (2 * n)) as srv:
        client = ModelClient.from_config(AgentConfig(url=srv.url, model="m"))
        for _ in range(2):
            results = await asyncio.gather(*(client.complete([Message("user", str(i))]) for i in range(n)))
            assert [r.message.text for r in results] == ["ok"] * n
        pools = llm_pool._POOLS[asyncio.get_running_loop()]
        (pool,) = pools.values()
        used = list(pool.free)
        assert len(used) == n and not pool.busy  # one per request in flight, all returned
        # One connection per client; the second wave reused the first wave's connections.
        assert len({r.peer for r in srv.chat_requests}) == n
        await client.aclose()
        assert pool.closed and not any(c.connected for c in used)  # every connection closed


async def test_a_client_is_returned_when_the_caller_stops_reading() -> None:
    with FakeLLM([{"text": "a b c d e f", "chunk_delay": 0.05}, {"text": "next"}]) as srv:
        client = ModelClient.from_config(AgentConfig(url=srv.url, model="m"))
        gen = client.call([Message("user", "x")], stream=True)
        await gen.__anext__()
        await gen.aclose()
        await asyncio.sleep(0.05)  # the inner generators are closed by the loop's finalizer, next tick
        (pool,) = llm_pool._POOLS[asyncio.get_running_loop()].values()
        assert not pool.busy and len(pool.free) == 1
        assert (await client.complete([Message("user", "y")])).message.text == "next"
        await client.aclose()


async def test_connections_to_an_endpoint_are_capped_and_the_rest_wait_in_line() -> None:
    # 30 requests at once, maxConnections 4: the server never sees more than 4 connections, every request
    # is answered, and a freed connection goes to the next request in line (so only 4 are ever opened).
    n, cap = 30, 4
    with FakeLLM([{"text": "ok", "delay": 0.05}] * n) as srv:
        client = ModelClient.from_config(AgentConfig(url=srv.url, model="m", maxConnections=cap))
        results = await asyncio.gather(*(client.complete([Message("user", str(i))]) for i in range(n)))
        assert [r.message.text for r in results] == ["ok"] * n
        assert len({r.peer for r in srv.chat_requests}) == cap
        (pool,) = llm_pool._POOLS[asyncio.get_running_loop()].values()
        assert pool.limit == cap and not pool.busy and not pool.waiters and len(pool.free) == cap
        await client.aclose()


async def test_a_request_cancelled_while_waiting_for_a_connection_leaves_the_line() -> None:
    with FakeLLM([{"text": "slow", "delay": 0.3}, {"text": "next"}]) as srv:
        client = ModelClient.from_config(AgentConfig(url=srv.url, model="m", maxConnections=1))
        first = asyncio.ensure_future(client.complete([Message("user", "a")]))
        await asyncio.sleep(0.05)
        waiting = asyncio.ensure_future(client.complete([Message("user", "b")]))
        await asyncio.sleep(0.05)
        (pool,) = llm_pool._POOLS[asyncio.get_running_loop()].values()
        assert len(pool.waiters) == 1
        waiting.cancel()
        await asyncio.sleep(0)
        assert not pool.waiters
        assert (await first).message.text == "slow"
        assert (await client.complete([Message("user", "c")])).message.text == "next"
        assert len(srv.chat_requests) == 2 and not pool.busy
        await client.aclose()


async def test_the_wait_for_a_connection_is_bounded_by_the_call_deadline() -> None:
    # Two agents' clients share the endpoint's pool (same URL and cap): the patient one holds the only
    # connection for 0.8 s, the other's call may take 0.3 s in all.
    with FakeLLM([{"text": "slow", "delay": 0.8}]) as srv:
        patient = ModelClient.from_config(AgentConfig(url=srv.url, model="m", maxConnections=1))
        hurried = ModelClient.from_config(AgentConfig(
            url=srv.url, model="m", maxConnections=1, maxRetries=-1, timeouts={"total": 0.3}))
        first = asyncio.ensure_future(patient.complete([Message("user", "a")]))
        await asyncio.sleep(0.05)
        with pytest.raises(ModelError, match=r"no free connection before the model call's deadline "
                                             r"\(timeouts.total=0.3s\): 1 requests .*maxConnections"):
            await hurried.complete([Message("user", "b")])
        assert (await first).message.text == "slow"
        assert len(srv.chat_requests) == 1  # the second never reached the server
        await hurried.aclose()
        await patient.aclose()


def test_the_default_cap_is_1000_or_half_the_open_file_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llm_pool, "nofile_limit", lambda: 1024)
    assert llm_pool.default_max_connections() == 512
    monkeypatch.setattr(llm_pool, "nofile_limit", lambda: 65536)
    assert llm_pool.default_max_connections() == 1000
    monkeypatch.setattr(llm_pool, "nofile_limit", lambda: None)
    assert llm_pool.default_max_connections() == 1000


async def test_a_model_call_leaves_no_reference_cycles_behind() -> None:
    # Thousands of runs in flight promote what a request allocates to the collector's oldest generation;
    # what only the cyclic GC can free stays there until a full collection. A model call (plain and
    # streamed) is freed by reference counting alone (httpx's client left ~43 objects per request).
    with FakeLLM([{"text": "hello there, a few words"}], loop=True, record=False) as srv:
        client = ModelClient.from_config(AgentConfig(url=srv.url, model="m"))
        await client.complete([Message("user", "warm up")])
        gc.collect()
        gc.disable()
        try:
            for _ in range(5):
                await client.complete([Message("user", "x")])
                async for _item in client.call([Message("user", "y")], stream=True):
                    pass
            found = gc.collect()
        finally:
            gc.enable()
        assert found == 0
        await client.aclose()


async def test_an_environment_proxy_is_used_for_the_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    # The scripted server stands in for the proxy: it receives the request for the real endpoint in
    # absolute form (a plain-http proxy request) and answers 404, which is enough to see where it went.
    with FakeLLM([{"text": "unused"}]) as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        client = ModelClient.from_config(AgentConfig(url="http://model.invalid/v1", model="m", maxRetries=-1))
        with pytest.raises(ModelError):
            await client.complete([Message("user", "x")])
        assert [r.path for r in proxy.requests] == ["http://model.invalid/v1/chat/completions"]
        await client.aclose()
        monkeypatch.setenv("NO_PROXY", "model.invalid")
        assert llm_pool.env_proxy("http://model.invalid/v1") is None
