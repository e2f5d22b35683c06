"""Chat-flow turns as Temporal workflows on the real dev server, against the scripted model server: a
conversation whose turns run on different workers and remember each other, an ask-user round and an outcome
transition across turns (the same events as in process), turns of one session sent at once (serialized),
and `chainreact worker` restarted between two `chainreact flow send --temporal` turns."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from temporalio.worker import Replayer
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from chainreact.durable import (
    AgentHost,
    DevServer,
    DurableFlow,
    DurableOptions,
    DurableRunError,
    FlowHost,
    durable_worker,
)
from chainreact.durable.flow_workflow import FlowTurnWorkflow
from chainreact.durable.worker import PASSTHROUGH
from chainreact.flows import Flow
from chainreact.state import open_store
from chainreact.testing import FakeLLM

from ..flows.servers import order_tool, refund_tool, shop_api

ANSWER = {"type": "object", "properties": {"response": {"type": "string"}, "resolved": {"type": "boolean"}},
          "required": ["response"]}


def reply(text: str, resolved: bool = False) -> dict[str, Any]:
    return {"text": json.dumps({"response": text, "resolved": resolved})}


def desk_flow(url: str) -> dict[str, Any]:
    return {"id": "desk", "nodes": [
        {"name": "support", "type": "aiagent", "llmConfig": {"url": url}, "userMessage": "{{userInput}}",
         "memory": {"maxMessages": 10}, "output": {"schema": ANSWER},
         "agentOutcomes": [{"condition": "{{output.resolved}} == true", "finish": False,
                            "transition": {"targetId": "bye"}}]},
        {"name": "bye", "type": "end", "message": "Bye {{user.name}}."}]}


def clerk_flow(url: str, api: Any) -> dict[str, Any]:
    return {"id": "shop", "nodes": [
        {"name": "clerk", "type": "aiagent", "llmConfig": {"url": url}, "userMessage": "{{userInput}}",
         "memory": {"maxMessages": 10}, "askUserForToolsInput": True, "maxToolExecutions": 3,
         "tools": [order_tool(api), refund_tool(api)], "output": {"schema": ANSWER},
         "agentOutcomes": [{"condition": "{{output.response}} contains 'refunded'", "finish": True,
                            "transition": {"targetId": "bye"}}]},
        {"name": "bye", "type": "end", "message": "Bye!"}]}


def test_the_document_a_turn_routes_with_is_the_workers() -> None:
    """The load activity hands the workflow the document as JSON; parsed again, it is the same flow."""
    from chainreact.flows.model import FlowDef

    examples = Path(__file__).resolve().parents[2] / "examples" / "flows"
    paths = sorted(examples.glob("*.json"))
    assert len(paths) >= 2
    for path in paths:
        definition = Flow.load(path).definition
        assert FlowDef.model_validate(definition.model_dump(mode="json", by_alias=True)) == definition, path


def texts(request: Any) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in request.messages if m["role"] in ("user", "assistant")]


async def test_a_conversation_goes_on_across_workers(temporal_client: Any, task_queue: str,
                                                      tmp_path: Path) -> None:
    """Turn 1 on one worker, turn 2 on another (new Flow objects): the second sees the first through the
    session's memory in the store, and its outcome moves the session to the end node."""
    state = f"sqlite:///{tmp_path}/s.db"
    with FakeLLM([reply("Sorry, I will check order 42."), reply("Glad it arrived.", resolved=True)]) as llm:
        durable = DurableFlow("desk", client=temporal_client, task_queue=task_queue)
        user = {"id": "u1", "name": "Ann"}
        async with await open_store(state) as store:
            flow_a = Flow.from_dict(desk_flow(llm.url), store=store)
            async with durable_worker(temporal_client, task_queue, AgentHost(), flows=FlowHost([flow_a])):
                t1 = await durable.send("s1", "My order 42 is late", user=user)
            assert (t1.node, t1.ended) == ("support", False)
            assert [(m.node, m.content) for m in t1.messages] == \
                [("support", "Sorry, I will check order 42.")]
            flow_b = Flow.from_dict(desk_flow(llm.url), store=store)
            async with durable_worker(temporal_client, task_queue, AgentHost(), flows=FlowHost([flow_b])):
                t2 = await durable.send("s1", "It arrived, thanks", user=user)
            assert (t2.node, t2.ended) == (None, True)
            assert [(m.node, m.content) for m in t2.messages] == [("support", "Glad it arrived."),
                                                                   ("bye", "Bye Ann.")]
            assert t2.output == {"response": "Glad it arrived.", "resolved": True}
            # The second model call carried the first turn (memory), then the new message.
            assert texts(llm.chat_requests[1]) == [
                ("user", "My order 42 is late"),
                ("assistant", json.dumps({"response": "Sorry, I will check order 42.", "resolved": False})),
                ("user", "It arrived, thanks")]
            rec = await store.get_run("flow:desk:s1")
            assert rec is not None and rec.snapshot["ended"] is True and rec.version == 2
        llm.assert_all_consumed()
    # The turn's workflow code replays from its history without a worker's state: deterministic.
    history = await temporal_client.get_workflow_handle("flow:desk:s1").fetch_history()
    await Replayer(workflows=[FlowTurnWorkflow], workflow_runner=SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules(*PASSTHROUGH))).replay_workflow(history)


