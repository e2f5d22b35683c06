"""HTTP tools against a real HTTP server on 127.0.0.1 that records what it receives."""

from __future__ import annotations

import base64
import json
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson
import pytest

from chainreact.config import ToolDescriptor
from chainreact.errors import ConfigError
from chainreact.tools.base import ToolContext, ToolOutput
from chainreact.tools.http import HttpTool, create_http_tool

ORDER = {"orderId": "A1", "status": "shipped", "items": [{"sku": "x", "qty": 2}], "total": 19.5}


@dataclass
class Received:
    method: str
    path: str  # raw path as sent, without the query
    query: list[tuple[str, str]]
    headers: dict[str, str]
    body: bytes
    header_list: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Server:
    url: str
    received: list[Received] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)


def _make_handler(server: Server) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            pass

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            raw_path, _, raw_query = self.path.partition("?")
            server.received.append(
                Received(
                    method=self.command,
                    path=raw_path,
                    query=urllib.parse.parse_qsl(raw_query, keep_blank_values=True),
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                    header_list=[(k.lower(), v) for k, v in self.headers.items()],
                )
            )
            parts = raw_path.strip("/").split("/")
            if parts[0] == "orders":
                order_id = urllib.parse.unquote(parts[1])
                self._send(
                    200, "application/json", json.dumps({**ORDER, "orderId": order_id}, indent=2).encode()
                )
            elif parts[0] == "echo":
                self._send(200, "application/json; charset=utf-8", b'{ "ok" : true,  "n": [1, 2] }')
            elif parts[0] == "status":
                code = int(parts[1])
                self._send(code, "text/plain", ("E" * 40 + "-") * 30 + "END")
            elif parts[0] == "json-error":
                self._send(422, "application/json", b'{"error": {"message": "amount must be positive"}}')
            elif parts[0] == "slow":
                server.release.wait(10)
                self._send(200, "text/plain", b"late")
            elif parts[0] == "text":
                self._send(200, "text/plain; charset=utf-8", "  plain text, é \n".encode())
            elif parts[0] == "binary":
                self._send(200, "application/octet-stream", bytes(range(256)))
            elif parts[0] == "empty":
                self._send(204, "", b"")
            elif parts[0] == "big":
                self._send(200, "text/plain", b"x" * 5000)
            elif parts[0] == "notjson":
                self._send(200, "text/plain", b"this is not json")
            else:
                self._send(404, "application/json", b'{"error": "no route"}')

        def _send(self, code: int, ctype: str, body: bytes | str) -> None:
            data = body.encode() if isinstance(body, str) else body
            self.send_response(code)
            if ctype:
                self.send_header("Content-Type", ctype)
            if code != 204:
                self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if code != 204:
                self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

    return Handler


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that timed out on purpose (timeout tests) is expected: no traceback on stderr."""


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server(url="")
    httpd = _QuietServer(("127.0.0.1", 0), _make_handler(srv))
    httpd.daemon_threads = True
    srv.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    t = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    t.start()
    try:
        yield srv
    finally:
        srv.release.set()
        httpd.shutdown()
        httpd.server_close()
        t.join(5)


def tool(server: Server, path: str, method: str = "GET", **extra: Any) -> HttpTool:
    execution = {"endpoint": server.url + path, "method": method, **extra.pop("execution", {})}
    return create_http_tool({"name": extra.pop("name", "t"), "type": "http", "execution": execution, **extra})


CTX = ToolContext()


async def test_get_fills_placeholders_and_query(server: Server) -> None:
    t = create_http_tool(
        {
            "name": "orderLookup",
            "type": "standard",
            "description": "Look up order details by order ID",
            "parameters": {"schema": {"type": "object", "properties": {"orderId": {"type": "string"}}}},
            "execution": {"endpoint": server.url + "/orders/{orderId}", "method": "GET"},
        }
    )
    try:
        out = await t.run({"orderId": "A 1/2?#", "verbose": True, "tags": ["a", "b"], "skip": None}, CTX)
    finally:
        await t.aclose()
    (r,) = server.received
    assert r.method == "GET"
    assert r.path == "/orders/A%201%2F2%3F%23"
    assert r.query == [("verbose", "true"), ("tags", "a"), ("tags", "b")]
    assert r.body == b""
    # JSON comes back compact (no spaces), with the same content
    assert out == orjson.dumps({**ORDER, "orderId": "A 1/2?#"}).decode()
    assert t.parameters == {"type": "object", "properties": {"orderId": {"type": "string"}}}
    assert t.description == "Look up order details by order ID"


async def test_post_sends_json_body(server: Server) -> None:
    t = tool(server, "/echo/{orderId}", "POST", name="createRefund")
    args = {"orderId": "A1", "amount": 12.5, "reason": "broken", "meta": {"k": [1, 2]}}
    try:
        out = await t.run(args, CTX)
    finally:
        await t.aclose()
    (r,) = server.received
    assert (r.method, r.path, r.query) == ("POST", "/echo/A1", [])
    assert r.headers["content-type"] == "application/json"
    assert json.loads(r.body) == {"amount": 12.5, "reason": "broken", "meta": {"k": [1, 2]}}
    assert out == '{"ok":true,"n":[1,2]}'


@pytest.mark.parametrize("method", ["PUT", "PATCH", "DELETE"])
async def test_other_methods(server: Server, method: str) -> None:
    t = tool(server, "/echo", method)
    try:
        await t.run({"a": 1}, CTX)
    finally:
        await t.aclose()
    (r,) = server.received
    assert r.method == method
    if method == "DELETE":
        assert r.query == [("a", "1")] and r.body == b""
    else:
        assert json.loads(r.body) == {"a": 1} and r.query == []


async def test_endpoint_query_is_kept(server: Server) -> None:
    t = tool(server, "/echo?api=1")
    try:
        await t.run({"q": "x y"}, CTX)
    finally:
        await t.aclose()
    assert server.received[0].query == [("api", "1"), ("q", "x y")]


@pytest.mark.parametrize(
    ("auth", "expected"),
    [
        ({"type": "bearer", "bearerToken": "sk-123"}, {"authorization": "Bearer sk-123"}),
        (
            {"type": "header", "headers": {"Authorization": "ApiKey k-9", "X-Tenant": "t1"}},
            {"authorization": "ApiKey k-9", "x-tenant": "t1"},
        ),
        (
            {"type": "basic", "username": "ann", "password": "p:w"},
            {"authorization": "Basic " + base64.b64encode(b"ann:p:w").decode()},
        ),
    ],
)
async def test_headers_and_auth(server: Server, auth: dict[str, Any], expected: dict[str, str]) -> None:
    headers = {"X-Trace": "abc", "X-Num": 5, "authorization": "replaced", "x-tenant": "replaced"}
    t = tool(server, "/echo", execution={"headers": headers, "auth": auth})
    try:
        await t.run({}, CTX)
    finally:
        await t.aclose()
    h = server.received[0].headers
    assert h["x-trace"] == "abc" and h["x-num"] == "5"
    for k, v in expected.items():
        assert [x for x in server.received[0].header_list if x[0] == k] == [(k, v)]


async def test_non_2xx_is_error_with_excerpt(server: Server) -> None:
    t = tool(server, "/status/503")
    try:
        out = await t.run({}, CTX)
    finally:
        await t.aclose()
    assert isinstance(out, ToolOutput) and out.is_error
    assert out.content.startswith(f"Error: GET {server.url}/status/503 returned HTTP 503")
    body = ("E" * 40 + "-") * 30 + "END"
    assert body[:500] in out.content
    assert "END" not in out.content  # cut...
    assert f"[truncated: {len(body)} characters in total]" in out.content  # ...and marked


async def test_non_2xx_json_body(server: Server) -> None:
    t = tool(server, "/json-error", "POST")
    try:
        out = await t.run({"amount": -1}, CTX)
    finally:
        await t.aclose()
    assert isinstance(out, ToolOutput) and out.is_error
    assert "HTTP 422" in out.content and "amount must be positive" in out.content
    assert "truncated" not in out.content


async def test_timeout(server: Server) -> None:
    t = tool(server, "/slow", timeout=300)  # descriptor.timeout is in milliseconds
    assert t.request_timeout == 0.3
    try:
        out = await t.run({}, CTX)
    finally:
        server.release.set()
        await t.aclose()
    assert isinstance(out, ToolOutput) and out.is_error
    assert "timed out after 0.3 s" in out.content


def test_execution_timeout_is_seconds(server: Server) -> None:
    assert tool(server, "/x", execution={"timeout": 7}).request_timeout == 7.0
    assert tool(server, "/x").request_timeout == 30.0


async def test_connection_refused_is_error() -> None:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    t = create_http_tool({"name": "t", "execution": {"endpoint": f"http://127.0.0.1:{port}/x"}})
    try:
        out = await t.run({}, CTX)
    finally:
        await t.aclose()
    assert isinstance(out, ToolOutput) and out.is_error and "ConnectError" in out.content


ORDER_SCHEMA = {
    "type": "object",
    "properties": {
        "orderId": {"type": "string"},
        "status": {"enum": ["pending", "shipped"]},
        "items": {"type": "array", "items": {"type": "object", "required": ["sku", "qty"]}},
        "total": {"type": "number"},
    },
    "required": ["orderId", "status"],
}


async def test_output_schema_ok(server: Server) -> None:
    t = tool(server, "/orders/{orderId}", output={"schema": ORDER_SCHEMA})
    try:
        out = await t.run({"orderId": "B7"}, CTX)
    finally:
        await t.aclose()
    assert out == orjson.dumps({**ORDER, "orderId": "B7"}).decode()


async def test_output_schema_mismatch(server: Server) -> None:
    bad_schema = {**ORDER_SCHEMA, "properties": {**ORDER_SCHEMA["properties"], "total": {"type": "string"}}}
    t = tool(server, "/orders/{orderId}", output=bad_schema)  # a bare schema is accepted too
    try:
        out = await t.run({"orderId": "B7"}, CTX)
    finally:
        await t.aclose()
    assert isinstance(out, ToolOutput) and out.is_error
    assert "$.total: expected string, got number" in out.content
    assert "does not match the tool's output schema" in out.content


async def test_output_schema_needs_json(server: Server) -> None:
    t = tool(server, "/notjson", output={"schema": {"type": "object"}})
    try:
        out = await t.run({}, CTX)
    finally:
        await t.aclose()
    assert isinstance(out, ToolOutput) and out.is_error and "did not return JSON" in out.content


async def test_missing_placeholder_is_error_and_sends_nothing(server: Server) -> None:
    t = tool(server, "/orders/{orderId}")
    try:
        out = await t.run({"other": 1}, CTX)
        out2 = await t.run({"orderId": None}, CTX)
    finally:
        await t.aclose()
    for o in (out, out2):
        assert isinstance(o, ToolOutput) and o.is_error and "'orderId'" in o.content
    assert server.received == []


async def test_text_binary_empty_and_big(server: Server) -> None:
    t_text = tool(server, "/text")
    t_bin = tool(server, "/binary")
    t_empty = tool(server, "/empty")
    t_big = tool(server, "/big", execution={"maxResponseBytes": 1000})
    try:
        assert await t_text.run({}, CTX) == "  plain text, é \n"  # text as is
        assert await t_bin.run({}, CTX) == "[binary response: application/octet-stream, 256 bytes]"
        assert await t_empty.run({}, CTX) == "(empty response, HTTP 204)"
        big = await t_big.run({}, CTX)
    finally:
        for t in (t_text, t_bin, t_empty, t_big):
            await t.aclose()
    assert isinstance(big, str)
    assert big == "x" * 1000 + "\n[response truncated at 1000 bytes]"


async def test_client_is_shared_and_closed(server: Server) -> None:
    t = tool(server, "/echo")
    await t.run({}, CTX)
    client = t._client
    await t.run({}, CTX)
    assert t._client is client and client is not None
    await t.aclose()
    assert client.is_closed and t._client is None
    assert len(server.received) == 2


def test_default_parameters_from_placeholders(server: Server) -> None:
    t = tool(server, "/orders/{orderId}/lines/{line}")
    assert t.parameters == {
        "type": "object",
        "properties": {"orderId": {"type": "string"}, "line": {"type": "string"}},
        "required": ["orderId", "line"],
    }
    assert t.spec()["function"]["name"] == "t"
    assert t.description == f"GET {server.url}/orders/{{orderId}}/lines/{{line}}"


def test_undeclared_placeholders_join_the_schema(server: Server) -> None:
    t = tool(
        server,
        "/orders/{orderId}",
        parameters={"type": "object", "properties": {"q": {"type": "string"}}, "additionalProperties": False},
    )
    assert t.parameters["properties"] == {"q": {"type": "string"}, "orderId": {"type": "string"}}
    assert t.parameters["required"] == ["orderId"]
    assert t.parameters["additionalProperties"] is False


def test_accepts_tool_descriptor(server: Server) -> None:
    desc = ToolDescriptor(
        type="http",
        name="lookup",
        parameters={"type": "object", "properties": {"id": {"type": "integer"}}},
        execution={"endpoint": server.url + "/orders/{id}"},
        timeout=1500,
    )
    t = create_http_tool(desc)
    assert t.parameters["properties"]["id"] == {"type": "integer"}
    assert t.request_timeout == 1.5


@pytest.mark.parametrize(
    ("desc", "match"),
    [
        ({"name": "t", "execution": {}}, "execution.endpoint"),
        ({"name": "t"}, "execution.endpoint"),
        ({"name": "t", "execution": {"endpoint": "ftp://127.0.0.1/x"}}, "http"),
        ({"name": "t", "execution": {"endpoint": "http://127.0.0.1/x", "method": "TRACE"}}, "method"),
        (
            {"name": "t", "execution": {"endpoint": "http://127.0.0.1/x", "auth": {"type": "oauth"}}},
            "auth.type",
        ),
        (
            {"name": "t", "execution": {"endpoint": "http://127.0.0.1/x", "auth": {"type": "bearer"}}},
            "bearerToken",
        ),
        ({"name": "bad name!", "execution": {"endpoint": "http://127.0.0.1/x"}}, "name"),
        (
            {"name": "t", "execution": {"endpoint": "http://127.0.0.1/x"}, "parameters": "{not json"},
            "parameters",
        ),
        (
            {"name": "t", "execution": {"endpoint": "http://127.0.0.1/x"}, "output": {"pattern": "("}},
            "schema",
        ),
    ],
)
def test_bad_descriptors(desc: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        create_http_tool(desc)


# --- typed execution/auth (issue 9 item 16) -------------------------------------------------------------

def test_execution_errors_have_json_paths_all_at_once() -> None:
    desc = {"name": "t", "execution": {"endpoint": "ftp://x/y", "method": "TRACE", "timeout": -1,
                                       "headers": {"X": [1]}, "auth": {"type": "basic"}}}
    with pytest.raises(ConfigError) as ei:
        create_http_tool(desc, where="$.tools[4]")
    paths = dict(ei.value.errors)
    assert set(paths) == {"$.tools[4].execution.endpoint", "$.tools[4].execution.method",
                          "$.tools[4].execution.timeout", "$.tools[4].execution.headers.X",
                          "$.tools[4].execution.auth"}
    assert "http:// or https://" in paths["$.tools[4].execution.endpoint"]
    assert "username is required when type is 'basic'" in paths["$.tools[4].execution.auth"]
    assert "5 errors" in str(ei.value)


def test_unknown_execution_keys_are_warned_not_fatal() -> None:
    from chainreact.config.loader import UnknownFieldWarning

    desc = {"name": "t", "execution": {"endpoint": "http://127.0.0.1/x", "retries": 3,
                                       "auth": {"type": "bearer", "bearerToken": "k", "scope": "all"}}}
    with pytest.warns(UnknownFieldWarning, match=r"tools\[t\]\.execution\.retries, "
                                                 r"tools\[t\]\.execution\.auth\.scope"):
        t = create_http_tool(desc)
    assert t.headers == {"Authorization": "Bearer k"}


def test_execution_json_schema() -> None:
    from chainreact.tools.descriptors import descriptor_json_schema

    schema = descriptor_json_schema()
    http = next(r for r in schema["allOf"] if "http" in r["if"]["properties"]["type"]["enum"])
    assert http["then"]["properties"]["execution"] == {"$ref": "#/$defs/HttpExecution"}
    ex = schema["$defs"]["HttpExecution"]
    assert ex["required"] == ["endpoint"]
    assert ex["properties"]["method"]["enum"][:2] == ["GET", "POST"]
    assert schema["$defs"]["HttpAuth"]["properties"]["type"]["enum"] == ["bearer", "header", "basic"]
