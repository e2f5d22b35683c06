"""restApiCall (RuleGo components/external/rest_api_call_node.go): an HTTP call from a chain, bounded.

Three limits keep a slow or hostile server from holding a chain or the process's memory, each a Failure
with a clear error (and metadata `errorBody`):
- time: `readTimeoutMs` is the deadline of the whole exchange, body included (RuleGo's Go client
  timeout), so a body trickled a byte a second fails at the deadline; for an event stream it is the
  longest wait for the headers or between two reads. `maxDurationMs` bounds any call, an endless event
  stream included.
- size: `maxResponseBytes` bounds the body after decompression (a whole event stream counts): gzip and
  deflate are inflated here with zlib's max_length (llm/decode.py), so a small gzip bomb stops at the
  cap instead of inflating in memory; nothing is kept of a body past the cap.
"""

from __future__ import annotations

import asyncio
import codecs
from typing import TYPE_CHECKING, Any

from ..exprs import Template
from ..msg import FAILURE, RuleMsg
from .base import Component, NodeConfig, close_soon, register

if TYPE_CHECKING:
    from ...llm.decode import BoundedDecoder
    from ..context import NodeContext

MAX_RESPONSE_BYTES = 16 * 1024 * 1024
MAX_DURATION_MS = 300_000


class RestCallError(Exception):
    """A limit of the call was reached; the message names it."""


class RestApiConfig(NodeConfig):
    restEndpointUrlPattern: str = ""
    requestMethod: str = "POST"
    headers: dict[str, str] = {"Content-Type": "application/json"}
    body: str = ""
    withoutRequestBody: bool = False
    readTimeoutMs: int = 2000
    maxDurationMs: int = MAX_DURATION_MS  # chainreact: any call, an event stream included; 0: none
    maxResponseBytes: int = MAX_RESPONSE_BYTES  # chainreact: the decoded body (or stream); 0: none
    insecureSkipVerify: bool = False  # RuleGo defaults to true; chainreact verifies TLS unless told not to
    proxyHost: str = ""
    proxyPort: int = 0


