"""The catalog: an empty search shows everything however the box was emptied, and every id's AG-UI and
A2A addresses are shown (the welcome view's table, each view's Connect panel) and answer."""

from __future__ import annotations

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from tests.server.conftest import Served

from .conftest import console_errors, screenshot
from .pages import Browser, find, open_page, wait

ALL = 11


def shown(browser: Browser) -> tuple[str, int]:
    return browser.find_element(By.ID, "catalog-status").text, len(find(browser, "#catalog a"))


def test_an_emptied_search_shows_everything(browser: Browser, server: Served) -> None:
    open_page(browser, server.url + "/")
    search = browser.find_element(By.ID, "search")
    search.send_keys("zzz")
    wait(browser, lambda d: shown(d) == ("0 of 11 match “zzz”", 0))
    # emptied without a keystroke (WebDriver's clear(), as a password manager or a form reset would): the
    # box fires `change`, not `input`; the old page stayed at "0 of 11 match" under an empty box
    search.clear()
    wait(browser, lambda d: shown(d) == (f"{ALL} loaded", ALL))
    search.send_keys("zzz", Keys.ESCAPE)  # the search box's own clearing
    wait(browser, lambda d: shown(d) == (f"{ALL} loaded", ALL))
    # only spaces or invisible characters: an empty search
    browser.execute_script("const s = document.getElementById('search'); s.value = ' \\u200b ';"
                           "s.dispatchEvent(new Event('input'))")
    wait(browser, lambda d: shown(d) == (f"{ALL} loaded", ALL))
    search.clear()
    search.send_keys("flows")  # the group's title finds the group
    wait(browser, lambda d: shown(d)[1] == 1)
    assert [a.get_attribute("data-id") for a in find(browser, "#catalog a")] == ["helpdesk"]
    assert console_errors(browser) == []


def test_every_id_shows_its_ag_ui_and_a2a_addresses_and_they_answer(browser: Browser, server: Served) -> None:
    open_page(browser, server.url + "/")
    rows = wait(browser, lambda d: find(d, "#addresses tbody tr"))
    assert len(rows) == ALL
    row = next(r for r in rows if r.get_attribute("data-id") == "counter")
    agui = row.find_element(By.CSS_SELECTOR, "code.agui").text
    card = row.find_element(By.CSS_SELECTOR, "code.a2a-card").text
    assert agui == server.url + "/agui/counter"
    assert card == server.url + "/a2a/counter/.well-known/agent-card.json"
    got = httpx.get(card, timeout=30)
    assert got.status_code == 200 and got.json()["name"] == "counter"
    run = {"threadId": "t1", "runId": "r1", "state": {}, "tools": [], "context": [], "forwardedProps": {},
           "messages": [{"id": "m1", "role": "user", "content": "count chainreact"}]}
    with httpx.stream("POST", agui, json=run, timeout=30) as resp:
        assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/event-stream")
        assert "RUN_STARTED" in resp.read().decode()
    # each view's Connect panel: the same addresses for its id
    open_page(browser, server.url + "/#/flow/helpdesk")
    browser.find_element(By.ID, "connect").click()
    panel = browser.find_element(By.ID, "connect-panel")
    fields = {f.get_attribute("class").split()[-1]: f.get_attribute("value")
              for f in panel.find_elements(By.CSS_SELECTOR, "input.address")}
    assert fields == {"agui": server.url + "/agui/helpdesk", "a2a": server.url + "/a2a/helpdesk",
                      "a2a-card": server.url + "/a2a/helpdesk/.well-known/agent-card.json",
                      "openai": server.url + "/v1/chat/completions"}
    screenshot(browser, "playground-connect.png")
    browser.find_element(By.ID, "connect").click()
    assert not panel.is_displayed()
    assert console_errors(browser) == []
