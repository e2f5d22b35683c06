"""The shoe shop's HTTP API that the `team` flow's tools call (team.json: `orderLookup` GETs
/orders/{orderId}, `createRefund` POSTs /refunds), with one made-up order for every id.

Run it beside `chainreact serve examples/` so that `team`'s tools answer (served alone, they get a
connection error, which the model is told):

    python examples/flows/shop_api.py          # http://127.0.0.1:8080, where team.json points
    python examples/flows/shop_api.py --port 0 # any free port (then point team.json's endpoints there)

team_chat.py starts it on a free port itself.
"""

from __future__ import annotations

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ShopAPI(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _reply(self, obj: Any, status: int = 200) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if not self.path.startswith("/orders/"):
            return self._reply({"error": "not found"}, 404)
        self._reply({"orderId": self.path.rsplit("/", 1)[1], "status": "delivered late", "total": 89.0})

    def do_POST(self) -> None:
        if self.path != "/refunds":
            return self._reply({"error": "not found"}, 404)
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        self._reply({"refundId": "R-1", **body})


def start(port: int = 0) -> ThreadingHTTPServer:
    """The API on 127.0.0.1:`port` (0: a free one) in a daemon thread; `.shutdown()` stops it."""
    api = ThreadingHTTPServer(("127.0.0.1", port), ShopAPI)
    threading.Thread(target=api.serve_forever, daemon=True).start()
    return api


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8080)
    port = parser.parse_args().port
    server = ThreadingHTTPServer(("127.0.0.1", port), ShopAPI)
    print(f"shop API on http://127.0.0.1:{server.server_address[1]} (Ctrl-C stops it)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