async def _local_events(url: str, api: Any, state: str, messages: list[str]) -> list[list[dict[str, Any]]]:
    out = []
    async with Flow.from_dict(clerk_flow(url, api), state=state) as flow:
        for text in messages:
            out.append([ev.to_dict() async for ev in flow.stream("s1", text)])
    return out


async def test_ask_user_and_outcome_across_turns_stream_the_events_of_an_in_process_turn(
        temporal_client: Any, task_queue: str, tmp_path: Path) -> None:
    """Turn 1 stops to ask for a missing tool argument; turn 2 (the answer) resumes the stored agent run,
    the tool runs once, and the outcome moves the session. The durable turns' events, read live from the
    store, are those of the same conversation in process."""
    script = [{"tool_calls": [{"name": "createRefund", "arguments": {"orderId": "A1", "reason": "late"},
                               "id": "r1"}]},
              reply("Order A1 is refunded: 19.5.")]
    said = ["Refund A1, it came late", "19.5"]
    with shop_api() as api, FakeLLM(script) as local_llm, FakeLLM(script) as llm:
        expected = await _local_events(local_llm.url, api, f"sqlite:///{tmp_path}/local.db", said)
        api.hits.clear()
        async with await open_store(f"sqlite:///{tmp_path}/s.db") as store:
            flow = Flow.from_dict(clerk_flow(llm.url, api), store=store)
            durable = DurableFlow(flow, client=temporal_client, task_queue=task_queue)
            async with durable_worker(temporal_client, task_queue, AgentHost(), flows=FlowHost([flow])):
                got = []
                for text in said:
                    got.append([ev.to_dict() async for ev in durable.stream("s1", text, store=store)])
            assert got == expected
            first, second = got
            assert [e["event"] for e in first] == ["node", "tool_call", "ask_user", "message", "turn_end"]
            assert first[-1] == {"event": "turn_end", "node": "clerk", "current": "clerk", "ended": False,
                                 "question": "To use createRefund I need amount."}
            assert second[-1] == {"event": "turn_end", "node": "bye", "current": "bye", "ended": False}
            assert [(h.path, h.body) for h in api.hits] == \
                [("/refunds", {"orderId": "A1", "reason": "late", "amount": 19.5})]
            rec = await store.get_run("flow:shop:s1")
            assert rec is not None and rec.snapshot["node"] == "bye" and rec.snapshot["pending"] is None
            # The agent run that asked was saved interrupted, claimed by the answer, and ended done.
            runs = [r for r in await store.runs(limit=10) if r.run_id.startswith("clerk-")]
            assert [r.status for r in runs] == ["done"], runs
        llm.assert_all_consumed()


