"""The playground in a real browser (headless Debian chromium) against a real server and FakeLLM."""

from __future__ import annotations

from pathlib import Path

import httpx
import orjson
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webelement import WebElement

from chainreact.server import Catalog, create_app
from tests.server.conftest import Served

from .conftest import console_errors, screenshot
from .pages import answer_starting, find, open_page, wait
from .scenario import docs

Browser = webdriver.Chrome


def test_static_files_ship_in_the_package_and_nothing_else_is_served(server: Served) -> None:
    page = httpx.get(server.url + "/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    js = httpx.get(server.url + "/playground/app.js")
    assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
    assert httpx.get(server.url + "/playground/..%2Fapp.py").status_code == 404
    assert httpx.get(server.url + "/playground/nope.js").status_code == 404
    # every asset the page and the modules reference exists (offline: nothing from elsewhere)
    static = Path(__file__).resolve().parents[2] / "src/chainreact/server/playground"
    for f in static.iterdir():
        text = f.read_text()
        text = text.replace("http://www.w3.org/2000/svg", "")  # a namespace name, never fetched
        assert "http://" not in text and "https://" not in text, f.name


def test_catalog_lists_everything_and_search_filters(browser: webdriver.Chrome, server: Served) -> None:
    open_page(browser, server.url + "/")
    ids = sorted(a.get_attribute("data-id") or "" for a in find(browser, "#catalog a"))
    assert ids == ["asker", "counter", "deployer", "echo", "flaky", "helpdesk", "helper", "pipeline",
                   "planner", "router", "slow"]
    assert [h.text.lower() for h in find(browser, "#catalog h2")] == ["agents", "chains", "flows"]
    screenshot(browser, "playground-catalog.png")
    search = browser.find_element(By.ID, "search")
    search.send_keys("doub")  # matches the helper's description, not its id
    wait(browser, lambda d: len(find(d, "#catalog a")) == 1)
    assert find(browser, "#catalog a")[0].get_attribute("data-id") == "helper"
    assert "1 of 11" in browser.find_element(By.ID, "catalog-status").text
    search.send_keys(Keys.CONTROL, "a")
    search.send_keys(Keys.BACKSPACE)
    wait(browser, lambda d: len(find(d, "#catalog a")) == 11)
    assert console_errors(browser) == []


def test_chat_streams_the_answer_with_a_tool_card_and_folded_reasoning(browser: webdriver.Chrome,
                                                                       server: Served) -> None:
    open_page(browser, server.url + "/#/agent/helper")
    box = wait(browser, lambda d: find(d, "#chat-input"))[0]
    box.send_keys("Please double 21", Keys.ENTER)
    answer = wait(browser, lambda d: [e for e in find(d, ".msg.assistant .text") if "Doubled" in e.text])[0]
    wait(browser, lambda d: answer.text == "Doubled: 42. Anything else?")
    card = find(browser, ".msg.assistant details.tool")[0]
    assert card.get_attribute("data-tool") == "double"
    wait(browser, lambda d: "done" in (card.get_attribute("class") or ""))
    card.find_element(By.TAG_NAME, "summary").click()
    assert '"n": 21' in card.find_element(By.CSS_SELECTOR, ".args").text
    assert '"n": 42' in card.find_element(By.CSS_SELECTOR, ".result").text
    assert card.find_element(By.CSS_SELECTOR, ".dur").text.endswith("ms")
    reasoning = find(browser, ".msg.assistant details.reasoning")[0]
    assert reasoning.get_attribute("open") is None  # folded until asked
    assert "double tool" in reasoning.get_attribute("textContent")
    assert "tokens" in find(browser, ".msg.assistant .meta")[0].text
    screenshot(browser, "playground-chat.png")
    # the session is kept: a reload shows the same conversation from the session store
    browser.refresh()
    wait(browser, lambda d: [e for e in find(d, ".msg.assistant .text") if e.text.startswith("Doubled: 42")])
    assert find(browser, ".msg.user .text")[0].text == "Please double 21"
    # a new session starts empty, the old one stays in the picker
    browser.find_element(By.ID, "new-session").click()
    wait(browser, lambda d: not find(d, ".msg"))
    assert len(find(browser, "#session-picker option")) == 2
    assert console_errors(browser) == []


def test_sub_agent_calls_nest_inside_their_parent_card(browser: webdriver.Chrome, server: Served) -> None:
    open_page(browser, server.url + "/#/agent/planner")
    box = wait(browser, lambda d: find(d, "#chat-input"))[0]
    box.send_keys("Get 21 doubled", Keys.ENTER)
    wait(browser, lambda d: [e for e in find(d, ".msg.assistant .text") if "counter answered" in e.text])
    outer = find(browser, ".msg.assistant > .body > details.tool")
    assert [c.get_attribute("data-tool") for c in outer] == ["counter"]
    inner = outer[0].find_elements(By.CSS_SELECTOR, ".nested > details.tool")
    assert [c.get_attribute("data-tool") for c in inner] == ["count_letters"]
    assert "done" in (inner[0].get_attribute("class") or "")
    screenshot(browser, "playground-nested.png")
    assert console_errors(browser) == []


def test_chain_graph_shows_the_path_of_a_message(browser: webdriver.Chrome, server: Served) -> None:
    open_page(browser, server.url + "/#/chain/router/graph")
    wait(browser, lambda d: len(find(d, "#chain-graph svg g.node")) == 4)
    labels = sorted(e.get_attribute("data-labels") or "" for e in find(browser, "#chain-graph g.edge"))
    assert labels == ["False", "Success", "Success", "True"]
    data = browser.find_element(By.ID, "trace-data")
    data.clear()
    data.send_keys('{"n": 42}')
    browser.find_element(By.ID, "trace-run").click()
    wait(browser, lambda d: find(d, "#trace-steps li"))

    def visited(css: str) -> list[str]:
        def name(e: WebElement) -> str:
            a = e.get_attribute
            return a("data-id") or f"{a('data-from')}>{a('data-to')}"

        return sorted(name(e) for e in find(browser, css))

    assert visited("g.node.visited") == ["big", "check", "log"]
    assert visited("g.edge.visited") == ["big>log", "check>big"]
    steps = [e.text.split(" (")[0] for e in find(browser, "#trace-steps li")]
    assert steps == ["check → True", "big → Success", "log → Success"]
    # a node's in/out messages on click (and with the keyboard)
    node = find(browser, 'g.node[data-id="big"]')[0]
    node.click()
    ios = wait(browser, lambda d: find(d, "#node-detail pre.io"))
    assert [e.get_attribute("data-flow") for e in ios] == ["IN", "OUT"]
    assert '"size"' not in ios[0].text and '"size": "big"' in ios[1].text
    screenshot(browser, "playground-chain.png")
    browser.find_element(By.CSS_SELECTOR, 'g.node[data-id="small"]').send_keys(Keys.ENTER)
    wait(browser, lambda d: "did not reach" in d.find_element(By.ID, "node-detail").text)
    assert console_errors(browser) == []


def test_a_sub_agents_text_and_end_stay_out_of_the_answer_its_tool_calls_are_shown(server: Served) -> None:
    # Before: the sub-agent's streamed text was sent as the answer and its end ended the stream.
    body = {"model": "planner", "stream": True, "messages": [{"role": "user", "content": "go"}]}
    resp = httpx.post(server.url + "/v1/chat/completions", headers={"X-Stream-Protocol": "agui"}, json=body,
                      timeout=30)
    frames = [orjson.loads(line[6:]) for line in resp.text.split("\n\n")
              if line.startswith("data: ") and line != "data: [DONE]"]
    deltas = [f["choices"][0]["delta"] for f in frames]
    assert "".join(d.get("content", "") for d in deltas) == "The counter answered: It has 10 letters."
    tools = [(t["type"], t["toolName"], t["path"]) for d in deltas for t in d.get("tool_calls", [])]
    assert tools == [("TOOL_CALL_START", "counter", ["planner"]),
                     ("TOOL_CALL_START", "count_letters", ["planner", "counter"]),
                     ("TOOL_CALL_RESULT", "count_letters", ["planner", "counter"]),
                     ("TOOL_CALL_RESULT", "counter", ["planner"])]
    assert [f["choices"][0]["finish_reason"] for f in frames].count("stop") == 1
    assert resp.text.rstrip().endswith("data: [DONE]")


def test_trace_endpoint_refuses_bad_input_and_unknown_chains(server: Served) -> None:
    url = server.url + "/playground/api/chains/{}/trace"
    assert httpx.post(url.format("nope"), json={}).status_code == 404
    bad = httpx.post(url.format("router"), content=b"{not json")
    assert bad.status_code == 400 and "not valid JSON" in bad.json()["error"]["message"]
    meta = httpx.post(url.format("router"), json={"metadata": {"k": 1}})
    assert meta.status_code == 400 and "'metadata'" in meta.json()["error"]["message"]
    small = httpx.post(url.format("router"), json={"msgType": "T", "data": {"n": 3}, "metadata": {"k": "v"}})
    assert small.status_code == 200
    outs = [(e["nodeId"], e["relation"]) for e in small.json()["events"] if e["flow"] == "OUT"]
    assert outs == [("check", "False"), ("small", "Success"), ("log", "Success")]
    assert small.json()["events"][0]["msg"]["metadata"] == {"k": "v"}
    catalog = httpx.get(server.url + "/playground/api/catalog").json()["items"]
    helper = next(it for it in catalog if it["id"] == "helper")
    assert helper == {"id": "helper", "kind": "agent", "description": "Doubles numbers with a tool",
                      "model": "fake-model", "addresses": {
                          "openai": "/v1/chat/completions", "agui": "/agui/helper", "a2a": "/a2a/helper",
                          "a2a_card": "/a2a/helper/.well-known/agent-card.json"}}


def test_flow_view_shows_nodes_transitions_and_where_each_session_stands(browser: webdriver.Chrome,
                                                                         server: Served) -> None:
    open_page(browser, server.url + "/#/flow/helpdesk")
    wait(browser, lambda d: len(find(d, "#flow-graph g.node")) == 3)
    assert sorted(e.get_attribute("data-id") or "" for e in find(browser, "#flow-graph g.node")) == \
        ["agent", "bye", "greet"]
    edges = {(e.get_attribute("data-from"), e.get_attribute("data-to"), e.get_attribute("data-labels"))
             for e in find(browser, "#flow-graph g.edge")}
    assert edges == {("greet", "agent", "next"), ("agent", "bye", "{{output.done}} == true")}

    def send(session: str, text: str) -> str:
        sid = browser.find_element(By.ID, "flow-session")
        sid.send_keys(Keys.CONTROL, "a")
        sid.send_keys(session)
        browser.find_element(By.ID, "flow-text").send_keys(text)
        browser.find_element(By.ID, "flow-send").click()
        status = browser.find_element(By.ID, "flow-status")
        return str(wait(browser, lambda d: status.text if status.text.startswith("Now at") else None))

    assert send("ann", "My shoes are late") == "Now at agent"
    wait(browser, lambda d: find(d, '#flow-sessions li[data-session="ann"]'))
    assert find(browser, '#flow-sessions li[data-session="ann"]')[0].get_attribute("data-node") == "agent"
    agent = find(browser, 'g.node[data-id="agent"]')[0]
    assert {"visited", "selected"} <= set((agent.get_attribute("class") or "").split())
    assert agent.find_element(By.CSS_SELECTOR, ".order").text == "1 session"
    said = [e.text for e in find(browser, "#flow-detail .msg .text")]
    assert said == ["My shoes are late", "Hello!", "Noted: My shoes are late"]  # the user's message first
    assert send("bob", "Hi") == "Now at agent"
    wait(browser, lambda d: agent.find_element(By.CSS_SELECTOR, ".order").text == "2 sessions")

    # an answer that streams: its text shows while the turn is still running, then in full
    browser.find_element(By.ID, "flow-text").send_keys("Answer slowly")
    browser.find_element(By.ID, "flow-send").click()
    partial = str(wait(browser, lambda d: next((e.text for e in find(d, "#flow-turn .msg.streaming .text")
                                                if e.text), None)))
    assert browser.find_element(By.ID, "flow-status").text == "Sending…"
    wait(browser, lambda d: browser.find_element(By.ID, "flow-status").text == "Now at agent")
    said = [e.text for e in find(browser, "#flow-detail .msg[data-node] .text")]
    assert len(said) == 1 and said[0].startswith("Noted: Answer slowly. I will look into it")
    assert said[0].startswith(partial) and len(partial) < len(said[0]) and "{" not in said[0]
    assert find(browser, "#flow-turn .msg.streaming") == []
    screenshot(browser, "playground-flow.png")
    assert send("ann", "Thanks, bye") == "Now at the end: the session ended"
    wait(browser, lambda d: "at greet (ended)" in find(d, '#flow-sessions li[data-session="ann"]')[0].text)
    assert agent.find_element(By.CSS_SELECTOR, ".order").text == "1 session"
    assert console_errors(browser) == []


def test_an_approval_is_answered_in_place_and_the_run_goes_on(browser: Browser, server: Served) -> None:
    open_page(browser, server.url + "/#/agent/deployer")
    wait(browser, lambda d: find(d, "#chat-input"))[0].send_keys("Deploy the api", Keys.ENTER)
    form = wait(browser, lambda d: find(d, ".msg.assistant form.questions"))[0]
    question = form.find_element(By.CSS_SELECTOR, 'fieldset[data-kind="approval"]')
    assert "deploy" in question.find_element(By.TAG_NAME, "legend").text
    assert '"service": "api"' in question.find_element(By.TAG_NAME, "pre").text
    assert "waiting for an answer" in find(browser, ".msg.assistant .meta")[0].text
    screenshot(browser, "playground-approval.png")
    form.find_element(By.CSS_SELECTOR, "button.approve").click()
    answer = answer_starting(browser, "Done")
    assert answer.text == "Done: api deployed"
    assert find(browser, ".msg.assistant .answered")[0].text == "Answered: approved"
    card = find(browser, 'details.tool[data-tool="deploy"]')[0]
    assert "done" in (card.get_attribute("class") or "")
    # the timeline: both model calls (tokens), the tool with its duration
    timeline = find(browser, ".msg.assistant details.timeline")[0]
    timeline.find_element(By.TAG_NAME, "summary").click()
    kinds = [r.get_attribute("data-kind") for r in timeline.find_elements(By.CSS_SELECTOR, "tbody tr")]
    assert kinds == ["model call", "tool", "model call"]
    first = timeline.find_elements(By.CSS_SELECTOR, "tbody tr")[0].text
    assert "fake-model" in first and "tool_calls → deploy" in first and " in / " in first
    screenshot(browser, "playground-timeline.png")
    assert console_errors(browser) == []


def test_a_rejected_approval_reaches_the_model_as_a_refusal(browser: Browser, server: Served) -> None:
    open_page(browser, server.url + "/#/agent/deployer")
    browser.find_element(By.ID, "new-session").click()
    wait(browser, lambda d: find(d, "#chat-input"))[0].send_keys("Deploy again", Keys.ENTER)
    form = wait(browser, lambda d: find(d, ".msg.assistant form.questions"))[0]
    form.find_element(By.CSS_SELECTOR, "input").send_keys("not today")
    form.find_element(By.CSS_SELECTOR, "button.reject").click()
    answer = answer_starting(browser, "Done")
    assert "not today" in answer.text  # the tool did not run: the model got the refusal and its reason
    assert find(browser, ".msg.assistant .answered")[0].text == "Answered: rejected (not today)"
    card = find(browser, 'details.tool[data-tool="deploy"]')[0]
    assert "failed" in (card.get_attribute("class") or "")
    assert console_errors(browser) == []


def test_past_runs_open_from_the_store_and_an_interrupted_one_is_answered_there(browser: Browser,
                                                                               server: Served) -> None:
    open_page(browser, server.url + "/#/agent/deployer")
    browser.find_element(By.ID, "new-session").click()
    wait(browser, lambda d: find(d, "#chat-input"))[0].send_keys("Deploy later", Keys.ENTER)
    wait(browser, lambda d: find(d, ".msg.assistant form.questions"))
    open_page(browser, server.url + "/#/agent/deployer")  # a new page: only the store knows the run
    browser.find_element(By.ID, "new-session").click()
    browser.find_element(By.ID, "past-runs").click()
    runs = wait(browser, lambda d: find(d, "#past-runs-panel button.run"))
    # this module's three runs of the deployer, newest first: the waiting one, then the two answered
    assert [r.get_attribute("data-status") for r in runs] == ["interrupted", "done", "done"]
    screenshot(browser, "playground-runs.png")
    runs[0].click()
    form = wait(browser, lambda d: find(d, ".msg.assistant form.questions"))[0]
    assert find(browser, ".msg.user .text")[0].text == "Deploy later"
    form.find_element(By.CSS_SELECTOR, "button.approve").click()
    assert answer_starting(browser, "Done").text == "Done: api deployed"
    browser.find_element(By.ID, "past-runs").click()
    runs = wait(browser, lambda d: find(d, "#past-runs-panel button.run"))
    assert [r.get_attribute("data-status") for r in runs] == ["done", "done", "done"]
    runs[2].click()  # the first run of the module: approved in the earlier test
    wait(browser, lambda d: len(find(d, ".msg.assistant")) == 2)
    old = find(browser, ".msg.assistant")[1]
    wait(browser, lambda d: "Done: api deployed" in old.text)
    rows = old.find_elements(By.CSS_SELECTOR, "details.timeline tbody tr")
    assert [r.get_attribute("data-kind") for r in rows] == ["model call", "tool", "model call"]
    assert console_errors(browser) == []


def test_a_question_is_answered_from_its_schemas_choices(browser: webdriver.Chrome, server: Served) -> None:
    open_page(browser, server.url + "/#/agent/asker")
    wait(browser, lambda d: find(d, "#chat-input"))[0].send_keys("Weather?", Keys.ENTER)
    form = wait(browser, lambda d: find(d, ".msg.assistant form.questions"))[0]
    question = form.find_element(By.CSS_SELECTOR, 'fieldset[data-kind="ask_user"]')
    assert question.find_element(By.TAG_NAME, "legend").text == "Celsius or Fahrenheit?"
    choices = question.find_elements(By.CSS_SELECTOR, "select option")
    assert [o.text for o in choices] == ["C", "F"]
    choices[1].click()
    form.find_element(By.CSS_SELECTOR, "button.approve").click()
    wait(browser, lambda d: [e for e in find(d, ".msg.assistant .text") if e.text == "Using F."])
    assert find(browser, ".msg.assistant .answered")[0].text == "Answered: F"
    assert console_errors(browser) == []


def test_retries_show_in_the_timeline(browser: webdriver.Chrome, server: Served) -> None:
    open_page(browser, server.url + "/#/agent/flaky")
    wait(browser, lambda d: find(d, "#chat-input"))[0].send_keys("Hello", Keys.ENTER)
    wait(browser, lambda d: [e for e in find(d, ".msg.assistant .text") if e.text == "Second time lucky."])
    rows = find(browser, ".msg.assistant details.timeline tbody tr")
    assert [r.get_attribute("data-kind") for r in rows] == ["retry", "model call"]
    assert "503" in rows[0].get_attribute("textContent") and "bad" in (rows[0].get_attribute("class") or "")
    assert console_errors(browser) == []


def test_cancel_stops_the_run_on_the_server(browser: webdriver.Chrome, server: Served) -> None:
    open_page(browser, server.url + "/#/agent/slow")
    wait(browser, lambda d: find(d, "#chat-input"))[0].send_keys("Take your time", Keys.ENTER)
    wait(browser, lambda d: [e for e in find(d, ".msg.assistant .text") if "long while" in e.text])
    cancel = browser.find_element(By.ID, "cancel")
    assert cancel.is_enabled()
    cancel.click()
    wait(browser, lambda d: [e for e in find(d, ".msg.assistant .failure") if e.text == "Cancelled."])
    partial = find(browser, ".msg.assistant .text")[0].text
    assert 0 < len(partial) < len("This answer takes a long while to arrive. " * 8)
    assert not cancel.is_enabled() and browser.find_element(By.ID, "send").is_enabled()
    assert console_errors(browser) == []


def test_with_keys_the_page_asks_for_one_and_shows_what_it_may_read(browser: Browser, tmp_path: Path) -> None:
    import hashlib
    import json

    from chainreact.server import KeyStore

    folder = tmp_path / "served"
    folder.mkdir()
    for name, doc in docs("http://127.0.0.1:9/v1").items():
        if name in ("router.json", "echo.json", "helper.json"):
            (folder / name).write_text(json.dumps(doc))
    keys = {"keys": [{"name": "viewer", "sha256": hashlib.sha256(b"k-router").hexdigest(), "ids": ["router"],
                      "permissions": ["read", "execute"]}]}
    (tmp_path / "keys.json").write_text(json.dumps(keys))
    with Served(create_app(Catalog.load([folder]), keys=KeyStore.load(tmp_path / "keys.json"))) as srv:
        browser.get("about:blank")
        browser.get(srv.url + "/")
        status = browser.find_element(By.ID, "catalog-status")
        wait(browser, lambda d: "needs an API key" in status.text)
        assert find(browser, "#catalog a") == []
        browser.find_element(By.ID, "api-key").send_keys("k-router", Keys.ENTER)
        wait(browser, lambda d: [a.get_attribute("data-id") for a in find(d, "#catalog a")] == ["router"])
        browser.execute_script("location.hash = '#/chain/router/graph'")
        wait(browser, lambda d: len(find(d, "#chain-graph g.node")) == 4)
        browser.find_element(By.ID, "trace-run").click()  # data {} : n is missing, the filter says False
        wait(browser, lambda d: find(d, "#trace-steps li"))
        assert sorted(e.get_attribute("data-id") or "" for e in find(browser, "g.node.visited")) == \
            ["check", "log", "small"]
        browser.execute_script("sessionStorage.clear()")
    # a 401 is an answer the page handles, not a console error; nothing else failed
    assert [e for e in console_errors(browser) if "401" not in e["message"]] == []


def test_chat_with_a_chain_from_its_chat_tab(browser: Browser, server: Served) -> None:
    open_page(browser, server.url + "/#/chain/router/graph")
    wait(browser, lambda d: find(d, "#tab-chat"))[0].click()
    wait(browser, lambda d: find(d, "#chat-input"))[0].send_keys("hello chain", Keys.ENTER)
    # the chain's Success message is the answer: the request went through the filter (no n: False)
    answer = answer_starting(browser, "{")
    assert '"size":"small"' in answer.text and '"hello chain"' in answer.text
    assert browser.find_element(By.ID, "tab-chat").get_attribute("aria-selected") == "true"
    assert console_errors(browser) == []


def test_a_chain_that_does_not_stream_still_answers_a_streamed_chat(server: Served) -> None:
    # Before: only Stream frames became text, so a chain of plain nodes answered with no content at all.
    body = {"model": "router", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    resp = httpx.post(server.url + "/v1/chat/completions", json=body, timeout=30)
    frames = [orjson.loads(line[6:]) for line in resp.text.split("\n\n")
              if line.startswith("data: ") and line != "data: [DONE]"]
    text = "".join(f["choices"][0]["delta"].get("content", "") for f in frames)
    assert orjson.loads(text)["messages"] == [{"role": "user", "content": "hi"}]
    assert orjson.loads(text)["size"] == "small"
    assert frames[0]["choices"][0]["delta"]["role"] == "assistant"
    assert [f["choices"][0]["finish_reason"] for f in frames] == [None, "stop"]
