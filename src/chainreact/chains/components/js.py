"""JavaScript components: jsFilter, jsTransform, jsSwitch (RuleGo components/filter, components/transform)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from ..jsengine import JsFunction
from ..msg import DEFAULT, FALSE, SUCCESS, TRUE, RuleMsg, to_data_string
from .base import Component, NodeConfig, register

if TYPE_CHECKING:
    from ..context import NodeContext


class JsConfig(NodeConfig):
    jsScript: str = ""


def make_js(component: Component, func_name: str, script: str) -> JsFunction:
    engine = component.chain.engine
    return JsFunction(func_name, script, vars=component.chain.vars, time_limit=engine.js_time_limit,
                      memory_limit=engine.js_memory_limit)


_FAILED: Any = object()


class _JsNode(Component):
    """What the three JS components share: the script compiled once as `function <func_name>(msg,
    metadata, msgType, dataType)`, and a call whose exception goes on Failure."""

    func_name: ClassVar[str]
    Config = JsConfig
    config: JsConfig

    def init(self) -> None:
        if not self.config.jsScript.strip():
            raise ValueError("jsScript is empty")
        self.fn = make_js(self, self.func_name, self.config.jsScript)

    async def call(self, ctx: NodeContext, msg: RuleMsg) -> Any:
        """The script's result, or _FAILED once the message went on Failure."""
        try:
            return await self.fn.acall_with_msg(msg.data, msg.data_type, msg.metadata, msg.type)
        except Exception as e:
            ctx.tell_failure(msg, e)
            return _FAILED


@register
class JsFilter(_JsNode):
    """True when the script returns boolean true, False for any other value, Failure when it throws."""

    type_name = "jsFilter"
    func_name = "Filter"

    async def on_msg(self, ctx: NodeContext, msg: RuleMsg) -> None:
        out = await self.call(ctx, msg)
        if out is not _FAILED:
            ctx.tell_next(msg, TRUE if out is True else FALSE)


TRANSFORM_DEFAULT = "return {'msg':msg,'metadata':metadata,'msgType':msgType,'dataType':dataType};"


@register
class JsTransform(_JsNode):
    """Replaces msg, metadata, msgType and dataType with what the script returns (an object)."""

    type_name = "jsTransform"
    func_name = "Transform"

    def init(self) -> None:
        script = self.config.jsScript.strip()
        self.pass_through = script in ("", TRANSFORM_DEFAULT)
        if not self.pass_through:
            super().init()

    async def on_msg(self, ctx: NodeContext, msg: RuleMsg) -> None:
        if self.pass_through:
            ctx.tell_next(msg, SUCCESS)
            return
        out = await self.call(ctx, msg)
        if out is _FAILED:
            return
        if not isinstance(out, dict):
            ctx.tell_failure(msg, "return the value is not a map")
            return
        apply_transform_result(msg, out)
        ctx.tell_next(msg, SUCCESS)


def apply_transform_result(msg: RuleMsg, out: dict[str, Any]) -> None:
    if "dataType" in out:
        dt = to_data_string(out["dataType"])
        if dt:
            msg.data_type = dt
    if "msgType" in out:
        msg.type = to_data_string(out["msgType"])
    if "metadata" in out:
        meta = out["metadata"]
        msg.metadata = {str(k): to_data_string(v) for k, v in meta.items()} if isinstance(meta, dict) else {}
    if "msg" in out:
        value = out["msg"]
        # RuleGo: an array of integers 0..255 is a byte array (binary payload)
        if isinstance(value, list) and all(isinstance(b, int) and not isinstance(b, bool) for b in value):
            if any(b < 0 or b > 255 for b in value):
                raise_bad = next(b for b in value if b < 0 or b > 255)
                raise ValueError(f"byte array element has invalid value {raise_bad}: must be integer in "
                                 "range 0-255")
            msg.data = bytes(value).decode("utf-8", "replace")
        else:
            msg.data = to_data_string(value)


@register
class JsSwitch(_JsNode):
    """Routes on every relation name in the array the script returns (falling back to Default)."""

    type_name = "jsSwitch"
    func_name = "Switch"

    async def on_msg(self, ctx: NodeContext, msg: RuleMsg) -> None:
        out = await self.call(ctx, msg)
        if out is _FAILED:
            return
        if not isinstance(out, list):
            ctx.tell_failure(msg, "return the value is not an array")
            return
        ctx.tell_next_or_else(msg, DEFAULT, *[to_data_string(r) for r in out])
