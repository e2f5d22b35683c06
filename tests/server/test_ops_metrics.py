"""/metrics scraped after real requests: HTTP requests by route template, runs, model and tool calls,
errors, breaker states, the catalog; and the `read` permission on it when keys are configured."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from chainreact.llm.breaker import get_breaker

from .ops_support import key, serve
from .test_server import agent_doc, echo_chain


def scrape(url: str, **kw: Any) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    r = httpx.get(url + "/metrics", **kw)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    return {(s.name, frozenset(s.labels.items())): s.value
            for fam in text_string_to_metric_families(r.text) for s in fam.samples}


def value(samples: dict[Any, float], name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def tool_agent(url: str) -> dict[str, Any]:
    return agent_doc(url, tools=[{"type": "rulechain", "targetId": "echo", "name": "double",
                                  "description": "Double n"}])


def test_metrics_count_requests_runs_model_and_tool_calls(fake_llm: Any, tmp_path: Path) -> None:
    llm = fake_llm([{"tool_calls": [{"name": "double", "arguments": {"n": 21}}]}, {"text": "42"},
                    {"status": 500}])
    with serve(tmp_path / "s", {"helper.json": tool_agent(llm.url), "echo.json": echo_chain()}) as srv:
        chat = srv.url + "/v1/chat/completions"
        ask = {"model": "helper", "messages": [{"role": "user", "content": "double 21"}]}
        assert httpx.post(chat, json=ask, timeout=30).json()["choices"][0]["message"]["content"] == "42"
        assert httpx.post(chat, json={**ask, "model": "nobody"}).status_code == 404
        assert httpx.get(srv.url + "/v1/models").status_code == 200
        assert httpx.get(srv.url + "/api/v1/rules/echo").status_code == 200
        assert httpx.get(srv.url + "/no/such/path").status_code == 404
        assert httpx.post(chat, json=ask, timeout=30).status_code == 500  # the model answers 500
        m = scrape(srv.url)

    req = "chainreact_http_requests_total"
    assert value(m, req, route="/v1/chat/completions", method="POST", status="200") == 1
    assert value(m, req, route="/v1/chat/completions", method="POST", status="404") == 1
    assert value(m, req, route="/v1/chat/completions", method="POST", status="500") == 1
    assert value(m, req, route="/v1/models", method="GET", status="200") == 1
    # by template, not by raw path; an unknown path does not make a label of its own
    assert value(m, req, route="/api/v1/rules/{id}", method="GET", status="200") == 1
    assert value(m, req, route="<unmatched>", method="GET", status="404") == 1
    assert value(m, "chainreact_http_request_duration_seconds_count", route="/v1/chat/completions",
                 method="POST") == 3

    assert value(m, "chainreact_runs_total", agent="helper", outcome="ok") == 1
    assert value(m, "chainreact_runs_total", agent="helper", outcome="error") == 1
    assert value(m, "chainreact_run_duration_seconds_count", agent="helper") == 2
    assert value(m, "chainreact_model_calls_total", model="fake-model", outcome="ok") == 2
    assert value(m, "chainreact_model_calls_total", model="fake-model", outcome="error") == 1
    assert value(m, "chainreact_tool_calls_total", tool="double", outcome="ok") == 1
    assert value(m, "chainreact_tool_call_duration_seconds_count", tool="double") == 1
    assert value(m, "chainreact_errors_total", where="model") == 1
    assert value(m, "chainreact_errors_total", where="run") == 1
    assert value(m, "chainreact_errors_total", where="http") == 1
    assert value(m, "chainreact_catalog_entries", kind="agent") == 1
    assert value(m, "chainreact_catalog_entries", kind="chain") == 1
    assert value(m, "chainreact_catalog_problems") == 0


def test_metrics_show_circuit_breaker_states(fake_llm: Any, tmp_path: Path) -> None:
    llm = fake_llm([{"text": "x"}])
    breaker = get_breaker("http://127.0.0.1:9/metrics-test", "m-metrics", 30)
    name = breaker.key
    with serve(tmp_path / "s", {"helper.json": agent_doc(llm.url)}) as srv:
        assert value(scrape(srv.url), "chainreact_circuit_breaker_state", breaker=name, state="closed") == 1
        breaker.failure(False, now=1000.0)  # trips it
        m = scrape(srv.url)
        assert value(m, "chainreact_circuit_breaker_state", breaker=name, state="open") == 1
        assert value(m, "chainreact_circuit_breaker_state", breaker=name, state="closed") == 0
        assert value(m, "chainreact_circuit_breaker_trips_total", breaker=name) == 1


def test_metrics_need_the_read_permission_with_keys(fake_llm: Any, tmp_path: Path) -> None:
    llm = fake_llm([{"text": "x"}])
    keys = {"keys": [key("reader", "read-key", permissions=["read"]),
                     key("runner", "run-key", permissions=["execute"])]}
    with serve(tmp_path / "s", {"helper.json": agent_doc(llm.url)}, keys=keys) as srv:
        assert httpx.get(srv.url + "/metrics").status_code == 401
        assert httpx.get(srv.url + "/metrics", headers={"Authorization": "Bearer run-key"}).status_code == 403
        m = scrape(srv.url, headers={"Authorization": "Bearer read-key"})
        assert value(m, "chainreact_http_requests_total", route="/metrics", method="GET", status="401") == 1
        assert value(m, "chainreact_http_requests_total", route="/metrics", method="GET", status="403") == 1


def test_metrics_can_be_turned_off(fake_llm: Any, tmp_path: Path) -> None:
    llm = fake_llm([{"text": "x"}])
    with serve(tmp_path / "s", {"helper.json": agent_doc(llm.url)}, metrics=False) as srv:
        assert httpx.get(srv.url + "/metrics").status_code == 404
