"""A rule chain's runs in the playground: chat through the runs API with the run's timeline (every node's
in/out, its agent nodes' model and tool calls) and the chain's past runs opened from the store."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import httpx
import orjson
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webelement import WebElement

from chainreact.server import Catalog, KeyStore, create_app
from tests.server.conftest import Served

from .conftest import console_errors, screenshot
from .pages import Browser, answer_starting, find, open_page, wait
from .scenario import docs

# A duration as the playground writes it: "12 ms", or "1.3 s" on a slow machine.
DURATION = re.compile(r"\d+(\.\d+)? m?s$")

PIPELINE_ROWS = ["node", "model call", "tool", "model call", "node"]


def rows_of(turn: WebElement) -> list[WebElement]:
    return turn.find_elements(By.CSS_SELECTOR, "details.timeline tbody tr")  # type: ignore[no-any-return]


def chat(browser: Browser, url: str, text: str) -> None:
    open_page(browser, url)
    browser.find_element(By.ID, "new-session").click()
    wait(browser, lambda d: find(d, "#chat-input"))[0].send_keys(text, Keys.ENTER)


def test_a_chains_answer_has_a_timeline_of_its_nodes_and_its_agent_nodes_calls(browser: Browser,
                                                                               server: Served) -> None:
    chat(browser, server.url + "/#/chain/pipeline/chat", "count chainreact")
    answer = answer_starting(browser, "It has")
    wait(browser, lambda d: answer.text == "It has 10 letters.")
    card = find(browser, '.msg.assistant details.tool[data-tool="count_letters"]')[0]
    wait(browser, lambda d: "done" in (card.get_attribute("class") or ""))
    assert DURATION.search(card.find_element(By.CSS_SELECTOR, ".dur").get_attribute("textContent"))
    turn = find(browser, ".msg.assistant")[0]
    wait(browser, lambda d: turn.get_attribute("aria-busy") == "false")
    timeline = turn.find_element(By.CSS_SELECTOR, "details.timeline")
    timeline.find_element(By.TAG_NAME, "summary").click()
    rows = rows_of(turn)
    assert [r.get_attribute("data-kind") for r in rows] == PIPELINE_ROWS
    assert [r.get_attribute("data-node") for r in rows if r.get_attribute("data-kind") == "node"] == \
        ["prep", "count"]
    prep, first_call, tool, _, count = (r.text for r in rows)
    assert "prep → Success" in prep and '"prepared"' not in prep  # metadata is not the data
    assert "count 1" in first_call and "tool_calls → count_letters" in first_call and " in / " in first_call
    assert "count 1" in tool and "count_letters" in tool and DURATION.search(tool)
    assert "count → Success" in count and "It has 10 letters." in count and DURATION.search(count)
    assert "tokens" in turn.find_element(By.CSS_SELECTOR, ".meta").text
    screenshot(browser, "playground-chain-timeline.png")
    assert console_errors(browser) == []


def test_a_failing_node_is_marked_in_the_timeline(browser: Browser, server: Served) -> None:
    chat(browser, server.url + "/#/chain/router/chat", "hello chain")
    answer = answer_starting(browser, "{")
    assert '"size":"small"' in answer.text  # the chain's Success message is the answer (no streaming node)
    turn = find(browser, ".msg.assistant")[0]
    rows = wait(browser, lambda d: rows_of(turn) if len(rows_of(turn)) == 3 else None)
    texts = [r.get_attribute("textContent") for r in rows]
    assert ["check → False" in texts[0], "small → Success" in texts[1], "log → Success" in texts[2]] == \
        [True, True, True]
    assert all("bad" not in (r.get_attribute("class") or "") for r in rows)
    assert console_errors(browser) == []


def test_past_runs_of_a_chain_open_from_the_store(browser: Browser, server: Served) -> None:
    chat(browser, server.url + "/#/chain/pipeline/chat", "count chainreact")
    answer_starting(browser, "It has")
    wait(browser, lambda d: find(d, ".msg.assistant")[0].get_attribute("aria-busy") == "false")
    open_page(browser, server.url + "/#/chain/pipeline/chat")  # a new page: only the store knows the run
    browser.find_element(By.ID, "new-session").click()
    browser.find_element(By.ID, "past-runs").click()
    runs = wait(browser, lambda d: find(d, "#past-runs-panel button.run"))
    assert [r.get_attribute("data-status") for r in runs] == ["done"] * len(runs) and len(runs) >= 1
    assert "It has 10 letters." in runs[0].text
    screenshot(browser, "playground-chain-runs.png")
    runs[0].click()
    turn = wait(browser, lambda d: find(d, ".msg.assistant"))[0]
    wait(browser, lambda d: turn.get_attribute("aria-busy") == "false")
    assert find(browser, ".msg.user .text")[0].text == "count chainreact"
    assert turn.find_element(By.CSS_SELECTOR, ".text").text == "It has 10 letters."
    assert [c.get_attribute("data-tool") for c in turn.find_elements(By.CSS_SELECTOR, "details.tool")] == \
        ["count_letters"]
    assert [r.get_attribute("data-kind") for r in rows_of(turn)] == PIPELINE_ROWS
    assert console_errors(browser) == []


def test_the_runs_of_a_chain_are_listed_and_their_events_carry_the_nodes(server: Served) -> None:
    # the chain gets the OpenAI request ({"model", "messages"}): no n, the filter says False
    started = httpx.post(server.url + "/api/v1/rules/router/runs", json={"input": "hi"}, timeout=30)
    assert started.status_code == 200 and started.json()["status"] == "done"
    run_id = started.json()["id"]
    items = httpx.get(server.url + "/playground/api/chains/router/runs").json()["items"]
    assert items[0]["id"] == run_id and items[0]["status"] == "done"
    assert '"size":"small"' in items[0]["answer"]
    assert all(i["id"] != run_id for i in httpx.get(server.url + "/playground/api/chains/pipeline/runs")
               .json()["items"])
    events = httpx.get(server.url + f"/api/v1/runs/{run_id}/events", timeout=30).text
    nodes = [orjson.loads(line[6:]) for line in events.split("\n") if line.startswith("data: ")]
    nodes = [e for e in nodes if e.get("type") == "node"]
    assert [(e["nodeId"], e["flow"], e["relation"]) for e in nodes] == [
        ("check", "IN", ""), ("check", "OUT", "False"), ("small", "IN", ""), ("small", "OUT", "Success"),
        ("log", "IN", ""), ("log", "OUT", "Success")]
    assert '"size":"small"' in nodes[3]["msg"]["data"] and '"size"' not in nodes[2]["msg"]["data"]
    assert nodes[3]["durationMs"] >= 0
    # not a chain: 404, whatever else it is
    for path in ("/playground/api/chains/helper/runs", "/playground/api/chains/nope/runs",
                 "/playground/api/agents/router/runs"):
        assert httpx.get(server.url + path).status_code == 404, path


def test_a_chains_runs_need_read_on_the_chain(tmp_path: Path) -> None:
    folder = tmp_path / "served"
    folder.mkdir()
    for name, doc in docs("http://127.0.0.1:9/v1").items():
        if name in ("router.json", "echo.json"):
            (folder / name).write_text(json.dumps(doc))
    keys = {"keys": [{"name": "viewer", "sha256": hashlib.sha256(b"k-router").hexdigest(), "ids": ["router"],
                      "permissions": ["read"]}]}
    (tmp_path / "keys.json").write_text(json.dumps(keys))
    with Served(create_app(Catalog.load([folder]), keys=KeyStore.load(tmp_path / "keys.json"))) as srv:
        url = srv.url + "/playground/api/chains/{}/runs"
        assert httpx.get(url.format("router")).status_code == 401
        auth = {"Authorization": "Bearer k-router"}
        assert httpx.get(url.format("router"), headers=auth).json() == {"items": []}
        assert httpx.get(url.format("echo"), headers=auth).status_code == 403
        # read is not execute: the key cannot start a run of the chain it may list
        assert httpx.post(srv.url + "/api/v1/rules/router/runs", json={"input": "x"},
                          headers=auth).status_code == 403


def test_a_past_run_shows_its_path_on_the_chains_graph(browser: Browser, server: Served) -> None:
    started = httpx.post(server.url + "/api/v1/rules/router/runs", json={"input": "from the API"}, timeout=30)
    run_id = started.json()["id"]
    open_page(browser, server.url + "/#/chain/router/graph")
    wait(browser, lambda d: len(find(d, "#chain-graph svg g.node")) == 4)
    browser.find_element(By.ID, "graph-runs").click()
    run = wait(browser, lambda d: find(d, f'#graph-runs-panel button.run[data-run="{run_id}"]'))[0]
    run.click()
    wait(browser, lambda d: find(d, "#trace-steps li"))
    assert sorted(e.get_attribute("data-id") or "" for e in find(browser, "g.node.visited")) == \
        ["check", "log", "small"]
    steps = [e.text.split(" (")[0] for e in find(browser, "#trace-steps li")]
    assert steps == ["check → False", "small → Success", "log → Success"]
    assert f"Run {run_id} (done)" in browser.find_element(By.ID, "trace-status").text
    assert '"from the API"' in browser.find_element(By.ID, "node-detail").text  # the end's message
    find(browser, 'g.node[data-id="small"]')[0].click()
    ios = wait(browser, lambda d: find(d, "#node-detail pre.io"))
    assert [e.get_attribute("data-flow") for e in ios] == ["IN", "OUT"]
    assert '"size"' not in ios[0].text and '"size": "small"' in ios[1].text
    assert console_errors(browser) == []
