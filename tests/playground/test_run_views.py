"""A run's views: each model call's request and response in the timeline (messages, tools offered,
params; never a key), and a finished past run without a live approval form."""

from __future__ import annotations

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webelement import WebElement

from tests.server.conftest import Served

from .conftest import console_errors, screenshot
from .pages import Browser, answer_starting, find, open_page, wait
from .scenario_more import SECRET


def chat_and_open_the_timeline(browser: Browser, url: str, text: str) -> tuple[WebElement, list[WebElement]]:
    """Send `text` in the chat at `url`; the finished answer's timeline, unfolded, and its model call rows'
    "request and response" buttons."""
    open_page(browser, url)
    wait(browser, lambda d: find(d, "#chat-input"))[0].send_keys(text, Keys.ENTER)
    timeline = wait(browser, lambda d: find(d, '.msg.assistant[aria-busy="false"] details.timeline'))[0]
    timeline.find_element(By.TAG_NAME, "summary").click()
    return timeline, timeline.find_elements(By.CSS_SELECTOR, 'tr[data-kind="model call"] button.callbtn')


def test_the_timeline_opens_each_model_calls_request_and_response(browser: Browser, more: Served) -> None:
    timeline, buttons = chat_and_open_the_timeline(browser, more.url + "/#/agent/clerk", "File the ledger")
    assert answer_starting(browser, "Filed").text == "Filed: 6 letters."
    assert len(buttons) == 2
    buttons[0].click()
    first = wait(browser, lambda d: timeline.find_elements(By.CSS_SELECTOR, "tr.calldetail .call"))[0]
    assert "clerk · step 1 · fake-model at http://127.0.0.1:" in first.text
    assert '"temperature": 0.3' in first.find_element(By.CSS_SELECTOR, "pre.params").text
    assert '"maxTokens": 200' in first.find_element(By.CSS_SELECTOR, "pre.params").text
    offered = first.find_elements(By.CSS_SELECTOR, "ul.offered > li")
    assert [o.text.split("\n")[0] for o in offered] == ["count_letters — Count the letters of a word."]
    sent = first.find_elements(By.CSS_SELECTOR, "ol.sent > li")
    assert [(m.get_attribute("data-role"), m.find_element(By.TAG_NAME, "pre").text) for m in sent] == [
        ("system", "You file things."), ("user", "File the ledger")]
    got = first.find_element(By.CSS_SELECTOR, "ol.received > li")
    assert 'count_letters({"word":"ledger"})' in got.text and "Response: tool_calls" in first.text
    screenshot(browser, "playground-model-call.png")
    buttons[1].click()  # the second call: its request carries the tool's result
    second = wait(browser, lambda d: timeline.find_elements(By.CSS_SELECTOR, "tr.calldetail .call")[1:])[0]
    roles = [m.get_attribute("data-role") for m in second.find_elements(By.CSS_SELECTOR, "ol.sent > li")]
    assert roles == ["system", "user", "assistant", "tool"]
    assert second.find_element(By.CSS_SELECTOR, "ol.received > li pre").text == "Filed: 6 letters."
    buttons[0].click()  # closes again
    assert len(timeline.find_elements(By.CSS_SELECTOR, "tr.calldetail")) == 1
    # the agent's key never reaches the page (nor what it reads the calls from)
    assert SECRET not in browser.page_source
    run_id = browser.execute_script(
        "return JSON.parse(localStorage.getItem('chainreact.sessions.agent:clerk'))[0].turns[1].runId")
    cassette = httpx.get(more.url + f"/playground/api/agents/clerk/runs/{run_id}/cassette").text
    assert SECRET not in cassette and "fake-model" in cassette
    assert console_errors(browser) == []


def test_a_finished_past_run_shows_no_live_approval_form(browser: Browser, more: Served) -> None:
    open_page(browser, more.url + "/#/agent/approver")
    wait(browser, lambda d: find(d, "#chat-input"))[0].send_keys("Deploy the api", Keys.ENTER)
    wait(browser, lambda d: find(d, ".msg.assistant form.questions button.approve"))[0].click()
    assert answer_starting(browser, "Done").text == "Done: api deployed"
    open_page(browser, more.url + "/#/agent/approver")  # a new page: only the store knows the run
    browser.find_element(By.ID, "new-session").click()
    browser.find_element(By.ID, "past-runs").click()
    runs = wait(browser, lambda d: find(d, "#past-runs-panel button.run"))
    assert [r.get_attribute("data-status") for r in runs] == ["done"]
    runs[0].click()
    assert answer_starting(browser, "Done").text == "Done: api deployed"
    wait(browser, lambda d: find(d, '.msg.assistant[aria-busy="false"]'))
    # the old page showed the approval form again here (and Approve got 409)
    assert find(browser, ".msg.assistant form.questions") == []
    assert find(browser, ".msg.assistant .answered")[0].text == "Answered earlier; the run went on."
    card = find(browser, 'details.tool[data-tool="deploy"]')[0]
    assert "done" in (card.get_attribute("class") or "")
    assert console_errors(browser) == []


def test_a_chains_agent_node_calls_open_from_its_timeline(browser: Browser, server: Served) -> None:
    timeline, buttons = chat_and_open_the_timeline(browser, server.url + "/#/chain/pipeline/chat",
                                                   "count chainreact")
    assert len(buttons) == 2
    buttons[1].click()
    call = wait(browser, lambda d: timeline.find_elements(By.CSS_SELECTOR, "tr.calldetail .call"))[0]
    assert call.text.startswith("count · step 2 · fake-model")
    sent = [(m.get_attribute("data-role"), m.find_element(By.TAG_NAME, "pre").text)
            for m in call.find_elements(By.CSS_SELECTOR, "ol.sent > li")]
    assert sent[0] == ("system", "You count letters.") and sent[-1] == ("tool", "10")
    assert console_errors(browser) == []
