"""Flow-control components: msgTypeSwitch, fork, join, flow, for, groupFilter, groupAction, end."""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING, Any

from ..exprs import Expr, Template
from ..model import End
from ..msg import (
    DEFAULT,
    FAILURE,
    JSON,
    SUCCESS,
    RuleMsg,
    go_json,
    parse_json_or_string,
    to_data_string,
)
from .base import Component, NodeConfig, register
from .wrappers import merge_map, wrapper, wrappers_json

if TYPE_CHECKING:
    from ..context import NodeContext


@register
class MsgTypeSwitch(Component):
    """Routes on the relation named like the message type, else Default."""

    type_name = "msgTypeSwitch"

    async def on_msg(self, ctx: NodeContext, msg: RuleMsg) -> None:
        ctx.tell_next_or_else(msg, DEFAULT, msg.type)


@register
class Fork(Component):
    """Success to every connected node; they run concurrently."""

    type_name = "fork"

    async def on_msg(self, ctx: NodeContext, msg: RuleMsg) -> None:
        ctx.tell_success(msg)


@register
class EndNode(Component):
    """Ends the branch here with the relation it was reached on. A chain that has `end` nodes reports only
    their ends (and Failure ends unless the engine's on_end_with_failure is off)."""

    type_name = "end"

    async def on_msg(self, ctx: NodeContext, msg: RuleMsg) -> None:
        ctx.do_on_end(msg, ctx.err, ctx.in_relation or SUCCESS, at_end_node=True)


class JoinConfig(NodeConfig):
    timeout: float = 0
    mergeToMap: bool = False


@register
class Join(Component):
    """Waits for the branches that reach it (until their common ancestor has finished), then one merged
    message: data is the JSON array of {msg, err, nodeId} (or one object with mergeToMap), metadata the
    union of error-free arrivals. Timeout (seconds, default 30): Failure `context deadline exceeded`."""

    type_name = "join"
    Config = JoinConfig
    config: JoinConfig

    async def on_msg(self, ctx: NodeContext, msg: RuleMsg) -> None:
        key = f"join:{self.node_id}"
        state = ctx.run.state.get(key)
        arrival = (msg, ctx.err, ctx.from_id)
        if state is not None:
            if not state["closed"]:
                state["arrivals"].append(arrival)
            return
        state = {"arrivals": [arrival], "closed": False}
        ctx.run.state[key] = state
        ctx.detach()
        timeout = self.config.timeout if self.config.timeout > 0 else 30.0
        fut = ctx.run.when_executed(ctx.node.chain.lca(self.node_id))
        try:
            await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            state["closed"] = True
            ctx.tell_failure(msg.copy(), "context deadline exceeded")
            return
        state["closed"] = True
        items: list[tuple[RuleMsg, str | None, str]] = state["arrivals"]
        out = msg.copy()
        out.data_type = JSON
        errors = []
        meta: dict[str, str] = dict(out.metadata)
        for m, err, nid in items:
            if err:
                errors.append(f"NodeId={nid},Err={err} ")
            else:
                meta.update(m.metadata)
        out.metadata = meta
        if self.config.mergeToMap:
            out.data = go_json(merge_map(items))
        else:
            out.data = wrappers_json([wrapper(m, err, nid) for m, err, nid in items])
        if errors:
            ctx.tell_failure(out, "".join(errors))
        else:
            ctx.tell_success(out)


class FlowConfig(NodeConfig):
    targetId: str = ""
    extend: bool = False


@register
class Flow(Component):
    """Runs sub-chain `targetId`. Default: waits for all its ends and answers one message (data = JSON
    array of {msg, err, nodeId}, metadata merged), Success unless a sub end was Failure. `extend`: each
    sub-chain end is passed on as it is, with its own relation."""

    type_name = "flow"
    Config = FlowConfig
    config: FlowConfig

    def init(self) -> None:
        if not self.config.targetId.strip():
            raise ValueError("targetId is empty")
        self.target = Template(self.config.targetId.strip())

    async def on_msg(self, ctx: NodeContext, msg: RuleMsg) -> None:
        target = self.target.render(ctx.env(msg)) if self.target.has_expr else self.target.text
        ends: list[End] = []
        extend = self.config.extend

        def on_end(e: End) -> None:
            if extend:
                ctx.tell_next(e.msg, e.relation) if e.error is None else ctx.tell_failure(e.msg, e.error)
            else:
                ends.append(e)

        try:
            await ctx.tell_flow(target, msg.copy(), on_end)
        except LookupError as err:
            ctx.tell_failure(msg, str(err).strip("'\""))
            return
        if extend:
            return
        out = msg.copy()
        failed = False
        for e in ends:
            if e.relation == FAILURE:
                failed = True
            if e.error is None:
                out.metadata.update(e.msg.metadata)
        out.data = wrappers_json([wrapper(e.msg, e.error, e.node_id) for e in ends])
        out.data_type = JSON
        if failed:
            # RuleGo reports the error of the last Failure end
            last = [e.error for e in ends if e.relation == FAILURE][-1]
            ctx.tell_failure(out, last or "sub-chain ended on Failure")
        else:
            ctx.tell_success(out)


