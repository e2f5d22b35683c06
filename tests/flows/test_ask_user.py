"""`askUserForToolsInput`: a tool call missing a required argument (or the model's own `ask_user`) becomes a
question to the user; the next message is the answer and the stored agent run goes on, in another process
if need be."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from chainreact.flows import Flow
from chainreact.state import open_store

from .servers import order_tool, refund_tool, shop_api

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = {"type": "object", "properties": {"response": {"type": "string"}}, "required": ["response"]}


def answer(text: str) -> dict[str, Any]:
    return {"text": json.dumps({"response": text})}


def clerk_flow(llm_url: str, api: Any, *, ask: bool = True) -> dict[str, Any]:
    return {"id": "shop", "nodes": [
        {"name": "clerk", "type": "aiagent", "llmConfig": {"url": llm_url}, "userMessage": "{{userInput}}",
         "memory": {"maxMessages": 10}, "askUserForToolsInput": ask, "maxToolExecutions": 3,
         "tools": [order_tool(api), refund_tool(api)], "output": {"schema": SCHEMA},
         "agentOutcomes": [{"condition": "{{output.response}} contains 'refunded'", "finish": True,
                            "transition": {"targetId": "bye"}}]},
        {"name": "bye", "type": "end", "message": "Bye!"}]}


def tool_message(request: Any, call_id: str) -> str:
    found = [m for m in request.messages if m.get("role") == "tool" and m.get("tool_call_id") == call_id]
    assert len(found) == 1, request.messages
    return str(found[0]["content"])


SEND = """
import asyncio, json, sys
from chainreact.flows import Flow

async def main():
    async with Flow.from_dict(json.load(open(sys.argv[1])), state=sys.argv[2]) as flow:
        turn = await flow.send("s1", sys.argv[3])
        print(json.dumps(turn.to_dict()))

