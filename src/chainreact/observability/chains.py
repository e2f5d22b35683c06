"""ChainTracer: spans for rule chain messages and their nodes, as an engine aspect (chains/aspects.py).

    chain {chain_id}        INTERNAL, one per message sent into a chain (RuleEngine.run)
      node {node_id}        INTERNAL, one per node execution (its component's on_msg)
        invoke_agent ...    what the node does (an ai/agent node's run) nests under the node
      node {node_id}        the next node: a sibling (`chainreact.node.from` names the node that sent it)

Each span is the current span while its work runs, so the node's own work (an agent run, its model and
tool calls, a sub-chain's nodes) nests under it, and the nodes' tasks under the chain span.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from ..chains.aspects import Aspect, Told
from ..version import __version__
from .middleware import TRACER_NAME, content_from_env

if TYPE_CHECKING:
    from ..chains.engine import RuleEngine
    from ..chains.model import End, NodeContextLike
    from ..chains.msg import RuleMsg

CHAIN_ID = "chainreact.chain.id"
NODE_ID = "chainreact.node.id"
NODE_FROM = "chainreact.node.from"
RELATIONS = "chainreact.node.relations"
MSG_TYPE = "chainreact.msg.type"
MSG_ID = "chainreact.msg.id"
MSG_IN = "chainreact.msg.in"  # opt-in content: the message's data and metadata as JSON
MSG_OUT = "chainreact.msg.out"
ENDS = "chainreact.chain.ends"
ERROR_TYPE = "error.type"


def _msg_json(msg: RuleMsg) -> str:
    import orjson

    return orjson.dumps({"type": msg.type, "data": msg.data, "metadata": msg.metadata}).decode()


class ChainTracer(Aspect):
    """Spans for every message and node of the engines it is an aspect of.

        RuleEngine(aspects=[ChainTracer()])              # one engine
        chainreact.observability.enable()                # every engine (and agent) built afterwards
        await ChainTracer().run(engine, "alarm", msg)    # one message

    `capture_content` records messages (default CHAINREACT_OTEL_CONTENT=1)."""

    def __init__(self, *, tracer_provider: trace.TracerProvider | None = None,
                 capture_content: bool | None = None):
        self.tracer = trace.get_tracer(TRACER_NAME, __version__, tracer_provider=tracer_provider)
        self.capture_content = content_from_env() if capture_content is None else capture_content

    def _open(self, name: str, attrs: dict[str, Any]) -> tuple[trace.Span, object]:
        span = self.tracer.start_span(name, kind=SpanKind.INTERNAL, attributes=attrs)
        return span, otel_context.attach(trace.set_span_in_context(span))

    def start(self, chain_id: str, msg: RuleMsg) -> Any:
        attrs: dict[str, Any] = {CHAIN_ID: chain_id, MSG_TYPE: msg.type, MSG_ID: msg.id}
        if self.capture_content:
            attrs[MSG_IN] = _msg_json(msg)
        return self._open(f"chain {chain_id}", attrs)

    def completed(self, token: Any, chain_id: str, ends: list[End]) -> None:
        span, attached = token
        otel_context.detach(attached)
        span.set_attribute(ENDS, [e.relation for e in ends])
        failed = [e for e in ends if e.error]
        if failed:
            span.set_attribute(ERROR_TYPE, failed[0].relation or "Failure")
            span.set_status(Status(StatusCode.ERROR, str(failed[0].error)))
        span.end()

    def before(self, ctx: NodeContextLike, msg: RuleMsg) -> Any:
        node = ctx.node
        attrs: dict[str, Any] = {CHAIN_ID: node.chain.id, NODE_ID: node.id, MSG_TYPE: msg.type,
                                 MSG_ID: msg.id}
        if ctx.from_id:
            attrs[NODE_FROM] = ctx.from_id
        if self.capture_content:
            attrs[MSG_IN] = _msg_json(msg)
        return self._open(f"node {node.id}", attrs)

    def after(self, token: Any, ctx: NodeContextLike, told: Told) -> None:
        span, attached = token
        otel_context.detach(attached)
        span.set_attribute(RELATIONS, [relation for relation, _, _ in told])
        failed = next(((relation, err) for relation, _, err in told if err), None)
        if failed is not None:
            span.set_attribute(ERROR_TYPE, failed[0] or "Failure")
            span.set_status(Status(StatusCode.ERROR, failed[1]))
        if self.capture_content and told:
            span.set_attribute(MSG_OUT, _msg_json(told[-1][1]))
        span.end()

    async def run(self, engine: RuleEngine, chain_id: str, msg: RuleMsg, **kwargs: Any) -> list[End]:
        """`engine.run(chain_id, msg, **kwargs)` traced by this tracer (for an engine built without it)."""
        return await engine.run(chain_id, msg, aspects=[self], **kwargs)
