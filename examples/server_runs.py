"""The server's runs API and sessions, with a real HTTP client against a real server on 127.0.0.1.

1. A detached run; its events read over SSE, the connection dropped, and picked up again with
   Last-Event-ID: every event once, none missing.
2. A run that asks the user (the builtin ask_user tool) stops `interrupted`; answered with /resume.
3. Chat completions with `user` as the session key: the second request only says "What is my name?",
   the server adds the history.
4. The same with a rule chain as the model: its agent node keeps its own conversation in the session.
5. A chat completion whose agent stops to ask: HTTP 409 naming the run and its resume route.

Same as `chainreact serve helper.json concierge.json --state sqlite:///state.db` (here in-process, on a
free port, against the scripted model of chainreact.testing). Needs the `server` extra.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from chainreact.server import Catalog, create_app, serve_in_background
from chainreact.testing import FakeLLM


def sse(lines: Iterator[str]) -> list[tuple[int | None, str, dict[str, Any]]]:
    """(id, event, data) of each SSE frame, from raw lines."""
    out: list[tuple[int | None, str, dict[str, Any]]] = []
    ident, event, data = None, "", ""
    for line in lines:
        if not line:
            out.append((ident, event, json.loads(data)))
            ident, event, data = None, "", ""
        elif line.startswith("id: "):
            ident = int(line[4:])
        elif line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: "):
            data = line[6:]
    return out


def main() -> None:
    script = [
        {"text": "Lyon is a city in France, at the confluence of two rivers.", "chunk_delay": 0.02},
        {"tool_calls": [{"id": "q1", "name": "ask_user", "arguments": {
            "question": "Celsius or Fahrenheit?", "schema": {"enum": ["C", "F"]}}}]},
        {"text": "It is 70 F in Lyon."},
        {"text": "Nice to meet you, Ann."},
        {"text": "Your name is Ann."},
        {"text": "Welcome, Ann."},
        {"text": "You are Ann."},
        {"tool_calls": [{"id": "q2", "name": "ask_user", "arguments": {"question": "C or F?"}}]},
        {"text": "It is 21 C in Oslo."},
    ]
    with FakeLLM(script) as llm, tempfile.TemporaryDirectory() as tmp:
        doc = {"id": "helper", "type": "ai/agent", "name": "helper", "configuration": {
            "url": llm.url, "key": "k", "model": "fake-model", "systemPrompt": "You help.",
            "tools": ["ask_user"]}}
        Path(tmp, "helper.json").write_text(json.dumps(doc))
        chain = {"ruleChain": {"id": "concierge", "name": "Concierge"}, "metadata": {"nodes": [
            {"id": "desk", "type": "ai/agent", "configuration": {
                "url": llm.url, "key": "k", "model": "fake-model", "systemPrompt": "You are a concierge."}}],
            "connections": []}}
        Path(tmp, "concierge.json").write_text(json.dumps(chain))
        catalog = Catalog.load([Path(tmp, "helper.json"), Path(tmp, "concierge.json")])
        app = create_app(catalog, state=f"sqlite:///{tmp}/state.db")
        with serve_in_background(app) as base:
            # 1. detached run, SSE, reconnect with Last-Event-ID
            run = httpx.post(f"{base}/api/v1/agents/helper/runs", json={"input": "Tell me about Lyon",
                                                                        "detached": True}).json()
            print("started:", run["status"], "->", run["events"].replace(run["id"], "{id}"))
            first: list[int] = []
            with httpx.stream("GET", f"{base}{run['events']}") as resp:
                for line in resp.iter_lines():
                    if line.startswith("id: "):
                        first.append(int(line[4:]))
                    if len(first) == 4:
                        break  # drop the connection mid-run
            with httpx.stream("GET", f"{base}{run['events']}",
                              headers={"Last-Event-ID": str(first[-1])}) as resp:
                rest = sse(resp.iter_lines())
            ids = first + [i for i, _, _ in rest if i is not None]
            print("event ids after reconnect:", "1.." + str(ids[-1]),
                  "no gaps, no duplicates" if ids == list(range(1, ids[-1] + 1)) else f"WRONG {ids}")
            print("end:", rest[-1][1], rest[-1][2]["status"])

            # 2. interrupted, then resumed with the answer
            asked = httpx.post(f"{base}/api/v1/agents/helper/runs", json={"input": "Weather in Lyon?"}).json()
            q = asked["questions"][0]
            print(f"interrupted: [{q['kind']}] {q['question']}")
            done = httpx.post(f"{base}/api/v1/runs/{asked['id']}/resume",
                              json={"answers": {q["id"]: "F"}}).json()
            print("resumed:", done["status"], "-", done["result"]["content"])

            # 3. sessions: `user` names the conversation
            for text in ("I am Ann.", "What is my name?"):
                answer = httpx.post(f"{base}/v1/chat/completions", json={
                    "model": "helper", "user": "ann", "messages": [{"role": "user", "content": text}]}).json()
                print(f"chat: {text} -> {answer['choices'][0]['message']['content']}")
            sent = [m["content"] for m in llm.chat_requests[-1].messages]
            print("the model saw:", sent)

            # 4. a rule chain in a session: its agent node keeps its own conversation
            for text in ("I am Ann.", "Who am I?"):
                answer = httpx.post(f"{base}/v1/chat/completions", json={"model": "concierge", "user": "ann",
                                    "messages": [{"role": "user", "content": text}]}).json()
                print(f"chain chat: {text} -> {answer['choices'][0]['message']['content']}")
            print("the chain's node saw:", [m["content"] for m in llm.chat_requests[-1].messages])

            # 5. a chat completion whose agent asks: 409, and the run to resume
            r = httpx.post(f"{base}/v1/chat/completions", json={
                "model": "helper", "messages": [{"role": "user", "content": "Weather in Oslo?"}]})
            err = r.json()["error"]
            print(f"chat: HTTP {r.status_code} {err['code']}, answer with POST "
                  f"{err['resume'].replace(err['run_id'], '{id}')}")
            done = httpx.post(base + err["resume"], json={"answers": {err["questions"][0]["id"]: "C"}}).json()
            print("resumed:", done["status"], "-", done["result"]["content"])


if __name__ == "__main__":
    main()
