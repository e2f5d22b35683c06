"""Connection pooling: sequential calls reuse one connection; concurrent requests each borrow a client
with one connection, so the pool's per-request bookkeeping does not grow with concurrency."""

from __future__ import annotations

import asyncio

from chainreact.config import AgentConfig
from chainreact.llm import ModelClient
from chainreact.llm import http as llm_http
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
        pools = llm_http._POOLS[asyncio.get_running_loop()]
        (pool,) = pools.values()
        used = list(pool.free)
        assert len(used) == n and not pool.busy  # one per request in flight, all returned
        # One connection per client; the second wave reused the first wave's connections.
        assert len({r.peer for r in srv.chat_requests}) == n
        await client.aclose()
        assert pool.closed and all(c.is_closed for c in used)


async def test_a_client_is_returned_when_the_caller_stops_reading() -> None:
    with FakeLLM([{"text": "a b c d e f", "chunk_delay": 0.05}, {"text": "next"}]) as srv:
        client = ModelClient.from_config(AgentConfig(url=srv.url, model="m"))
        gen = client.call([Message("user", "x")], stream=True)
        await gen.__anext__()
        await gen.aclose()
        await asyncio.sleep(0.05)  # the inner generators are closed by the loop's finalizer, next tick
        (pool,) = llm_http._POOLS[asyncio.get_running_loop()].values()
        assert not pool.busy and len(pool.free) == 1
        assert (await client.complete([Message("user", "y")])).message.text == "next"
        await client.aclose()
