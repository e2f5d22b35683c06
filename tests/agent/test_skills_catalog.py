"""The skill catalog reaches the model whichever system message it gets (issue 9 item 8)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chainreact.agent import Agent
from chainreact.testing import FakeLLM


def _agent(srv: FakeLLM, tmp_path: Path) -> Agent:
    skill = tmp_path / "skills" / "haiku"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: haiku\ndescription: Write a haiku\n---\nFive, seven, five.\n")
    return Agent(name="s", instruction="Configured prompt.", url=srv.url, model="m", key="k",
                 config={"skillsDir": str(tmp_path / "skills")})


@pytest.mark.parametrize("own_system", [False, True])
async def test_catalog_is_injected_into_the_system_message(tmp_path: Path, own_system: bool) -> None:
    with FakeLLM([{"text": "ok"}]) as srv:
        agent = _agent(srv, tmp_path)
        messages = [{"role": "user", "content": "hi"}]
        if own_system:
            messages.insert(0, {"role": "system", "content": "The client's own prompt."})
        result = await agent.run({"messages": messages})
        system = srv.chat_requests[0].body["messages"][0]
        assert system["role"] == "system"
        want = "The client's own prompt." if own_system else "Configured prompt."
        assert system["content"].startswith(want)
        assert "haiku" in system["content"] and "Write a haiku" in system["content"]
        assert sum(m["role"] == "system" for m in srv.chat_requests[0].body["messages"]) == 1
        assert result.content == "ok"
        await agent.aclose()


async def test_catalog_is_not_stacked_when_the_history_comes_back(tmp_path: Path) -> None:
    with FakeLLM([{"text": "one"}, {"text": "two"}]) as srv:
        agent = _agent(srv, tmp_path)
        first = await agent.run({"messages": [{"role": "system", "content": "Own."},
                                              {"role": "user", "content": "hi"}]})
        history = [m.to_openai() for m in first.messages] + [{"role": "user", "content": "again"}]
        await agent.run({"messages": history})
        system = srv.chat_requests[1].body["messages"][0]["content"]
        assert system.count("Write a haiku") == 1
        await agent.aclose()
