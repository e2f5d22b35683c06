"""One message's run through a chain: the per-node context components talk to, and the run's bookkeeping.

Routing follows RuleGo (engine/rule_context.go): each relation goes to every connected node (a copy
each), a relation without a connection ends that branch, Failure writes metadata errorMsg. A node's
first successor runs inline in the same task and the others as new tasks, so a linear chain costs no
task switches. Each node context counts its unfinished children; when that reaches zero the node is
"executed", which is what `join` waits for (the lowest common ancestor of its parents)."""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from .aspects import Aspect, Told, after_all, before_all, complete_all, start_all
from .model import ChainLike, DebugEvent, DebugFn, End, EngineLike, NodeLike, StreamFn
from .msg import DEFAULT, ERROR_MSG_KEY, FAILURE, STREAM, SUCCESS, RuleMsg

log = logging.getLogger("chainreact.chains")


class NodeLimitError(RuntimeError):
    pass


EndFn = Callable[[End, bool], None]  # (end, reached_an_end_node)


def _err_text(err: BaseException | str | None) -> str | None:
    if err is None:
        return None
    if isinstance(err, BaseException):
        return str(err) or type(err).__name__
    return err


class Budget:
    """Nodes a message may still pass (shared with its sub-chains): the guard against endless cycles."""

    __slots__ = ("limit", "used")

    def __init__(self, limit: int):
        self.limit = limit
        self.used = 0


class Run:
    """The state of one message in one chain (sub-chains run as child runs sharing budget and cancel)."""

    def __init__(self, engine: EngineLike, chain: ChainLike, *, end_fn: EndFn, on_stream: StreamFn | None,
                 on_debug: DebugFn | None, budget: Budget, debug_all: bool = False,
                 parent: Run | None = None):
        self.engine = engine
        self.chain = chain
        self.end_fn = end_fn
        self.on_stream = on_stream
        self.on_debug = on_debug
        self.debug_all = debug_all
        self.budget = budget
        self.parent = parent
        self.active = 0
        self.done = asyncio.Event()
        self.tasks: set[asyncio.Task[Any]] = set()
        self.children: set[Run] = set()
        self.cancelled = False
        self.executed: set[str] = set()
        self.exec_waits: list[tuple[str, asyncio.Future[None]]] = []
        self.outputs: dict[str, RuleMsg] = {}
        self.state: dict[str, Any] = {}  # per-run component state (join arrivals)
        # A sub-chain's run: the flow node's context its Stream frames continue from (tell_flow).
        self.via: NodeContext | None = None
        # Hooks around each node (aspects.py): a sub-chain's run has its parent's.
        self.aspects: tuple[Aspect, ...] = parent.aspects if parent is not None else \
            tuple(getattr(engine, "aspects", ()))

    # --- scheduling -------------------------------------------------------------------------------
    def start(self, msg: RuleMsg) -> None:
        """Start in a new task (sub-chains); `first_context` + `execute` run the first node inline."""
        ctx = self.first_context(msg)
        if ctx is not None:
            self._spawn_task(ctx)

    def first_context(self, msg: RuleMsg, start: str | None = None, only: bool = False) -> NodeContext | None:
        """The context of the node the message enters at: the chain's first node, or `start` (RuleGo's
        WithStartNode); with `only`, that node's relations end the branch (WithSkipTellNext), whatever
        end nodes the chain has."""
        first = self.chain.first if start is None else self.chain.nodes.get(start)
        if first is None:
            if start is not None:
                raise LookupError(f"node id={start} not found in rule chain {self.chain.id!r}")
            self.end_fn(End(FAILURE, msg, "the rule chain has no nodes"), True)
            self.done.set()
            return None
        end_fn = (lambda e, _at: self.end_fn(e, True)) if only else self._end
        ctx = NodeContext(self, first, msg, parent=None, from_id="", err=None, end_fn=end_fn, skip_next=only)
        self.active += 1
        return ctx

    def _end(self, end: End, at_end_node: bool) -> None:
        chain = self.chain
        if (chain.has_end_node and not at_end_node
                and not (end.relation == FAILURE and self.engine.on_end_with_failure)):
            return
        self.end_fn(end, at_end_node)

    def _spawn_task(self, ctx: NodeContext) -> None:
        task = asyncio.get_running_loop().create_task(self.execute(ctx))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def execute(self, ctx: NodeContext | None) -> None:
        """Run `ctx`, then its first successor inline; other successors get tasks."""
        while ctx is not None:
            try:
                nxt = await ctx._run()
            except asyncio.CancelledError:
                self._finish_one()
                raise
            except Exception:  # a callback (end, debug, stream) raised: keep the run's accounting sound
                log.exception("chain %r node %r: callback failed", ctx.node.chain.id, ctx.node.id)
                nxt = []
            for extra in nxt[1:]:
                self._spawn_task(extra)
            self._finish_one()
            ctx = nxt[0] if nxt else None

    def _finish_one(self) -> None:
        self.active -= 1
        if self.active <= 0:
            self.done.set()

    # --- join support ------------------------------------------------------------------------------
    def mark_executed(self, node_id: str) -> None:
        if node_id in self.executed:
            return
        self.executed.add(node_id)
        if self.exec_waits:
            keep = []
            for nid, fut in self.exec_waits:
                if nid == node_id:
                    if not fut.done():
                        fut.set_result(None)
                else:
                    keep.append((nid, fut))
            self.exec_waits = keep

    def when_executed(self, node_id: str | None) -> asyncio.Future[None]:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if node_id is None:
            return fut  # no common ancestor: only the timeout ends the wait
        if node_id in self.executed:
            fut.set_result(None)
        else:
            self.exec_waits.append((node_id, fut))
        return fut

    # --- cancellation ------------------------------------------------------------------------------
    def cancel(self) -> None:
        self.cancelled = True
        for child in list(self.children):
            child.cancel()
        for t in list(self.tasks):
            t.cancel()
        self.done.set()

    def debug_enabled(self, node: NodeLike) -> bool:
        return self.on_debug is not None and (self.debug_all or node.debug or self.chain.debug)

    def emit_debug(self, ev: DebugEvent) -> None:
        if self.on_debug is not None:
            self.on_debug(ev)


