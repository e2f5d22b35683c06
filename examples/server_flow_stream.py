"""A flow's answers streamed over HTTP as the model writes them: the openai SDK on `/v1/chat/completions`
(`stream=True`) and the flow route's SSE with `"deltas": true` (`text_delta` events).

Starts the server in-process on a free loopback port (the same app `chainreact serve` runs), against
chainreact's scripted model, which streams each answer (a JSON object, the node's output schema) in small
pieces. The client sees only the answer's `response` text, piece by piece, never the JSON around it.
"""

import json
import tempfile
from pathlib import Path

import httpx
import openai

from chainreact.server import Catalog, create_app, serve_in_background
from chainreact.testing import FakeLLM


def answer(text: str) -> dict[str, object]:
    return {"text": json.dumps({"response": text, "topic": "delivery"}), "chunk_size": 6}


SCRIPT = [answer("Your parcel left the depot this morning and arrives before noon."),
          answer("You can change the address until it is out for delivery.")]


def main() -> None:
    with FakeLLM(SCRIPT) as llm, tempfile.TemporaryDirectory() as tmp:
        flow = {"id": "support", "nodes": [{
            "name": "support", "type": "aiagent", "start": True, "llmConfig": {"url": llm.url, "apiKey": "k"},
            "userMessage": "{{userInput}}",
            "output": {"schema": {"type": "object", "properties": {"response": {"type": "string"},
                                                                   "topic": {"type": "string"}}}}}]}
        (Path(tmp) / "support.json").write_text(json.dumps(flow))
        with serve_in_background(create_app(Catalog.load([Path(tmp)]))) as base:
            client = openai.OpenAI(base_url=base + "/v1", api_key="none")
            stream = client.chat.completions.create(model="support", user="s1", stream=True,
                                                    messages=[{"role": "user", "content": "Where is it?"}])
            pieces = [c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content]
            print(f"openai: {len(pieces)} chunks, first {pieces[0]!r}")
            print("openai text:", "".join(pieces))

            deltas: list[str] = []
            with httpx.stream("POST", base + "/api/v1/flows/support/sessions/s1/messages",
                              json={"text": "Can I change the address?", "deltas": True}, timeout=30) as resp:
                for line in resp.iter_lines():
                    if line.startswith("data: "):
                        event = json.loads(line[6:])
                        if event["event"] == "text_delta":
                            deltas.append(event["text"])
                        elif event["event"] == "message":
                            print(f"sse: {len(deltas)} text_delta events, then the message:",
                                  event["content"])
                            print("deltas joined == message:", "".join(deltas) == event["content"])


if __name__ == "__main__":
    main()
