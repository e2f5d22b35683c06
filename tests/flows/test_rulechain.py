"""`rulechain` nodes: the rendered input goes to a rule chain, its result is `output`/`vars`, the flow goes
on; a chain that fails or cannot be found fails the turn naming the node."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chainreact.chains import RuleEngine
from chainreact.errors import ConfigError
from chainreact.flows import Flow, FlowError, load_flow

ORDERS = {"ruleChain": {"id": "orders"}, "metadata": {"nodes": [
    {"id": "t", "type": "exprTransform",
     "configuration": {"expr": "{'order': msg.order, 'status': 'shipped', 'who': metadata.userId}"}}],
    "connections": []}}


def lookup_flow(url: str, **chain_ref: str) -> dict[str, Any]:
    return {"id": "orders-flow", "nodes": [
        {"name": "lookup", "type": "rulechain", "start": True, **chain_ref,
         "input": '{"order": "{{userInput}}"}', "message": "Order {{output.order}}: {{output.status}}.",
         "transition": {"targetId": "explain"}},
        {"name": "explain", "type": "aiagent", "llmConfig": {"url": url},
         "userMessage": "Explain status {{vars.lookup.status}} of order {{vars.lookup.order}}",
         "output": {"schema": {"type": "object", "properties": {"response": {"type": "string"}}}},
         "transition": {"end": True}},
    ]}


async def test_a_chain_file_runs_and_its_result_feeds_the_next_node(fake_llm: Any, tmp_path: Path) -> None:
    (tmp_path / "orders.json").write_text(json.dumps(ORDERS))
    srv = fake_llm([{"text": json.dumps({"response": "It is on its way."})}])
    flow = Flow.from_dict(lookup_flow(srv.url, chainFile="orders.json"), state=f"sqlite:///{tmp_path}/s.db",
                          base_dir=tmp_path)
    async with flow:
        t = await flow.send("s", "42", user={"id": "u9"})
    assert [(m.node, m.content) for m in t.messages] == [("lookup", "Order 42: shipped."),
                                                         ("explain", "It is on its way.")]
    assert t.ended
    assert srv.chat_requests[0].messages[-1]["content"] == "Explain status shipped of order 42"


async def test_a_chain_by_id_from_the_given_engine(fake_llm: Any, tmp_path: Path) -> None:
    srv = fake_llm([{"text": json.dumps({"response": "ok"})}])
    engine = RuleEngine()
    engine.load(ORDERS)
    async with Flow.from_dict(lookup_flow(srv.url, chainId="orders"), state=f"sqlite:///{tmp_path}/s.db",
                              chains=engine) as flow:
        t = await flow.send("s", "7", user={"id": "u1"})
    assert t.messages[0].content == "Order 7: shipped."
    assert t.output == {"response": "ok"}


async def test_a_missing_or_failing_chain_fails_the_turn(fake_llm: Any, tmp_path: Path) -> None:
    srv = fake_llm([])
    state = f"sqlite:///{tmp_path}/s.db"
    async with Flow.from_dict(lookup_flow(srv.url, chainId="nope"), state=state) as flow:
        with pytest.raises(FlowError, match="node 'lookup': no rule chain 'nope'"):
            await flow.send("s", "7")
    failing = {"ruleChain": {"id": "bad"}, "metadata": {"nodes": [
        {"id": "t", "type": "exprTransform", "configuration": {"expr": "msg.order + 1"}}], "connections": []}}
    (tmp_path / "bad.json").write_text(json.dumps(failing))
    doc = lookup_flow(srv.url, chainFile="bad.json")
    async with Flow.from_dict(doc, state=f"sqlite:///{tmp_path}/s.db", base_dir=tmp_path) as flow:
        with pytest.raises(FlowError, match="rule chain 'bad' failed"):
            await flow.send("s", "7")
        assert await flow.current_node("s") == "lookup"


def test_a_rulechain_node_needs_a_chain() -> None:
    with pytest.raises(ConfigError) as ei:
        load_flow({"nodes": [{"name": "x", "type": "rulechain"}]})
    assert dict(ei.value.errors)["$.nodes[0]"] == "a rulechain node needs chainId or chainFile"