class NodeContext:
    """What a component sees while it handles one message (RuleGo's RuleContext)."""

    __slots__ = ("_completed", "_detached", "_pending", "_started", "end_fn", "err", "from_id", "in_relation",
                 "msg", "node", "on_complete", "parent", "run", "skip_next", "told", "waiting")

    def __init__(self, run: Run, node: NodeLike, msg: RuleMsg, *, parent: NodeContext | None, from_id: str,
                 err: str | None, end_fn: EndFn, skip_next: bool = False,
                 on_complete: Callable[[], None] | None = None):
        self.run = run
        self.node = node
        self.msg = msg
        self.parent = parent
        self.from_id = from_id
        self.err = err
        self.end_fn = end_fn
        self.skip_next = skip_next
        self.on_complete = on_complete
        self.in_relation = ""  # the relation this node was reached on
        self.waiting = 1  # itself, until on_msg returns
        self._pending: list[NodeContext] | None = None
        self._completed = False
        self._detached = False
        self._started = 0.0
        self.told: Told | None = None  # with aspects: what the node routed on while it ran

    @property
    def chain(self) -> ChainLike:
        return self.node.chain

    @property
    def engine(self) -> EngineLike:
        return self.run.engine

    # --- execution ---------------------------------------------------------------------------------
    async def _run(self) -> list[NodeContext]:
        run = self.run
        node = self.node
        msg = self.msg
        if run.cancelled:
            self._own_done()
            return []
        budget = run.budget
        budget.used += 1
        self._pending = []
        if budget.used > budget.limit:
            self.tell_failure(msg, NodeLimitError(
                f"the message passed more than {budget.limit} nodes (a cycle in the chain?); stopped at "
                f"node {node.id!r} of chain {node.chain.id!r} (raise the engine's max_nodes if intended)"))
        else:
            debug = run.debug_enabled(node)
            if debug:
                self._started = time.perf_counter()
                run.emit_debug(DebugEvent(node.chain.id, node.id, "IN", msg.copy(), "", self.err))
            aspects = run.aspects
            tokens = None
            if aspects:
                self.told = []
                tokens = before_all(aspects, self, msg)
            try:
                await node.component.on_msg(self, msg)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # a component bug or a function that raised: Failure, as RuleGo recovers
                self.tell_failure(msg, e)
            finally:
                if tokens is not None:
                    after_all(aspects, tokens, self, self.told or [])
        pending = self._pending
        self._pending = None
        if not self._detached:
            self._own_done()
        return pending

    def _own_done(self) -> None:
        # Walk up iteratively: a long chain run inline would overflow the stack recursively.
        ctx: NodeContext | None = self
        while ctx is not None:
            ctx.waiting -= 1
            if ctx.waiting > 0 or ctx._completed:
                return
            ctx._completed = True
            ctx.run.mark_executed(ctx.node.id)
            if ctx.on_complete is not None:
                ctx.on_complete()
            ctx = ctx.parent

    def detach(self) -> None:
        """Count this node as finished for its parents while it keeps running (join waiting for others)."""
        if not self._detached:
            self._detached = True
            self._own_done()

    def _spawn(self, node: NodeLike, msg: RuleMsg, err: str | None, relation: str) -> None:
        parent: NodeContext | None = self
        if self._completed:
            parent = None
        else:
            self.waiting += 1
        child = NodeContext(self.run, node, msg, parent=parent, from_id=self.node.id, err=err,
                            end_fn=self.end_fn)
        child.in_relation = relation
        self.run.active += 1
        if self._pending is not None:
            self._pending.append(child)
        else:
            self.run._spawn_task(child)

    # --- routing (RuleGo's tellOrElse) -----------------------------------------------------------
    def _tell(self, msg: RuleMsg, err: BaseException | str | None, default: str | None,
              relations: tuple[str, ...]) -> None:
        run = self.run
        node = self.node
        err_text = _err_text(err)
        if err_text is not None:
            msg.metadata[ERROR_MSG_KEY] = err_text
        if self.told is not None:
            self.told.extend((rel, msg, err_text) for rel in relations)
        if not relations:
            self.end_fn(End("", msg.copy(), err_text, node.id), False)
            return
        if node.cache_output:
            run.outputs[node.id] = msg
        debug = run.debug_enabled(node)
        for rel in relations:
            if debug:
                dur = (time.perf_counter() - self._started) * 1000 if self._started else None
                run.emit_debug(DebugEvent(node.chain.id, node.id, "OUT", msg.copy(), rel, err_text, dur))
            if self.skip_next:
                self.end_fn(End(rel, msg.copy(), err_text, node.id), node.is_end)
                continue
            targets = node.routes.get(rel)
            if not targets and default is not None:
                targets = node.routes.get(default)
            if not targets:
                self.end_fn(End(rel, msg.copy(), err_text, node.id), False)
                continue
            for target in targets:
                self._spawn(target, msg.copy(), err_text, rel)

    def tell_next(self, msg: RuleMsg, *relations: str) -> None:
        self._tell(msg, None, None, relations)

    def tell_success(self, msg: RuleMsg) -> None:
        self._tell(msg, None, None, (SUCCESS,))

    def tell_failure(self, msg: RuleMsg, err: BaseException | str) -> None:
        self._tell(msg, err if _err_text(err) else "error", None, (FAILURE,))

    def tell_next_or_else(self, msg: RuleMsg, default: str, *relations: str) -> None:
        self._tell(msg, None, default, relations)

    def do_on_end(self, msg: RuleMsg, err: BaseException | str | None, relation: str,
                  *, at_end_node: bool = False) -> None:
        """End this branch now with `relation`, whatever is connected (RuleGo's ctx.DoOnEnd)."""
        if self.told is not None:
            self.told.append((relation, msg, _err_text(err)))
        self.end_fn(End(relation, msg.copy(), _err_text(err), self.node.id), at_end_node)

    async def tell_stream(self, msg: RuleMsg) -> None:
        """Deliver one stream frame, in order: to the nodes connected on Stream (awaited), else to the
        run's stream callback. A frame never ends the branch."""
        run = self.run
        node = self.node
        if run.debug_enabled(node):
            run.emit_debug(DebugEvent(node.chain.id, node.id, "OUT", msg.copy(), STREAM, None))
        targets = node.routes.get(STREAM)
        if targets:
            for target in targets:
                child = NodeContext(run, target, msg.copy(), parent=None, from_id=node.id, err=None,
                                    end_fn=self.end_fn)
                run.active += 1
                await run.execute(child)
            return
        if run.on_stream is not None:
            r = run.on_stream(msg.copy())
            if inspect.isawaitable(r):
                await r

    # --- running other nodes and chains ----------------------------------------------------------
    async def tell_node(self, node_id: str, msg: RuleMsg, *, skip_next: bool = False,
                        on_end: Callable[[End], None] | None = None) -> None:
        """Run node `node_id` of this chain with `msg`; its branch ends go to `on_end` (not to the
        message's end callback). Returns when that node and everything it started have finished."""
        node = self.chain.nodes.get(node_id)
        if node is None:
            raise LookupError(f"node id={node_id} not found")
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()

        def done() -> None:
            if not fut.done():
                fut.set_result(None)

        def end(e: End, _at_end: bool) -> None:
            if on_end is not None:
                on_end(e)

        child = NodeContext(self.run, node, msg, parent=None, from_id=self.node.id, err=None, end_fn=end,
                            skip_next=skip_next, on_complete=done)
        self.run.active += 1
        await self.run.execute(child)
        await fut

    async def tell_flow(self, chain_id: str, msg: RuleMsg, on_end: Callable[[End], None]) -> None:
        """Run sub-chain `chain_id` with `msg` and wait for all its branches; ends go to `on_end`."""
        engine = self.run.engine
        chain = engine.get(chain_id)
        if chain is None:
            raise LookupError(f"ruleChain id={chain_id} not found")
        parent = self.run

        async def stream(m: RuleMsg) -> None:
            await self.tell_stream(m)

        sub = Run(engine, chain, end_fn=lambda e, _a: on_end(e), on_stream=stream, on_debug=parent.on_debug,
                  budget=parent.budget, debug_all=parent.debug_all, parent=parent)
        sub.via = self
        parent.children.add(sub)
        try:
            sub.start(msg)
            await sub.done.wait()
        finally:
            parent.children.discard(sub)

    # --- expression environment ------------------------------------------------------------------
    def env(self, msg: RuleMsg, with_metadata: bool = True) -> dict[str, Any]:
        """RuleGo's per-message expression environment (rule_context.go getEnv)."""
        run = self.run
        chain = self.node.chain
        env: dict[str, Any] = {
            "global": run.engine.properties,
            "vars": chain.vars,
            "id": msg.id,
            "ts": msg.ts,
            "data": msg.data,
            "msgType": msg.type,
            "dataType": msg.data_type,
            "msg": msg.env_value(),
        }
        if chain.referenced_nodes:
            for nid in chain.referenced_nodes:
                out = run.outputs.get(nid)
                if out is not None:
                    env[nid] = {"msg": out.env_value(),
                                "metadata": out.metadata, "data": out.data, "msgType": out.type}
        if with_metadata:
            env.update(msg.metadata)
        env["metadata"] = msg.metadata
        return env


