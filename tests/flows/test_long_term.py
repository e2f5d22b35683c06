"""Long-term memory written by extraction: `semantic` facts and `procedural` instructions the model extracts
after a turn (one plain model call with the documented prompt), recalled in later sessions, never stored
twice."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chainreact.flows import Flow
from chainreact.flows.memory import EXTRACT_PROMPTS, INSTRUCTIONS_HEADER, MEMORIES_HEADER, parse_extracted
from chainreact.flows.node_steps import EXTRACT_SYSTEM


def chat_flow(url: str, memory_type: str, scope: str | None = None) -> dict[str, Any]:
    ltm: dict[str, Any] = {"memoryId": "ltm-{{user.id}}", "memoryType": memory_type}
    if scope:
        ltm["scope"] = scope
    return {"id": "chat", "nodes": [
        {"name": "chat", "type": "aiagent", "llmConfig": {"url": url}, "systemMessage": "Be brief.",
         "userMessage": "{{userInput}}", "memory": {"longTermMemory": ltm},
         "output": {"schema": {"type": "object", "properties": {"response": {"type": "string"}}}}}]}


def reply(text: str) -> dict[str, Any]:
    return {"text": json.dumps({"response": text})}


async def test_semantic_facts_are_extracted_recalled_and_not_duplicated(fake_llm: Any,
                                                                         tmp_path: Path) -> None:
    srv = fake_llm([
        reply("Noted, Ann."),
        {"text": "- The user's name is Ann.\n- Ann's dog is called Rex.\nsome chatter\n- NONE"},
        reply("Your dog is Rex."),
        {"text": "- Ann's dog is called Rex.\n- Ann lives in Lyon."},  # one known, one new
        reply("Hello."),
        {"text": "NONE"},
    ])
    user = {"id": "u1"}
    async with Flow.from_dict(chat_flow(srv.url, "semantic"), state=f"sqlite:///{tmp_path}/s.db") as flow:
        events = [ev async for ev in flow.stream("s1", "I am Ann and my dog is called Rex", user=user)]
        written = [e.data for e in events if e.type == "memory"]
        assert written == [{"type": "semantic",
                            "written": ["The user's name is Ann.", "Ann's dog is called Rex."]}]
        extract = srv.chat_requests[1]
        assert "response_format" not in extract.body and "tools" not in extract.body
        assert extract.messages[0] == {"role": "system", "content": EXTRACT_SYSTEM}
        prompt = extract.messages[-1]["content"]
        assert prompt.startswith(EXTRACT_PROMPTS["semantic"])
        assert prompt.endswith("The exchange:\nuser: I am Ann and my dog is called Rex\n"
                               "assistant: Noted, Ann.")
        # A new session recalls the facts that match the question.
        await flow.send("s2", "what is my dog called?", user=user)
        system = srv.chat_requests[2].messages[0]["content"]
        assert MEMORIES_HEADER + "- Ann's dog is called Rex." in system
        extract2 = srv.chat_requests[3].messages[-1]["content"]
        assert "Already remembered:\n- Ann's dog is called Rex." in extract2
        t = await flow.send("s3", "hi", user=user)
        assert t.messages[0].content == "Hello."
        store = await flow.store()
        kept = sorted(m.text for m in await store.memories(namespace="ltm-u1"))
        assert kept == ["Ann lives in Lyon.", "Ann's dog is called Rex.", "The user's name is Ann."]
        assert {m.type for m in await store.memories(namespace="ltm-u1")} == {"semantic"}
    srv.assert_all_consumed()


async def test_procedural_instructions_apply_whatever_the_user_says(fake_llm: Any, tmp_path: Path) -> None:
    srv = fake_llm([
        reply("D'accord."),
        {"text": "- Answer in French.\n- Always confirm the order number first."},
        reply("Bonjour !"),
        {"text": "NONE"},
    ])
    async with Flow.from_dict(chat_flow(srv.url, "procedural", "global"),
                              state=f"sqlite:///{tmp_path}/s.db") as flow:
        await flow.send("s1", "from now on, answer in French and confirm order numbers", user={"id": "u1"})
        assert srv.chat_requests[1].messages[-1]["content"].startswith(EXTRACT_PROMPTS["procedural"])
        # "hello" matches neither instruction's words: procedural memories are recalled anyway.
        await flow.send("s2", "hello", user={"id": "u1"})
        system = srv.chat_requests[2].messages[0]["content"]
        assert INSTRUCTIONS_HEADER in system
        assert "- Answer in French." in system and "- Always confirm the order number first." in system
        store = await flow.store()
        kept = await store.memories(namespace="ltm-u1")
        assert {(m.type, m.scope) for m in kept} == {("procedural", "global")} and len(kept) == 2
        assert kept[0].metadata == {"session": "s1", "node": "chat"}
    srv.assert_all_consumed()


def test_parse_extracted_keeps_only_list_items() -> None:
    assert parse_extracted("Facts:\n- a\n* b\n- a\n-  \n- NONE.\nc") == ["a", "b"]
    assert parse_extracted("NONE") == []
    assert len(parse_extracted("\n".join(f"- f{i}" for i in range(9)))) == 5