@register
class RestApiCall(Component):
    """Calls an HTTP endpoint. URL, headers and body may hold `${...}` (metadata keys are top-level
    names); the body defaults to the message data. HTTP 200: Success with the response body as data and
    metadata `status` ("200 OK"), `statusCode`; any other status: Failure with the body as error and
    metadata `status`, `statusCode`, `errorBody`; network errors and limits: Failure with metadata
    `errorBody`. With `Accept` or `Content-Type: text/event-stream` each server-sent `field: value` line
    goes on Success (metadata `eventType` = the field)."""

    type_name = "restApiCall"
    Config = RestApiConfig
    config: RestApiConfig

    def init(self) -> None:
        c = self.config
        if not c.restEndpointUrlPattern.strip():
            raise ValueError("restEndpointUrlPattern is empty")
        for key in ("readTimeoutMs", "maxDurationMs", "maxResponseBytes"):
            if getattr(c, key) < 0:
                raise ValueError(f"{key} must be 0 (no limit) or positive")
        self.url_t = Template(c.restEndpointUrlPattern)
        self.header_t = {Template(k): Template(v) for k, v in c.headers.items()}
        self.body_t = Template(c.body.strip()) if c.body.strip() else None
        self.method = c.requestMethod.upper() or "POST"
        self.is_stream = any(c.headers.get(h, "").startswith("text/event-stream")
                             for h in ("Accept", "Content-Type"))
        self.has_var = (self.url_t.has_expr or (self.body_t is not None and self.body_t.has_expr)
                        or any(k.has_expr or v.has_expr for k, v in self.header_t.items()))
        # Only encodings inflated under the cap here, unless the document asks for another.
        self.accept_encoding = not any(k.lower() == "accept-encoding" for k in c.headers)
        read, duration = c.readTimeoutMs / 1000, c.maxDurationMs / 1000  # 0: no limit
        limits = [x for x in (read, duration) if x]
        self.deadline = (duration or None) if self.is_stream else min(limits, default=None)
        self._read_timeout = read or None
        self._client: Any = None

    def _http(self) -> Any:
        if self._client is None:
            import httpx

            c = self.config
            proxy = f"http://{c.proxyHost}:{c.proxyPort}" if c.proxyHost and c.proxyPort else None
            self._client = httpx.AsyncClient(verify=not c.insecureSkipVerify, proxy=proxy)
        return self._client

    async def on_msg(self, ctx: NodeContext, msg: RuleMsg) -> None:
        env = ctx.env(msg) if self.has_var else {}
        url = self.url_t.render(env)
        headers = {k.render(env): v.render(env) for k, v in self.header_t.items()}
        if self.accept_encoding:
            headers["Accept-Encoding"] = "gzip, deflate"  # what _decoder inflates under the cap
        content: bytes | None = None
        if not self.config.withoutRequestBody:
            content = (self.body_t.render(env) if self.body_t else msg.data).encode()
        resp: Any = None
        try:
            async with asyncio.timeout(self.deadline):
                # A plain response: the deadline above is the only clock (a read timeout of the same length
                # would race it); a stream: readTimeoutMs bounds each silence.
                request = self._http().build_request(self.method, url, headers=headers, content=content,
                                                     timeout=self._read_timeout if self.is_stream else None)
                resp = await self._http().send(request, stream=True)
                msg.metadata["status"] = f"{resp.status_code} {resp.reason_phrase}".strip()
                msg.metadata["statusCode"] = str(resp.status_code)
                if self.is_stream and resp.status_code == 200:
                    await self._read_stream(ctx, msg, resp, url)
                    return
                text = await self._read_body(resp, url)
        except TimeoutError:
            self._fail(ctx, msg, self._too_slow(url))
            return
        except Exception as e:
            import httpx

            if isinstance(e, httpx.TimeoutException):
                text = (f"restApiCall: {url} sent nothing for {self.config.readTimeoutMs} ms (readTimeoutMs, "
                        f"{type(e).__name__})")
            else:
                text = str(e) or type(e).__name__
            self._fail(ctx, msg, text)
            return
        finally:
            if resp is not None:
                await resp.aclose()
        if resp.status_code == 200:
            msg.data = text
            ctx.tell_success(msg)
        elif self.is_stream:
            msg.metadata["errorBody"] = text
            ctx.tell_next(msg, FAILURE)
        else:
            msg.metadata["errorBody"] = text
            ctx.tell_failure(msg, text or msg.metadata["status"])

    def _fail(self, ctx: NodeContext, msg: RuleMsg, text: str) -> None:
        msg.metadata["errorBody"] = text
        ctx.tell_failure(msg, text)

    def _decoder(self, resp: Any, url: str) -> tuple[BoundedDecoder, Any]:
        """A decoder that counts (and inflates) under maxResponseBytes, and the chunks to feed it."""
        from ...llm.decode import BoundedDecoder  # lazy: loading a chain does not import the model client

        enc = resp.headers.get("content-encoding")
        raw = BoundedDecoder.supports(enc)
        limit = self.config.maxResponseBytes or (1 << 62)

        def too_big() -> Exception:
            after = f" after decompression (Content-Encoding: {enc})" if enc else ""
            return RestCallError(f"restApiCall: the response of {url} exceeds {limit} bytes{after} "
                                 "(maxResponseBytes); nothing of it is kept")

        def bad() -> Exception:
            return RestCallError(f"restApiCall: the response of {url} is not valid {enc} data")

        dec = BoundedDecoder(enc if raw else None, limit, url, too_big=too_big, bad=bad)
        return dec, resp.aiter_raw() if raw else resp.aiter_bytes()

    async def _read_body(self, resp: Any, url: str) -> str:
        dec, chunks = self._decoder(resp, url)
        parts = [dec.feed(chunk) async for chunk in chunks]
        return b"".join(parts).decode(resp.encoding or "utf-8", "replace")

    async def _read_stream(self, ctx: NodeContext, msg: RuleMsg, resp: Any, url: str) -> None:
        dec, chunks = self._decoder(resp, url)
        text = codecs.getincrementaldecoder("utf-8")("replace")
        pending: list[str] = []  # the start of a line not ended yet (joined only once it ends)
        async for chunk in chunks:
            piece = text.decode(dec.feed(chunk))
            if "\n" not in piece and "\r" not in piece:
                pending.append(piece)
                continue
            pending.append(piece)
            *lines, rest = "".join(pending).replace("\r\n", "\n").replace("\r", "\n").split("\n")
            pending = [rest]
            for line in lines:
                if not line or line.startswith(":") or ":" not in line:
                    continue
                field, value = line.split(":", 1)
                out = msg.copy()
                out.metadata["eventType"] = field.strip()
                out.data = value.strip()
                ctx.tell_success(out)

    def _too_slow(self, url: str) -> str:
        ms = round((self.deadline or 0) * 1000)
        if self.is_stream:
            return (f"restApiCall: the event stream of {url} was still open after {ms} ms (maxDurationMs); "
                    "it was closed")
        key = "readTimeoutMs" if ms == self.config.readTimeoutMs else "maxDurationMs"
        return (f"restApiCall: no complete response from {url} within {ms} ms ({key}: the whole exchange, "
                "body included)")

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            close_soon(client.aclose)