def memory_flow(url: str) -> dict[str, Any]:
    return {"id": "mem", "nodes": [
        {"name": "chat", "type": "aiagent", "llmConfig": {"url": url}, "systemMessage": "Be brief.",
         "userMessage": "{{userInput}}", "output": {"schema": ANSWER},
         "memory": {"maxMessages": 2, "memoryOptimizer": {"summarization": {"retainedMessages": 1}},
                    "longTermMemory": {"memoryId": "ltm-{{user.id}}", "memoryType": "semantic"}}}]}


async def test_summaries_and_long_term_memory_as_in_process(temporal_client: Any, task_queue: str,
                                                            tmp_path: Path) -> None:
    """Three turns with a summarized window and semantic memories: the durable turns make the same model
    requests (the summary and the recalled facts in the system message) and yield the same events."""
    script = [reply("Hello Ann."), {"text": "- The user's name is Ann."},
              reply("Rex is a nice name."), {"text": "- Ann's dog is called Rex."},
              {"text": "Ann introduced herself and her dog Rex."},  # the summary of the first three messages
              reply("Your dog is Rex."), {"text": "NONE"}]
    said = ["I am Ann", "My dog is called Rex", "What is my dog called?"]
    user = {"id": "u1"}
    with FakeLLM(script) as local_llm, FakeLLM(script) as llm:
        async with Flow.from_dict(memory_flow(local_llm.url), state=f"sqlite:///{tmp_path}/l.db") as local:
            expected = [[ev.to_dict() async for ev in local.stream("s1", t, user=user)] for t in said]
        async with await open_store(f"sqlite:///{tmp_path}/s.db") as store:
            flow = Flow.from_dict(memory_flow(llm.url), store=store)
            durable = DurableFlow(flow, client=temporal_client, task_queue=task_queue)
            async with durable_worker(temporal_client, task_queue, AgentHost(), flows=FlowHost([flow])):
                got = [[ev.to_dict() async for ev in durable.stream("s1", t, store=store, user=user)]
                       for t in said]
        assert got == expected
        assert {"event": "memory", "node": "chat", "type": "semantic",
                "written": ["Ann's dog is called Rex."]} in got[1]
        assert [r.messages for r in llm.chat_requests] == [r.messages for r in local_llm.chat_requests]
        system = llm.chat_requests[5].messages[0]["content"]
        assert "Ann introduced herself and her dog Rex." in system and "- Ann's dog is called Rex." in system
        llm.assert_all_consumed()


async def test_collaborators_run_in_the_tool_activity_as_in_process(temporal_client: Any, task_queue: str,
                                                                    tmp_path: Path) -> None:
    """A supervisor delegating to a collaborator node (with its own HTTP tool) and to an agent document:
    the same events (nested tool calls, agent_start/agent_end) and the same model requests as in process."""
    from ..flows.test_collaboration import team_flow

    script = [
        {"tool_calls": [{"name": "billing", "arguments": {"request": "status of A1"}, "id": "s1"}]},
        {"tool_calls": [{"name": "orderLookup", "arguments": {"orderId": "A1"}, "id": "b1"}]},
        {"text": json.dumps({"answer": "A1 shipped, total 19.5"})},
        {"tool_calls": [{"name": "researcher", "arguments": {"request": "usual shipping time"}, "id": "s2"}]},
        {"text": "About 3 days."},
        {"text": json.dumps({"response": "A1 has shipped and should arrive in about 3 days."})}]
    user = {"id": "u1", "name": "Ann"}
    got: dict[str, list[dict[str, Any]]] = {}
    requests = {}
    with shop_api() as api:
        for mode in ("local", "temporal"):
            with FakeLLM(script) as llm:
                researcher = tmp_path / f"researcher-{mode}.json"
                researcher.write_text(json.dumps({
                    "id": "researcher", "type": "ai/agent", "name": "researcher",
                    "configuration": {"url": llm.url, "key": "k", "model": "m",
                                      "systemPrompt": "You research."}}))
                async with await open_store(f"sqlite:///{tmp_path}/{mode}.db") as store:
                    flow = Flow.from_dict(team_flow(llm.url, api, researcher), store=store)
                    if mode == "local":
                        got[mode] = [ev.to_dict()
                                     async for ev in flow.stream("c1", "Where is A1?", user=user)]
                    else:
                        durable = DurableFlow(flow, client=temporal_client, task_queue=task_queue)
                        async with durable_worker(temporal_client, task_queue, AgentHost(),
                                                  flows=FlowHost([flow])):
                            got[mode] = [ev.to_dict() async for ev in
                                         durable.stream("c1", "Where is A1?", store=store, user=user)]
                requests[mode] = [r.messages for r in llm.chat_requests]
                llm.assert_all_consumed()
    assert got["temporal"] == got["local"]
    assert requests["temporal"] == requests["local"]
    kinds = [e["event"] for e in got["temporal"]]
    assert kinds.count("agent_start") == 2 and kinds.count("agent_end") == 2
    assert {"event": "tool_call", "node": "support", "id": "b1", "name": "orderLookup",
            "arguments": '{"orderId":"A1"}', "path": ["support", "billing"]} in got["temporal"]


