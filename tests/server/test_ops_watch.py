"""Folder watching with real file edits: added and changed files are reloaded, removed ones unloaded, a
broken one reported (/readyz problems, metrics) while its old version keeps serving."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from chainreact.server import Catalog
from chainreact.server.catalog_reload import apply_changes

from .ops_support import serve, wait_until
from .test_server import agent_doc, echo_chain


def _ids(url: str) -> list[str]:
    return sorted(m["id"] for m in httpx.get(url + "/v1/models").json()["data"])


def _ask(url: str, model: str = "helper") -> str:
    r = httpx.post(url + "/v1/chat/completions", timeout=30,
                   json={"model": model, "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 200, r.text
    return str(r.json()["choices"][0]["message"]["content"])


def _write(path: Path, doc: Any) -> None:
    # As editors do: write elsewhere, then rename over the file.
    tmp = path.with_suffix(".tmp")
    tmp.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    tmp.replace(path)


def test_watched_folder_reloads_unloads_and_reports(fake_llm: Any, tmp_path: Path) -> None:
    v1 = fake_llm([{"text": "v1"}] * 50)
    v2 = fake_llm([{"text": "v2"}] * 50)
    folder = tmp_path / "served"
    docs = {"helper.json": agent_doc(v1.url), "echo.json": echo_chain()}
    with serve(folder, docs, watch=[folder], watch_debounce_ms=50) as srv:
        watcher = srv.server.config.app.state.ctx.watcher
        wait_until(lambda: watcher.ready, "the watcher to be in place")
        assert _ask(srv.url) == "v1"

        # added
        _write(folder / "second.json", {**agent_doc(v2.url), "id": "second"})
        wait_until(lambda: "second" in _ids(srv.url), "the new agent to be served")
        assert _ask(srv.url, "second") == "v2"

        # changed: the agent now talks to the other model server
        _write(folder / "helper.json", agent_doc(v2.url))
        wait_until(lambda: _ask(srv.url) == "v2", "the changed agent to answer from its new model")

        # broken: reported, and the previous version keeps serving
        _write(folder / "helper.json", '{"id": "helper", "configuration": ')
        ready = wait_until(lambda: (r := httpx.get(srv.url + "/readyz").json())["problems"] and r,
                           "the broken file to be reported")
        assert "helper.json" in ready["problems"][0] and "keeps serving" in ready["problems"][0]
        assert _ask(srv.url) == "v2"
        metrics = httpx.get(srv.url + "/metrics").text
        assert 'chainreact_catalog_reloads_total{outcome="error"} 1.0' in metrics

        # fixed again: the problem goes away
        _write(folder / "helper.json", agent_doc(v1.url))
        wait_until(lambda: not httpx.get(srv.url + "/readyz").json()["problems"], "the problem to clear")
        assert _ask(srv.url) == "v1"

        # a chain edited: the new version runs
        chain = echo_chain()
        chain["metadata"]["nodes"][0]["configuration"]["jsScript"] = (
            "msg.n = msg.n * 3; return {msg: msg, metadata: metadata, msgType: msgType};")
        _write(folder / "echo.json", chain)

        def tripled() -> bool:
            r = httpx.post(srv.url + "/api/v1/rules/echo/execute/T", json={"n": 2})
            return bool(json.loads(r.text)["n"] == 6)  # RuleGo's answer: the out message's data

        wait_until(tripled, "the edited chain to run")

        # removed
        (folder / "second.json").unlink()
        wait_until(lambda: _ids(srv.url) == ["echo", "helper"], "the removed agent to be unloaded")
        assert httpx.post(srv.url + "/v1/chat/completions", json={
            "model": "second", "messages": [{"role": "user", "content": "x"}]}).status_code == 404


def test_no_watching_unless_asked(fake_llm: Any, tmp_path: Path) -> None:
    llm = fake_llm([{"text": "x"}])
    folder = tmp_path / "served"
    with serve(folder, {"helper.json": agent_doc(llm.url)}) as srv:
        assert srv.server.config.app.state.ctx.watcher is None


def test_apply_changes_keeps_the_old_version_of_what_no_longer_loads(fake_llm: Any, tmp_path: Path) -> None:
    llm = fake_llm([{"text": "x"}])
    (tmp_path / "helper.json").write_text(json.dumps(agent_doc(llm.url)))
    (tmp_path / "echo.json").write_text(json.dumps(echo_chain()))
    (tmp_path / "other.json").write_text(json.dumps({**echo_chain(), "ruleChain": {"id": "other"}}))
    cat = Catalog.load([tmp_path])
    old_chain = cat.engine.get("echo")

    # a chain that fails validation: reported, the loaded one stays
    bad = echo_chain()
    bad["metadata"]["nodes"][0]["type"] = "noSuchNodeType"
    (tmp_path / "echo.json").write_text(json.dumps(bad))
    report = apply_changes(cat, [tmp_path / "echo.json"])
    assert report.loaded == [] and len(report.problems) == 1 and "echo.json" in report.problems[0]
    assert cat.engine.get("echo") is old_chain and cat.entries["echo"].obj == "echo"

    # a file that takes an id another file serves: refused, nothing replaced
    (tmp_path / "echo.json").write_text(json.dumps({**echo_chain(), "ruleChain": {"id": "other"}}))
    report = apply_changes(cat, [tmp_path / "echo.json"])
    assert "already served from" in report.problems[0]
    assert cat.entries["other"].source == str(tmp_path / "other.json") and "echo" in cat.entries

    # a renamed id: the new id served, the old one gone; the problems of that file cleared
    (tmp_path / "echo.json").write_text(json.dumps({**echo_chain(), "ruleChain": {"id": "renamed"}}))
    report = apply_changes(cat, [tmp_path / "echo.json"])
    assert (report.loaded, report.removed, report.problems) == (["renamed"], ["echo"], [])
    assert cat.engine.get("echo") is None and cat.engine.get("renamed") is not None
    assert cat.problems == []

    # a replaced agent is retired (closed with the catalog), not closed under runs in flight
    old_agent = cat.entries["helper"].obj
    (tmp_path / "helper.json").write_text(json.dumps(agent_doc(llm.url, systemPrompt="Changed.")))
    assert apply_changes(cat, [tmp_path / "helper.json"]).loaded == ["helper"]
    assert cat.entries["helper"].obj is not old_agent and cat.retired == [old_agent]

    # removed
    (tmp_path / "helper.json").unlink()
    assert apply_changes(cat, [tmp_path / "helper.json"]).removed == ["helper"]
    assert "helper" not in cat.entries


def test_a_file_that_does_not_parse_is_reported_at_start_and_when_it_appears(tmp_path: Path) -> None:
    # Before: a served folder's agent with a trailing comma was skipped like a package.json, without a
    # word on stderr or in /readyz.
    (tmp_path / "echo.json").write_text(json.dumps(echo_chain()))
    (tmp_path / "typo.json").write_text('{"id": "typo", "configuration": {"systemPrompt": "x",}}')
    (tmp_path / "package.json").write_text('{"name": "not-a-document"}')
    cat = Catalog.load([tmp_path])
    assert list(cat.entries) == ["echo"]
    assert cat.problems == [f"{tmp_path / 'typo.json'}: invalid JSON at line 1 column 54: Expecting property "
                            "name enclosed in double quotes"]
    assert [line.split(":")[0] for line in cat.skipped] == [str(tmp_path / "package.json")]

    # one appearing later, in a watched folder: reported as well, with nothing said to keep serving
    (tmp_path / "later.yaml").write_text("id: later\nconfiguration: [unclosed\n")
    report = apply_changes(cat, [tmp_path / "later.yaml"])
    assert len(report.problems) == 1 and report.problems[0].startswith(f"{tmp_path / 'later.yaml'}: ")
    assert "keeps serving" not in report.problems[0] and report.problems[0] in cat.problems
    # fixed: the problem clears and the document is served
    (tmp_path / "later.yaml").write_text("id: later\nconfiguration: {url: 'http://127.0.0.1:9', model: m}\n")
    assert apply_changes(cat, [tmp_path / "later.yaml"]).loaded == ["later"]
    assert not any("later.yaml" in p for p in cat.problems)
