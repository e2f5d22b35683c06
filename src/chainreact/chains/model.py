"""What the engine's parts know of each other: the ended-branch and debug records, and read-only
protocols of a compiled chain, its nodes and the engine.

Components, the run context and chains-as-tools are typed against these protocols, so they sit below
`engine` (which implements them) and the package has no import cycle."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .dsl import ChainDef
from .msg import RuleMsg


@dataclass(slots=True)
class End:
    """One ended branch: the relation it ended on, its message, the error text (None without error) and
    the node it ended at."""

    relation: str
    msg: RuleMsg
    error: str | None = None
    node_id: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"relation": self.relation, "error": self.error, "msg": self.msg.to_dict()}


@dataclass(slots=True)
class DebugEvent:
    """A node's IN (before it runs) or OUT (one per relation it told) event; `error` on Failure."""

    chain_id: str
    node_id: str
    flow: str  # "IN" | "OUT"
    msg: RuleMsg
    relation: str = ""
    error: str | None = None
    duration_ms: float | None = None
    ts: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return {"event": "debug", "chainId": self.chain_id, "nodeId": self.node_id, "flow": self.flow,
                "relation": self.relation, "error": self.error, "durationMs": self.duration_ms,
                "msg": self.msg.to_dict()}


StreamFn = Callable[[RuleMsg], Any]
DebugFn = Callable[[DebugEvent], Any]


class NodeContextLike(Protocol):
    """What aspects see of one node's handling of a message (context.NodeContext, which has more)."""

    @property
    def node(self) -> NodeLike: ...
    @property
    def msg(self) -> RuleMsg: ...
    @property
    def from_id(self) -> str: ...
    @property
    def in_relation(self) -> str: ...
    @property
    def chain(self) -> ChainLike: ...
    @property
    def engine(self) -> EngineLike: ...


class ComponentLike(Protocol):
    async def on_msg(self, ctx: Any, msg: RuleMsg) -> None: ...

    def close(self) -> None: ...


class NodeLike(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def debug(self) -> bool: ...
    @property
    def is_end(self) -> bool: ...
    @property
    def cache_output(self) -> bool: ...
    @property
    def routes(self) -> Mapping[str, Sequence[NodeLike]]: ...
    @property
    def component(self) -> ComponentLike: ...
    @property
    def chain(self) -> ChainLike: ...


class ChainLike(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def debug(self) -> bool: ...
    @property
    def vars(self) -> dict[str, Any]: ...
    @property
    def has_end_node(self) -> bool: ...
    @property
    def nodes(self) -> Mapping[str, NodeLike]: ...
    @property
    def first(self) -> NodeLike | None: ...
    @property
    def referenced_nodes(self) -> Sequence[str]: ...
    @property
    def definition(self) -> ChainDef: ...
    @property
    def engine(self) -> EngineLike: ...

    def lca(self, node_id: str) -> str | None: ...


class EngineLike(Protocol):
    @property
    def properties(self) -> dict[str, Any]: ...
    @property
    def on_end_with_failure(self) -> bool: ...
    @property
    def functions(self) -> dict[str, Callable[..., Any]]: ...
    @property
    def services(self) -> dict[str, Any]: ...
    @property
    def js_time_limit(self) -> float: ...
    @property
    def js_memory_limit(self) -> int: ...
    @property
    def chains(self) -> Mapping[str, ChainLike]: ...

    def get(self, chain_id: str) -> ChainLike | None: ...

    async def run(self, chain_id: str, msg: RuleMsg, *, on_end: Callable[[End], Any] | None = None,
                  on_stream: StreamFn | None = None, on_debug: DebugFn | None = None,
                  timeout: float | None = None, debug: bool | None = None) -> list[End]: ...
