"""A small shop API for the flows' `standard` (HTTP) tools: a real HTTP server on 127.0.0.1 (free port),
started and stopped by the test, that demands a bearer token and records what it receives.

    GET  /orders/{id}   -> {"orderId": id, "status": "shipped", "total": 19.5}
    POST /refunds       -> {"refundId": "R-<n>", **the JSON body}
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOKEN = "shop-token-81c2"


@dataclass
class Hit:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class ShopAPI:
    url: str
    hits: list[Hit] = field(default_factory=list)


@contextmanager
def shop_api(token: str = TOKEN) -> Iterator[ShopAPI]:
    api = ShopAPI("")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, code: int, obj: Any) -> None:
            data = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
            path = self.path.split("?", 1)[0]
            api.hits.append(Hit(self.command, path, {k.lower(): v for k, v in self.headers.items()}, body))
            if self.headers.get("Authorization") != f"Bearer {token}":
                self._send(401, {"error": "unauthorized"})
            elif self.command == "GET" and path.startswith("/orders/"):
                self._send(200, {"orderId": path.rsplit("/", 1)[1], "status": "shipped", "total": 19.5})
            elif self.command == "POST" and path == "/refunds":
                self._send(200, {"refundId": f"R-{len(api.hits)}", **(body or {})})
            else:
                self._send(404, {"error": f"no route {self.command} {path}"})

        do_GET = do_POST = _handle

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    api.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def order_tool(api: ShopAPI, token: str = TOKEN) -> dict[str, Any]:
    """The spec example's orderLookup, pointed at the local API."""
    return {"name": "orderLookup", "type": "standard", "description": "Look up order details by order ID",
            "parameters": {"schema": {"type": "object", "properties": {"orderId": {"type": "string"}},
                                      "required": ["orderId"]}},
            "execution": {"endpoint": f"{api.url}/orders/{{orderId}}", "method": "GET",
                          "auth": {"type": "bearer", "bearerToken": token}}}


def refund_tool(api: ShopAPI, token: str = TOKEN) -> dict[str, Any]:
    return {"name": "createRefund", "type": "standard", "description": "Create a refund for an order",
            "parameters": {"schema": {"type": "object",
                                      "properties": {"orderId": {"type": "string"},
                                                     "amount": {"type": "number"},
                                                     "reason": {"type": "string"}},
                                      "required": ["orderId", "amount", "reason"]}},
            "execution": {"endpoint": f"{api.url}/refunds", "method": "POST",
                          "auth": {"type": "bearer", "bearerToken": token}}}


__all__ = ["TOKEN", "Hit", "ShopAPI", "order_tool", "refund_tool", "shop_api"]
