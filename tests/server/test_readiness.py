"""`/readyz` `cannot_run` (and serve's `cannot run:` lines) for every kind serve loads (issue 25): agents,
flows' aiagent nodes and rule chains, through the real `chainreact serve` process. A document that loads but
whose model calls cannot go anywhere is named with its id and why, not found by its first user."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx

from tests.server.test_serve_start import ROOT, Serving


def _env(path: list[str] | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CHAINREACT_"))}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (*(path or []), str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p)
    return {**env, **extra}


def _flow(fid: str, llm: dict[str, Any] | None, **node: Any) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"response": {"type": "string"}}, "required": ["response"]}
    agent: dict[str, Any] = {"type": "aiagent", "name": "helper", "start": True,
                             "userMessage": "{{userInput}}", "output": {"schema": schema}, **node}
    if llm is not None:
        agent["llmConfig"] = llm
    return {"id": fid, "nodes": [agent]}


def _agent(aid: str, **configuration: Any) -> dict[str, Any]:
    return {"id": aid, "type": "ai/agent", "configuration": configuration}


def _chain(cid: str, configuration: dict[str, Any]) -> dict[str, Any]:
    return {"ruleChain": {"id": cid, "name": cid},
            "metadata": {"nodes": [{"id": "ask", "type": "ai/agent", "configuration": configuration}],
                         "connections": []}}


def _write(folder: Path, docs: dict[str, Any]) -> None:
    folder.mkdir(exist_ok=True)
    for name, doc in docs.items():
        (folder / f"{name}.json").write_text(json.dumps(doc))


def _ready(args: list[str], env: dict[str, str]) -> tuple[dict[str, Any], list[str]]:
    """/readyz of `chainreact serve ARGS`, and serve's `cannot run:` lines."""
    srv = Serving([*args, "--no-watch"], env)
    try:
        base = srv.until(r"^listening on (\S+) ").group(1)
        ready = httpx.get(base + "readyz", timeout=10).json()
        return ready, [line for line in srv.seen if line.startswith("cannot run: ")]
    finally:
        srv.stop()


def test_every_kind_with_an_endpoint_that_cannot_be_called_is_named(tmp_path: Path) -> None:
    good = "http://127.0.0.1:9/v1"
    _write(tmp_path / "docs", {
        # flows render no ${...} in llmConfig: the text itself would be the URL, or the key
        "flow-url": _flow("flow-url", {"url": "${global.llm_url}/v1"}),
        "flow-key": _flow("flow-key", {"url": good, "apiKey": "${global.key}"}),
        # a collaborator's agent document loads at its first delegation, without globals
        "flow-team": _flow("flow-team", {"url": good}, multiAgentCollaboration={"collaborators": [
            {"agentFile": "../helper.json", "description": "helps"}]}),
        # an agent's url rendered (env() of an unset variable is ""), to something that is no URL
        "agent-env": _agent("agent-env", url="${env('CHAINREACT_TEST_UNSET_URL')}/v1", model="m"),
        "agent-failover": _agent("agent-failover", url=good, model="m",
                                 failover=[{"url": "${env('CHAINREACT_TEST_UNSET_URL')}/v1"}]),
        "chain-url": _chain("chain-url", {"url": "${global.llm_url}", "model": "m"}),
        # the same kinds, able to run: not listed
        "flow-ok": _flow("flow-ok", {"url": good, "apiKey": "sk-1"}),
        "agent-ok": _agent("agent-ok", url=good, model="m"),
        "chain-ok": _chain("chain-ok", {"url": good, "model": "m"}),
    })
    (tmp_path / "helper.json").write_text(json.dumps({"url": "${global.helper_url}", "model": "m"}))
    ready, lines = _ready([str(tmp_path / "docs")], _env())
    assert ready["problems"] == []
    assert ready["agents"] == 3 and ready["chains"] == 2 and ready["flows"] == 4
    whys = {item["id"]: (item["kind"], item["why"]) for item in ready["cannot_run"]}
    assert set(whys) == {"flow-url", "flow-key", "flow-team", "agent-env", "agent-failover",
                         "chain-url"}
    assert whys["flow-url"] == ("flow", "node 'helper' llmConfig.url is '${global.llm_url}/v1': a flow "
                                "renders no template there (write the value, or leave the url out to use "
                                "OPENAI_BASE_URL / OPENAI_API_KEY)")
    assert whys["flow-key"][1].startswith("node 'helper' llmConfig.apiKey is '${global.key}': ")
    team = whys["flow-team"][1]
    assert team.startswith("node 'helper' multiAgentCollaboration.collaborators[0].agentFile: ")
    assert "global.helper_url" in team and "helper.json" in team
    assert whys["agent-env"] == ("agent",
                                 "url is '/v1': not an http(s) URL (a template that rendered empty?)")
    assert whys["agent-failover"][1].startswith("failover[0].url is '/v1': not an http(s) URL")
    assert whys["chain-url"] == ("chain", "node 'ask' url is '${global.llm_url}': global.llm_url is not "
                                 "defined (give it: --global llm_url=...)")
    # serve said the same at start, one line each
    said = [f"cannot run: {i['kind']} {i['id']!r} ({i['source']}): {i['why']}" for i in ready["cannot_run"]]
    assert sorted(lines) == sorted(said)


