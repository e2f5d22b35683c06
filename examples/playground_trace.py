"""The playground's API without a browser: serve a chain, then ask the playground what is loaded and trace
a message through the chain node by node (what the page's chain view draws).

Run: python examples/playground_trace.py     (needs the `server` and `chains` extras)
With a browser: chainreact serve examples/chains/  and open http://127.0.0.1:9090/
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import httpx
import orjson

from chainreact.server import Catalog, create_app, serve_in_background

KEEP = " return {msg: msg, metadata: metadata, msgType: msgType};"
ROUTER = {
    "ruleChain": {"id": "router", "name": "Router"},
    "metadata": {"nodes": [
        {"id": "check", "type": "jsFilter", "configuration": {"jsScript": "return msg.n > 10;"}},
        {"id": "big", "type": "jsTransform", "configuration": {"jsScript": "msg.size = 'big';" + KEEP}},
        {"id": "small", "type": "jsTransform", "configuration": {"jsScript": "msg.size = 'small';" + KEEP}},
    ], "connections": [
        {"fromId": "check", "toId": "big", "type": "True"},
        {"fromId": "check", "toId": "small", "type": "False"},
    ]},
}


def main() -> None:
    folder = Path(tempfile.mkdtemp())
    (folder / "router.json").write_bytes(orjson.dumps(ROUTER))
    with serve_in_background(create_app(Catalog.load([folder]))) as base:
        page = httpx.get(base + "/")
        print("page:", page.status_code, "<title>chainreact playground</title>" in page.text)
        items = httpx.get(base + "/playground/api/catalog").json()["items"]
        print("loaded:", [(i["kind"], i["id"]) for i in items])
        for n in (42, 3):
            trace = httpx.post(base + "/playground/api/chains/router/trace",
                               json={"msgType": "TEST", "data": {"n": n}}).json()
            steps = [f"{e['nodeId']} -> {e['relation']}" for e in trace["events"] if e["flow"] == "OUT"]
            print(f"n={n}: path", ", ".join(steps), "| ends with", trace["ends"][0]["msg"]["data"])


if __name__ == "__main__":
    main()
