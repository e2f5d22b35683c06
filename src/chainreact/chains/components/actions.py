"""Action components: functions, delay, log, restApiCall (RuleGo components/action, components/external)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ..exprs import Template
from ..msg import FAILURE, RuleMsg
from .base import Component, NodeConfig, register
from .js import make_js

if TYPE_CHECKING:
    from ..context import NodeContext

log = logging.getLogger("chainreact.chains")
_CLOSING: set[asyncio.Task[None]] = set()


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
            text = self.fn.call_with_msg(msg.data, msg.data_type, msg.metadata, msg.type)
        except Exception as e:
            ctx.tell_failure(msg, e)
            return
        log.info("%s", text)
        sink = self.chain.engine.services.get("log")
        if sink is not None:
            sink(self.chain.id, self.node_id, str(text))
        ctx.tell_success(msg)


class RestApiConfig(NodeConfig):
    restEndpointUrlPattern: str = ""
    requestMethod: str = "POST"
    headers: dict[str, str] = {"Content-Type": "application/json"}
    body: str = ""
    withoutRequestBody: bool = False
    readTimeoutMs: int = 2000
    insecureSkipVerify: bool = False  # RuleGo defaults to true; chainreact verifies TLS unless told not to
    proxyHost: str = ""
    proxyPort: int = 0


@register
class RestApiCall(Component):
    """Calls an HTTP endpoint (RuleGo components/external/rest_api_call_node.go). URL, headers and body
    may hold `${...}` (metadata keys are top-level names); the body defaults to the message data. HTTP 200:
    Success with the response body as data and metadata `status` ("200 OK"), `statusCode`; any other
    status: Failure with the body as error and metadata `status`, `statusCode`, `errorBody`; network
    errors: Failure with metadata `errorBody`. With `Accept` or `Content-Type: text/event-stream` each
    server-sent `field: value` line goes on Success (metadata `eventType` = the field)."""

    type_name = "restApiCall"
    Config = RestApiConfig
    config: RestApiConfig

    def init(self) -> None:
        c = self.config
        if not c.restEndpointUrlPattern.strip():
            raise ValueError("restEndpointUrlPattern is empty")
        self.url_t = Template(c.restEndpointUrlPattern)
        self.header_t = {Template(k): Template(v) for k, v in c.headers.items()}
        self.body_t = Template(c.body.strip()) if c.body.strip() else None
        self.method = c.requestMethod.upper() or "POST"
        self.is_stream = any(c.headers.get(h, "").startswith("text/event-stream")
                             for h in ("Accept", "Content-Type"))
        self.has_var = (self.url_t.has_expr or (self.body_t is not None and self.body_t.has_expr)
                        or any(k.has_expr or v.has_expr for k, v in self.header_t.items()))
        self._client: Any = None

    def _http(self) -> Any:
        if self._client is None:
            import httpx

            proxy = (f"http://{self.config.proxyHost}:{self.config.proxyPort}"
                     if self.config.proxyHost and self.config.proxyPort else None)
            self._client = httpx.AsyncClient(verify=not self.config.insecureSkipVerify, proxy=proxy,
                                             timeout=max(self.config.readTimeoutMs, 1) / 1000)
        return self._client

    async def on_msg(self, ctx: NodeContext, msg: RuleMsg) -> None:
        env = ctx.env(msg) if self.has_var else {}
        url = self.url_t.render(env)
        headers = {k.render(env): v.render(env) for k, v in self.header_t.items()}
        content: bytes | None = None
        if not self.config.withoutRequestBody:
            content = (self.body_t.render(env) if self.body_t else msg.data).encode()
        try:
            request = self._http().build_request(self.method, url, headers=headers, content=content)
            resp = await self._http().send(request, stream=self.is_stream)
        except Exception as e:
            text = str(e) or type(e).__name__
            msg.metadata["errorBody"] = text
            ctx.tell_failure(msg, text)
            return
        msg.metadata["status"] = f"{resp.status_code} {resp.reason_phrase}".strip()
        msg.metadata["statusCode"] = str(resp.status_code)
        if self.is_stream:
            await self._read_stream(ctx, msg, resp)
            return
        if resp.status_code == 200:
            msg.data = resp.text
            ctx.tell_success(msg)
        else:
            msg.metadata["errorBody"] = resp.text
            ctx.tell_failure(msg, resp.text or msg.metadata["status"])

    async def _read_stream(self, ctx: NodeContext, msg: RuleMsg, resp: Any) -> None:
        try:
            if resp.status_code != 200:
                msg.metadata["errorBody"] = (await resp.aread()).decode("utf-8", "replace")
                ctx.tell_next(msg, FAILURE)
                return
            async for line in resp.aiter_lines():
                if not line or line.startswith(":") or ":" not in line:
                    continue
                field, value = line.split(":", 1)
                out = msg.copy()
                out.metadata["eventType"] = field.strip()
                out.data = value.strip()
                ctx.tell_success(out)
        except Exception as e:
            ctx.tell_failure(msg, str(e) or type(e).__name__)
        finally:
            await resp.aclose()

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return
            task = loop.create_task(client.aclose())
            _CLOSING.add(task)
            task.add_done_callback(_CLOSING.discard)
