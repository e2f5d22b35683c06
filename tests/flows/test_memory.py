"""Memory with summarization: older messages are folded into one stored summary by the model, the last
`retainedMessages` kept; the summary is refreshed from the previous one and only the new messages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chainreact.flows import Flow
from chainreact.flows.memory import SUMMARY_HEADER


def chat_flow(url: str) -> dict[str, Any]:
    return {"id": "chat", "nodes": [
        {"name": "chat", "type": "aiagent", "llmConfig": {"url": url}, "systemMessage": "Be brief.",
         "userMessage": "{{userInput}}",
         "memory": {"memoryId": "mem-{{user.id}}", "maxMessages": 4,
                    "memoryOptimizer": {"summarization": {"retainedMessages": 2,
                                                          "promptMessage": "Summarize for support."}}},
         "output": {"schema": {"type": "object", "properties": {"response": {"type": "string"}}}}}]}


def reply(n: int) -> dict[str, str]:
    return {"text": json.dumps({"response": f"r{n}"})}


async def test_summary_is_made_then_refreshed_incrementally(fake_llm: Any, tmp_path: Path) -> None:
    srv = fake_llm([reply(1), reply(2), reply(3),
                    {"text": "S1: the user said m1, m2."}, reply(4),
                    reply(5),
                    {"text": "S2: m1 to m4."}, reply(6)])
    user = {"id": "u1"}
    async with Flow.from_dict(chat_flow(srv.url), state=f"sqlite:///{tmp_path}/s.db") as flow:
        for i in range(1, 4):
            t = await flow.send("s", f"m{i}", user=user)
            assert t.messages[0].content == f"r{i}"
        # Turn 3 saw the whole window (4 stored messages), no summary yet.
        third = srv.chat_requests[2].messages
        assert [m["content"] for m in third[1:]] == ["m1", '{"response": "r1"}', "m2", '{"response": "r2"}',
                                                     "m3"]
        # Turn 4: 6 stored messages > maxMessages 4: the oldest 4 are folded into a summary, 2 kept.
        t = await flow.send("s", "m4", user=user)
        assert t.messages[0].content == "r4"
        summ_req = srv.chat_requests[3]
        assert "response_format" not in summ_req.body
        text = summ_req.messages[-1]["content"]
        assert text.startswith("Summarize for support.") and "user: m1" in text and "user: m2" in text
        assert "m3" not in text and "The summary so far" not in text
        run4 = srv.chat_requests[4].messages
        assert run4[0]["content"] == "Be brief.\n\n" + SUMMARY_HEADER + "S1: the user said m1, m2."
        assert [m["content"] for m in run4[1:]] == ["m3", '{"response": "r3"}', "m4"]
        # Turn 5: 4 uncovered messages: no model call for the summary, the stored one is used.
        await flow.send("s", "m5", user=user)
        run5 = srv.chat_requests[5].messages
        assert run5[0]["content"].endswith("S1: the user said m1, m2.")
        assert [m["content"] for m in run5[1:]][-1] == "m5" and len(run5) == 6
        # Turn 6: refreshed from S1 and only the messages it does not cover (m3, r3, m4, r4).
        await flow.send("s", "m6", user=user)
        refresh = srv.chat_requests[6].messages[-1]["content"]
        assert "The summary so far:\nS1: the user said m1, m2." in refresh
        assert "user: m3" in refresh and "user: m4" in refresh and "user: m1" not in refresh
        assert "m5" not in refresh
        run6 = srv.chat_requests[7].messages
        assert run6[0]["content"].endswith("S2: m1 to m4.")
        assert [m["content"] for m in run6[1:]] == ["m5", '{"response": "r5"}', "m6"]
    srv.assert_all_consumed()


async def test_summary_survives_a_new_flow_object(fake_llm: Any, tmp_path: Path) -> None:
    srv = fake_llm([reply(1), reply(2), reply(3), {"text": "S1"}, reply(4), reply(5)])
    state = f"sqlite:///{tmp_path}/s.db"
    for i in range(1, 5):
        async with Flow.from_dict(chat_flow(srv.url), state=state) as flow:
            await flow.send("s", f"m{i}", user={"id": "u1"})
    async with Flow.from_dict(chat_flow(srv.url), state=state) as flow:
        await flow.send("s", "m5", user={"id": "u1"})
    assert srv.chat_requests[-1].messages[0]["content"].endswith(SUMMARY_HEADER + "S1")
    srv.assert_all_consumed()


async def test_long_term_episodic_memory_is_recalled_in_a_new_session(fake_llm: Any, tmp_path: Path) -> None:
    srv = fake_llm([{"text": json.dumps({"response": "Nice name!"})},
                    {"text": json.dumps({"response": "Rex."})},
                    {"text": json.dumps({"response": "No idea."})}])
    doc = chat_flow(srv.url)
    doc["nodes"][0]["memory"] = {"longTermMemory": {"memoryId": "ltm-{{user.id}}"}}
    async with Flow.from_dict(doc, state=f"sqlite:///{tmp_path}/s.db") as flow:
        await flow.send("s1", "my dog is called Rex", user={"id": "u1"})
        assert "remember" not in srv.chat_requests[0].messages[0]["content"]  # nothing stored yet
        await flow.send("s2", "what is my dog called?", user={"id": "u1"})
        system = srv.chat_requests[1].messages[0]["content"]
        assert ("Things you remember that may be relevant:\n- The user said: my dog is called Rex\n"
                "The assistant answered: Nice name!") in system
        assert len(srv.chat_requests[1].messages) == 2  # a new session: no conversation window
        # Another user's memory (another memoryId) is not recalled.
        await flow.send("s3", "what is my dog called?", user={"id": "u2"})
        assert "Rex" not in srv.chat_requests[2].messages[0]["content"]
        store = await flow.store()
        kept = await store.memories(namespace="ltm-u1")
        assert [m.type for m in kept] == ["episodic", "episodic"] and {m.scope for m in kept} == {"chat"}


async def test_sessions_count_the_messages_kept_under_the_users_memory_id(fake_llm: Any,
                                                                          tmp_path: Path) -> None:
    # Turns keep their messages under "mem-{{user.id}}"; the session (its snapshot keeps the last turn's
    # user) counts them there. Before: 0 messages, counted under the session's own key.
    srv = fake_llm([reply(1), reply(2), reply(3)])
    async with Flow.from_dict(chat_flow(srv.url), state=f"sqlite:///{tmp_path}/s.db") as flow:
        for i in range(1, 4):
            await flow.send("s", f"m{i}", user={"id": "u1", "name": "Ann"})
        rec = await (await flow.store()).get_run(flow.session_key("s"))
        assert rec is not None and rec.snapshot["user"] == {"id": "u1", "name": "Ann"}
        assert [(s.session, s.messages) for s in await flow.sessions()] == [("s", 6)]


async def test_memory_ids_that_name_a_missing_user_are_not_shared(fake_llm: Any, tmp_path: Path) -> None:
    # Turns without a user id: "mem-{{user.id}}" and "ltm-{{user.id}}" would be "mem-" and "ltm-", one
    # conversation and one long-term memory for every anonymous client. The conversation falls back to the
    # session's own key; long-term memory is neither written nor recalled.
    srv = fake_llm([reply(n) for n in range(1, 6)])
    doc = chat_flow(srv.url)
    doc["nodes"][0]["memory"]["longTermMemory"] = {"memoryId": "ltm-{{user.id}}", "memoryType": "episodic"}
    async with Flow.from_dict(doc, state=f"sqlite:///{tmp_path}/s.db") as flow:
        await flow.send("a", "my secret is 7777")
        await flow.send("a", "and?")
        await flow.send("b", "what is my secret?")
        await flow.send("c", "hi", user={"id": "u1"})
        await flow.send("d", "again", user={"id": "u1"})
        store = await flow.store()
        assert await store.memories(namespace="ltm-") == []
        assert len(await store.memories(namespace="ltm-u1")) == 2  # one per turn of u1
    a2, b, _, d = (srv.chat_requests[i].messages for i in (1, 2, 3, 4))
    assert [m["content"] for m in a2[1:]] == ["my secret is 7777", '{"response": "r1"}', "and?"]  # her own
    assert [m["content"] for m in b[1:]] == ["what is my secret?"] and "7777" not in b[0]["content"]
    # A user with an id keeps one conversation across sessions, as memoryId promises.
    assert [m["content"] for m in d[1:]] == ["hi", '{"response": "r4"}', "again"]


async def test_user_identity_is_left_out_only_when_it_names_nothing(fake_llm: Any, tmp_path: Path) -> None:
    srv = fake_llm([reply(1), reply(2)])
    doc = chat_flow(srv.url)
    doc["nodes"][0]["userIdentityExpression"] = "{{user.name}} (ID: {{user.id}})"
    async with Flow.from_dict(doc, state=f"sqlite:///{tmp_path}/s.db") as flow:
        await flow.send("a", "hi")  # before: "The user:  (ID: )"
        await flow.send("b", "hi", user={"name": "Ann"})
    assert srv.chat_requests[0].messages[0]["content"] == "Be brief."
    assert srv.chat_requests[1].messages[0]["content"] == "Be brief.\n\nThe user: Ann (ID: )"