class ForConfig(NodeConfig):
    range: str = ""
    do: str = ""
    mode: int = 0


@register
class For(Component):
    """Iterates `range` (expression or `${...}`; empty = the payload; `a..b` ranges; object keys) and runs
    node `do` (or `chain:<id>`) per item with metadata `_loopIndex`, `_loopItem` (`_loopKey`). Modes:
    0 keep the payload, 1 merge the results into an array, 2 each result feeds the next, 3 fire and
    forget. Metadata produced by each iteration is kept."""

    type_name = "for"
    Config = ForConfig
    config: ForConfig

    def init(self) -> None:
        c = self.config
        rng = c.range.strip()
        self.range_t: Template | None = None
        self.range_e: Expr | None = None
        if rng:
            if "${" in rng:
                self.range_t = Template(rng)
            else:
                self.range_e = Expr(rng)
        # expr-lang's `a..b` yields a Go []int: items go to _loopItem only, the data is left alone
        # (RuleGo for_node.go); any other array (JSON, literals) is []interface{}: each item becomes the data
        self.int_range = ".." in re.sub(r"'[^']*'|\"[^\"]*\"", "", rng)
        do = c.do.strip()
        if not do:
            raise ValueError("do is empty")
        parts = [p.strip() for p in do.split(":")]
        if len(parts) > 2:
            raise ValueError("do should be nodeId or chain:chainId")
        self.is_chain = len(parts) == 2 and parts[0] == "chain"
        self.target = parts[-1]
        if c.mode not in (0, 1, 2, 3):
            raise ValueError(f"mode {c.mode} is not 0, 1, 2 or 3")

    async def on_msg(self, ctx: NodeContext, msg: RuleMsg) -> None:
        in_data = msg.data
        try:
            if self.range_e is not None:
                data: Any = self.range_e.run(ctx.env(msg, False))
            elif self.range_t is not None:
                data = self.range_t.value(ctx.env(msg, False))
            else:
                data = parse_json_or_string(in_data)
        except Exception as e:
            ctx.tell_failure(msg, e)
            return
        mode = self.config.mode
        if isinstance(data, range):
            data = list(data)
        results: list[Any] = []
        try:
            if isinstance(data, list):
                numeric = self.int_range and all(isinstance(x, int) and not isinstance(x, bool) for x in data)
                items: list[tuple[Any, Any]] = list(enumerate(data))
            elif isinstance(data, dict):
                numeric, items = False, list(data.items())
            else:
                raise ValueError("must array slice or struct type")
            keyed = isinstance(data, dict)
            for index, (key, item) in enumerate(items):
                msg.metadata["_loopIndex"] = str(index)
                if keyed:
                    msg.metadata["_loopKey"] = str(key)
                if numeric or (mode == 2 and index > 0):
                    # a numeric range only counts; in mode 2 the data carries the previous item's result
                    msg.metadata["_loopItem"] = to_data_string(item)
                else:
                    msg.data = to_data_string(item)
                    msg.metadata["_loopItem"] = msg.data
                msg = await self._item(ctx, msg, results)
                if msg.metadata.pop("_break", None) == "true":
                    break
        except Exception as e:
            ctx.tell_failure(msg, e)
            return
        if mode in (0, 3):
            msg.data = in_data
        elif mode == 1:
            msg.data = to_data_string(results)
        ctx.tell_success(msg)

    async def _item(self, ctx: NodeContext, msg: RuleMsg, results: list[Any]) -> RuleMsg:
        mode = self.config.mode
        if mode == 3:
            task = asyncio.get_running_loop().create_task(self._run(ctx, msg.copy(), None))
            ctx.run.tasks.add(task)  # cancelled with the message; not awaited (fire and forget)
            task.add_done_callback(ctx.run.tasks.discard)
            return msg
        ends: list[End] = []
        await self._run(ctx, msg.copy(), ends.append)
        last: RuleMsg | None = None
        for e in ends:
            if e.error is not None:
                raise RuntimeError(e.error)
            last = e.msg
            msg.metadata.update(e.msg.metadata)
            if mode == 1:
                results.append(parse_json_or_string(e.msg.data) if msg.data_type == JSON else e.msg.data)
        if mode == 2 and last is not None:
            last = last.copy()
            return last
        return msg

    async def _run(self, ctx: NodeContext, msg: RuleMsg, on_end: Any) -> None:
        sink = on_end or (lambda e: None)
        if self.is_chain:
            await ctx.tell_flow(self.target, msg, sink)
        else:
            await ctx.tell_node(self.target, msg, on_end=sink)
