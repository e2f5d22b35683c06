"""Flow-control components: msgTypeSwitch, fork, join, flow, for, groupFilter, groupAction, end."""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING, Any

import orjson

from ..exprs import Expr, Template
from ..model import End
from ..msg import (
    DEFAULT,
    FAILURE,
    FALSE,
    JSON,
    SUCCESS,
    TRUE,
    RuleMsg,
    go_json,
    parse_json_or_string,
    to_data_string,
)
from .base import Component, NodeConfig, register

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


def _wrapper(msg: RuleMsg, err: str | None, node_id: str) -> dict[str, Any]:
    return {"msg": {"ts": msg.ts, "id": msg.id, "dataType": msg.data_type, "type": msg.type,
                    "data": msg.data, "metadata": {}},
            "err": err or "", "nodeId": node_id}


def wrappers_json(items: list[dict[str, Any]]) -> str:
    """Go marshals the wrapper structs in field order (msg, err, nodeId), not sorted like maps."""
    return orjson.dumps(items).decode()


def _merge_map(items: list[tuple[RuleMsg, str | None, str]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for m, _err, nid in items:
        v = parse_json_or_string(m.data) if m.data_type == JSON else m.data
        if isinstance(v, dict):
            out.update(v)
        else:
            out[nid] = v
    return out


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
            out.data = go_json(_merge_map(items))
        else:
            out.data = wrappers_json([_wrapper(m, err, nid) for m, err, nid in items])
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
        out.data = wrappers_json([_wrapper(e.msg, e.error, e.node_id) for e in ends])
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
                for index, item in enumerate(data):
                    msg.metadata["_loopIndex"] = str(index)
                    if numeric:
                        msg.metadata["_loopItem"] = to_data_string(item)
                    elif mode != 2 or index == 0:
                        msg.data = to_data_string(item)
                        msg.metadata["_loopItem"] = msg.data
                    else:
                        msg.metadata["_loopItem"] = to_data_string(item)
                    msg = await self._item(ctx, msg, results)
                    if msg.metadata.pop("_break", None) == "true":
                        break
            elif isinstance(data, dict):
                for index, (k, item) in enumerate(data.items()):
                    msg.metadata["_loopIndex"] = str(index)
                    msg.metadata["_loopKey"] = str(k)
                    if mode != 2 or index == 0:
                        msg.data = to_data_string(item)
                        msg.metadata["_loopItem"] = msg.data
                    else:
                        msg.metadata["_loopItem"] = to_data_string(item)
                    msg = await self._item(ctx, msg, results)
                    if msg.metadata.pop("_break", None) == "true":
                        break
            else:
                raise ValueError("must array slice or struct type")
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


class GroupConfig(NodeConfig):
    nodeIds: str | list[str] = ""
    timeout: int = 30


def _node_ids(v: str | list[str]) -> list[str]:
    if isinstance(v, list):
        return [str(s).strip() for s in v if str(s).strip()]
    return [s.strip() for s in v.split(",") if s.strip()]


class GroupFilterConfig(GroupConfig):
    allMatches: bool = False


async def _run_members(ctx: NodeContext, ids: list[str], msg: RuleMsg, timeout: float,
                       decide: Any) -> tuple[bool | None, list[End | None]]:
    """Run the member nodes concurrently (their routes are not followed); `decide(ends, end)` is asked
    after each end and may settle the outcome early (True/False). Returns (outcome, ends by member);
    outcome None = timeout. Members still running when it is settled are cancelled."""
    ends: list[End | None] = [None] * len(ids)
    loop = asyncio.get_running_loop()
    outcome: asyncio.Future[bool] = loop.create_future()

    def on_end(index: int) -> Any:
        def record(e: End) -> None:
            if outcome.done():
                return
            ends[index] = e
            verdict = decide(ends, e)
            if verdict is not None:
                outcome.set_result(verdict)
        return record

    tasks = [loop.create_task(ctx.tell_node(nid, msg.copy(), skip_next=True, on_end=on_end(i)))
             for i, nid in enumerate(ids)]
    try:
        result: bool | None = await asyncio.wait_for(asyncio.shield(outcome), timeout if timeout > 0 else 30)
    except TimeoutError:
        result = None
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return result, ends


@register
class GroupFilter(Component):
    """Runs the filter nodes `nodeIds` concurrently: any True gives True (allMatches: every one True;
    the first non-True gives False). Timeout (s, default 30): Failure."""

    type_name = "groupFilter"
    Config = GroupFilterConfig
    config: GroupFilterConfig

    def init(self) -> None:
        self.ids = _node_ids(self.config.nodeIds)
        if not self.ids:
            raise ValueError("nodeIds is empty")

    async def on_msg(self, ctx: NodeContext, msg: RuleMsg) -> None:
        n = len(self.ids)
        all_matches = self.config.allMatches

        def decide(ends: list[End | None], e: End) -> bool | None:
            done = [x for x in ends if x is not None]
            trues = sum(1 for x in done if x.relation == TRUE)
            if all_matches:
                if e.relation != TRUE:
                    return False
                return True if len(done) >= n and trues >= n else None
            if e.relation == TRUE:
                return True
            return False if len(done) >= n and trues == 0 else None

        result, _ends = await _run_members(ctx, self.ids, msg, self.config.timeout, decide)
        if result is None:
            ctx.tell_failure(msg, "context deadline exceeded")
        else:
            ctx.tell_next(msg, TRUE if result else FALSE)


class GroupActionConfig(GroupConfig):
    matchRelationType: str = SUCCESS
    matchNum: int = 0
    mergeToMap: bool = False


@register
class GroupAction(Component):
    """Runs the nodes `nodeIds` concurrently: Success as soon as `matchNum` of them (0 = all) answered
    `matchRelationType`, Failure when all ended without that. Data: the JSON array of the ended members'
    {msg, err, nodeId} (member metadata cleared), or with `mergeToMap` their JSON objects merged (and
    their metadata merged). Timeout (s, default 30): Failure."""

    type_name = "groupAction"
    Config = GroupActionConfig
    config: GroupActionConfig

    def init(self) -> None:
        self.ids = _node_ids(self.config.nodeIds)
        if not self.ids:
            raise ValueError("nodeIds is empty")
        c = self.config
        self.match_rel = c.matchRelationType.strip() or SUCCESS
        self.need = c.matchNum if 0 < c.matchNum <= len(self.ids) else len(self.ids)

    async def on_msg(self, ctx: NodeContext, msg: RuleMsg) -> None:
        n = len(self.ids)

        def decide(ends: list[End | None], _e: End) -> bool | None:
            done = [x for x in ends if x is not None]
            if sum(1 for x in done if x.relation == self.match_rel) >= self.need:
                return True
            return False if len(done) >= n else None

        result, ends = await _run_members(ctx, self.ids, msg, self.config.timeout, decide)
        out = msg.copy()
        got = [e for e in ends if e is not None]
        if self.config.mergeToMap:
            out.data_type = JSON
            out.data = go_json(_merge_map([(e.msg, e.error, e.node_id) for e in got]))
            for e in got:
                if not e.error:
                    out.metadata.update(e.msg.metadata)
        else:
            out.data = wrappers_json([_wrapper(e.msg, e.error, e.node_id) for e in got])
        if result is None:
            ctx.tell_failure(out, "context deadline exceeded")
        elif result:
            ctx.tell_success(out)
        else:
            ctx.tell_next(out, FAILURE)
