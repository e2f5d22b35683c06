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
