"""`chainreact chat` with stdin not a terminal: every line is one message, no prompt; `/reset`, `//text`,
a failed turn that does not end the chat (exit status 1 at the end), the session shared with `flow send`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from .helpers import USER_JSON, answer, chat_flow, cli_env, orders_server


def chat(flow: Path, state: str, stdin: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chainreact", "chat", str(flow), "--state", state,
                           "--user", USER_JSON, *extra], input=stdin, capture_output=True, text=True,
                          timeout=120, env=cli_env())


def test_lines_in_answers_out_with_tools_reset_and_a_failed_turn(fake_llm: Any, tmp_path: Path) -> None:
    with orders_server() as orders:
        srv = fake_llm([
            answer({"response": "Which order? \"Quoted\" — é 🎉", "resolved": False}, chunks=7),
            {"tool_calls": [{"name": "orderLookup", "arguments": {"orderId": "42"}}]},
            answer({"response": "Order 42 is late; refund started.", "resolved": True}, chunks=3),
            {"status": 400, "body": {"error": {"message": "bad request, scripted"}}},
            answer({"response": "Hi again.", "resolved": False}),
        ])
        flow = tmp_path / "support.json"
        flow.write_text(json.dumps(chat_flow(srv.url, orders.url)))
        state = f"sqlite:///{tmp_path}/state.db"
        r = chat(flow, state, "I want a refund\n\norder 42\n/bogus\n//slash\n/reset\nhello\n",
                 "--session", "p1")
    assert r.returncode == 1, r.stderr  # the scripted 400 failed one turn
    assert r.stdout == ("greet: Hello Ann!\n"
                        "support: Which order? \"Quoted\" — é 🎉\n"
                        "support: Order 42 is late; refund started.\n"
                        "support: Anything else, Ann?\n"
                        "greet: Hello Ann!\n"
                        "support: Hi again.\n")
    err = r.stderr
    assert '→ orderLookup({"orderId":"42"})' in err
    assert '← orderLookup: {"orderId":"42","status":"late"}' in err
    assert orders.paths == ["/orders/42"]
    assert "unknown command /bogus" in err
    assert "bad request, scripted" in err
    assert "[session 'p1' reset" in err
    assert "you> " not in r.stdout + err  # no prompt without a terminal
    # `//slash` was sent as "/slash" (it is the turn that failed); after /reset the memory was empty.
    assert srv.chat_requests[3].messages[-1]["content"] == "Rate: /slash"  # the session was at survey
    assert [m["content"] for m in srv.chat_requests[4].messages[1:]] == ["Customer says: hello"]


def test_chat_and_flow_send_continue_one_session(fake_llm: Any, tmp_path: Path) -> None:
    srv = fake_llm([answer({"response": "Which order?", "resolved": False}),
                    answer({"response": "Found it.", "resolved": False})])
    flow = tmp_path / "support.json"
    flow.write_text(json.dumps(chat_flow(srv.url, "http://127.0.0.1:9")))
    state = f"sqlite:///{tmp_path}/state.db"
    r = chat(flow, state, "refund please\n", "--session", "shared")
    assert r.returncode == 0, r.stderr
    assert r.stdout.endswith("support: Which order?\n")
    send = subprocess.run([sys.executable, "-m", "chainreact", "flow", "send", str(flow), "order 7",
                           "--session", "shared", "--state", state, "--user", USER_JSON, "--json"],
                          capture_output=True, text=True, timeout=120, env=cli_env())
    assert send.returncode == 0, send.stderr
    out = json.loads(send.stdout)
    assert out["node"] == "support" and [m["content"] for m in out["messages"]] == ["Found it."]
    # flow send saw chat's exchange in the session memory (no greeting: the session was at `support`).
    assert [m["content"] for m in srv.chat_requests[1].messages[1:]] == [
        "Customer says: refund please", json.dumps({"response": "Which order?", "resolved": False}),
        "Customer says: order 7"]


def test_chat_usage_errors(tmp_path: Path) -> None:
    flow = tmp_path / "f.json"
    flow.write_text(json.dumps(chat_flow("http://127.0.0.1:9/v1", "http://127.0.0.1:9")))
    r = subprocess.run([sys.executable, "-m", "chainreact", "chat", str(flow), "--user", "[1]"],
                       input="", capture_output=True, text=True, timeout=60, env=cli_env())
    assert r.returncode == 2 and "--user: expected a JSON object" in r.stderr
    r = subprocess.run([sys.executable, "-m", "chainreact", "chat", str(tmp_path / "missing.json")],
                       input="", capture_output=True, text=True, timeout=60, env=cli_env())
    assert r.returncode == 1 and "missing.json" in r.stderr


def test_a_missing_tool_argument_is_asked_at_the_prompt(fake_llm: Any, tmp_path: Path) -> None:
    """askUserForToolsInput through the chat (streaming path): the question is the node's message, the
    next line answers it, the tool runs with the answer."""
    with orders_server() as orders:
        srv = fake_llm([
            {"tool_calls": [{"name": "orderLookup", "arguments": {}, "id": "c1"}]},
            answer({"response": "Order 42 is late.", "resolved": False}, chunks=3),
        ])
        doc = chat_flow(srv.url, orders.url)
        doc["nodes"][0]["transition"] = {"targetId": "support"}
        doc["nodes"][1]["askUserForToolsInput"] = True
        flow = tmp_path / "support.json"
        flow.write_text(json.dumps(doc))
        r = chat(flow, f"sqlite:///{tmp_path}/state.db", "where is my order?\n42\n", "--session", "a1")
    assert r.returncode == 0, r.stderr
    assert r.stdout == ("greet: Hello Ann!\n"
                        "support: To use orderLookup I need orderId.\n"
                        "support: Order 42 is late.\n")
    assert orders.paths == ["/orders/42"]
    assert len(srv.chat_requests) == 2
