"""ChainTracer: spans for rule chain messages and their nodes, made from the engine's debug events.

    chain {chain_id}        INTERNAL, one per message (ChainTracer.run around RuleEngine.run)
      node {node_id}        INTERNAL, one per node execution: IN (debug event) .. its OUT events

The engine reports IN before a node runs and OUT once per relation it tells, all from the node's task.
A node's span starts at IN and ends after its last OUT of that routing step (the OUTs of one tell come
in one synchronous burst, so the end is scheduled for the next loop turn and takes the last OUT's time).
Node spans are children of the chain span (not of each other): a message's path is their order, and
`chainreact.node.from` says which node sent it. Spans of work a node does (an agent's run in an `ai`
node) nest under the chain span too: the debug callback cannot make the node span current.
"""

from __future__ import annotations

import asyncio
import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from .. import __version__
from .middleware import TRACER_NAME, content_from_env

if TYPE_CHECKING:
    from ..chains.engine import RuleEngine
    from ..chains.model import DebugEvent, DebugFn, End
    from ..chains.msg import RuleMsg

CHAIN_ID = "chainreact.chain.id"
NODE_ID = "chainreact.node.id"
RELATIONS = "chainreact.node.relations"
MSG_TYPE = "chainreact.msg.type"
MSG_ID = "chainreact.msg.id"
MSG_IN = "chainreact.msg.in"  # opt-in content: the message's data and metadata as JSON
MSG_OUT = "chainreact.msg.out"
ENDS = "chainreact.chain.ends"
ERROR_TYPE = "error.type"


@dataclass(slots=True)
class _Open:
    span: Span
    relations: list[str] = field(default_factory=list)
    end_ns: int = 0
    scheduled: bool = False


_Key = tuple[int, str, str]
# The open node spans of the message ChainTracer.run is tracing (node tasks copy run()'s context).
_NODES: ContextVar[dict[_Key, list[_Open]] | None] = ContextVar("chainreact_otel_chain_nodes", default=None)


def _msg_json(msg: RuleMsg) -> str:
    import orjson

    return orjson.dumps({"type": msg.type, "data": msg.data, "metadata": msg.metadata}).decode()


class ChainTracer:
    """A debug callback that turns node IN/OUT events into spans, and `run()` that adds the chain span.

        tracer = ChainTracer()
        ends = await tracer.run(engine, "alarm", RuleMsg(...))   # chain span + node spans
        RuleEngine(on_debug=tracer, debug=True)                  # node spans only, under the caller's span

    `forward` receives every event too (your own on_debug); `capture_content` records messages (default
    CHAINREACT_OTEL_CONTENT=1)."""

    def __init__(self, *, tracer_provider: trace.TracerProvider | None = None,
                 capture_content: bool | None = None, forward: DebugFn | None = None):
        self.tracer = trace.get_tracer(TRACER_NAME, __version__, tracer_provider=tracer_provider)
        self.capture_content = content_from_env() if capture_content is None else capture_content
        self.forward = forward
        # Open node spans by (task, chain, node): IN and OUT of one execution come from the same task.
        self._open: dict[_Key, list[_Open]] = {}

    def __call__(self, ev: DebugEvent) -> None:
        opened = _NODES.get()
        if opened is None:
            opened = self._open
        key = (id(asyncio.current_task()), ev.chain_id, ev.node_id)
        if ev.flow == "IN":
            attrs: dict[str, Any] = {CHAIN_ID: ev.chain_id, NODE_ID: ev.node_id, MSG_TYPE: ev.msg.type,
                                     MSG_ID: ev.msg.id}
            if self.capture_content:
                attrs[MSG_IN] = _msg_json(ev.msg)
            span = self.tracer.start_span(f"node {ev.node_id}", kind=SpanKind.INTERNAL, attributes=attrs,
                                          start_time=int(ev.ts * 1e9))
            opened.setdefault(key, []).append(_Open(span))
        elif ev.flow == "OUT":
            stack = opened.get(key)
            if stack:
                self._out(opened, key, stack[-1], ev)
        if self.forward is not None:
            self.forward(ev)

    def _out(self, opened: dict[_Key, list[_Open]], key: _Key, node: _Open, ev: DebugEvent) -> None:
        node.relations.append(ev.relation)
        node.end_ns = time.time_ns()
        span = node.span
        if ev.error:
            span.set_attribute(ERROR_TYPE, ev.relation or "Failure")
            span.set_status(Status(StatusCode.ERROR, ev.error))
        if self.capture_content:
            span.set_attribute(MSG_OUT, _msg_json(ev.msg))
        if not node.scheduled:
            node.scheduled = True
            try:
                asyncio.get_running_loop().call_soon(_close, opened, key, node)
            except RuntimeError:  # no loop (a synchronous caller): close now
                _close(opened, key, node)

    def close_all(self) -> None:
        """End node spans still open when used as a plain on_debug (`run()` does this per message)."""
        _close_all(self._open)

    async def run(self, engine: RuleEngine, chain_id: str, msg: RuleMsg, **kwargs: Any) -> list[End]:
        """`engine.run(chain_id, msg, **kwargs)` in a `chain {chain_id}` span, with every node traced."""
        attrs: dict[str, Any] = {CHAIN_ID: chain_id, MSG_TYPE: msg.type, MSG_ID: msg.id}
        if self.capture_content:
            attrs[MSG_IN] = _msg_json(msg)
        user_debug = kwargs.pop("on_debug", None)

        def on_debug(ev: DebugEvent) -> None:
            self(ev)
            if user_debug is not None:
                user_debug(ev)

        with self.tracer.start_as_current_span(f"chain {chain_id}", kind=SpanKind.INTERNAL,
                                               attributes=attrs) as span:
            opened: dict[_Key, list[_Open]] = {}
            token = _NODES.set(opened)
            try:
                ends = await engine.run(chain_id, msg, on_debug=on_debug, debug=True, **kwargs)
            finally:
                _NODES.reset(token)
                await asyncio.sleep(0)  # let the last OUT bursts close their node spans
                _close_all(opened)  # nodes that ended a branch without telling a relation
            span.set_attribute(ENDS, [e.relation for e in ends])
            failed = [e for e in ends if e.error]
            if failed:
                span.set_attribute(ERROR_TYPE, failed[0].relation or "Failure")
                span.set_status(Status(StatusCode.ERROR, str(failed[0].error)))
            return ends


def _close(opened: dict[_Key, list[_Open]], key: _Key, node: _Open) -> None:
    stack = opened.get(key)
    if not stack or node not in stack:
        return  # already closed
    stack.remove(node)
    if not stack:
        del opened[key]
    node.span.set_attribute(RELATIONS, node.relations)
    node.span.end(end_time=node.end_ns or None)


def _close_all(opened: dict[_Key, list[_Open]]) -> None:
    for key, stack in list(opened.items()):
        for node in list(stack):
            _close(opened, key, node)
