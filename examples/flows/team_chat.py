"""A help desk that delegates to a billing colleague, asks the user for a missing tool argument and learns
facts about the user, shown as the turn's live event stream (`Flow.stream`).

team.json: the `desk` node supervises the `billing` node (multiAgentCollaboration); billing looks orders
up over HTTP (a `standard` tool); the desk's refund tool needs an amount the model leaves out, so the user
is asked (askUserForToolsInput) and the next message goes on with it; facts the model extracts are kept
as `semantic` long-term memory and recalled in a later session.

This example serves the shop's HTTP API (shop_api.py) on 127.0.0.1 itself and points the agents at the
scripted fake server, so it runs offline: `python examples/flows/team_chat.py`.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import shop_api  # beside this file: the shop's HTTP API that team.json's tools call

from chainreact.flows import Flow
from chainreact.testing import FakeLLM

HERE = Path(__file__).parent
USER = {"id": "u1", "name": "Ann"}


def answer(obj: dict[str, Any]) -> dict[str, str]:
    return {"text": json.dumps(obj)}


SCRIPT: list[dict[str, Any]] = [
    # Turn 1: the desk asks billing; billing looks the order up and answers; the desk answers.
    {"tool_calls": [{"name": "billing", "arguments": {"request": "status and amount of order 42"}}]},
    {"tool_calls": [{"name": "orderLookup", "arguments": {"orderId": "42"}}]},
    answer({"answer": "Order 42 (89.00 EUR) was delivered late."}),
    # The refund call leaves out the amount: the user is asked.
    {"tool_calls": [{"name": "createRefund", "arguments": {"orderId": "42"}}]},
    # Turn 2: the answer arrives, the refund runs, the desk answers; then it extracts a fact.
    answer({"response": "Refund R-1 of 89 EUR for order 42 is on its way.", "resolved": True}),
    {"text": "- Ann's order 42 was delivered late and refunded (89 EUR)."},
    # Turn 3 (a new session): the fact is recalled.
    answer({"response": "Yes, Ann: order 42 was refunded.", "resolved": False}),
    {"text": "NONE"},
]


def show(ev: Any) -> None:
    d = ev.to_dict()
    depth = "  " * len(d.get("path", [None]))
    if ev.type == "tool_call":
        print(f"{depth}-> {d['name']}({d['arguments']})  [{' > '.join(d['path'])}]")
    elif ev.type == "tool_result":
        print(f"{depth}<- {d['name']}: {d['content'][:70]}".replace("\n", " "))
    elif ev.type == "message":
        print(f"  [{ev.node}] {d['content']}")
    elif ev.type == "memory":
        print(f"  (remembered: {d['written']})")
    elif ev.type == "turn_end":
        print(f"  -> node={d['current']} ended={d['ended']}")


async def main(state: str) -> None:
    api = shop_api.start()
    api_url = f"http://127.0.0.1:{api.server_address[1]}"
    try:
        async with FakeLLM(SCRIPT) as srv:
            doc = json.loads((HERE / "team.json").read_text())
            for node in doc["nodes"]:
                if node["type"] == "aiagent":
                    node.setdefault("llmConfig", {})["url"] = srv.url  # any OpenAI-compatible URL
                    for tool in node.get("tools", []):
                        tool["execution"]["endpoint"] = tool["execution"]["endpoint"].replace(
                            "http://127.0.0.1:8080", api_url)
            async with Flow.from_dict(doc, state=state) as flow:
                for session, text in (("s1", "Order 42 came late, I want my money back"), ("s1", "89"),
                                      ("s2", "Did you refund my order?")):
                    print(f"> {text}  ({session})")
                    async for ev in flow.stream(session, text, user=USER):
                        show(ev)
    finally:
        api.shutdown()
        api.server_close()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(f"sqlite:///{tmp}/state.db"))
