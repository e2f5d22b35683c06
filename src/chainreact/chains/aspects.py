"""Aspects: hooks around a rule chain's work, after RuleGo's (its Start/Completed aspects around a
message, Before/After around a node). Tracing is one (chainreact.observability.chains.ChainTracer).

    class Timing(Aspect):
        def before(self, ctx, msg):
            return time.perf_counter()

        def after(self, token, ctx, told):
            print(ctx.node.id, [relation for relation, _msg, _err in told], time.perf_counter() - token)

    RuleEngine(aspects=[Timing()])             # this engine's chains
    GLOBAL_ASPECTS.append(Timing())            # every RuleEngine built from now on

`start`/`completed` bracket one message sent into a chain (`RuleEngine.run`), in the caller's task. The
nodes' tasks are made inside that bracket, so a context variable `start` sets (the current span) is seen
by every node. `before`/`after` bracket one node's handling of a message (its component's `on_msg`), in
that node's task: what the node does (an agent's run, a sub-chain) sees what `before` set; the node's
first successor runs after `after`. `told` lists the (relation, message, error) the node routed on while
it ran. The value `start`/`before` returns is handed to `completed`/`after`. A hook that raises is logged;
the chain goes on. Durable chains (Temporal workflows) do not call aspects.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model import End, NodeContextLike
    from .msg import RuleMsg

log = logging.getLogger("chainreact.chains")

Told = list[tuple[str, "RuleMsg", str | None]]  # (relation, message, error text) per routing


class Aspect:
    """Override the hooks you need; the defaults do nothing. `ctx` is the node's
    `chainreact.chains.NodeContext` (typed as what aspects may rely on: its `node`, `msg`, `from_id`,
    `in_relation`, `chain`, `engine`). A token is whatever `start`/`before` returned."""

    def start(self, chain_id: str, msg: RuleMsg) -> Any:
        return None

    def completed(self, token: Any, chain_id: str, ends: list[End]) -> None:
        return None

    def before(self, ctx: NodeContextLike, msg: RuleMsg) -> Any:
        return None

    def after(self, token: Any, ctx: NodeContextLike, told: Told) -> None:
        return None


# Aspects every RuleEngine built afterwards runs first (chainreact.observability.enable() adds its tracer).
GLOBAL_ASPECTS: list[Aspect] = []


def with_global(aspects: Sequence[Aspect]) -> tuple[Aspect, ...]:
    """`aspects` after the global ones (a type the engine already has is not added twice)."""
    if not GLOBAL_ASPECTS:
        return tuple(aspects)
    own = {type(a) for a in aspects}
    return (*(g for g in GLOBAL_ASPECTS if type(g) not in own), *aspects)


def start_all(aspects: Sequence[Aspect], chain_id: str, msg: RuleMsg) -> list[Any]:
    tokens = []
    for a in aspects:
        try:
            tokens.append(a.start(chain_id, msg))
        except Exception:
            log.exception("aspect %r: start failed (chain %r)", a, chain_id)
            tokens.append(None)
    return tokens


def complete_all(aspects: Sequence[Aspect], tokens: list[Any], chain_id: str, ends: list[End]) -> None:
    for a, token in zip(reversed(aspects), reversed(tokens), strict=True):
        try:
            a.completed(token, chain_id, ends)
        except Exception:
            log.exception("aspect %r: completed failed (chain %r)", a, chain_id)


def before_all(aspects: Sequence[Aspect], ctx: NodeContextLike, msg: RuleMsg) -> list[Any]:
    tokens = []
    for a in aspects:
        try:
            tokens.append(a.before(ctx, msg))
        except Exception:
            log.exception("aspect %r: before failed (node %r)", a, ctx.node.id)
            tokens.append(None)
    return tokens


def after_all(aspects: Sequence[Aspect], tokens: list[Any], ctx: NodeContextLike, told: Told) -> None:
    for a, token in zip(reversed(aspects), reversed(tokens), strict=True):
        try:
            a.after(token, ctx, told)
        except Exception:
            log.exception("aspect %r: after failed (node %r)", a, ctx.node.id)


__all__ = ["GLOBAL_ASPECTS", "Aspect", "Told", "with_global"]
