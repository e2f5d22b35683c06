"""A second set of served documents for the browser tests of issue 25's playground items:
    writer   answers in Markdown (headings, lists, code, a table, links) with XSS attempts in it
    clerk    its key is a secret (never shown), its params and a tool show in the model call's request
    approver asks for an approval (a finished past run must show no form)
    shop     a flow that greets its user by name and keeps each user's turns under `shop-{{user.id}}`
    team     a flow whose desk delegates to a billing node and to an agent document (collaborators)
    big      a chain of 26 nodes with long names and long relation names (legible labels, zoom and pan)
"""

from __future__ import annotations

import json
from typing import Any

SECRET = "sk-playground-secret-0123456789abcdef"
# What the writer answers: Markdown, and what must never become markup.
XSS = [
    "<script>window.__pwned = 'script'</script>",
    "<img src=x onerror=\"window.__pwned = 'img'\">",
    "[click me](javascript:window.__pwned='js')",
    "[encoded](&#106;avascript:window.__pwned='entity')",
]
MARKDOWN = "\n".join([
    "# Release notes",
    "",
    "Here is **what changed** in *this* release, see "
    "[the changelog](https://example.com/changes \"all of it\"):",
    "",
    "- a faster `serve` start",
    "- safer answers",
    "  1. nested one",
    "  2. nested two",
    "",
    "```python",
    "def add(a, b):",
    "    return a + b  # <b>not bold</b>",
    "```",
    "",
    "| tool | calls |",
    "|------|------:|",
    "| add  | 3 |",
    "",
    *XSS,
])


def responder(body: dict[str, Any]) -> dict[str, Any]:
    messages = body.get("messages") or []
    system = next((m.get("content") or "" for m in messages if m.get("role") == "system"), "")
    last = messages[-1] if messages else {}
    if "You write notes" in system:
        return {"text": MARKDOWN, "chunks": 12, "chunk_delay": 0.03}
    if "You file things" in system:
        if last.get("role") == "tool":
            return {"text": f"Filed: {last['content']} letters."}
        call = {"id": "call_count", "name": "count_letters", "arguments": {"word": "ledger"}}
        return {"tool_calls": [call]}
    if "You deploy" in system:
        if last.get("role") == "tool":
            return {"text": f"Done: {last['content']}"}
        return {"tool_calls": [{"id": "call_deploy", "name": "deploy", "arguments": {"service": "api"}}]}
    if "You help shoppers" in system:
        said = str(last.get("content") or "").removeprefix("Customer says: ")
        return {"text": json.dumps({"response": f"**Noted**: {said}", "done": "bye" in said.lower()})}
    return {"text": json.dumps({"response": "ok", "answer": "ok", "done": False})}


def _agent(llm_url: str, name: str, prompt: str, **more: Any) -> dict[str, Any]:
    return {"id": name, "type": "ai/agent", "name": name, "configuration": {
        "url": llm_url, "key": "unused", "model": "fake-model", "maxRetries": -1, "systemPrompt": prompt,
        **more}}


COUNT = {"type": "python", "name": "count_letters",
         "config": {"function": "tests.playground.scenario:count_letters"}}
PASS = {"jsScript": "return {msg: msg, metadata: metadata, msgType: msgType};"}


def _big_chain() -> dict[str, Any]:
    steps = ["Read the order from the shop's queue", "Check the customer's address and postal code",
             "Look the customer up in the loyalty programme", "Compute the discount for this order",
             "Ask the warehouse whether every item is in stock", "Reserve the items in the warehouse",
             "Charge the customer's card for the total", "Print the shipping label", "Book the courier",
             "Send the confirmation e-mail to the customer", "Update the order's status everywhere",
             "Write the order to the accounting ledger"]
    nodes, conns = [], []
    for lane in ("a", "b"):
        for i, title in enumerate(steps):
            nodes.append({"id": f"{lane}{i}", "type": "jsTransform", "name": f"{title} ({lane.upper()})",
                          "configuration": PASS})
            if i:
                conns.append({"fromId": f"{lane}{i - 1}", "toId": f"{lane}{i}", "type": "Success"})
    nodes.insert(0, {"id": "start", "type": "jsFilter", "name": "Is this order paid for in advance?",
                     "configuration": {"jsScript": "return msg.paid === true;"}})
    nodes.append({"id": "review", "type": "jsTransform", "name": "Manual review by the finance team",
                  "configuration": PASS})
    conns += [{"fromId": "start", "toId": "a0", "type": "True"},
              {"fromId": "start", "toId": "b0", "type": "False"},
              {"fromId": "a3", "toId": "review", "type": "Needs a manual review by the finance team"},
              {"fromId": "review", "toId": "a2", "type": "Send back to the discount step"}]
    about = {"description": "26 nodes to zoom on"}
    return {"ruleChain": {"id": "big", "name": "Big", "additionalInfo": about},
            "metadata": {"nodes": nodes, "connections": conns}}


def docs(llm_url: str) -> dict[str, Any]:
    llm = {"url": llm_url, "apiKey": "unused"}
    answer = {"schema": {"type": "object", "required": ["response", "done"], "properties": {
        "response": {"type": "string"}, "done": {"type": "boolean"}}}}
    return {
        "writer.json": _agent(llm_url, "writer", "You write notes.", description="Answers in Markdown"),
        "clerk.json": _agent(llm_url, "clerk", "You file things.", description="Files with a tool",
                             key=SECRET, params={"temperature": 0.3, "maxTokens": 200}, tools=[COUNT]),
        "approver.json": _agent(llm_url, "approver", "You deploy services.", description="Asks to deploy",
                                tools=[{"type": "python", "name": "deploy", "requireApproval": True,
                                        "config": {"function": "tests.playground.scenario:deploy"}}]),
        "shop.json": {"id": "shop", "name": "Shop", "description": "greets its user by name", "nodes": [
            {"name": "greet", "type": "message", "start": True,
             "message": "Hello {{user.name}}, this is the shop.", "transition": {"targetId": "help"}},
            {"name": "help", "type": "aiagent", "llmConfig": llm, "systemMessage": "You help shoppers.",
             "userMessage": "Customer says: {{userInput}}", "memory": {"memoryId": "shop-{{user.id}}"},
             "output": answer, "agentOutcomes": [{"condition": "{{output.done}} == true",
                                                  "transition": {"targetId": "bye"}, "finish": False}]},
            {"name": "bye", "type": "end", "message": "Bye {{user.name}}."}]},
        "team.json": {"id": "team", "name": "Team", "description": "a desk with two colleagues", "nodes": [
            {"name": "desk", "type": "aiagent", "start": True, "llmConfig": llm,
             "systemMessage": "You are the desk.", "userMessage": "{{userInput}}", "output": answer,
             "multiAgentCollaboration": {"collaborators": [
                 {"node": "billing", "description": "Knows every order."},
                 {"agentFile": "auditor.json", "name": "audit", "description": "Audits refunds."}]},
             "agentOutcomes": [{"condition": "{{output.done}} == true", "transition": {"targetId": "bye"}}]},
            {"name": "billing", "type": "aiagent", "llmConfig": llm, "systemMessage": "You are billing.",
             "userMessage": "Task: {{userInput}}", "output": {"schema": {"type": "object", "properties": {
                 "answer": {"type": "string"}}}}},
            {"name": "bye", "type": "end", "message": "Goodbye."}]},
        "auditor.json": _agent(llm_url, "auditor", "You audit.", description="Audits refunds"),
        "big.json": _big_chain(),
    }
