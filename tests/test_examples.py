"""Every example in examples/ runs, and says what it is meant to say."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# What each example must print (a behaviour check, not just "it exited 0").
EXPECTED = {
    "agent_basic.py": ["19 + 23 = 42.", "steps=2 stop_reason=stop", "tool      42"],
    "agent_streaming.py": ["→ weather", "← Lyon: 21°C, clear", "It is 21°C and clear in Lyon.",
                           "[final: stop"],
    "agent_middleware.py": ["Error: delete_file is not allowed here", "model attempt on"],
    "agent_cancel.py": ["cancel outcome: cancelled", "stop_reason: cancelled", "Resumed"],
    "agent_tracing.py": ["answer: My forecaster says Lyon is sunny.",
                         "invoke_agent planner  usage.input_tokens=31",
                         "\n  execute_tool forecaster  tool.call.id=f1\n    invoke_agent forecaster",
                         "      execute_tool get_weather  tool.call.id=w1"],
    "chain_tracing.py": ["answer: Restart the router, then try again.",
                         "chain helpdesk\n  node check  relations=['True']\n"
                         "  node answer  relations=['Success']\n    invoke_agent answer\n      chat demo",
                         "timer: check -> True", "timer: answer -> Success"],
    "playground_trace.py": ["page: 200 True", "loaded: [('chain', 'router')]",
                            'n=42: path check -> True, big -> Success | ends with {"n":42,"size":"big"}',
                            'n=3: path check -> False, small -> Success | ends with {"n":3,"size":"small"}'],
    "agent_many_runs.py": ["before: threshold 700, frozen False", "1000 of 1000 runs done",
                           "runs in flight: threshold 50000, frozen True",
                           "after: threshold 700, frozen False, runs in flight 0"],
    "agent_as_tool.py": ["[boss/researcher] Paris", "[boss]  researcher"],
    "document_failover.py": ["failover[0].key = sk-backup", "extraFields = {'thinking.budget_tokens': 1024}",
                             "answer: Hello from the backup.", "backup saw: Bearer sk-backup",
                             "error: $.configuration.failover[0].url -> '${global.backup_url}' uses "
                             "global.backup_url, which is not defined"],
    "agent_resume.py": ["stop_reason: interrupted; asks: Celsius or Fahrenheit? {'enum': ['C', 'F']}",
                        "checkpoint: interrupted", "resumed: It is 70 F in Lyon. (weather ran 1 time)"],
    "agent_extensions.py": ["retry: attempt 1 failed (503), retrying", "deploy | roll out ok;",
                            "final (return_directly): api deployed; Sunny in Lyon",
                            "system prompt sent: You run operations. (ticket T-7)",
                            "'tool_search', 'get_weather']",
                            "{'last_answer': 'api deployed; Sunny in Lyon'}",
                            "tools for the EUR run: ['deploy', 'exit', 'tool_search', 'convert_currency']"],
    "replay_run.py": ["recorded: 2 model calls, answer '2 + 3 = 5'", "the key is in the cassette: False",
                      "replay: ok, the run follows the recording (2 model call(s))",
                      "  agent calc, step 1, tool add (call_add): result: expected '5', got '6'",
                      'as JSON: {"ok": false, "answer": "2 + 3 = 5", "steps": 2}'],
    "replay_chain_flow.py": ["chain nodes: [('ask', 'Paris'), ('wrap', '[Paris]')]",
                             "flow turn 2 read: ['get_run', 'history'] answer: noted: it is order 42",
                             "chain: replay: ok, the run follows the recording (1 model call(s))",
                             "flow: replay: ok, the run follows the recording (1 model call(s))",
                             "  node wrap: data: expected '[Paris]', got '<Paris>'",
                             "  agent chat, step 1, request: messages[0].content (system): "
                             "expected 'Be brief.', got 'Be very brief.'"],
    "eval_agent.py": ["pass  adds ", "pass  weather as JSON ", "pass  greets ",
                      "FAIL  no tool for a greeting tokens=13   tool_called: not called: add (called: none)",
                      "judge: pass (It says it is glad to see them.)", "pass rate: 0.75 (3/4)",
                      "self-contained: True"],
    "state_basic.py": ["last 2 -> ['assistant']", "last 3 -> ['assistant', 'tool', 'assistant']",
                       "recall -> The user prefers window seats", "still to run ['ask_user']",
                       "events after 1 -> ['interrupted']"],
    "state_interrupt.py": ["1. interrupted: [ask_user] How many backups should I keep? "
                           "schema={'type': 'integer'}",
                           "does not match the asked schema: $: expected integer, got string",
                           '2. interrupted: [approval] Allow remove_backup with {"name":"nightly-01"}?',
                           "3. stop: Kept the newest 3 backups and removed nightly-02.",
                           "removed ['nightly-02']; list_backups ran 1 time(s); run is done"],
    "server_runs.py": ["started: running -> /api/v1/runs/{id}/events",
                       "no gaps, no duplicates", "end: end done",
                       "interrupted: [ask_user] Celsius or Fahrenheit?",
                       "resumed: done - It is 70 F in Lyon.", "chat: What is my name? -> Your name is Ann.",
                       "the model saw: ['You help.', 'I am Ann.', 'Nice to meet you, Ann.', "
                       "'What is my name?']", "chain chat: Who am I? -> You are Ann.",
                       "the chain's node saw: ['You are a concierge.', 'I am Ann.', 'Welcome, Ann.', "
                       "'Who am I?']",
                       "chat: HTTP 409 run_interrupted, answer with POST /api/v1/runs/{id}/resume",
                       "resumed: done - It is 21 C in Oslo."],
    "tools_typed.py": ['"format": "date"', "tool: Error: invalid arguments for place_order: $.deliver_on:",
                       "tool: ordered 3 units for Friday 04 December 2026", "answer: Done"],
    "server_flows_mcp.py": ["without login: Please log in to continue.",
                            "as ann: Welcome back, gold member: your order ships today.",
                            "someone else: 404 session_not_found", "ann reads it: True",
                            "the model was told: The user: ann (gold tier)",
                            "MCP tools: ['helper', 'orders']", "MCP helper: The capital of France is Paris."],
    "server_a2a.py": ["card: weather - Tells the weather. skills=['weather', 'ask_user']",
                      "interface: JSONRPC /a2a/weather",
                      "task TASK_STATE_INPUT_REQUIRED: Celsius or Fahrenheit? (answer q1)",
                      "  statusUpdate TASK_STATE_WORKING\n  artifactUpdate 'It is '",
                      "  statusUpdate TASK_STATE_COMPLETED",
                      "GetTask: TASK_STATE_COMPLETED, answer 'It is 21 C in Lyon.'",
                      "the run: done, 'It is 21 C in Lyon.'"],
    "server_agui.py": ["  TOOL_CALL_START add\n  TOOL_CALL_RESULT 42\n  TOOL_CALL_START confirm\n"
                       "  RUN_FINISHED success; text: ''",
                       'the page runs confirm({"what":"order 42 items"}) and sends its result',
                       "  TOOL_CALL_START ask_user\n  RUN_FINISHED interrupt",
                       "interrupt: ask_user 'Gift wrap?' {'enum': ['yes', 'no']}",
                       "run 3\n  RUN_STARTED\n"
                       "  RUN_FINISHED success; text: 'Ordered 42 items, gift wrapped.'"],
    "server_flow_agui.py": ["agui client:\n"
                            """  tool: TOOL_CALL_START orderLookup {"orderId": "42"} path=['clerk']\n"""
                            "  tool: TOOL_CALL_RESULT orderLookup "
                            r'"{\"orderId\":\"42\",\"status\":\"shipped\"}" '
                            "path=['clerk']\n  text: 'Or'",
                            "plain client: 4 chunks, tool frames: 0"],
    "server_flow_stream.py": ["openai: 11 chunks, first 'Your'",
                              "openai text: Your parcel left the depot this morning and arrives before noon.",
                              "sse: 10 text_delta events, then the message: You can change the address",
                              "deltas joined == message: True"],
    "server_openai_clients.py": ["model: chainreact-agent",
                                 'chat: finish_reason=tool_calls, call get_weather{"city":"Oslo"}',
                                 "chat: 19 + 23 = 42; Oslo: -3 C, snow.",
                                 "parsed: Weather(city='Oslo', temp=-3.0)",
                                 'responses: function_call get_weather{"city":"Rome"}',
                                 "responses: 42, and Rome is sunny.", "model saw: ['42', '24 C, sun']"],
    "server_rulego.py": ["login: ['expiresAt', 'token']", "chains: 1 ['Temperature alarm']",
                         "save: 200 | file's limit: 60", "stopped: 400 rule chain 'alarm' is stopped",
                         "execute: 200 application/json LAB: 71 is too hot",
                         "websocket: valid IN, valid OUT True, level IN, level OUT hot, alarm IN, "
                         "alarm OUT Success, done IN",
                         "run log: 1 [('valid', 'True'), ('level', 'hot'), ('alarm', 'Success'), "
                         "('done', '')]",
                         "node debug items: 2 ['OUT', 'IN']",
                         "components: 22 | ai/agent fields: ['url', 'key', 'model', 'systemPrompt']"],
    "server_ops.py": ["answer: Paris.", "rate limited: 429, Retry-After: ",
                      "s (<= 30: True), rate_limit_exceeded",
                      "readyz problem: helper.json -> keeps serving",
                      'chainreact_runs_total{agent="helper",outcome="ok"} 1.0',
                      'chainreact_http_requests_total{method="GET",route="/v1/models",status="429"} 1.0',
                      '"route":"/v1/chat/completions","status":200,'],
    "durable_agent.py": ['→ weather({"city":"Lyon"})', "← weather: Lyon: 21°C, clear", "  delta 'It is 2'",
                         "answer: It is 21°C and clear in Lyon. (steps=2, stop_reason=stop)",
                         "the tool's idempotency key: weather-", "/1/w1 (run id weather-",
                         "interrupted: Which city? (status: interrupted)",
                         "resumed: It is 21°C and clear in Oslo."],
    "durable_chain.py": ['Success at page: {"page":"on-call: outage","score":9} (model=demo)',
                         'Success at failed: {"error":"empty ticket"}', "frame 'power '", "frame 'outage'",
                         'streamed run: {"page":"on-call: power outage","score":9}'],
    "server_durable.py": ["delta 'It is 2'", "delta 'n Lyon.'",
                          "run interrupted (durable: True): Which city?",
                          "resumed: done: Noted: the weather for Oslo.", "chain brief: MILD IN LYON."],
    "cli_never_silent.py": ["exit 3, stdout ''",
                            'approval of tool weather with arguments {"city":"Lyon"} (question id w1)',
                            "to go on: chainreact run agent.json 'weather in Lyon?' --state "
                            "sqlite:///.chainreact/state.db --global url=URL",
                            "with a store: exit 3", "--global url=URL --answer approve",
                            "resumed: exit 0, answer '21 C in Lyon.'",
                            "empty answer: exit 4, stdout '', stderr \"error: the run ended with an empty "
                            "answer (stop reason 'stop', 1 step(s))"],
    "cli_chat_agent.py": ["exit 0", "stdout: ['19 + 23 = 42.', '42 + 8 = 50.']",
                          """stderr: ['→ add({"a":19,"b":23})', '← add: 42', '→ add({"a":42,"b":8})', """
                          "'← add: 50']",
                          "the second question's request: [('user', 'what is 19 + 23?'), ('assistant', ''), "
                          "('tool', '42'), ('assistant', '19 + 23 = 42.'), ('user', 'and plus 8?')]"],
    "expressions.py": ["hot(71) = True", "hot(20) = False", "adults: Al, Jim", "98.6F = 37.0 C",
                       'Reading 35.5 from {"temperature":71,"unit":"C"}', "config: {'timeout': 30,",
                       "Hello ${env('HOME')}, agent 2", "error: invalid operation: string + int"],
}


# Modules that documents import (python tool descriptors), not scripts to run.
SUPPORT = {"demo_tools.py"}


def scripts() -> list[str]:
    return sorted(p.name for p in EXAMPLES.glob("*.py") if p.name not in SUPPORT)


def test_every_example_has_expectations() -> None:
    assert set(scripts()) == set(EXPECTED), "add the new example's expected output to EXPECTED"


@pytest.mark.parametrize("name", scripts())
def test_example_runs(name: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHAINREACT_")}
    proc = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True,
                          timeout=120, env=env, cwd=EXAMPLES.parent)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for needle in EXPECTED[name]:
        assert needle in proc.stdout, f"{name}: {needle!r} not in output:\n{proc.stdout[-2000:]}"
