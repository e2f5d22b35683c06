"""Action components: functions, delay, log (RuleGo components/action); restApiCall is in rest.py."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from ..exprs import Template
from ..msg import RuleMsg
from .base import Component, NodeConfig, register
from .js import make_js

if TYPE_CHECKING:
    from ..context import NodeContext

log = logging.getLogger("chainreact.chains")


class FunctionsConfig(NodeConfig):
    functionName: str = ""
    param: str | None = None


@register
class Functions(Component):
    """Calls a Python function registered on the engine (`engine.register_function(name, fn)`):
    fn(ctx, msg), sync or async, routes the message itself. `functionName` and `param` may hold
    `${...}`; a non-empty `param` replaces the data first."""

    type_name = "functions"
    Config = FunctionsConfig
    config: FunctionsConfig

    def init(self) -> None:
        if not self.config.functionName.strip():
            raise ValueError("functionName is empty")
        self.name_t = Template(self.config.functionName.strip())
        self.param_t = Template(self.config.param) if self.config.param else None

    async def on_msg(self, ctx: NodeContext, msg: RuleMsg) -> None:
        env = ctx.env(msg) if (self.name_t.has_expr or (self.param_t and self.param_t.has_expr)) else {}
        name = self.name_t.render(env)
        fn = self.chain.engine.functions.get(name)
        if fn is None:
            ctx.tell_failure(msg, f"can not found the function={name}")
            return
        if self.param_t is not None:
            msg.data = self.param_t.render(env)
        r = fn(ctx, msg)
        if asyncio.iscoroutine(r):
            await r


class DelayConfig(NodeConfig):
    delayMs: str | int = ""
    periodInSeconds: int = 0
    periodInSecondsPattern: str = ""
    maxPendingMsgs: int = 1000
    overwrite: bool = False


@register
class Delay(Component):
    """Waits `delayMs` (an integer or a `${...}` template; legacy `periodInSeconds` /
    `periodInSecondsPattern`) minus metadata `_delayOffsetMs`, then Success with the message. More than
    `maxPendingMsgs` waiting: Failure. `overwrite`: while one message waits, newer ones replace it and
    only the newest goes out when the delay ends (RuleGo components/action/delay_node.go)."""

    type_name = "delay"
    Config = DelayConfig
    config: DelayConfig

    def init(self) -> None:
        c = self.config
        if c.maxPendingMsgs <= 0:
            c.maxPendingMsgs = 1000
        self.delay_text = str(c.delayMs).strip()
        self.fixed_ms = 0
        self.tmpl: Template | None = None
        if self.delay_text:
            try:
                self.fixed_ms = int(self.delay_text)
            except ValueError:
                self.tmpl = Template(self.delay_text)
        self.period_t = Template(c.periodInSecondsPattern) if c.periodInSecondsPattern else None
        self.pending = 0
        self._slot: list[RuleMsg] | None = None  # overwrite: the message that will go out

    def _delay_ms(self, ctx: NodeContext, msg: RuleMsg) -> int:
        if self.delay_text:
            if self.fixed_ms > 0:
                return self.fixed_ms
            if self.tmpl is not None:
                text = self.tmpl.render(ctx.env(msg))
                try:
                    return int(text.strip())
                except ValueError:
                    raise ValueError(f"failed to parse delay time from template result '{text}'") from None
            raise ValueError("no delay time configured")
        seconds = self.config.periodInSeconds
        if self.period_t is not None:
            text = self.period_t.render(ctx.env(msg))
            try:
                seconds = int(text.strip())
            except ValueError:
                raise ValueError(f"failed to parse periodInSecondsPattern result '{text}'") from None
        return seconds * 1000

    async def on_msg(self, ctx: NodeContext, msg: RuleMsg) -> None:
        if self.config.overwrite and self._slot is not None:
            self._slot[0] = msg  # replaces the waiting message; this one goes out in its place
            return
        if self.pending >= self.config.maxPendingMsgs:
            ctx.tell_failure(msg, "max limit of pending messages")
            return
        try:
            ms = self._delay_ms(ctx, msg)
        except ValueError as e:
            ctx.tell_failure(msg, e)
            return
        off = msg.metadata.get("_delayOffsetMs", "")
        if off:
            try:
                ms -= int(off.strip())
            except ValueError:
                ctx.tell_failure(msg, f"failed to parse offset ms from metadata '{off}'")
                return
        if ms <= 0:
            ctx.tell_success(msg)
            return
        slot = [msg]
        if self.config.overwrite:
            self._slot = slot
        self.pending += 1
        try:
            await asyncio.sleep(ms / 1000)
        finally:
            self.pending -= 1
            if self._slot is slot:
                self._slot = None
        ctx.tell_success(slot[0])


LOG_DEFAULT = ("return 'Incoming message:\\n' + JSON.stringify(msg) + '\\nIncoming metadata:\\n' + "
               "JSON.stringify(metadata);")


class LogConfig(NodeConfig):
    jsScript: str = LOG_DEFAULT


@register
class Log(Component):
    """Logs the string the script returns (logger `chainreact.chains`, level INFO), then Success."""

    type_name = "log"
    Config = LogConfig
    config: LogConfig

    def init(self) -> None:
        self.fn = make_js(self, "ToString", self.config.jsScript or LOG_DEFAULT)

    async def on_msg(self, ctx: NodeContext, msg: RuleMsg) -> None:
        try:
            text = await self.fn.acall_with_msg(msg.data, msg.data_type, msg.metadata, msg.type)
        except Exception as e:
            ctx.tell_failure(msg, e)
            return
        log.info("%s", text)
        sink = self.chain.engine.services.get("log")
        if sink is not None:
            sink(self.chain.id, self.node_id, str(text))
        ctx.tell_success(msg)
