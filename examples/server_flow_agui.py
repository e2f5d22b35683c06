"""A flow's tool calls in its OpenAI stream, for clients that ask with `X-Stream-Protocol: agui`.

The flow's agent node looks an order up over HTTP (a `standard` tool against a small API this example serves
on 127.0.0.1). Streamed on `/v1/chat/completions`, an agui client gets the call and its result as
`delta.tool_calls: [event]` chunks (TOOL_CALL_START, TOOL_CALL_RESULT: what an agent's stream sends) in
their place among the answer's text chunks; a client without the header gets only the text.

Runs offline against chainreact's scripted model: `python examples/server_flow_agui.py`.
"""

import json
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from chainreact.server import Catalog, create_app, serve_in_background
from chainreact.testing import FakeLLM


class Orders(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # /orders/{id}
        data = json.dumps({"orderId": self.path.rsplit("/", 1)[1], "status": "shipped"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def turn(call_id: str) -> list[dict[str, Any]]:
    return [{"tool_calls": [{"name": "orderLookup", "arguments": {"orderId": "42"}, "id": call_id}]},
            {"text": json.dumps({"response": "Order 42 has shipped."}), "chunk_size": 8}]


def flow(llm_url: str, api_url: str) -> dict[str, Any]:
    lookup = {"name": "orderLookup", "type": "standard", "description": "Look an order up by its id",
              "parameters": {"schema": {"type": "object", "properties": {"orderId": {"type": "string"}},
                                        "required": ["orderId"]}},
              "execution": {"endpoint": api_url + "/orders/{orderId}", "method": "GET"}}
    return {"id": "shop", "nodes": [{
        "name": "clerk", "type": "aiagent", "start": True, "llmConfig": {"url": llm_url, "apiKey": "k"},
        "userMessage": "{{userInput}}", "tools": [lookup],
        "output": {"schema": {"type": "object", "properties": {"response": {"type": "string"}}}}}]}


def stream(base: str, user: str, headers: dict[str, str]) -> list[str]:
    """The streamed chunks, one line each: `text: ...` or `tool: TYPE ...`."""
    body = {"model": "shop", "user": user, "stream": True,
            "messages": [{"role": "user", "content": "Where is order 42?"}]}
    lines = []
    with httpx.stream("POST", base + "/v1/chat/completions", json=body, headers=headers, timeout=30) as resp:
        for line in resp.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            delta = json.loads(line[6:])["choices"][0]["delta"]
            for event in delta.get("tool_calls", []):
                detail = event.get("arguments") if event["type"] == "TOOL_CALL_START" else event["content"]
                lines.append(f"tool: {event['type']} {event['toolName']} {json.dumps(detail)} "
                             f"path={event['path']}")
            if delta.get("content"):
                lines.append(f"text: {delta['content']!r}")
    return lines


def main() -> None:
    api = ThreadingHTTPServer(("127.0.0.1", 0), Orders)
    threading.Thread(target=api.serve_forever, daemon=True).start()
    api_url = f"http://127.0.0.1:{api.server_address[1]}"
    try:
        with FakeLLM([*turn("c1"), *turn("c2")]) as llm, tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "shop.json").write_text(json.dumps(flow(llm.url, api_url)))
            with serve_in_background(create_app(Catalog.load([Path(tmp)]))) as base:
                print("agui client:")
                for line in stream(base, "ann", {"X-Stream-Protocol": "agui"}):
                    print("  " + line)
                plain = stream(base, "bob", {})
                print(f"plain client: {len(plain)} chunks, tool frames: "
                      f"{sum(line.startswith('tool:') for line in plain)}")
    finally:
        api.shutdown()
        api.server_close()


if __name__ == "__main__":
    main()
