"""Chains and flows replay like agents: a rule chain's run kept by an eval, and a flow's turn.

A flow records every turn in its store (the session's run id is `flow:<flow id>:<session>`); a chain run is
recorded by the server's runs API and by `chainreact eval --chain ... --state URL`. From the command line:
    chainreact runs export flow:support:s1 --state sqlite:///flows.db --turn 2 --out turn2.json
    chainreact replay turn2.json --doc support.json

Runs against the scripted model (chainreact.testing.FakeLLM), stopped before the replays.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from chainreact.chains import RuleEngine
from chainreact.evals import ChainTarget, load_dataset, run_eval
from chainreact.flows import Flow
from chainreact.replay import export_run, replay
from chainreact.state import open_store
from chainreact.testing import FakeLLM


def chain(url: str, wrap: str = "'[' + msg + ']'") -> dict[str, Any]:
    return {"ruleChain": {"id": "wrapped", "name": "wrapped"},
            "metadata": {"nodes": [
                {"id": "ask", "type": "ai/agent", "configuration": {
                    "url": url, "key": "k", "model": "m", "systemPrompt": "You answer in one word."}},
                {"id": "wrap", "type": "exprTransform", "configuration": {"expr": wrap}}],
                "connections": [{"fromId": "ask", "toId": "wrap", "type": "Success"}]}}


def flow(url: str, system: str = "Be brief.") -> dict[str, Any]:
    return {"id": "support", "nodes": [
        {"name": "chat", "type": "aiagent", "llmConfig": {"url": url}, "systemMessage": system,
         "userMessage": "{{userInput}}", "memory": {"maxMessages": 10},
         "output": {"schema": {"type": "object", "properties": {"response": {"type": "string"}}}}}]}


def answer(body: dict[str, Any]) -> dict[str, Any]:
    text = body["messages"][-1]["content"]
    if body.get("response_format"):  # the flow's agent answers JSON
        return {"text": json.dumps({"response": f"noted: {text}"})}
    return {"text": "Paris"}


async def main(folder: Path) -> None:
    state = f"sqlite:///{folder}/runs.db"
    chain_file, flow_file = folder / "wrapped.json", folder / "support.json"
    (folder / "cases.jsonl").write_text('{"name": "capital", "input": "Capital of France?"}\n')
    async with FakeLLM(answer) as llm, await open_store(state) as store:
        chain_file.write_text(json.dumps(chain(llm.url)))
        engine = RuleEngine()
        engine.load(str(chain_file))
        evaluated = await run_eval(load_dataset(folder / "cases.jsonl"), ChainTarget(engine, "wrapped"),
                                   store=store)
        engine.close()
        chain_run = str(evaluated.results[0].run_id)
        flow_file.write_text(json.dumps(flow(llm.url)))
        async with Flow.load(flow_file, store=store) as support:
            for text in ("my order is late", "it is order 42"):
                await support.send("s1", text)
        chain_cassette = await export_run(store, chain_run)
        turn = await export_run(store, "flow:support:s1", turn=2)
    print("chain nodes:", [(n["node"], n["data"]) for n in chain_cassette["nodes"]])
    print("flow turn 2 read:", sorted({r["op"] for r in turn["reads"]}), "answer:", turn["answer"])

    # The model server is gone. The chain replays from its recorded message, the flow turn from its reads.
    print("chain:", (await replay(chain_cassette)).report(), end="")
    print("flow:", (await replay(turn)).report(), end="")

    # Changed documents: the differences are named.
    chain_file.write_text(json.dumps(chain("http://127.0.0.1:9/v1", wrap="'<' + msg + '>'")))
    print("chain changed:", (await replay(chain_cassette)).report(), end="")
    flow_file.write_text(json.dumps(flow("http://127.0.0.1:9/v1", system="Be very brief.")))
    print("flow changed:", (await replay(turn)).report(), end="")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(Path(tmp)))