async def run_message(engine: EngineLike, chain: ChainLike, msg: RuleMsg, *, max_nodes: int,
                      timeout: float | None, on_end: Callable[[End], Any] | None = None,
                      on_stream: StreamFn | None = None, on_debug: DebugFn | None = None,
                      debug_all: bool = False, aspects: Sequence[Aspect] = (), start_node: str | None = None,
                      only_node: bool = False) -> list[End]:
    """Send `msg` from the chain's first node (or `start_node`; with `only_node` that node alone); every
    ended branch once all have ended (RuleEngine.run, and the durable chain workflow over its own engine and
    chain objects: one routing for both).

    `on_end` fires once per ended branch as it ends. On timeout or cancellation every branch is cancelled;
    a timeout adds one Failure end. `aspects` run after the engine's, for this message only."""
    ends: list[End] = []

    def end_fn(e: End, _at_end: bool) -> None:
        ends.append(e)
        if on_end is not None:
            try:
                on_end(e)
            except Exception:  # the caller's callback must not break the run's bookkeeping
                log.exception("on_end callback failed for chain %r", chain.id)

    run = Run(engine, chain, end_fn=end_fn, on_stream=on_stream, on_debug=on_debug, budget=Budget(max_nodes),
              debug_all=debug_all)
    if aspects:  # this message's own replace the engine's of the same type (one tracer, not two)
        mine = {type(a) for a in aspects}
        run.aspects = (*(a for a in run.aspects if type(a) not in mine), *aspects)
    if start_node is not None and start_node not in chain.nodes:  # refused before anything starts
        raise LookupError(f"node id={start_node} not found in rule chain {chain.id!r}")
    tokens = start_all(run.aspects, chain.id, msg) if run.aspects else None
    first = run.first_context(msg, start_node, only_node)
    try:
        async with asyncio.timeout(timeout):
            if first is not None:
                await run.execute(first)  # the first node (and its first successors) in this task
            if not run.done.is_set():
                await run.done.wait()
    except TimeoutError:
        run.cancel()
        end_fn(End(FAILURE, msg.copy(), f"context deadline exceeded: the message timeout of {timeout} s "
                                        f"passed before every branch ended", ""), False)
    except asyncio.CancelledError:
        run.cancel()
        raise
    finally:
        if tokens is not None:
            complete_all(run.aspects, tokens, chain.id, ends)
    return ends


async def maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


__all__ = ["DEFAULT", "Budget", "DebugEvent", "End", "NodeContext", "NodeLimitError", "Run", "run_message"]
