"""One turn of a chat flow as a live event stream: `Flow.stream(..., agent_events=True)` passes on the
agent's own events while it runs (what `chainreact chat` shows): the answer's JSON as the model writes
it, then the node's message once the answer is parsed and its outcome applied.

Runs offline against the scripted fake server: `python examples/flows/stream_turn.py`. Interactively,
the same document: `chainreact chat examples/flows/support.json --user '{"id": "u1", "name": "Ann"}'`
(with a real endpoint).
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path

from chainreact.flows import Flow
from chainreact.testing import FakeLLM

HERE = Path(__file__).parent
USER = {"id": "u1", "name": "Ann"}


async def main(state: str) -> None:
    reply = {"response": "Order 42 left our warehouse yesterday.", "resolved": False}
    async with FakeLLM([{"text": json.dumps(reply), "chunks": 6}]) as srv:
        doc = json.loads((HERE / "support.json").read_text())
        for node in doc["nodes"]:
            if node["type"] == "aiagent":
                node.setdefault("llmConfig", {})["url"] = srv.url
        async with Flow.from_dict(doc, state=state) as flow:
            async for ev in flow.stream("s1", "Where is order 42?", user=USER, agent_events=True):
                if ev.type == "agent":
                    e = ev.data["agent_event"]  # a chainreact.types.events Event
                    if e.type == "text_delta":
                        print(f"  {ev.node} writes {e.text!r}")
                    elif e.type in ("tool_call", "tool_result"):
                        print(f"  {ev.node} {e.type}")
                elif ev.type == "message":
                    print(f"[{ev.node}] {ev.data['content']}")
                elif ev.type == "turn_end":
                    print(f"-> waiting at {ev.data['current']!r}")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(f"sqlite:///{tmp}/state.db"))
