"""Chain and node spans from the ChainTracer aspect: relations, errors, content, nesting of what a node does
(an agent run, a sub-chain) under its span, the global switch, and a per-message tracer."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from opentelemetry.trace import StatusCode

from chainreact.chains import RuleEngine, RuleMsg
from chainreact.observability import OTelMiddleware
from chainreact.observability.chains import ChainTracer

from .conftest import Traces


def chain(chain_id: str = "c1") -> dict[str, Any]:
    nodes = [{"id": "f", "type": "exprFilter", "configuration": {"expr": "msg.t > 1"}},
             {"id": "g", "type": "exprFilter", "configuration": {"expr": "msg.t > 5"}},
             {"id": "boom", "type": "functions", "configuration": {"functionName": "boom"}}]
    conns = [("f", "g", "True"), ("f", "boom", "True")]
    return {"ruleChain": {"id": chain_id, "name": chain_id},
            "metadata": {"firstNodeIndex": 0, "nodes": nodes,
                         "connections": [{"fromId": a, "toId": b, "type": t} for a, b, t in conns]}}


def engine() -> RuleEngine:
    def boom(ctx: Any, msg: RuleMsg) -> None:
        raise RuntimeError("no such sensor")

    e = RuleEngine(functions={"boom": boom})
    e.load(chain())
    return e


async def test_chain_span_with_node_spans(traces: Traces) -> None:
    tracer = ChainTracer(tracer_provider=traces.provider)
    seen: list[str] = []
    ends = await tracer.run(engine(), "c1", RuleMsg(type="T", data='{"t": 2}'), debug=True,
                            on_debug=lambda ev: seen.append(f"{ev.node_id} {ev.flow}"))
    assert sorted(e.relation for e in ends) == ["Failure", "False"]
    assert "f IN" in seen and "boom OUT" in seen  # the caller's own on_debug still gets every event
    root = traces.one("chain c1")
    assert traces.children(root) == ["node boom", "node f", "node g"]
    assert len(traces.spans) == 4
    f, g, boom = traces.one("node f"), traces.one("node g"), traces.one("node boom")
    assert (f.attributes or {})["chainreact.node.relations"] == ("True",)
    assert (g.attributes or {})["chainreact.node.relations"] == ("False",)
    assert (f.attributes or {})["chainreact.chain.id"] == "c1"
    assert (g.attributes or {})["chainreact.node.from"] == "f"
    assert f.start_time and g.start_time and f.end_time and f.start_time <= f.end_time <= g.start_time
    assert boom.status.status_code == StatusCode.ERROR
    assert "no such sensor" in (boom.status.description or "")
    assert g.status.status_code == StatusCode.UNSET
    assert root.status.status_code == StatusCode.ERROR  # a branch ended on Failure
    assert sorted((root.attributes or {})["chainreact.chain.ends"]) == ["Failure", "False"]  # type: ignore[arg-type]
    assert "chainreact.msg.in" not in (f.attributes or {})  # no content unless asked


async def test_content_and_concurrent_messages(traces: Traces) -> None:
    tracer = ChainTracer(tracer_provider=traces.provider, capture_content=True)
    e = engine()
    await asyncio.gather(*(tracer.run(e, "c1", RuleMsg(type="T", data=json.dumps({"t": t})))
                           for t in (0, 2, 9)))
    roots = traces.named("chain c1")
    assert len(roots) == 3
    trees = sorted(tuple(traces.children(r)) for r in roots)
    # t=0 stops at f (False); t=2 and t=9 go on to g and boom. Each message's nodes under its own span.
    assert trees == [("node boom", "node f", "node g"), ("node boom", "node f", "node g"), ("node f",)]
    f_spans = traces.named("node f")
    data = sorted(json.loads(str((s.attributes or {})["chainreact.msg.in"]))["data"] for s in f_spans)
    assert data == ['{"t": 0}', '{"t": 2}', '{"t": 9}']


def agent_chain(url: str) -> dict[str, Any]:
    nodes = [{"id": "prep", "type": "jsTransform", "configuration": {"jsScript": "return {'msg': msg};"}},
             {"id": "ask", "type": "ai/agent", "configuration": {
                 "url": url, "key": "k", "model": "m", "tools": [],
                 "systemPrompt": "Be brief."}}]
    return {"ruleChain": {"id": "helpdesk", "name": "helpdesk"},
            "metadata": {"nodes": nodes,
                         "connections": [{"fromId": "prep", "toId": "ask", "type": "Success"}]}}


async def test_an_agent_nodes_run_nests_under_its_node_span(fake_llm: Any, traces: Traces) -> None:
    srv = fake_llm([{"text": "Hello."}])
    e = RuleEngine(aspects=[ChainTracer(tracer_provider=traces.provider)])
    e.load(agent_chain(srv.url))
    enable_agents = OTelMiddleware(tracer_provider=traces.provider)
    from chainreact.agent import middleware as agent_middleware

    agent_middleware.GLOBAL_MIDDLEWARE.append(enable_agents)  # agents the node builds are traced too
    try:
        ends = await e.run("helpdesk", RuleMsg(type="CHAT", data="hi", data_type="TEXT"))
    finally:
        agent_middleware.GLOBAL_MIDDLEWARE.remove(enable_agents)
    assert [x.relation for x in ends] == ["Success"]
    root = traces.one("chain helpdesk")
    assert traces.children(root) == ["node ask", "node prep"]
    ask = traces.one("node ask")
    run = next(s for s in traces.spans if s.name.startswith("invoke_agent"))
    assert run.parent is not None and ask.context is not None and run.parent.span_id == ask.context.span_id
    assert traces.children(run) == ["chat m"]


def parent_chain() -> dict[str, Any]:
    nodes = [{"id": "sub", "type": "flow", "configuration": {"targetId": "c1"}}]
    return {"ruleChain": {"id": "outer", "name": "outer"}, "metadata": {"nodes": nodes}}


async def test_a_sub_chains_nodes_nest_under_the_flow_node(traces: Traces) -> None:
    e = engine()
    e.load(parent_chain())
    await ChainTracer(tracer_provider=traces.provider).run(e, "outer", RuleMsg(type="T", data='{"t": 9}'))
    root = traces.one("chain outer")
    assert traces.children(root) == ["node sub"]
    assert traces.children(traces.one("node sub")) == ["node boom", "node f", "node g"]


async def test_enable_traces_every_engine_built_afterwards_and_once(traces: Traces) -> None:
    from chainreact.observability import disable, enable

    disable()
    before = engine()
    enable(tracer_provider=traces.provider)
    try:
        after = engine()
    finally:
        disable()
    await before.run("c1", RuleMsg(type="T", data='{"t": 0}'))
    assert traces.spans == []  # built before enable(): not traced
    await after.run("c1", RuleMsg(type="T", data='{"t": 0}'))
    assert [s.name for s in traces.spans] == ["node f", "chain c1"]
    # a tracer given for one message replaces the engine's: still one span per node
    await ChainTracer(tracer_provider=traces.provider).run(after, "c1", RuleMsg(type="T", data='{"t": 0}'))
    assert len(traces.named("chain c1")) == 2 and len(traces.named("node f")) == 2


async def test_an_aspect_that_raises_does_not_break_the_chain(caplog: Any) -> None:
    from chainreact.chains.aspects import Aspect

    class Broken(Aspect):
        def before(self, ctx: Any, msg: RuleMsg) -> Any:
            raise RuntimeError("aspect bug")

        def completed(self, token: Any, chain_id: str, ends: list[Any]) -> None:
            raise RuntimeError("aspect bug at the end")

    e = RuleEngine(aspects=[Broken()], functions={"boom": lambda ctx, msg: None})
    e.load(chain())
    ends = await e.run("c1", RuleMsg(type="T", data='{"t": 9}'))
    assert sorted(x.relation for x in ends) == ["True"]  # g passes, boom told nothing
    assert "aspect bug" in caplog.text and "aspect bug at the end" in caplog.text