async def test_turns_of_one_session_sent_at_once_run_one_after_the_other(temporal_client: Any,
                                                                         task_queue: str,
                                                                         tmp_path: Path) -> None:
    def respond(body: dict[str, Any]) -> dict[str, Any]:
        said = [m["content"] for m in body["messages"] if m["role"] == "user"]
        return {**reply(f"seen {len(said)}: {said[-1]}"), "delay": 0.3}  # the two turns overlap

    with FakeLLM(respond) as llm:
        async with await open_store(f"sqlite:///{tmp_path}/s.db") as store:
            flow = Flow.from_dict(desk_flow(llm.url), store=store)
            durable = DurableFlow(flow, client=temporal_client, task_queue=task_queue)
            async with durable_worker(temporal_client, task_queue, AgentHost(), flows=FlowHost([flow])):
                turns = await asyncio.gather(durable.send("s1", "one"), durable.send("s1", "two"))
            # Both ran, neither lost the other's message: the later one saw the earlier one in memory.
            answers = sorted(t.messages[0].content for t in turns)
            assert answers in (["seen 1: one", "seen 2: two"], ["seen 1: two", "seen 2: one"])
            history = await store.history("flow:desk:s1")
            assert len(history) == 4
            rec = await store.get_run("flow:desk:s1")
            assert rec is not None and rec.version == 2


async def test_a_failing_turn_fails_with_the_flows_error_and_moves_nothing(temporal_client: Any,
                                                                          task_queue: str,
                                                                          tmp_path: Path) -> None:
    # Never valid against the schema (no "response"): OutputValidationError after output.maxRetries.
    with FakeLLM([{"text": "{}"}] * 3) as llm:
        async with await open_store(f"sqlite:///{tmp_path}/s.db") as store:
            flow = Flow.from_dict(desk_flow(llm.url), store=store)
            durable = DurableFlow(flow, client=temporal_client, task_queue=task_queue)
            async with durable_worker(temporal_client, task_queue, AgentHost(), flows=FlowHost([flow])):
                turn = await durable.start("s1", "hello")
                events = [e async for e in turn.events(store)]
                try:
                    await turn.result()
                    raise AssertionError("the turn should have failed")
                except DurableRunError as e:
                    assert e.error_type == "OutputValidationError"
            assert events[0] == {"event": "node", "node": "support"}
            assert events[-1]["event"] == "error" and events[-1]["error_type"] == "OutputValidationError"
            assert await store.get_run("flow:desk:s1") is None  # the session did not move
        llm.assert_all_consumed()


async def test_a_rulechain_node_feeds_the_next_agent_node(temporal_client: Any, task_queue: str,
                                                          tmp_path: Path) -> None:
    from ..flows.test_rulechain import ORDERS, lookup_flow

    (tmp_path / "orders.json").write_text(json.dumps(ORDERS))
    with FakeLLM([{"text": json.dumps({"response": "It is on its way."})}]) as llm:
        async with await open_store(f"sqlite:///{tmp_path}/s.db") as store:
            doc = lookup_flow(llm.url, chainFile="orders.json")
            flow = Flow.from_dict(doc, store=store, base_dir=tmp_path)
            durable = DurableFlow(flow, client=temporal_client, task_queue=task_queue)
            async with durable_worker(temporal_client, task_queue, AgentHost(), flows=FlowHost([flow])):
                t = await durable.send("s", "42", user={"id": "u9"})
        assert [(m.node, m.content) for m in t.messages] == [("lookup", "Order 42: shipped."),
                                                             ("explain", "It is on its way.")]
        assert t.ended and t.output == {"response": "It is on its way."}
        assert llm.chat_requests[0].messages[-1]["content"] == "Explain status shipped of order 42"


