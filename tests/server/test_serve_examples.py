"""The README's `chainreact serve examples/`: everything in examples/ loads and is served, nothing broken."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.serving import ask_every_id, serve


def test_serve_examples_folder_as_the_readme_says() -> None:
    with serve("examples/") as served:
        base = served.base
        assert served.ready["problems"] == []
        assert served.ready["cannot_run"] == []  # assistant names no endpoint: it needs no --global
        models = {m["id"]: m["owned_by"] for m in httpx.get(base + "/v1/models", timeout=10).json()["data"]}
        # The README names demo-adder; the examples' chains and flow are served next to it.
        assert models["demo-adder"] == "chainreact-agent"
        assert models["alarm"] == models["assistant"] == "chainreact-chain"
        assert models["support"] == "chainreact-flow"
        # A chain that needs no model runs through RuleGo's route, as in the README's `chain run` line.
        r = httpx.post(base + "/api/v1/rules/alarm/execute/TELEMETRY?room=kitchen", json={"temperature": 71},
                       timeout=30)
        assert r.status_code == 200, r.text
        assert r.text == "KITCHEN: 71 is too hot"  # RuleGo's answer: the out message's data
    assert "Traceback" not in served.stderr, served.stderr
    assert "serving agent 'demo-adder'" in served.stderr


def _respond(body: dict[str, Any]) -> dict[str, Any]:
    """The one model every example points at: JSON when the request asks for it (the support flow's
    nodes), else text."""
    if body.get("response_format"):
        return {"text": json.dumps({"response": "Your shoes ship today.", "resolved": False,
                                    "priority": "low", "score": 5})}
    return {"text": "An answer from the model."}


def test_every_example_served_answers_with_the_openai_variables_set(fake_llm: Any) -> None:
    """One switch: with OPENAI_BASE_URL / OPENAI_API_KEY at a model (here a FakeLLM), every id that
    `chainreact serve examples/` lists answers a chat completion, and the key goes with every model call."""
    llm = fake_llm(_respond)
    with serve("examples/", "--no-watch",
               env={"OPENAI_BASE_URL": llm.url, "OPENAI_API_KEY": "sk-newcomer"}) as served:
        answers = ask_every_id(served, "Is 71 degrees too hot?", timeout=60)
    assert {"demo-adder", "alarm", "assistant", "support"} <= set(answers)
    for ident, (status, body) in answers.items():
        assert status == 200, (ident, body)
        assert body["choices"][0]["message"]["content"], (ident, body)
    assert "An answer from the model." in answers["demo-adder"][1]["choices"][0]["message"]["content"]
    assert "Your shoes ship today." in answers["support"][1]["choices"][0]["message"]["content"]
    # agents, a chain's agent node and the flow's node (provider: openai) all called the model, with the key
    assert len(llm.chat_requests) >= 3
    assert {r.headers.get("authorization") for r in llm.chat_requests} == {"Bearer sk-newcomer"}
    assert "Traceback" not in served.stderr, served.stderr
    # ... and serve said so when it started
    assert (f"model: a document that names no endpoint uses {llm.url}, model gpt-4o-mini "
            "(OPENAI_BASE_URL / OPENAI_API_KEY)\n") in served.stderr


def test_the_support_flow_keeps_two_anonymous_clients_apart(fake_llm: Any) -> None:
    """Two OpenAI clients, neither logged in (no user object: `user` names only their sessions), talk to
    the shipped support flow, whose memoryId is support-{{user.id}}. Before, both conversations were
    kept under "support-": the second client's model call carried the first client's order number, and
    each was greeted "Hello , "."""
    llm = fake_llm(_respond)
    with serve("examples/", "--no-watch",
               env={"OPENAI_BASE_URL": llm.url, "OPENAI_API_KEY": "sk-newcomer"}) as served:
        def say(session: str, text: str) -> str:
            r = httpx.post(served.base + "/v1/chat/completions", timeout=60, json={
                "model": "support", "user": session, "messages": [{"role": "user", "content": text}]})
            assert r.status_code == 200, r.text
            return str(r.json()["choices"][0]["message"]["content"])

        assert say("ann-chat", "Hi").startswith("Hello there, this is Shoes&Co support.")
        say("ann-chat", "My order 7777 is late")
        say("bob-chat", "Hi")
        say("bob-chat", "Where is my order?")
    bob_call = json.dumps(llm.chat_requests[-1].messages)
    assert "Where is my order?" in bob_call and "7777" not in bob_call
    ann_call = json.dumps(llm.chat_requests[1].messages)
    assert "My order 7777 is late" in ann_call and "Customer says: Hi" in ann_call  # her own turns stay
    assert all("The user:" not in r.messages[0]["content"] for r in llm.chat_requests)  # no " (ID: )"


def _team_model(body: dict[str, Any]) -> dict[str, Any]:
    """The team flow's desk delegates to billing, billing looks order 42 up, each answers in its schema."""
    tools = {t["function"]["name"] for t in body.get("tools") or []}
    last = body["messages"][-1]
    if last["role"] == "user" and "billing" in tools:
        return {"tool_calls": [{"name": "billing", "arguments": {"request": "status of order 42"}}]}
    if last["role"] == "user" and "orderLookup" in tools:
        return {"tool_calls": [{"name": "orderLookup", "arguments": {"orderId": "42"}}]}
    if "orderLookup" in tools:
        return {"text": json.dumps({"answer": "Order 42: " + str(last["content"])})}
    return {"text": json.dumps({"response": "Billing says: " + str(last["content"]), "resolved": False})}


def test_the_team_flows_tools_answer_with_the_shop_api_beside_it(fake_llm: Any) -> None:
    """docs/server.md: `python examples/flows/shop_api.py` beside `chainreact serve examples/` makes the team
    flow's tools answer (team.json points them at 127.0.0.1:8080)."""
    import subprocess
    import sys

    from tests.serving import ROOT

    llm = fake_llm(_team_model)
    shop = subprocess.Popen([sys.executable, "examples/flows/shop_api.py"], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert shop.stdout is not None
        started = shop.stdout.readline()
        assert started.startswith("shop API on http://127.0.0.1:8080"), (started, shop.stderr.read())
        with serve("examples/", "--no-watch",
                   env={"OPENAI_BASE_URL": llm.url, "OPENAI_API_KEY": "sk-newcomer"}) as served:
            r = httpx.post(served.base + "/v1/chat/completions", timeout=60, json={
                "model": "team", "messages": [{"role": "user", "content": "Where is my order 42?"}]})
    finally:
        shop.terminate()
        shop.wait(10)
    assert r.status_code == 200, r.text
    answer = r.json()["choices"][0]["message"]["content"]
    assert answer.startswith("Billing says: ") and "delivered late" in answer and "89" in answer, answer
