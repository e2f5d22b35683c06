"""An agent served as an A2A agent (`/a2a/{id}` of `chainreact serve`), called over A2A's JSON-RPC binding.

1. resolve its agent card (`/a2a/weather/.well-known/agent-card.json`);
2. SendMessage: the agent asks which unit (`ask_user`): the task is input-required;
3. SendStreamingMessage naming the task answers it: the run goes on, streamed as status and artifact updates;
4. GetTask shows the completed task; the same task is a run of the runs API.

The official `a2a-sdk` client works the same way (`ClientFactory.create_from_url(base + "/a2a/weather")`).
Runs offline against chainreact's scripted model: `python examples/server_a2a.py`.
"""

import json
import tempfile
from pathlib import Path
from typing import Any

import httpx

from chainreact.server import Catalog, create_app, serve_in_background
from chainreact.testing import FakeLLM


def rpc(url: str, method: str, params: dict[str, Any]) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return httpx.post(url, json=body, headers={"A2A-Version": "1.0"}, timeout=30).json()["result"]


def message(text: str, **ids: str) -> dict[str, Any]:
    return {"message": {"messageId": "m-" + text[:8], "role": "ROLE_USER", "parts": [{"text": text}], **ids}}


def main() -> None:
    ask = {"question": "Celsius or Fahrenheit?", "schema": {"enum": ["C", "F"]}}
    script = [{"tool_calls": [{"id": "q1", "name": "ask_user", "arguments": ask}]},
              {"text": "It is 21 C in Lyon.", "chunks": 3}]
    agent = {"id": "weather", "type": "ai/agent", "name": "weather",
             "configuration": {"url": "", "key": "k", "model": "m", "description": "Tells the weather.",
                               "systemPrompt": "You tell the weather.", "tools": ["ask_user"]}}
    with FakeLLM(script) as llm, tempfile.TemporaryDirectory() as tmp:
        agent["configuration"]["url"] = llm.url  # type: ignore[index]
        path = Path(tmp) / "weather.json"
        path.write_text(json.dumps(agent))
        with serve_in_background(create_app(Catalog.load([path]))) as base:
            card = httpx.get(base + "/a2a/weather/.well-known/agent-card.json", timeout=10).json()
            skills = [s["name"] for s in card["skills"]]
            print(f"card: {card['name']} - {card['description']} skills={skills}")
            url = card["supportedInterfaces"][0]["url"]
            print(f"interface: {card['supportedInterfaces'][0]['protocolBinding']} {url.removeprefix(base)}")

            task = rpc(url, "SendMessage", message("Weather in Lyon?"))["task"]
            status = task["status"]
            print(f"task {status['state']}: {status['message']['parts'][0]['text']}")

            body = {"jsonrpc": "2.0", "id": 2, "method": "SendStreamingMessage",
                    "params": message("C", taskId=task["id"], contextId=task["contextId"])}
            with httpx.stream("POST", url, json=body, timeout=30) as r:
                for line in r.iter_lines():
                    if not line.startswith("data: "):
                        continue
                    result = json.loads(line[6:])["result"]
                    kind = next(iter(result))
                    if kind == "artifactUpdate":
                        print(f"  artifactUpdate {result[kind]['artifact']['parts'][0]['text']!r}")
                    elif kind == "statusUpdate":
                        print(f"  statusUpdate {result[kind]['status']['state']}")
                    else:
                        print(f"  {kind} {result[kind]['status']['state']}")

            done = rpc(url, "GetTask", {"id": task["id"]})
            print(f"GetTask: {done['status']['state']}, answer {done['artifacts'][0]['parts'][0]['text']!r}")
            run = httpx.get(f"{base}/api/v1/runs/{task['id']}", timeout=10).json()
            print(f"the run: {run['status']}, {run['result']['content']!r}")


if __name__ == "__main__":
    main()
