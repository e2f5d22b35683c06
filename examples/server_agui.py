"""An agent driven by an AG-UI front end: `POST /agui/{id}` of `chainreact serve`.

Three runs of one thread, as a page (CopilotKit, or any AG-UI client) makes them:
1. the user asks; the agent calls its own `add` tool, then the page's own `confirm` tool (a front-end tool
   sent in the input's `tools`): the run ends with RUN_FINISHED outcome success and the pending call;
2. the page answers `confirm` with a tool message; the same agent run goes on and asks the user a question
   (`ask_user`): RUN_FINISHED outcome interrupt;
3. the page answers the interrupt with a `resume` entry; the run goes on and answers.

Runs offline against chainreact's scripted model: `python examples/server_agui.py`.
"""

import json
import tempfile
from pathlib import Path
from typing import Any

import httpx

from chainreact.server import Catalog, create_app, serve_in_background
from chainreact.testing import FakeLLM

CONFIRM = {"name": "confirm", "description": "Ask the person at the page to confirm something",
           "parameters": {"type": "object", "properties": {"what": {"type": "string"}}}}


def run(base: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """One AG-UI run: its events, printed one line each (content deltas joined)."""
    with httpx.stream("POST", base + "/agui/calc", json=body, timeout=30) as r:
        events = [json.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: ")]
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    for e in events:
        if e["type"] == "TOOL_CALL_START":
            print(f"  TOOL_CALL_START {e['toolCallName']}")
        elif e["type"] == "TOOL_CALL_RESULT":
            print(f"  TOOL_CALL_RESULT {e['content']}")
        elif e["type"] in ("RUN_STARTED", "RUN_ERROR"):
            print(f"  {e['type']}")
        elif e["type"] == "RUN_FINISHED":
            outcome = e.get("outcome") or {"type": "success"}
            print(f"  RUN_FINISHED {outcome['type']}; text: {text!r}")
    return events


def main() -> None:
    script = [
        {"tool_calls": [{"id": "a1", "name": "add", "arguments": {"a": 19, "b": 23}}]},
        {"tool_calls": [{"id": "k1", "name": "confirm", "arguments": {"what": "order 42 items"}}]},
        {"tool_calls": [{"id": "q1", "name": "ask_user", "arguments": {"question": "Gift wrap?",
                                                                        "schema": {"enum": ["yes", "no"]}}}]},
        {"text": "Ordered 42 items, gift wrapped."},
    ]
    agent = {"id": "calc", "type": "ai/agent", "name": "calc",
             "configuration": {"url": "", "key": "k", "model": "m", "systemPrompt": "You order things.",
                               "tools": [{"type": "python", "name": "demo_tools:add"}, "ask_user"]}}
    with FakeLLM(script) as llm, tempfile.TemporaryDirectory() as tmp:
        agent["configuration"]["url"] = llm.url  # type: ignore[index]
        path = Path(tmp) / "calc.json"
        path.write_text(json.dumps(agent))
        with serve_in_background(create_app(Catalog.load([path]))) as base:
            user = {"id": "u1", "role": "user", "content": "Order 19 + 23 items"}
            body = {"threadId": "thread-1", "runId": "run-1", "messages": [user], "tools": [CONFIRM]}
            print("run 1")
            events = run(base, body)
            pending = events[-1]["outcome"]["pendingToolCallIds"]
            call = next(e for e in events if e["type"] == "TOOL_CALL_START" and e["toolCallId"] == pending[0])
            args = next(e["delta"] for e in events if e.get("toolCallId") == pending[0] and "delta" in e)
            print(f"the page runs {call['toolCallName']}({args}) and sends its result")
            body["runId"] = "run-2"
            body["messages"] = [user, {"id": "a1", "role": "assistant", "toolCalls": [{
                "id": pending[0], "type": "function", "function": {"name": "confirm", "arguments": args}}]},
                {"id": "t1", "role": "tool", "toolCallId": pending[0], "content": "confirmed"}]
            print("run 2")
            events = run(base, body)
            interrupt = events[-1]["outcome"]["interrupts"][0]
            print(f"interrupt: {interrupt['reason']} {interrupt['message']!r} {interrupt['responseSchema']}")
            body.update(runId="run-3", resume=[{"interruptId": interrupt["id"], "status": "resolved",
                                                "payload": "yes"}])
            print("run 3")
            run(base, body)


if __name__ == "__main__":
    main()
