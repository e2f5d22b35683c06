"""What the browser tests serve: agents over a FakeLLM responder and two chains.

The responder is stateless (it answers from the request alone), so one server serves every test:
    helper   asks for the `double` tool (the `echo` chain) once, then answers "Doubled: <result>"
    planner  calls `counter` as a sub-agent (its events nested in the planner's stream), then answers
    counter  calls the Python tool `count_letters` once, then answers
    deployer asks for the `deploy` tool, which needs an approval (runs API: answered in place)
    asker    asks the user (ask_user, the answer one of C/F), then answers with it
    flaky    its first model attempt of each run fails with 503, the retry answers (timeline: a retry)
    slow     streams its answer slowly (to be cancelled)
    helpdesk a flow: greet -> agent (structured output; "bye" ends it) -> bye
    router   a chain: a filter sends big numbers one way and small ones the other
    pipeline a chain: a transform, then an agent node (the counter's prompt and tool)
"""

from __future__ import annotations

import json
from typing import Any


def responder(body: dict[str, Any]) -> dict[str, Any]:
    messages = body.get("messages") or []
    system = next((m.get("content") or "" for m in messages if m.get("role") == "system"), "")
    last = messages[-1] if messages else {}
    if "You double numbers" in system:
        if last.get("role") == "tool":
            n = json.loads(last["content"]).get("n") if last["content"].startswith("{") else last["content"]
            return {"text": f"Doubled: {n}. Anything else?", "chunks": 4, "chunk_delay": 0.05,
                    "reasoning": "The user wants the number doubled; the double tool does that."}
        return {"tool_calls": [{"id": "call_double", "name": "double", "arguments": {"n": 21}}],
                "tool_delay": 0.05}
    if "You count" in system:
        if last.get("role") == "tool":
            return {"text": f"It has {last['content']} letters."}
        return {"tool_calls": [{"id": "call_count", "name": "count_letters",
                                "arguments": {"word": "chainreact"}}]}
    if "You plan" in system:
        if last.get("role") == "tool":
            return {"text": f"The counter answered: {last['content']}", "chunks": 3}
        return {"tool_calls": [{"id": "call_counter", "name": "counter",
                                "arguments": {"request": "count chainreact"}}]}
    if "You deploy" in system:
        if last.get("role") == "tool":
            return {"text": f"Done: {last['content']}"}
        return {"tool_calls": [{"id": "call_deploy", "name": "deploy", "arguments": {"service": "api"}}]}
    if "You ask first" in system:
        if last.get("role") == "tool":
            return {"text": f"Using {last['content']}."}
        return {"tool_calls": [{"id": "call_ask", "name": "ask_user",
                                "arguments": {"question": "Celsius or Fahrenheit?"}}]}
    if "You are flaky" in system:
        _calls["flaky"] = _calls.get("flaky", 0) + 1
        if _calls["flaky"] % 2:
            return {"status": 503, "message": "busy, try again"}
        return {"text": "Second time lucky."}
    if "You are slow" in system:
        return {"text": "This answer takes a long while to arrive. " * 8, "chunks": 60, "chunk_delay": 0.25}
    if "You run the helpdesk" in system:
        said = str(last.get("content") or "")
        if "slowly" in said:  # streamed in small pieces over ~3 s: the page shows the text as it comes
            text = f"Noted: {said}. " + "I will look into it, one step after the other. " * 3
            return {"text": json.dumps({"response": text, "done": False}), "chunk_size": 6,
                    "chunk_delay": 0.1}
        return {"text": json.dumps({"response": f"Noted: {said}", "done": "bye" in said.lower()})}
    return {"text": "I only know two tricks."}


_calls: dict[str, int] = {}
RETURN = " return {msg: msg, metadata: metadata, msgType: msgType};"


def deploy(service: str) -> str:
    """Deploy a service."""
    return f"{service} deployed"


def count_letters(word: str) -> int:
    """Count the letters of a word."""
    return len(word)