def _without_the_embedded_model(tmp_path: Path) -> str:
    """A folder for PYTHONPATH whose sitecustomize hides llama_cpp, as in an install without the `local`
    extra (importlib finds no module that sys.modules holds as None)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import sys\nsys.modules['llama_cpp'] = None\n")
    return str(site)


def test_no_url_without_the_embedded_model_or_openai_variables_cannot_run(tmp_path: Path) -> None:
    _write(tmp_path / "docs", {
        "agent": _agent("agent", model="m"),
        "agent-local": _agent("agent-local", url="local"),
        "chain": _chain("chain", {"model": "m"}),
        "flow": _flow("flow", None),
    })
    hidden = _without_the_embedded_model(tmp_path)
    ready, lines = _ready([str(tmp_path / "docs")], _env([hidden]))
    whys = {item["id"]: item["why"] for item in ready["cannot_run"]}
    assert set(whys) == {"agent", "agent-local", "chain", "flow"}, ready
    hint = ("so the embedded model, which is not installed (no module 'llama_cpp'): pip install "
            "'chainreact[local]', or set OPENAI_BASE_URL / OPENAI_API_KEY, or give a url")
    assert whys["agent"] == f"url: no url, {hint}"
    assert whys["agent-local"] == f"url: url 'local', {hint}"
    assert whys["chain"] == f"node 'ask' url: no url, {hint}"
    assert whys["flow"] == f"node 'helper' llmConfig.url: no url, {hint}"
    assert len(lines) == 4
    # with the openai SDK's variables set, the url-less ones go there: only url 'local' is left
    ready, _ = _ready([str(tmp_path / "docs")], _env([hidden], OPENAI_BASE_URL="http://127.0.0.1:9/v1"))
    assert [item["id"] for item in ready["cannot_run"]] == ["agent-local"]


def test_serve_temporal_leaves_a_url_less_endpoint_to_the_workers(tmp_path: Path, monkeypatch: Any) -> None:
    """With --temporal the workers call the model, in their environment: the server's own (no embedded
    model here) says nothing about them. A placeholder left in a chain node's url is still said."""
    import sys

    from chainreact.server import Catalog, cannot_run

    for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "CHAINREACT_LOCAL_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # as without the `local` extra
    _write(tmp_path / "docs", {"agent": _agent("agent", model="m"),
                               "chain": _chain("chain", {"url": "${global.llm_url}", "model": "m"})})
    catalog = Catalog.load([str(tmp_path / "docs")])
    assert sorted(i["id"] for i in cannot_run(catalog)) == ["agent", "chain"]
    assert [i["id"] for i in cannot_run(catalog, in_process=False)] == ["chain"]
