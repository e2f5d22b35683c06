"""One switch (issue 25): a document that names no endpoint goes where OPENAI_BASE_URL / OPENAI_API_KEY
point (the openai SDK's convention), else to the embedded model; `url: "local"` is always the embedded one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from chainreact.config import AgentConfig, env_endpoint, with_default_endpoint

ROOT = Path(__file__).resolve().parents[2]


def test_the_rule() -> None:
    empty = AgentConfig()
    assert env_endpoint({}) is None and with_default_endpoint(empty, {}) is empty  # the embedded model
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:8000/v1/", "OPENAI_API_KEY": "sk-env"}
    cfg = with_default_endpoint(empty, env)
    assert (cfg.url, cfg.key, cfg.model) == ("http://127.0.0.1:8000/v1", "sk-env", "gpt-4o-mini")
    own = with_default_endpoint(AgentConfig(key="sk-doc", model="mine"),
                                {**env, "OPENAI_DEFAULT_MODEL": "x"})
    # the document's own key and model win
    assert (own.url, own.key, own.model) == ("http://127.0.0.1:8000/v1", "sk-doc", "mine")
    only_key = with_default_endpoint(empty, {"OPENAI_API_KEY": "sk-env", "OPENAI_DEFAULT_MODEL": "gpt-x"})
    assert (only_key.url, only_key.model) == ("https://api.openai.com/v1", "gpt-x")  # as OpenAI() does
    for cfg in (AgentConfig(url="local"), AgentConfig(url="http://elsewhere/v1")):
        assert with_default_endpoint(cfg, env) is cfg  # a document that names its endpoint keeps it


def _run(doc: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CHAINREACT_"))}
    return subprocess.run([sys.executable, "-m", "chainreact", "run", str(doc), "hi"], capture_output=True,
                          text=True, timeout=60, env={**base, **env})


def test_run_without_url_goes_where_the_variables_point_and_says_so(fake_llm: Any, tmp_path: Path) -> None:
    llm = fake_llm([{"text": "from the env's model"}])
    doc = tmp_path / "agent.json"
    doc.write_text(json.dumps({"id": "a", "configuration": {"systemPrompt": "Be brief.", "maxRetries": -1}}))
    r = _run(doc, {"OPENAI_BASE_URL": llm.url, "OPENAI_API_KEY": "sk-env", "OPENAI_DEFAULT_MODEL": "m-env"})
    assert r.returncode == 0, r.stderr
    assert r.stdout == "from the env's model\n"
    assert f"note: {doc}: no url: using {llm.url} (OPENAI_BASE_URL / OPENAI_API_KEY), model m-env" in r.stderr
    [req] = llm.chat_requests
    assert req.headers["authorization"] == "Bearer sk-env" and req.body["model"] == "m-env"


def test_a_chain_agent_node_and_a_flow_node_without_url_follow_the_variables(fake_llm: Any,
                                                                             tmp_path: Path) -> None:
    """Made in process: the chain's node builds its Agent from its configuration (no document resolve),
    the flow's `provider: openai` node from llmConfig; both send OPENAI_API_KEY where OPENAI_BASE_URL
    points."""
    llm = fake_llm(lambda body: {"text": json.dumps({"answer": "ok"}) if body.get("response_format")
                                 else "chain ok"})
    code = f"""
import asyncio, json, os
os.environ.update(OPENAI_BASE_URL={llm.url!r}, OPENAI_API_KEY="sk-proc")
from chainreact.chains import RuleEngine, RuleMsg
from chainreact.flows import Flow

async def main():
    engine = RuleEngine()
    engine.load({{"ruleChain": {{"id": "c"}}, "metadata": {{"nodes": [
        {{"id": "n", "type": "ai/agent", "configuration": {{"systemPrompt": "hi"}}}}]}}}})
    ends = await engine.run("c", RuleMsg(type="Q", data="hi", data_type="TEXT"))
    print(ends[0].msg.data, "/", ends[0].msg.metadata["model"])
    flow = Flow.from_dict({{"id": "f", "nodes": [{{"name": "a", "type": "aiagent", "start": True,
        "llmConfig": {{"provider": "openai", "overrideParams": {{"model": "gpt-4o-mini"}}}},
        "userMessage": "{{{{userInput}}}}",
        "output": {{"schema": {{"type": "object", "properties": {{"answer": {{"type": "string"}}}}}}}}}}]}})
    turn = await flow.send("s1", "hello")
    print(turn.messages[-1].content)

asyncio.run(main())
"""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CHAINREACT_"))}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=base)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.splitlines()[0] == "chain ok / gpt-4o-mini"  # the answer says which model answered
    assert len(llm.chat_requests) == 2
    assert {q.headers.get("authorization") for q in llm.chat_requests} == {"Bearer sk-proc"}


def test_a_flow_node_that_names_no_endpoint_follows_the_rule(monkeypatch: Any) -> None:
    from chainreact.flows.llm import agent_config
    from chainreact.flows.model import AIAgentNode

    def cfg(llm: dict[str, Any] | None) -> dict[str, Any]:
        node = AIAgentNode.model_validate({"name": "n", "type": "aiagent", "userMessage": "{{userInput}}",
                                           "output": {"schema": {"type": "object"}},
                                           **({"llmConfig": llm} if llm is not None else {})})
        return agent_config(node, system_prompt="")

    for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    # names nothing: url "" (the model client's rule: here the embedded model); OpenAI's: its URL, no key
    assert (cfg(None)["url"], cfg(None)["key"]) == ("", "")
    assert cfg({"provider": "openai"})["url"] == "https://api.openai.com/v1"
    assert cfg({"provider": "local"})["url"] == "local"  # the embedded model, whatever the environment says
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    assert (cfg({"provider": "openai"})["url"], cfg({"provider": "openai"})["key"]) == (
        "http://127.0.0.1:8000/v1", "sk-env")
    assert cfg({"apiKey": "sk-own"})["key"] == "sk-own"  # an apiKey without a provider: OpenAI's, its own key
    assert cfg({"provider": "openai", "url": "http://other/v1"})["key"] == ""  # never to a url it names
    assert cfg({"provider": "local"})["url"] == "local"