def docs(llm_url: str) -> dict[str, dict[str, Any]]:
    agent = {"url": llm_url, "key": "unused", "model": "fake-model", "maxRetries": -1}
    return {
        "echo.json": {"ruleChain": {"id": "echo", "name": "Echo"},
                      "metadata": {"nodes": [{"id": "t", "type": "jsTransform", "configuration": {
                          "jsScript": "msg.n = msg.n * 2;" + RETURN}}],
                          "connections": []}},
        "router.json": {
            "ruleChain": {"id": "router", "name": "Router",
                          "additionalInfo": {"description": "big numbers one way, small ones the other"}},
            "metadata": {"nodes": [
                {"id": "check", "type": "jsFilter", "name": "Is it big?",
                 "configuration": {"jsScript": "return msg.n > 10;"}},
                {"id": "big", "type": "jsTransform", "name": "Mark big", "configuration": {
                    "jsScript": "msg.size = 'big';" + RETURN}},
                {"id": "small", "type": "jsTransform", "name": "Mark small", "configuration": {
                    "jsScript": "msg.size = 'small';" + RETURN}},
                {"id": "log", "type": "jsTransform", "name": "Stamp", "configuration": {
                    "jsScript": "metadata.stamped = 'yes';" + RETURN}},
            ], "connections": [
                {"fromId": "check", "toId": "big", "type": "True"},
                {"fromId": "check", "toId": "small", "type": "False"},
                {"fromId": "big", "toId": "log", "type": "Success"},
                {"fromId": "small", "toId": "log", "type": "Success"},
            ]}},
        "pipeline.json": {
            "ruleChain": {"id": "pipeline", "name": "Pipeline",
                          "additionalInfo": {"description": "prepares, then an agent counts"}},
            "metadata": {"nodes": [
                {"id": "prep", "type": "jsTransform", "name": "Prepare", "configuration": {
                    "jsScript": "metadata.prepared = 'yes';" + RETURN}},
                {"id": "count", "type": "ai/agent", "name": "Count", "configuration": {
                    **agent, "systemPrompt": "You count letters.",
                    "tools": [{"type": "python", "name": "count_letters",
                               "config": {"function": "tests.playground.scenario:count_letters"}}]}},
            ], "connections": [{"fromId": "prep", "toId": "count", "type": "Success"}]}},
        "helpdesk.json": {"id": "helpdesk", "name": "Helpdesk", "description": "greets, helps, says goodbye",
                          "nodes": [
            {"name": "greet", "type": "message", "start": True, "message": "Hello!",
             "transition": {"targetId": "agent"}},
            {"name": "agent", "type": "aiagent", "llmConfig": {"url": llm_url, "apiKey": "unused"},
             "systemMessage": "You run the helpdesk.", "userMessage": "{{userInput}}",
             "output": {"schema": {"type": "object", "required": ["response", "done"], "properties": {
                 "response": {"type": "string"}, "done": {"type": "boolean"}}}},
             "agentOutcomes": [{"condition": "{{output.done}} == true", "transition": {"targetId": "bye"},
                                "finish": False}]},
            {"name": "bye", "type": "end", "message": "Goodbye."}]},
        "deployer.json": {"id": "deployer", "type": "ai/agent", "name": "deployer", "configuration": {
            **agent, "systemPrompt": "You deploy services.", "description": "Deploys, with approval",
            "tools": [{"type": "python", "name": "deploy", "requireApproval": True,
                       "config": {"function": "tests.playground.scenario:deploy"}}]}},
        "asker.json": {"id": "asker", "type": "ai/agent", "name": "asker", "configuration": {
            **agent, "systemPrompt": "You ask first.", "description": "Asks which unit",
            "tools": [{"type": "builtin", "name": "ask_user", "config": {"schema": {"enum": ["C", "F"]}}}]}},
        "flaky.json": {"id": "flaky", "type": "ai/agent", "name": "flaky", "configuration": {
            **agent, "maxRetries": 2, "systemPrompt": "You are flaky.", "description": "Needs a retry"}},
        "slow.json": {"id": "slow", "type": "ai/agent", "name": "slow", "configuration": {
            **agent, "systemPrompt": "You are slow.", "description": "Answers slowly"}},
        "helper.json": {"id": "helper", "type": "ai/agent", "name": "helper", "configuration": {
            **agent, "systemPrompt": "You double numbers.", "description": "Doubles numbers with a tool",
            "tools": [{"type": "rulechain", "targetId": "echo", "name": "double", "description": "Double n",
                       "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}}}]}},
        "planner.json": {"id": "planner", "type": "ai/agent", "name": "planner", "configuration": {
            **agent, "systemPrompt": "You plan.", "description": "Delegates to the counter",
            "tools": [{"type": "agent", "targetId": "counter", "config": {"emit_internal_events": True}}]}},
        "counter.json": {"id": "counter", "type": "ai/agent", "name": "counter", "configuration": {
            **agent, "systemPrompt": "You count letters.", "description": "Counts letters",
            "tools": [{"type": "python", "name": "count_letters",
                       "config": {"function": "tests.playground.scenario:count_letters"}}]}},
    }
