"""Chain and node spans from the rule engine's debug events."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from opentelemetry.trace import StatusCode

from chainreact.chains import RuleEngine, RuleMsg
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
    ends = await tracer.run(engine(), "c1", RuleMsg(type="T", data='{"t": 2}'),
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
