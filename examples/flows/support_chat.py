"""A chat flow, turn by turn: outcomes branch on the agent's structured output, transitions move the
session, the session lives in the state store (a temporary SQLite file here), listed at the end.

The flow (support.json) names no endpoint: it runs where OPENAI_BASE_URL / OPENAI_API_KEY point, else on
the embedded model; this example points its agents at the scripted fake server, so it runs offline:
`python examples/flows/support_chat.py`. With a real model, run the same document with those variables set:
`chainreact flow send examples/flows/support.json "my order is late" --session s1 --user '{"id": "u1"}'`.
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


def answer(obj: dict[str, object]) -> dict[str, str]:
    return {"text": json.dumps(obj)}


async def main(state: str) -> None:
    script = [
        answer({"response": "I see order 42 is two weeks late.", "resolved": False, "priority": "urgent"}),
        answer({"response": "Great, enjoy your shoes!", "resolved": True}),
        answer({"score": 5}),
    ]
    async with FakeLLM(script) as srv:
        doc = json.loads((HERE / "support.json").read_text())
        for node in doc["nodes"]:
            if node["type"] == "aiagent":
                node.setdefault("llmConfig", {})["url"] = srv.url  # any OpenAI-compatible URL
        async with Flow.from_dict(doc, state=state) as flow:
            for text in ("My order 42 has not arrived", "It just arrived!", "Five stars"):
                turn = await flow.send("session-1", text, user=USER)
                print(f"> {text}")
                for m in turn.messages:
                    print(f"  [{m.node}] {m.content}")
                print(f"  -> node={turn.node} ended={turn.ended} output={json.dumps(turn.output)}")
            # The flow's sessions in the store, most recently active first (what the playground lists).
            for session in await flow.sessions():
                print(f"session {session.session}: at {session.node}, ended={session.ended}, "
                      f"{session.messages} messages kept")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(f"sqlite:///{tmp}/state.db"))