def triage_flow(url: str, api: Any) -> dict[str, Any]:
    """Two agent nodes in one turn: `triage` goes on (finish: false) to `answer`, which has a tool."""
    llm = {"url": url}
    return {"id": "triage", "nodes": [
        {"name": "triage", "type": "aiagent", "llmConfig": llm, "userMessage": "Triage: {{userInput}}",
         "output": {"schema": ANSWER}, "agentOutcomes": [{"condition": "true", "finish": False,
                                                          "transition": {"targetId": "answer"}}]},
        {"name": "answer", "type": "aiagent", "llmConfig": llm, "userMessage": "Answer: {{userInput}}",
         "tools": [order_tool(api)], "output": {"schema": ANSWER}}]}


def _env() -> dict[str, str]:
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHAINREACT_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    return env


async def test_worker_killed_in_the_middle_of_an_agent_node(temporal_server: DevServer, temporal_client: Any,
                                                           task_queue: str, tmp_path: Path,
                                                           worker_processes: Any) -> None:
    """The worker dies while the turn's second agent node waits for its second model call, after its tool
    ran: another worker finishes the turn. The first node, the second node's first model call and its tool
    call completed before: they do not run again; only the call in flight does (at least once)."""

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        if messages[1]["content"].startswith("Triage:"):
            return reply("billing")
        if not any(m["role"] == "tool" for m in messages):
            return {"tool_calls": [{"id": "o1", "name": "orderLookup", "arguments": {"orderId": "42"}}]}
        return {**reply("Order 42 is shipped."), "delay": 2.0}

    state = f"sqlite:///{tmp_path}/s.db"
    args = ["--temporal", temporal_server.address, "--task-queue", task_queue, "--state", state]
    with shop_api() as api, FakeLLM(respond) as llm:
        doc = tmp_path / "triage.json"
        doc.write_text(json.dumps(triage_flow(llm.url, api)))
        first = worker_processes([str(doc), *args], name="first", env=_env())
        durable = DurableFlow("triage", client=temporal_client, task_queue=task_queue,
                              options=DurableOptions(heartbeat_timeout=2.0))
        turn = await durable.start("s1", "where is my order?")
        deadline = time.monotonic() + 30
        while len(llm.chat_requests) < 3:
            assert time.monotonic() < deadline, "the turn did not reach its last model call"
            await asyncio.sleep(0.02)
        first.kill9()
        worker_processes([str(doc), *args], name="second", env=_env())
        result = await asyncio.wait_for(turn.result(), 60)
        calls = [(r.messages[1]["content"], sum(1 for m in r.messages if m["role"] == "tool"))
                 for r in llm.chat_requests]
        hits = [h.path for h in api.hits]
    assert [(m.node, m.content) for m in result.messages] == [("triage", "billing"),
                                                               ("answer", "Order 42 is shipped.")]
    assert (result.node, result.ended) == ("answer", False)
    assert calls.count(("Triage: where is my order?", 0)) == 1  # completed: in the history, never again
    assert calls.count(("Answer: where is my order?", 0)) == 1
    assert hits == ["/orders/42"]  # the tool call completed before the worker died: not again
    # In flight when the worker died: again, at least once (a loaded machine can miss a 2 s heartbeat).
    assert calls.count(("Answer: where is my order?", 1)) >= 2
    async with await open_store(state) as store:
        rec = await store.get_run("flow:triage:s1")
        assert rec is not None and rec.version == 1 and rec.snapshot["node"] == "answer"


def _cli(*args: str, env: dict[str, str]) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-m", "chainreact", *args], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(json.loads(proc.stdout))


