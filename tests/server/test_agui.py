"""The AG-UI face (`POST /agui/{id}`) against a real server and the scripted model: every event the server
sends is parsed with the official `ag-ui-protocol` package's types, and the third-party validator
`ag-ui-validate` (its CLI, and its Python API for inputs of our own) reports no error for a plain answer,
tool calls, a chain, a flow and a failing run. Client-side tools and interrupts go on in the next run."""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pydantic
from ag_ui.core import Event, RunAgentInput
from ag_ui_validate.pytest_plugin import validate_agui_endpoint

from tests.server.runs_helpers import agent_doc
from tests.server.test_chain_sessions import two_agent_chain
from tests.server.test_flow_agui import ANSWER, model_turns, shop_api, shop_flow

EVENT = pydantic.TypeAdapter(Event)
OWN_ADD = {"type": "python", "name": "tests.agent.conftest:add"}
CONFIRM = {"name": "confirm", "description": "Ask the person in the page to confirm",
           "parameters": {"type": "object", "properties": {"what": {"type": "string"}}, "required": ["what"]}}


def agui_input(text: str = "Hi", thread: str = "t1", run: str = "r1", **extra: Any) -> dict[str, Any]:
    body = {"threadId": thread, "runId": run, "state": {}, "tools": [], "context": [], "forwardedProps": {},
            "messages": [{"id": "m1", "role": "user", "content": text}], **extra}
    RunAgentInput.model_validate(body)  # what we send is an AG-UI input by the official types
    return body


