"""The turn engine against the scripted fake server: outcomes in order, finish/go-on, transitions, the end,
memory windows in the state store, structured output with validate-and-retry, llmConfig mapping."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chainreact.flows import Flow, OutputValidationError

SUPPORT_SCHEMA = {
    "type": "object",
    "properties": {"response": {"type": "string"}, "resolved": {"type": "boolean"},
                   "priority": {"type": "string", "enum": ["low", "urgent"]}},
    "required": ["response", "resolved"],
}


def support_flow(url: str) -> dict[str, Any]:
    llm = {"url": url, "apiKey": "sk-test"}
    return {
        "id": "support", "name": "Support",
        "nodes": [
            {"name": "greet", "type": "message", "start": True, "message": "Hello {{user.name}}!",
             "transition": {"targetId": "support"}},
            {"name": "support", "type": "aiagent", "llmConfig": llm,
             "systemMessage": "You help customers of {{user.shop}}.",
             "userMessage": "Customer says: {{userInput}}",
             "userIdentityExpression": "{{user.name}} (ID: {{user.id}})",
             "memory": {"maxMessages": 4},
             "output": {"schema": SUPPORT_SCHEMA},
             "answerMessage": "Anything else, {{user.name}}?",
             "agentOutcomes": [
                 {"condition": "{{output.resolved}} == true", "finish": True, "answerAfterFinish": True,
                  "transition": {"targetId": "survey"}},
                 {"condition": "{{output.priority}} == 'urgent'", "finish": False,
                  "transition": {"targetId": "escalate"}},
             ]},
            {"name": "escalate", "type": "aiagent", "llmConfig": llm,
             "userMessage": "Escalate: {{userInput}}",
             "output": {"schema": {"type": "object", "properties": {"answer": {"type": "string"},
                                                                    "ticket": {"type": "string"}}}},
             "transition": {"targetId": "support"}},
            {"name": "survey", "type": "aiagent", "llmConfig": llm, "userMessage": "Rate: {{userInput}}",
             "output": {"schema": {"type": "object", "properties": {"score": {"type": "integer"}},
                                   "required": ["score"]}},
             "agentOutcomes": [
                 {"condition": "{{output.score}} + 'x' == 'y'", "transition": {"end": True}},  # fails at run
                 {"condition": "{{output.score}} >= 4", "transition": {"targetId": "bye"}, "finish": False},
             ]},
            {"name": "bye", "type": "end", "message": "Bye {{user.name}}, score {{vars.survey.score}}."},
        ],
    }


def turn(obj: dict[str, Any]) -> dict[str, Any]:
    return {"text": json.dumps(obj)}


USER = {"id": "u1", "name": "Ann", "shop": "Shoes&Co"}


async def test_a_conversation_through_outcomes_transitions_and_the_end(fake_llm: Any, tmp_path: Path) -> None:
    srv = fake_llm([
        turn({"response": "Sorry, checking order 42.", "resolved": False, "priority": "urgent"}),
        turn({"answer": "A human will call you.", "ticket": "T-1"}),
        turn({"response": "Glad it arrived!", "resolved": True}),
        turn({"score": 5}),
    ])
    async with Flow.from_dict(support_flow(srv.url), state=f"sqlite:///{tmp_path}/s.db") as flow:
        assert await flow.current_node("s1") == "greet"
        # Turn 1: greet goes on (finish false by default) to support; 'urgent' (second outcome) goes on
        # to escalate in the same turn; escalate's own transition waits on support.
        t1 = await flow.send("s1", "my order 42 is late", user=USER)
        assert [(m.node, m.content) for m in t1.messages] == [
            ("greet", "Hello Ann!"), ("support", "Sorry, checking order 42."),
            ("escalate", "A human will call you.")]
        assert t1.node == "support" and not t1.ended
        assert t1.output == {"answer": "A human will call you.", "ticket": "T-1"}
        first = srv.chat_requests[0]
        assert first.messages[0] == {"role": "system", "content":
                                     "You help customers of Shoes&Co.\n\nThe user: Ann (ID: u1)"}
        assert first.messages[-1] == {"role": "user", "content": "Customer says: my order 42 is late"}
        assert first.body["response_format"]["type"] == "json_schema"
        assert first.body["response_format"]["json_schema"]["schema"] == SUPPORT_SCHEMA
        assert first.body["model"] == "gpt-4o"  # aiModel's default: no overrideParams.model
        assert first.headers["authorization"] == "Bearer sk-test"
        assert srv.chat_requests[1].messages[-1]["content"] == "Escalate: my order 42 is late"

        # Turn 2: the first outcome matches: finish, closing message, wait on survey.
        t2 = await flow.send("s1", "it arrived, thanks", user=USER)
        assert [m.content for m in t2.messages] == ["Glad it arrived!", "Anything else, Ann?"]
        assert (t2.node, t2.ended) == ("survey", False)
        # Memory: support sees the window of the session's conversation (maxMessages 4): the last four
        # stored messages (its own and escalate's turn-1 exchanges), then the new user message.
        sent = srv.chat_requests[2].messages
        assert [m["role"] for m in sent] == ["system", "user", "assistant", "user", "assistant", "user"]
        assert sent[1]["content"] == "Customer says: my order 42 is late"
        assert sent[3]["content"] == "Escalate: my order 42 is late"

        # Turn 3: survey has no memory and no text field; the first outcome fails at run time (a warning,
        # skipped), the second goes on to the end node.
        t3 = await flow.send("s1", "5 stars", user=USER)
        assert [m.content for m in t3.messages] == ["Bye Ann, score 5."]
        assert t3.ended and t3.node is None and t3.output == {"score": 5}
        assert len(t3.warnings) == 1 and "agentOutcomes[0]" in t3.warnings[0]
        assert [m["role"] for m in srv.chat_requests[3].messages] == ["system", "user"]
        assert t3.to_dict() == {"node": None, "ended": True, "output": {"score": 5},
                                "messages": [{"node": "bye", "role": "assistant",
                                              "content": "Bye Ann, score 5."}]}
        srv.assert_all_consumed()
        # An ended flow starts again at the start node.
        assert await flow.current_node("s1") == "greet"
        # Another session is independent.
        assert await flow.current_node("s2") == "greet"


async def test_no_outcome_match_stays_on_the_node(fake_llm: Any, tmp_path: Path) -> None:
    srv = fake_llm([turn({"response": "Which order?", "resolved": False}),
                    turn({"response": "Found it.", "resolved": False})])
    doc = support_flow(srv.url)
    doc["nodes"][1]["start"], doc["nodes"][0]["start"] = True, False
    async with Flow.from_dict(doc, state=f"sqlite:///{tmp_path}/s.db") as flow:
        t1 = await flow.send("s", "hi", user=USER)
        t2 = await flow.send("s", "order 7", user=USER)
    assert [m.content for m in t1.messages] == ["Which order?"] and t1.node == "support"
    assert [m.content for m in t2.messages] == ["Found it."] and t2.node == "support"


async def test_invalid_output_is_asked_again_with_the_errors(fake_llm: Any, tmp_path: Path) -> None:
    srv = fake_llm([{"text": '{"response": 3}'},
                    {"text": '```json\n{"response": "ok", "resolved": false}\n```'}])
    doc = support_flow(srv.url)
    doc["nodes"][0]["start"], doc["nodes"][1]["start"] = False, True
    async with Flow.from_dict(doc, state=f"sqlite:///{tmp_path}/s.db") as flow:
        t = await flow.send("s", "hi", user=USER)
    assert [m.content for m in t.messages] == ["ok"]
    retry = srv.chat_requests[1].messages
    assert retry[-2] == {"role": "assistant", "content": '{"response": 3}'}
    assert "$.response: expected string" in retry[-1]["content"]
    assert "resolved" in retry[-1]["content"]  # the missing required property is named


async def test_output_that_never_validates_fails_and_loses_nothing(fake_llm: Any, tmp_path: Path) -> None:
    srv = fake_llm([{"text": "not json"}, {"text": "{}"}, {"text": "[1]"}])
    doc = support_flow(srv.url)
    doc["nodes"][0]["start"], doc["nodes"][1]["start"] = False, True
    url = f"sqlite:///{tmp_path}/s.db"
    async with Flow.from_dict(doc, state=url) as flow:
        with pytest.raises(OutputValidationError) as ei:
            await flow.send("s", "hi", user=USER)
        assert ei.value.attempts == 3  # the first answer and maxRetries (2) more
        assert any("expected object" in e for e in ei.value.errors)
        assert await flow.current_node("s") == "support"
        store = await flow.store()
        assert await store.history("flow:support:s") == []  # no half turn remembered


async def test_login_required_refuses_without_a_user(fake_llm: Any, tmp_path: Path) -> None:
    srv = fake_llm([turn({"response": "Hi Ann.", "resolved": False})])
    doc = support_flow(srv.url)
    doc["nodes"][0]["start"], doc["nodes"][1]["start"] = False, True
    doc["nodes"][1]["loginRequired"] = True
    async with Flow.from_dict(doc, state=f"sqlite:///{tmp_path}/s.db") as flow:
        events = [e.type async for e in flow.stream("s", "hi")]
        assert "login_required" in events
        assert srv.chat_requests == []
        t = await flow.send("s", "hi", user=USER)
    assert [m.content for m in t.messages] == ["Hi Ann."]


async def test_llm_config_override_params_reach_the_request(fake_llm: Any, tmp_path: Path) -> None:
    srv = fake_llm([turn({"response": "x", "resolved": True})])
    doc = support_flow(srv.url)
    doc["nodes"] = [doc["nodes"][1] | {"start": True, "agentOutcomes": []}]
    doc["nodes"][0]["llmConfig"]["overrideParams"] = {
        "model": "m-1", "temperature": 0.2, "topP": 0.5, "maxTokens": 100, "stop": ["END"], "n": 1,
        "logprobs": 2, "presencePenalty": 0.1, "frequencyPenalty": 0.3, "logitBias": {"50256": -100},
        "required": {"seed": 7}}
    async with Flow.from_dict(doc, state=f"sqlite:///{tmp_path}/s.db") as flow:
        await flow.send("s", "hi")
    body = srv.chat_requests[0].body
    assert body["model"] == "m-1"
    assert (body["temperature"], body["top_p"], body["max_completion_tokens"],
            body["stop"]) == (0.2, 0.5, 100, ["END"])
    assert (body["presence_penalty"], body["frequency_penalty"]) == (0.1, 0.3)
    assert (body["n"], body["logprobs"], body["top_logprobs"], body["seed"]) == (1, True, 2, 7)
    assert body["logit_bias"] == {"50256": -100}


async def test_a_loop_without_a_user_turn_is_stopped(fake_llm: Any, tmp_path: Path) -> None:
    doc = {"id": "loop", "nodes": [
        {"name": "a", "type": "message", "message": "a", "transition": {"targetId": "b"}},
        {"name": "b", "type": "message", "message": "b", "transition": {"targetId": "a"}}]}
    from chainreact.flows import FlowError

    async with Flow.from_dict(doc, state=f"sqlite:///{tmp_path}/s.db") as flow:
        with pytest.raises(FlowError, match="without waiting for the user"):
            await flow.send("s", "hi")
