"""What every chain component is: a small class registered by its RuleGo type name, with a config model."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict
from pydantic.fields import FieldInfo

if TYPE_CHECKING:
    from ..context import NodeContext
    from ..model import ChainLike
    from ..msg import RuleMsg


class NodeConfig(BaseModel):
    """Base of component configurations: RuleGo documents carry extra keys (UI hints, pool sizes), kept."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Component:
    """A node's behaviour. `init` checks what the config model cannot (raise ValueError with the reason);
    `on_msg` routes the message with ctx.tell_next / tell_success / tell_failure."""

    type_name: ClassVar[str] = ""
    Config: ClassVar[type[NodeConfig]] = NodeConfig
    description: ClassVar[str] = ""

    def __init__(self, config: Any, node_id: str, chain: ChainLike):
        self.config = config
        self.node_id = node_id
        self.chain = chain
        self.init()

    @classmethod
    def form_fields(cls) -> dict[str, FieldInfo]:
        """The configuration fields an editor shows (RuleGo's component forms, server/rulego_forms.py): the
        Config model's, unless a component checks its configuration through another model."""
        return dict(cls.Config.model_fields)

    def init(self) -> None:
        """Prepare (compile scripts and expressions); raise ValueError for a bad configuration."""

    async def on_msg(self, ctx: NodeContext, msg: RuleMsg) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Release resources when the chain is reloaded or removed."""


REGISTRY: dict[str, type[Component]] = {}
_CLOSING: set[asyncio.Task[Any]] = set()


def close_soon(aclose: Callable[[], Coroutine[Any, Any, Any]]) -> None:
    """Run `aclose()` as a task of the running loop, kept until done (close() is sync; with no running
    loop there is nothing left to close on)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    task = loop.create_task(aclose())
    _CLOSING.add(task)
    task.add_done_callback(_CLOSING.discard)


def register(cls: type[Component]) -> type[Component]:
    if not cls.type_name:
        raise ValueError(f"{cls.__name__} has no type_name")
    REGISTRY[cls.type_name] = cls
    return cls
