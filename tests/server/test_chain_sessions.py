"""Sessions on rule chains: `user` / X-Session-Key on /v1/chat/completions (model = a chain id) and on
RuleGo's /api/v1/rules/{id}/v1/chat/completions; each agent node keeps its own conversation in the
session, in the server's state store (kept across a restart)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import openai
import orjson

from tests.server.runs_helpers import agent_doc


def remembering_model(body: dict[str, Any]) -> dict[str, Any]:
    """A scripted model whose answer depends on what the conversation it is sent holds: it greets a name
    it is told, and says the name when asked for it (only if an earlier message of the request told it)."""
    msgs = body["messages"]
    system = msgs[0]["content"] if msgs and msgs[0]["role"] == "system" else ""
    last = msgs[-1]["content"]
    if system == "Shout.":  # the second node of the two-node chain
        return {"text": last.upper()}
    told = [m.group(1) for msg in msgs if msg["role"] == "user"
            for m in [re.search(r"My name is (\w+)", msg["content"] or "")] if m]
    if "My name is" in last:
        return {"text": f"Hello {told[-1]}."}
    return {"text": f"Your name is {told[-1]}." if told else "I do not know your name."}


def one_agent_chain(url: str, ident: str = "chat") -> dict[str, Any]:
    return {"ruleChain": {"id": ident, "name": "Chat"},
            "metadata": {"nodes": [{"id": "a", "type": "ai/agent", "configuration": {
                "url": url, "key": "unused", "model": "fake-model", "maxRetries": -1,
                "systemPrompt": "You remember."}}], "connections": []}}


def two_agent_chain(url: str) -> dict[str, Any]:
    def node(ident: str, prompt: str) -> dict[str, Any]:
        return {"id": ident, "type": "ai/agent", "configuration": {
            "url": url, "key": "unused", "model": "fake-model", "maxRetries": -1, "systemPrompt": prompt}}

    return {"ruleChain": {"id": "pipe", "name": "Pipe"},
            "metadata": {"nodes": [node("first", "You remember."), node("second", "Shout.")],
                "connections": [{"fromId": "first", "toId": "second", "type": "Success"}]}}


def _ask(client: openai.OpenAI, user: str | None, text: str, *, stream: bool = False,
         model: str = "chat") -> str:
    msgs = [{"role": "user", "content": text}]
    extra: dict[str, Any] = {"user": user} if user else {}
    if stream:
        chunks = list(client.chat.completions.create(model=model, messages=msgs, stream=True,  # type: ignore
                                                     **extra))
        assert all(c.model == model for c in chunks)  # every chunk names the requested id
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    done = client.chat.completions.create(model=model, messages=msgs, **extra)  # type: ignore[call-overload]
    return str(done.choices[0].message.content)


def test_chain_sessions_on_the_openai_route_survive_a_restart(fake_llm: Any, serve: Any,
                                                             tmp_path: Path) -> None:
    llm = fake_llm(remembering_model)
    state = f"sqlite:///{tmp_path}/state.db"
    srv = serve({"chat.json": one_agent_chain(llm.url)}, state=state)
    client = openai.OpenAI(base_url=srv.url + "/v1", api_key="none")

    assert _ask(client, "ann", "My name is Ann.") == "Hello Ann."
    assert _ask(client, "ann", "What is my name?", stream=True) == "Your name is Ann."
    # the second request carried only its new message; the node got the first turn from the session
    assert [(m["role"], m["content"]) for m in llm.chat_requests[1].messages] == [
        ("system", "You remember."), ("user", "My name is Ann."), ("assistant", "Hello Ann."),
        ("user", "What is my name?")]
    # another session knows nothing of Ann's; no session at all is stateless
    assert _ask(client, "bob", "What is my name?") == "I do not know your name."
    assert _ask(client, None, "What is my name?") == "I do not know your name."
    # a chat UI sending the whole conversation again: what the session holds is not sent twice
    whole = [{"role": "user", "content": "My name is Ann."}, {"role": "assistant", "content": "Hello Ann."},
             {"role": "user", "content": "What is my name?"},
             {"role": "assistant", "content": "Your name is Ann."}, {"role": "user", "content": "Again?"}]
    r = httpx.post(srv.url + "/v1/chat/completions", headers={"X-Session-Key": "ann"}, timeout=30,
                   json={"model": "chat", "messages": whole})
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == "Your name is Ann."
    assert [m["content"] for m in llm.chat_requests[-1].messages] == [
        "You remember.", "My name is Ann.", "Hello Ann.", "What is my name?", "Your name is Ann.", "Again?"]

    srv.__exit__()  # a restart: a new server process state on the same SQLite file
    srv = serve({"chat.json": one_agent_chain(llm.url)}, state=state)
    client = openai.OpenAI(base_url=srv.url + "/v1", api_key="none")
    assert _ask(client, "ann", "And now?") == "Your name is Ann."
    assert _ask(client, "bob", "And now?") == "I do not know your name."

    bad = httpx.post(srv.url + "/v1/chat/completions", timeout=10,
                     json={"model": "chat", "user": 7, "messages": [{"role": "user", "content": "x"}]})
    assert bad.status_code == 400 and "'user'" in bad.json()["error"]["message"]


def test_without_a_state_store_chains_have_no_sessions(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm(remembering_model)
    srv = serve({"chat.json": one_agent_chain(llm.url)})
    client = openai.OpenAI(base_url=srv.url + "/v1", api_key="none")
    assert _ask(client, "ann", "My name is Ann.") == "Hello Ann."
    assert _ask(client, "ann", "What is my name?") == "I do not know your name."


def _rulego_chat(url: str, key: str, text: str, *, stream: bool) -> str:
    body = {"model": "pipe", "stream": stream, "messages": [{"role": "user", "content": text}]}
    r = httpx.post(url + "/api/v1/rules/pipe/v1/chat/completions", json=body,
                   headers={"X-Session-Key": key}, timeout=30)
    assert r.status_code == 200, r.text
    if not stream:
        return str(r.json()["choices"][0]["message"]["content"])
    frames = [orjson.loads(p[6:]) for p in r.text.split("\n\n") if p.startswith("data: {")]
    assert r.text.rstrip().endswith("data: [DONE]") and all(f["model"] == "pipe" for f in frames)
    return "".join(f["choices"][0]["delta"].get("content", "") for f in frames)


def test_each_agent_node_of_a_chain_keeps_its_own_conversation_on_the_rulego_route(
        fake_llm: Any, serve: Any, tmp_path: Path) -> None:
    llm = fake_llm(remembering_model)
    srv = serve({"pipe.json": two_agent_chain(llm.url)}, state=f"sqlite:///{tmp_path}/state.db")

    assert _rulego_chat(srv.url, "ann", "My name is Ann.", stream=False) == "HELLO ANN."
    # streamed: the frames of both nodes; the chain's answer is the second node's
    assert _rulego_chat(srv.url, "ann", "What is my name?", stream=True).endswith("YOUR NAME IS ANN.")
    assert _rulego_chat(srv.url, "bob", "What is my name?", stream=False) == "I DO NOT KNOW YOUR NAME."

    by_node: dict[str, list[list[tuple[str, str]]]] = {"You remember.": [], "Shout.": []}
    for req in llm.chat_requests:
        msgs = [(m["role"], m["content"]) for m in req.messages]
        by_node[msgs[0][1]].append(msgs[1:])
    # each node saw its own earlier turn of Ann's session (what it was given, what it answered), not the
    # other node's, and nothing of Bob's
    assert by_node["You remember."][1] == [("user", "My name is Ann."), ("assistant", "Hello Ann."),
                                           ("user", "What is my name?")]
    assert by_node["Shout."][1] == [("user", "Hello Ann."), ("assistant", "HELLO ANN."),
                                    ("user", "Your name is Ann.")]
    assert by_node["You remember."][2] == [("user", "What is my name?")]
    assert by_node["Shout."][2] == [("user", "I do not know your name.")]


def test_chain_runs_take_a_session_and_chain_sessions_do_not_mix_with_agent_sessions(
        fake_llm: Any, serve: Any, tmp_path: Path) -> None:
    llm = fake_llm(remembering_model)
    agent = agent_doc(llm.url)  # system prompt "You help.": the model remembers names alike
    srv = serve({"chat.json": one_agent_chain(llm.url), "helper.json": agent},
                state=f"sqlite:///{tmp_path}/state.db")

    def run(text: str) -> dict[str, Any]:
        r = httpx.post(srv.url + "/api/v1/rules/chat/runs", json={"input": text, "session": "ann"},
                       timeout=30)
        assert r.status_code == 200, r.text
        return dict(r.json())

    first = run("My name is Ann.")
    assert first["status"] == "done" and first["session"] == "ann" and first["kind"] == "chain"
    assert run("What is my name?")["result"]["content"] == "Your name is Ann."
    # the same key on an agent is another conversation
    client = openai.OpenAI(base_url=srv.url + "/v1", api_key="none")
    assert _ask(client, "ann", "What is my name?", model="helper") == "I do not know your name."
    bad = httpx.post(srv.url + "/api/v1/rules/chat/runs", json={"input": "x", "session": ""}, timeout=10)
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_body"