def post(url: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> list[Any]:
    """The events of one run, each parsed with ag-ui-protocol's Event union (strict about its type)."""
    with httpx.stream("POST", url, json=body, headers=headers, timeout=30) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["content-type"].startswith("text/event-stream")
        lines = [line[6:] for line in r.iter_lines() if line.startswith("data: ")]
    return [EVENT.validate_json(line) for line in lines]


def kinds(events: list[Any]) -> list[str]:
    """The event types in order, a run of content deltas of one message counted once."""
    out: list[str] = []
    for e in events:
        t = e.type.value
        if not (t.endswith("_CONTENT") and out and out[-1] == t):
            out.append(t)
    return out


def text_of(events: list[Any]) -> str:
    return "".join(e.delta for e in events if e.type.value == "TEXT_MESSAGE_CONTENT")


def validator_cli(url: str, flags: list[str] | None = None) -> dict[str, Any]:
    """`ag-ui-validate URL --json` (the third-party CLI, POSTing its own minimal input): its report."""
    exe = shutil.which("ag-ui-validate", path=str(Path(sys.executable).parent)) or "ag-ui-validate"
    done = subprocess.run([exe, url, "--json", "--timeout", "30", *(flags or [])], capture_output=True,
                          text=True, timeout=60)
    report = json.loads(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    return dict(report)


def assert_clean(report: Any) -> None:
    """No error- or warning-level finding (ag-ui-validate's report, JSON or object)."""
    diags = report["diagnostics"] if isinstance(report, dict) else [
        {"ruleId": d.rule_id, "severity": d.severity, "message": d.message} for d in report.diagnostics]
    bad = [d for d in diags if d["severity"] in ("error", "warning")]
    assert not bad, bad


def validate(url: str, body: dict[str, Any]) -> None:
    assert_clean(asyncio.run(validate_agui_endpoint(url, input=body, timeout_ms=30_000)))


def test_a_plain_answer_with_reasoning(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([{"reasoning": "A greeting.", "text": "Hello there, friend.", "chunks": 3},
                    {"text": "Hi."}])
    srv = serve({"helper.json": agent_doc(llm.url)})
    events = post(srv.url + "/agui/helper", agui_input("Hello", thread="th-1", run="run-1"))
    assert kinds(events) == [
        "RUN_STARTED", "REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END", "REASONING_END", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END", "RUN_FINISHED"]
    start, end = events[0], events[-1]
    assert (start.thread_id, start.run_id, start.protocol_version) == ("th-1", "run-1", "1.0")
    assert (end.thread_id, end.run_id) == ("th-1", "run-1") and end.outcome is None
    assert text_of(events) == "Hello there, friend."
    assert "".join(e.delta for e in events if e.type.value == "REASONING_MESSAGE_CONTENT") == "A greeting."
    assert len([e for e in events if e.type.value == "TEXT_MESSAGE_CONTENT"]) == 3  # as the model streamed
    assert end.usage and end.usage[0].output_tokens and end.usage[0].model == "fake-model"
    assert all(e.timestamp for e in events)
    assert llm.chat_requests[0].messages[-1] == {"role": "user", "content": "Hello"}
    # the third-party validator, as its CLI runs against a live endpoint
    assert_clean(validator_cli(srv.url + "/agui/helper"))


def test_the_agents_own_tool_calls_and_results(fake_llm: Any, serve: Any) -> None:
    call = {"text": "Adding.", "tool_calls": [{"id": "c1", "name": "add", "arguments": {"a": 2, "b": 3}}]}
    llm = fake_llm([call, {"text": "It is 5."}, call, {"text": "It is 5."}])
    srv = serve({"helper.json": agent_doc(llm.url, tools=[OWN_ADD])})
    events = post(srv.url + "/agui/helper", agui_input("2+3?"))
    assert kinds(events) == [
        "RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "TOOL_CALL_START",
        "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END", "RUN_FINISHED"]
    start, args, result = events[4], events[5], events[7]
    assert start.tool_call_name == "add" and start.parent_message_id == events[1].message_id
    assert json.loads(args.delta) == {"a": 2, "b": 3}
    assert (result.tool_call_id, result.content) == (start.tool_call_id, "5")
    assert start.tool_call_id.startswith(f"call_{events[0].metadata['chainreactRunId']}_")
    assert text_of(events) == "Adding.It is 5."
    assert_clean(validator_cli(srv.url + "/agui/helper"))


def test_front_end_tools_end_the_run_and_the_next_run_goes_on(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([{"tool_calls": [{"id": "k1", "name": "confirm", "arguments": {"what": "order"}}]},
                    {"text": "Confirmed, ordering."}])
    srv = serve({"helper.json": agent_doc(llm.url)})
    first = agui_input("Order it", tools=[CONFIRM])
    events = post(srv.url + "/agui/helper", first)
    assert kinds(events)[-4:] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"]
    call = events[-4]
    assert call.tool_call_name == "confirm" and json.loads(events[-3].delta) == {"what": "order"}
    assert events[-1].outcome.type == "success"
    assert events[-1].outcome.pending_tool_call_ids == [call.tool_call_id]
    assert [t["function"]["name"] for t in llm.chat_requests[0].body["tools"]] == ["confirm"]

    # the client ran its tool: the next run carries the conversation with the call and its result
    second = agui_input(run="r2", tools=[CONFIRM], messages=[
        *first["messages"],
        {"id": "a1", "role": "assistant", "toolCalls": [
            {"id": call.tool_call_id, "type": "function", "function": {"name": "confirm",
                                                                        "arguments": events[-3].delta}}]},
        {"id": "t1", "role": "tool", "toolCallId": call.tool_call_id, "content": "yes"}])
    events = post(srv.url + "/agui/helper", second)
    assert kinds(events) == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
                             "RUN_FINISHED"]
    assert text_of(events) == "Confirmed, ordering." and events[-1].outcome is None
    # the same run went on: the model sees its own call id and the client's result, after one prompt
    sent = llm.chat_requests[1].messages
    assert [m for m in sent if m["role"] == "tool"] == [
        {"role": "tool", "tool_call_id": "k1", "content": "yes"}]
    assert [m["content"] for m in sent if m["role"] == "user"] == ["Order it"]


def test_an_interrupt_ends_the_run_and_resume_goes_on(fake_llm: Any, serve: Any) -> None:
    ask = {"tool_calls": [{"id": "q1", "name": "ask_user",
                           "arguments": {"question": "Which unit?", "schema": {"enum": ["C", "F"]}}}]}
    llm = fake_llm([ask, {"text": "It is 70 F."}, ask])
    srv = serve({"helper.json": agent_doc(llm.url, tools=["ask_user"])})
    events = post(srv.url + "/agui/helper", agui_input("weather?"))
    end = events[-1]
    assert end.outcome.type == "interrupt"
    [intr] = end.outcome.interrupts
    assert (intr.reason, intr.message) == ("ask_user", "Which unit?")
    assert intr.response_schema == {"enum": ["C", "F"]}
    assert intr.tool_call_id == events[-4].tool_call_id  # the ask_user call, sent before the run stopped

    resumed = agui_input(run="r2", resume=[{"interruptId": intr.id, "status": "resolved", "payload": "F"}])
    events = post(srv.url + "/agui/helper", resumed)
    assert text_of(events) == "It is 70 F." and events[-1].outcome is None
    assert "TOOL_CALL_RESULT" not in kinds(events)  # the answered call belongs to the run before
    assert [m for m in llm.chat_requests[1].messages if m["role"] == "tool"] == [
        {"role": "tool", "tool_call_id": "q1", "content": "F"}]
    # an answer the question refuses is a 400 that changes nothing; an interrupt answered twice is a 409
    r = httpx.post(srv.url + "/agui/helper", json=resumed, timeout=30)
    assert r.status_code == 409 and r.json()["error"]["code"] == "run_not_waiting"
    events = post(srv.url + "/agui/helper", agui_input("again?", run="r3"))
    again = events[-1].outcome.interrupts[0].id
    bad = agui_input(run="r4", resume=[{"interruptId": again, "status": "resolved", "payload": "K"}])
    r = httpx.post(srv.url + "/agui/helper", json=bad, timeout=30)
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_resume"
    validate(srv.url + "/agui/helper", agui_input("x", run="r5", resume=[
        {"interruptId": again, "status": "resolved", "payload": "C"}]))  # (the script has no 4th answer)


def test_a_chain_runs_its_nodes_as_steps(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([{"text": "draft one"}, {"text": "DRAFT ONE"}, {"text": "draft two"},
                    {"text": "DRAFT TWO"}])
    srv = serve({"pipe.json": two_agent_chain(llm.url)})
    events = post(srv.url + "/agui/pipe", agui_input("write"))
    steps = [(e.type.value, e.step_name) for e in events if e.type.value.startswith("STEP_")]
    assert steps == [("STEP_STARTED", "first"), ("STEP_FINISHED", "first"), ("STEP_STARTED", "second"),
                     ("STEP_FINISHED", "second")]
    assert "DRAFT ONE" in text_of(events) and kinds(events)[-1] == "RUN_FINISHED"
    assert_clean(validator_cli(srv.url + "/agui/pipe"))


def test_a_flow_turn_with_steps_tool_calls_and_state(fake_llm: Any, serve: Any) -> None:
    with shop_api() as api:
        llm = fake_llm([*model_turns("o1"), *model_turns("o2")])
        srv = serve({"shop.json": shop_flow(llm.url, api)})
        events = post(srv.url + "/agui/shop", agui_input("Where is my order A1?", thread="s-1"))
        assert_clean(validator_cli(srv.url + "/agui/shop"))
    k = kinds(events)
    assert k[:2] == ["RUN_STARTED", "STATE_SNAPSHOT"] and k[-2:] == ["STATE_DELTA", "RUN_FINISHED"]
    snapshot = events[1].snapshot
    assert snapshot == {"node": "greet", "ended": False, "variables": {}}
    steps = [(e.type.value, e.step_name) for e in events if e.type.value.startswith("STEP_")]
    assert steps == [("STEP_STARTED", "greet"), ("STEP_FINISHED", "greet"), ("STEP_STARTED", "clerk"),
                     ("STEP_FINISHED", "clerk")]
    tools = [e for e in events if e.type.value in ("TOOL_CALL_START", "TOOL_CALL_RESULT")]
    assert tools[0].tool_call_name == "orderLookup" and '"shipped"' in tools[1].content
    messages = [e.message_id for e in events if e.type.value == "TEXT_MESSAGE_START"]
    assert len(messages) == 2 and text_of(events) == "Hello!" + ANSWER
    ops = {op.path: op for op in events[-2].delta}
    assert ops["/node"].value == "clerk" and ops["/variables/clerk"].value == {"response": ANSWER}


def test_a_failing_run_ends_with_run_error(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([{"status": 500, "message": "model down"}, {"status": 500, "message": "model down"}])
    srv = serve({"helper.json": agent_doc(llm.url)})
    events = post(srv.url + "/agui/helper", agui_input())
    assert kinds(events) == ["RUN_STARTED", "RUN_ERROR"]
    assert "model down" in events[-1].message and events[-1].code == "run_failed"
    assert_clean(validator_cli(srv.url + "/agui/helper"))


def test_bad_input_unknown_ids_and_keys(fake_llm: Any, serve: Any) -> None:
    keys = {"keys": [{"name": "ui", "sha256": hashlib.sha256(b"ui-key").hexdigest(),
                      "ids": ["helper", "nope"], "permissions": ["read", "execute"]}]}
    srv = serve({"helper.json": agent_doc(fake_llm([]).url)}, keys=keys)
    url = srv.url + "/agui/helper"
    assert httpx.post(url, json=agui_input(), timeout=10).status_code == 401
    auth = {"Authorization": "Bearer ui-key"}
    r = httpx.post(url, json={"threadId": "t", "messages": []}, headers=auth, timeout=10)
    assert r.status_code == 400 and "runId" in r.json()["error"]["message"]
    audio = {"type": "audio", "source": {"type": "url", "value": "http://127.0.0.1/a.mp3"}}
    bad = agui_input(messages=[{"id": "m", "role": "user", "content": [audio]}])
    r = httpx.post(url, json=bad, headers=auth, timeout=10)
    assert r.status_code == 400 and "messages[0].content[0].type" in r.json()["error"]["message"]
    r = httpx.post(srv.url + "/agui/nope", json=agui_input(), headers=auth, timeout=10)
    assert r.status_code == 404


def test_thread_id_is_the_session_with_state(fake_llm: Any, serve: Any, tmp_path: Path) -> None:
    from tests.server.test_chain_sessions import remembering_model

    llm = fake_llm(remembering_model)
    srv = serve({"helper.json": agent_doc(llm.url)}, state=f"sqlite:///{tmp_path}/s.db")
    first = {"id": "m1", "role": "user", "content": "My name is Ann."}
    events = post(srv.url + "/agui/helper", agui_input(thread="ann-thread", messages=[first]))
    assert text_of(events) == "Hello Ann."
    # an AG-UI client sends the whole conversation again: the stored part is not counted twice
    again = [first, {"id": "a1", "role": "assistant", "content": "Hello Ann."},
             {"id": "m2", "role": "user", "content": "What is my name?"}]
    events = post(srv.url + "/agui/helper", agui_input(thread="ann-thread", run="r2", messages=again))
    assert text_of(events) == "Your name is Ann."
    assert [(m["role"], m["content"]) for m in llm.chat_requests[1].messages] == [
        ("system", "You help."), ("user", "My name is Ann."), ("assistant", "Hello Ann."),
        ("user", "What is my name?")]
    # another thread is another conversation; context goes before the last user message, this run only
    ctx = [{"description": "page", "value": "settings"}]
    events = post(srv.url + "/agui/helper",
                  agui_input("What is my name?", thread="other", run="r3", context=ctx))
    assert text_of(events) == "I do not know your name."
    assert [(m["role"], m["content"]) for m in llm.chat_requests[2].messages][1:] == [
        ("user", "Context from the application:\n- page: settings"), ("user", "What is my name?")]


def test_an_approval_cancelled_by_the_page_is_a_rejection(fake_llm: Any, serve: Any) -> None:
    from tests.state.test_ask_and_approve import APPROVED, deleted

    deleted.clear()
    llm = fake_llm([{"tool_calls": [{"id": "d1", "name": "delete_file", "arguments": {"path": "a.txt"}}]},
                    {"text": "I kept it."}])
    srv = serve({"helper.json": agent_doc(llm.url, tools=[APPROVED])})
    events = post(srv.url + "/agui/helper", agui_input("delete a.txt"))
    [intr] = events[-1].outcome.interrupts
    assert intr.reason == "approval" and intr.response_schema["required"] == ["approve"]
    assert intr.tool_call_id == events[-4].tool_call_id and events[-4].tool_call_name == "delete_file"
    events = post(srv.url + "/agui/helper", agui_input(run="r2", resume=[
        {"interruptId": intr.id, "status": "cancelled"}]))
    assert text_of(events) == "I kept it." and deleted == []
    [result] = [m["content"] for m in llm.chat_requests[1].messages if m["role"] == "tool"]
    assert result.startswith("Error: the user rejected this call to delete_file: cancelled by the user")
