"""The worker's side of durable rule chains: the chains it serves and the activities that run their nodes.

    chainreact.chain.plan   the chain's snapshot (graph, workflow nodes' configuration, engine figures)
    chainreact.chain.node   one node's OnMsg, on the worker's own loaded chain; what it told (relations,
                            messages, errors, ends, stream frames) is returned and replayed by the workflow;
                            with a log named in its input (a run started with `stream`) and a store, the
                            node's Stream frames are appended to that log as they come (batched, as the
                            agent activities' events), and marked `logged` in what it returns
    chainreact.chain.agent_input / agent_save   an agent node's session history, loaded before and saved
                            after its child agent workflow (metadata sessionKey)
    chainreact.chain.publish   the run's end in the store (chain_end.py): its frames log closed, and the
                            end of a runs API run that no server follows any more

Of a run started with `trace`, each of them first appends the node events the workflow kept since its
last activity to the run's frames log, and the node activity appends its streaming agent node's
timeline events (chains/trace.py) as they come.

They run over a ChainHost (hosts.py): an AgentHost (it may serve agents too) over a RuleEngine holding
the loaded chains; it also serves each `ai/agent` node's Agent under a derived name (chain_plan.agent_key),
so the node can run as a child agent workflow whose model and tool calls are the agent activities.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from ..chains.components.ai_step import node_input
from ..chains.context import Budget, NodeContext, Run
from ..chains.model import End
from ..chains.msg import RuleMsg
from ..chains.trace import agent_event, agent_events
from .chain_plan import FRAME_EVENT, JSON, chain_snapshot
from .codec import messages_from_list
from .hosts import ChainHost
from .worker_io import FLUSH_EVERY, Publisher, heartbeating, tick_while


def _err_text(err: BaseException | str) -> str:
    if isinstance(err, BaseException):
        return str(err) or type(err).__name__
    return err


class RecordingContext(NodeContext):
    """A node context that records what the component tells instead of routing it: the workflow replays
    the record on its own context, where the routing happens."""

    __slots__ = ("attempt", "calls", "key", "pub")

    def __init__(self, run: Run, node: Any, msg: RuleMsg, *, from_id: str, err: str | None,
                 pub: Publisher | None = None):
        super().__init__(run, node, msg, parent=None, from_id=from_id, err=err, end_fn=_no_end)
        self.calls: list[JSON] = []
        self.pub = pub  # the caller's frames log (live Stream frames), or None
        self.attempt = activity.info().attempt if pub is not None else 1
        self.key = activity.info().activity_id if pub is not None else ""  # the same on every attempt

    def tell_next(self, msg: RuleMsg, *relations: str) -> None:
        self.calls.append({"op": "next", "msg": msg.to_dict(), "relations": list(relations)})

    def tell_success(self, msg: RuleMsg) -> None:
        self.calls.append({"op": "success", "msg": msg.to_dict()})

    def tell_failure(self, msg: RuleMsg, err: BaseException | str) -> None:
        self.calls.append({"op": "failure", "msg": msg.to_dict(), "err": _err_text(err)})

    def tell_next_or_else(self, msg: RuleMsg, default: str, *relations: str) -> None:
        self.calls.append({"op": "next_or_else", "msg": msg.to_dict(), "default": default,
                           "relations": list(relations)})

    def do_on_end(self, msg: RuleMsg, err: BaseException | str | None, relation: str,
                  *, at_end_node: bool = False) -> None:
        self.calls.append({"op": "end", "msg": msg.to_dict(), "err": None if err is None else _err_text(err),
                           "relation": relation, "at_end_node": at_end_node})

    async def tell_stream(self, msg: RuleMsg) -> None:
        d = msg.to_dict()
        if self.pub is None:
            self.calls.append({"op": "stream", "msg": d})
            return
        self.pub.add({"type": FRAME_EVENT, "msg": d, "node": self.node.id, "key": self.key,
                      "attempt": self.attempt})
        self.calls.append({"op": "stream", "msg": d, "logged": True})
        await self.pub.maybe_flush()

    async def tell_node(self, node_id: str, msg: RuleMsg, *, skip_next: bool = False,
                        on_end: Callable[[End], None] | None = None) -> None:
        raise RuntimeError("running another node from a node activity is not supported in a durable chain "
                           "(use fork, for or groupAction nodes)")

    async def tell_flow(self, chain_id: str, msg: RuleMsg, on_end: Callable[[End], None]) -> None:
        raise RuntimeError("running a sub-chain from a node activity is not supported in a durable chain "
                           "(use a flow node)")


def _no_end(_e: End, _at_end: bool) -> None:
    return None


def _agent_sink(timeline: Publisher, chain_id: str, node_id: str, e: Any) -> None:
    """An agent node's timeline event (chains/trace.py), for the run's frames log."""
    timeline.add(agent_event(chain_id, node_id, e))


class ChainActivities:
    """The chain activity implementations over a ChainHost (with the agent activities, for agent nodes)."""

    def __init__(self, host: ChainHost):
        self.host = host

    def activities(self) -> list[Any]:
        return [self.plan, self.node, self.agent_input, self.agent_save, self.publish]

    @activity.defn(name="chainreact.chain.plan")
    async def plan(self, req: JSON) -> JSON:
        chain = self.host.chain(req["chain"])
        if chain.disabled:
            raise ApplicationError(f"rule chain {chain.id!r} is disabled", type="ChainDisabled",
                                   non_retryable=True)
        return chain_snapshot(self.host.engine, chain)

    @activity.defn(name="chainreact.chain.node")
    async def node(self, req: JSON) -> JSON:
        engine = self.host.engine
        chain = self.host.chain(req["chain"])
        node = chain.nodes.get(req["node"])
        if node is None:  # the chain changed under a run in flight: the node fails, as a component error
            return {"calls": [{"op": "failure", "msg": req["msg"],
                               "err": f"node {req['node']!r} is not in chain {chain.id!r} on this worker"}]}
        await self._log_trace(req)
        run = Run(engine, chain, end_fn=_no_end, on_stream=None, on_debug=None,
                  budget=Budget(engine.max_nodes))
        run.outputs = {k: RuleMsg.from_dict(v) for k, v in (req.get("outputs") or {}).items()}
        msg = RuleMsg.from_dict(req["msg"])
        store = self.host.store
        pub = Publisher(store, req["log"]) if req.get("log") and store is not None else None
        ctx = RecordingContext(run, node, msg, from_id=str(req.get("from") or ""), err=req.get("err"),
                               pub=pub)
        ctx.in_relation = str(req.get("relation") or "")
        timeline = Publisher(store, req["trace_log"]) if req.get("trace_log") and store is not None else None
        token = agent_events.set(functools.partial(_agent_sink, timeline)) if timeline is not None else None
        async def flush() -> None:  # frames told since the last one, also while the node waits
            if pub is not None:
                await pub.flush()
            if timeline is not None:
                await timeline.flush()

        async with heartbeating(float(req.get("heartbeat", 10.0))):
            work = asyncio.ensure_future(node.component.on_msg(ctx, msg))  # with the sink, if set
            if token is not None:
                agent_events.reset(token)
            live = pub is not None or timeline is not None
            try:
                # Cancelled: the node's own cleanup (an agent run's cancel) first, its sub-runs with it.
                await tick_while(work, flush, every=FLUSH_EVERY if live else None, on_cancel=run.cancel)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # a component bug or a function that raised: Failure, as in process
                ctx.tell_failure(msg, e)
            finally:
                await flush()
        return {"calls": ctx.calls}

    async def _log_trace(self, req: JSON) -> None:
        """The node events the workflow kept since its last activity (a traced run), in the run's frames
        log; once: a retried attempt does not log them again."""
        if req.get("trace") and req.get("trace_log") and self.host.store is not None \
                and activity.info().attempt == 1:
            await self.host.store.append_events(req["trace_log"], [(str(d["type"]), d) for d in req["trace"]])

    def _agent_node(self, req: JSON) -> Any:
        node = self.host.chain(req["chain"]).nodes.get(req["node"])
        if node is None or not hasattr(node.component, "session_input"):
            raise ApplicationError(f"rule chain {req['chain']!r} has no agent node {req['node']!r} on this "
                                   "worker", type="UnknownAgent", non_retryable=True)
        return node.component

    @activity.defn(name="chainreact.chain.agent_input")
    async def agent_input(self, req: JSON) -> JSON:
        """An agent node's input with its session's history in front (metadata sessionKey, loadHistory)."""
        await self._log_trace(req)
        msg = RuleMsg.from_dict(req["msg"])
        data, n_history = await self._agent_node(req).session_input(msg, node_input(msg))
        return {"input": data, "history": n_history}

    @activity.defn(name="chainreact.chain.agent_save")
    async def agent_save(self, req: JSON) -> None:
        """What the agent node's child run added to its session's conversation."""
        await self._log_trace(req)
        await self._agent_node(req).save_history(dict(req["meta"]), messages_from_list(req["messages"]),
                                                 int(req.get("history") or 0))

    @activity.defn(name="chainreact.chain.publish")
    async def publish(self, req: JSON) -> None:
        """The run's end in the store: its frames log closed; its record's end written when no server
        follows the run any more, else left for the following server (chain_end.py)."""
        from .chain_end import finish

        await self._log_trace(req)
        if self.host.store is not None:
            await finish(self.host.store, req["run_id"], req["end"], record=bool(req.get("record")),
                         streamed=bool(req.get("stream")))