asyncio.run(main())
"""


def send_in_other_process(flow_file: Path, state: str, text: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHAINREACT_")}
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-c", SEND, str(flow_file), state, text], capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


async def test_missing_argument_is_asked_and_another_process_goes_on_with_the_answer(
        fake_llm: Any, tmp_path: Path) -> None:
    with shop_api() as api:
        srv = fake_llm([
            {"tool_calls": [{"name": "createRefund", "arguments": {"orderId": "A1", "reason": "late"},
                             "id": "r1"}]},
            answer("Order A1 is refunded: 19.5."),
        ])
        state = f"sqlite:///{tmp_path}/s.db"
        doc = clerk_flow(srv.url, api)
        async with Flow.from_dict(doc, state=state) as flow:
            events = [ev async for ev in flow.stream("s1", "Refund A1, it came late")]
            asked = [e for e in events if e.type == "ask_user"]
            assert len(asked) == 1 and asked[0].data["question"] == "To use createRefund I need amount."
            assert asked[0].data["field"] == "amount" and asked[0].data["schema"] == {"type": "number"}
            assert [e.data["content"] for e in events if e.type == "message"] == \
                ["To use createRefund I need amount."]
            end = events[-1]
            assert end.type == "turn_end" and end.data["current"] == "clerk" and not end.data["ended"]
            assert end.data["question"] == "To use createRefund I need amount."
            assert api.hits == []  # nothing ran yet
            # An answer that does not fit the argument's schema is asked again (here: not a number).
            again = await flow.send("s1", "a lot")
            assert again.node == "clerk" and again.output is None
            assert len(again.messages) == 1
            assert again.messages[0].content.startswith("That answer does not fit")
            assert again.messages[0].content.endswith("To use createRefund I need amount.")
        # The pending question and the agent's run are in the store: another process answers.
        flow_file = tmp_path / "flow.json"
        flow_file.write_text(json.dumps(doc))
        out = send_in_other_process(flow_file, state, "19.5")
        assert out == {"node": "bye", "ended": False, "output": {"response": "Order A1 is refunded: 19.5."},
                       "messages": [{"node": "clerk", "role": "assistant",
                                     "content": "Order A1 is refunded: 19.5."}]}
        assert [(h.path, h.body) for h in api.hits] == \
            [("/refunds", {"orderId": "A1", "reason": "late", "amount": 19.5})]
        result = tool_message(srv.chat_requests[1], "r1")
        assert result.startswith("[the user gave amount=19.5]\n") and '"refundId"' in result
        # Memory holds the turn that asked and the final answer: not the question round.
        store = await open_store(state)
        try:
            hist = await store.history("flow:shop:s1")
            assert [(m.role, m.text) for m in hist] == [
                ("user", "Refund A1, it came late"),
                ("assistant", json.dumps({"response": "Order A1 is refunded: 19.5."}))]
            rec = await store.get_run("flow:shop:s1")
            assert rec is not None and rec.snapshot["pending"] is None
        finally:
            await store.close()
        srv.assert_all_consumed()


async def test_several_missing_arguments_are_asked_one_at_a_time(fake_llm: Any, tmp_path: Path) -> None:
    with shop_api() as api:
        srv = fake_llm([
            {"tool_calls": [{"name": "createRefund", "arguments": {"orderId": "B2"}, "id": "r1"}]},
            answer("B2 refunded."),
        ])
        async with Flow.from_dict(clerk_flow(srv.url, api), state=f"sqlite:///{tmp_path}/s.db") as flow:
            t1 = await flow.send("s1", "refund B2")
            assert [m.content for m in t1.messages] == ["To use createRefund I need amount."]
            t2 = await flow.send("s1", "7")
            assert [m.content for m in t2.messages] == ["To use createRefund I need reason."]
            assert api.hits == [] and len(srv.chat_requests) == 1
            t3 = await flow.send("s1", "broken on arrival")
            assert [m.content for m in t3.messages] == ["B2 refunded."]
        assert api.hits[0].body == {"orderId": "B2", "amount": 7, "reason": "broken on arrival"}


async def test_the_model_asks_with_ask_user(fake_llm: Any, tmp_path: Path) -> None:
    with shop_api() as api:
        srv = fake_llm([
            {"tool_calls": [{"name": "ask_user", "arguments": {"question": "Which order number?"},
                             "id": "q"}]},
            {"tool_calls": [{"name": "orderLookup", "arguments": {"orderId": "C3"}, "id": "o"}]},
            answer("C3 is shipped."),
        ])
        async with Flow.from_dict(clerk_flow(srv.url, api), state=f"sqlite:///{tmp_path}/s.db") as flow:
            t1 = await flow.send("s1", "where is my parcel?")
            assert [m.content for m in t1.messages] == ["Which order number?"]
            assert "ask_user" in [t["function"]["name"] for t in srv.chat_requests[0].body["tools"]]
            t2 = await flow.send("s1", "C3")
            assert [m.content for m in t2.messages] == ["C3 is shipped."] and t2.node == "clerk"
        assert tool_message(srv.chat_requests[1], "q") == "C3"
        assert [h.path for h in api.hits] == ["/orders/C3"]


async def test_without_ask_user_a_missing_argument_is_an_error_for_the_model(
        fake_llm: Any, tmp_path: Path) -> None:
    with shop_api() as api:
        srv = fake_llm([
            {"tool_calls": [{"name": "createRefund", "arguments": {"orderId": "A1"}, "id": "r1"}]},
            answer("How much should I refund?"),
        ])
        async with Flow.from_dict(clerk_flow(srv.url, api, ask=False),
                                  state=f"sqlite:///{tmp_path}/s.db") as flow:
            t = await flow.send("s1", "refund A1")
        assert [m.content for m in t.messages] == ["How much should I refund?"]
        assert "ask_user" not in [t["function"]["name"] for t in srv.chat_requests[0].body["tools"]]
        refused = tool_message(srv.chat_requests[1], "r1")
        assert refused.startswith("Error: invalid arguments for createRefund")
        assert api.hits == []


async def test_the_tool_budget_goes_on_across_the_pause(fake_llm: Any, tmp_path: Path) -> None:
    """maxToolExecutions 2: one lookup before the question, the refund with the answer (in a new Flow
    object, as another process would): the budget is spent, the next model call has no tools."""
    with shop_api() as api:
        srv = fake_llm([
            {"tool_calls": [{"name": "orderLookup", "arguments": {"orderId": "D4"}, "id": "o"}]},
            {"tool_calls": [{"name": "createRefund", "arguments": {"orderId": "D4", "reason": "late"},
                             "id": "r"}]},
            answer("D4 refunded."),
        ])
        doc = clerk_flow(srv.url, api)
        doc["nodes"][0]["maxToolExecutions"] = 2
        state = f"sqlite:///{tmp_path}/s.db"
        async with Flow.from_dict(doc, state=state) as flow:
            t1 = await flow.send("s1", "refund D4")
            assert [m.content for m in t1.messages] == ["To use createRefund I need amount."]
        async with Flow.from_dict(doc, state=state) as flow:
            t2 = await flow.send("s1", "5")
        assert [m.content for m in t2.messages] == ["D4 refunded."]
        assert [h.path for h in api.hits] == ["/orders/D4", "/refunds"]
        assert "tools" in srv.chat_requests[1].body and "tools" not in srv.chat_requests[2].body


async def test_asking_with_agent_events(fake_llm: Any, tmp_path: Path) -> None:
    """`stream(agent_events=True)` (what `chainreact chat` uses): the agent's own events come as `agent`
    events, the question as `ask_user` and a message, and the answer's turn resumes the run."""
    with shop_api() as api:
        srv = fake_llm([
            {"tool_calls": [{"name": "createRefund", "arguments": {"orderId": "E5", "amount": 3},
                             "id": "r"}]},
            answer("E5 refunded."),
        ])
        async with Flow.from_dict(clerk_flow(srv.url, api), state=f"sqlite:///{tmp_path}/s.db") as flow:
            first = [ev async for ev in flow.stream("s1", "refund E5", agent_events=True)]
            inner = [ev.data["agent_event"].type for ev in first if ev.type == "agent"]
            assert inner[0] == "run_start" and "tool_call" in inner and inner[-1] == "interrupted"
            assert [ev.type for ev in first if ev.type in ("ask_user", "message")] == ["ask_user", "message"]
            assert first[-1].data["question"] == "To use createRefund I need reason."
            second = [ev async for ev in flow.stream("s1", "damaged", agent_events=True)]
            inner = [ev.data["agent_event"].type for ev in second if ev.type == "agent"]
            assert "tool_result" in inner and inner[-1] == "final"
            assert [ev.data["content"] for ev in second if ev.type == "message"] == ["E5 refunded."]
        assert api.hits[0].body == {"orderId": "E5", "amount": 3, "reason": "damaged"}
        assert all(r.body.get("stream") is True for r in srv.chat_requests)


async def test_reset_drops_the_waiting_question_and_its_run(fake_llm: Any, tmp_path: Path) -> None:
    with shop_api() as api:
        srv = fake_llm([
            {"tool_calls": [{"name": "createRefund", "arguments": {"orderId": "F6"}, "id": "r"}]},
            answer("Hello!"),
        ])
        async with Flow.from_dict(clerk_flow(srv.url, api), state=f"sqlite:///{tmp_path}/s.db") as flow:
            await flow.send("s1", "refund F6")
            store = await flow.store()
            waiting = await store.runs(status="interrupted")
            run_ids = [r.run_id for r in waiting if r.run_id != "flow:shop:s1"]
            assert len(run_ids) == 1
            await flow.reset("s1")
            assert await store.get_run(run_ids[0]) is None
            t = await flow.send("s1", "hi")  # a new turn, not an answer
            assert [m.content for m in t.messages] == ["Hello!"]
            assert srv.chat_requests[1].messages[-1] == {"role": "user", "content": "hi"}
        assert api.hits == []
