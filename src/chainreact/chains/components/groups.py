"""groupFilter and groupAction: run several nodes of the chain at once and decide from their ends."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from ..model import End
from ..msg import FAILURE, FALSE, JSON, SUCCESS, TRUE, RuleMsg, go_json
from .base import Component, NodeConfig, register
from .wrappers import merge_map, wrapper, wrappers_json

if TYPE_CHECKING:
    from ..context import NodeContext


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
            out.data = go_json(merge_map([(e.msg, e.error, e.node_id) for e in got]))
            for e in got:
                if not e.error:
                    out.metadata.update(e.msg.metadata)
        else:
            out.data = wrappers_json([wrapper(e.msg, e.error, e.node_id) for e in got])
        if result is None:
            ctx.tell_failure(out, "context deadline exceeded")
        elif result:
            ctx.tell_success(out)
        else:
            ctx.tell_next(out, FAILURE)
