"""Shared by the chat tests: the support flow with an HTTP tool, a local orders server whose answer the
test can hold back (to see a tool call on screen while it runs), and the CLI's environment."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.flows.test_engine import USER, support_flow

SRC = str(Path(__file__).resolve().parents[2] / "src")
USER_JSON = json.dumps(USER)


def cli_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHAINREACT_")}
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    return env


@dataclass
class Orders:
    url: str = ""
    release: threading.Event = field(default_factory=threading.Event)
    paths: list[str] = field(default_factory=list)


@contextmanager
def orders_server(*, hold: bool = False) -> Iterator[Orders]:
    """GET /orders/{id} -> the order as JSON; with `hold`, only once `release` is set."""
    orders = Orders()
    if not hold:
        orders.release.set()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            orders.paths.append(self.path)
            orders.release.wait(30)
            body = json.dumps({"orderId": self.path.rsplit("/", 1)[-1], "status": "late"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    orders.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    t = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    t.start()
    try:
        yield orders
    finally:
        orders.release.set()
        httpd.shutdown()
        httpd.server_close()
        t.join(5)


def chat_flow(llm_url: str, orders_url: str) -> dict[str, Any]:
    """tests/flows' support flow, its support agent given an HTTP tool on the local orders server."""
    doc = support_flow(llm_url)
    doc["nodes"][1]["tools"] = [{
        "name": "orderLookup", "type": "standard", "description": "Look up an order by its ID",
        "parameters": {"schema": {"type": "object", "properties": {"orderId": {"type": "string"}},
                                  "required": ["orderId"]}},
        "execution": {"endpoint": orders_url + "/orders/{orderId}", "method": "GET"}}]
    return doc


def answer(obj: dict[str, Any], **stream: Any) -> dict[str, Any]:
    """A scripted model turn answering with `obj` as JSON (stream options: chunks, chunk_delay)."""
    return {"text": json.dumps(obj), **stream}
