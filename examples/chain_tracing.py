"""A rule chain traced: a chain span per message, a span per node, and an agent node's run nested under
its node; plus a hand-written aspect (a hook around every node) that times the nodes.

Needs the `otel` extra (pip install 'chainreact[otel]'). In an application,
`chainreact.observability.enable()` (or CHAINREACT_OTEL=1) puts a ChainTracer into every RuleEngine built
afterwards, `chainreact serve`'s included, and configures the OTel SDK from the OTEL_* environment
(docs/observability.md).
"""

import asyncio
import time
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from chainreact.chains import RuleEngine, RuleMsg
from chainreact.chains.aspects import Aspect
from chainreact.observability import OTelMiddleware
from chainreact.observability.chains import ChainTracer
from chainreact.testing import FakeLLM


class NodeTimer(Aspect):
    """An aspect of our own: how long each node took, and where it routed the message."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def before(self, ctx: Any, msg: RuleMsg) -> float:
        return time.perf_counter()

    def after(self, token: float, ctx: Any, told: list[Any]) -> None:
        relations = ",".join(relation for relation, _msg, _err in told)
        self.lines.append(f"{ctx.node.id} -> {relations} in {(time.perf_counter() - token) * 1e3:.1f} ms")


def chain(url: str) -> dict[str, Any]:
    nodes = [{"id": "check", "type": "jsFilter", "configuration": {"jsScript": "return msg.length > 0;"}},
             {"id": "answer", "type": "ai/agent", "configuration": {
                 "url": url, "key": "k", "model": "demo", "systemPrompt": "Answer in one line."}}]
    return {"ruleChain": {"id": "helpdesk", "name": "Helpdesk"},
            "metadata": {"nodes": nodes,
                         "connections": [{"fromId": "check", "toId": "answer", "type": "True"}]}}


def print_tree(spans: list[ReadableSpan]) -> None:
    children: dict[int | None, list[ReadableSpan]] = {}
    for s in sorted(spans, key=lambda s: s.start_time or 0):
        children.setdefault(s.parent.span_id if s.parent else None, []).append(s)

    def show(span: ReadableSpan, depth: int) -> None:
        relations = (span.attributes or {}).get("chainreact.node.relations")
        print(f"{'  ' * depth}{span.name}" + (f"  relations={list(relations)}" if relations else ""))
        for child in children.get(span.context.span_id if span.context else None, []):
            show(child, depth + 1)

    for root in children.get(None, []):
        show(root, 0)


async def main() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    from chainreact.agent import middleware

    # What enable() does for agents: their runs get spans too (here without touching the global SDK).
    middleware.GLOBAL_MIDDLEWARE.append(OTelMiddleware(tracer_provider=provider))
    timer = NodeTimer()
    async with FakeLLM([{"text": "Restart the router, then try again."}]) as llm:
        engine = RuleEngine(aspects=[ChainTracer(tracer_provider=provider), timer])
        engine.load(chain(llm.url))
        ends = await engine.run("helpdesk", RuleMsg(type="CHAT", data="My wifi is down", data_type="TEXT"))
    print("answer:", ends[0].msg.data)
    print_tree(list(exporter.get_finished_spans()))
    for line in timer.lines:
        print("timer:", line.split(" in ")[0])


if __name__ == "__main__":
    asyncio.run(main())
