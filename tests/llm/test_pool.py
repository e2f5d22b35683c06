"""Connection pooling: one task's sequential calls reuse a connection; many tasks spread over shards."""

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


async def test_concurrent_tasks_use_several_small_pools() -> None:
    n = 120
    with FakeLLM([{"text": "ok", "delay": 0.05}] * n) as srv:
        client = ModelClient.from_config(AgentConfig(url=srv.url, model="m"))
        results = await asyncio.gather(*(client.complete([Message("user", str(i))]) for i in range(n)))
        assert [r.message.text for r in results] == ["ok"] * n
        pools = llm_http._POOLS[asyncio.get_running_loop()]
        (pool,) = pools.values()
        used = [c for c in pool.clients if c is not None]
        assert 1 < len(used) <= llm_http.SHARDS  # spread over shards, not one big quadratic pool
        await client.aclose()
        assert pool.closed and all(c.is_closed for c in used)