def test_worker_restarted_between_turns_of_cli_flow_sends(temporal_server: DevServer, task_queue: str,
                                                          tmp_path: Path, worker_processes: Any) -> None:
    env = _env()
    state = f"sqlite:///{tmp_path}/s.db"
    with FakeLLM([reply("Sorry, I will check order 42."), reply("Glad it arrived.", resolved=True)]) as llm:
        doc = tmp_path / "desk.json"
        doc.write_text(json.dumps(desk_flow(llm.url)))
        worker = ["--temporal", temporal_server.address, "--task-queue", task_queue, "--state", state]
        send = ["--session", "s1", "--user", '{"id": "u1", "name": "Ann"}', "--json",
                "--temporal", temporal_server.address, "--task-queue", task_queue]
        first = worker_processes([str(doc), *worker], name="first", env=env)
        t1 = _cli("flow", "send", str(doc), "My order 42 is late", *send, env=env)
        sorry = "Sorry, I will check order 42."
        assert t1 == {"node": "support", "ended": False, "output": {"response": sorry, "resolved": False},
                      "messages": [{"node": "support", "role": "assistant", "content": sorry}]}
        first.kill9()
        worker_processes([str(doc), *worker], name="second", env=env)
        t2 = _cli("flow", "send", str(doc), "It arrived, thanks", *send, env=env)
        assert t2["ended"] is True and t2["node"] is None
        assert [m["content"] for m in t2["messages"]] == ["Glad it arrived.", "Bye Ann."]
        assert texts(llm.chat_requests[1])[:2] == [
            ("user", "My order 42 is late"),
            ("assistant", json.dumps({"response": "Sorry, I will check order 42.", "resolved": False}))]
        llm.assert_all_consumed()


def test_chat_with_temporal_prints_what_an_in_process_chat_prints(temporal_server: DevServer,
                                                                  task_queue: str, tmp_path: Path,
                                                                  worker_processes: Any) -> None:
    """`chainreact chat --temporal` over a pipe: streamed answers, a tool call, /reset; the same stdout as
    the same conversation in process."""
    from ..chat.helpers import USER_JSON, chat_flow, orders_server

    def script() -> list[dict[str, Any]]:
        first = {"response": "Which order? \"Quoted\" — é", "resolved": False}
        return [{"text": json.dumps(first), "chunks": 5},
                {"tool_calls": [{"name": "orderLookup", "arguments": {"orderId": "42"}}]},
                {"text": json.dumps({"response": "Order 42 is late.", "resolved": False}), "chunks": 3},
                reply("Hi again.")]

    said = "I want a refund\norder 42\n/reset\nhello\n"
    runs = {}
    with orders_server() as orders:
        for mode in ("local", "temporal"):
            with FakeLLM(script()) as llm:
                doc = tmp_path / f"{mode}.json"
                doc.write_text(json.dumps(chat_flow(llm.url, orders.url)))
                state = f"sqlite:///{tmp_path}/{mode}.db"
                extra: list[str] = []
                if mode == "temporal":
                    worker_processes([str(doc), "--temporal", temporal_server.address, "--task-queue",
                                      task_queue, "--state", state], env=_env())
                    extra = ["--temporal", temporal_server.address, "--task-queue", task_queue]
                runs[mode] = subprocess.run(
                    [sys.executable, "-m", "chainreact", "chat", str(doc), "--state", state, "--user",
                     USER_JSON, "--session", "c1", *extra], input=said, capture_output=True, text=True,
                    timeout=120, env=_env())
                assert runs[mode].returncode == 0, runs[mode].stderr
                llm.assert_all_consumed()
    local, durable = runs["local"], runs["temporal"]
    assert durable.stdout == local.stdout
    assert local.stdout.startswith("greet: Hello Ann!\nsupport: Which order? \"Quoted\" — é\n")
    for line in ('→ orderLookup({"orderId":"42"})', '← orderLookup: {"orderId":"42","status":"late"}',
                 "[session 'c1' reset"):
        assert line in durable.stderr and line in local.stderr, durable.stderr
    assert orders.paths == ["/orders/42", "/orders/42"]
