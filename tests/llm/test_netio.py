"""The model client's own HTTP/1.1 connections for plain-http endpoints (llm/netio.py) against a real server:
under uvloop too, a silence past timeouts.read, a response larger than the receive buffer's high-water
mark, which endpoints use them; and against a raw socket server (tests/llm/test_h1.py): framings, reuse,
and malformed responses."""

from __future__ import annotations

import asyncio
import importlib.util
import subprocess
import sys
import textwrap

import pytest

from chainreact.config import AgentConfig
from chainreact.errors import ModelError
from chainreact.llm import ModelClient, netio
from chainreact.llm import pool as llm_pool
from chainreact.testing import FakeLLM, tool_steps_responder
from chainreact.types import Message, ModelResponse


@pytest.mark.skipif(importlib.util.find_spec("uvloop") is None, reason="uvloop is not installed")
def test_an_agent_runs_under_uvloop() -> None:
    # uvloop's transports are no subclass of asyncio's: a check of that type hung every connection.
    child = textwrap.dedent('''
        import asyncio, sys, uvloop
        from chainreact.agent import Agent
        async def main(url):
            agent = Agent(name="a", url=url, model="m", key="x")
            async for ev in agent.stream("hi"):
                pass
            print(ev.type, (await agent.run("hi")).content[:14])
            await agent.aclose()
        uvloop.run(asyncio.wait_for(main(sys.argv[1]), 20))
    ''')
    with FakeLLM(tool_steps_responder(0), record=False) as srv:
        cp = subprocess.run([sys.executable, "-c", child, srv.url], capture_output=True, text=True,
                            timeout=60)
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.strip() == "final All 0 tool ste"


async def test_a_silence_longer_than_the_read_timeout_is_named() -> None:
    async with FakeLLM([{"text": "late", "delay": 2.0}]) as srv:
        client = ModelClient.from_config(AgentConfig(url=srv.url, model="m", maxRetries=-1,
                                                     timeouts={"read": 0.3}))
        with pytest.raises(ModelError, match=r"no data for 0.3s \(timeouts.read\)"):
            await client.complete([Message("user", "hi")])
        await client.aclose()


async def test_a_response_larger_than_the_receive_buffer_arrives_whole() -> None:
    text = "x" * (3 * netio._HIGH_WATER)  # reading is paused and resumed on the way
    async with FakeLLM([{"text": text}, {"text": text, "chunks": 50}]) as srv:
        client = ModelClient.from_config(AgentConfig(url=srv.url, model="m"))
        assert (await client.complete([Message("user", "hi")])).message.text == text
        final = [i async for i in client.call([Message("user", "hi")], stream=True)][-1]
        assert isinstance(final, ModelResponse) and final.message.text == text
        await client.aclose()


async def test_plain_http_endpoints_use_it_https_and_proxies_do_not() -> None:
    plain = llm_pool._new_transport("http://127.0.0.1:1/v1", None)
    tls = llm_pool._new_transport("https://api.example.com/v1", None)
    proxied = llm_pool._new_transport("http://10.0.0.1/v1", "http://proxy.example:3128")
    assert isinstance(plain, netio.Connection) and (plain.host, plain.port) == ("127.0.0.1", 1)
    assert isinstance(tls, llm_pool.HttpxTransport) and isinstance(proxied, llm_pool.HttpxTransport)
    for t in (plain, tls, proxied):
        await t.aclose()
    await asyncio.sleep(0)
