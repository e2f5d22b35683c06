"""The flow view as a user walks it: the session's user set in the form (the shop greets "Hello Ann", not
"Hello , "), the user's own message in "Last turn", the messages kept under the user's own memoryId
counted and shown, and collaborators drawn connected to the node that delegates to them."""

from __future__ import annotations

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from tests.server.conftest import Served

from .conftest import console_errors, screenshot
from .pages import Browser, find, open_page, wait


def send(browser: Browser, text: str) -> str:
    browser.find_element(By.ID, "flow-text").send_keys(text)
    browser.find_element(By.ID, "flow-send").click()
    status = browser.find_element(By.ID, "flow-status")
    done = ("Now at", "The turn")
    return str(wait(browser, lambda d: status.text if status.text.startswith(done) else None))


def retype(browser: Browser, field: str, value: str) -> None:
    box = browser.find_element(By.ID, field)
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(Keys.BACKSPACE)
    if value:
        box.send_keys(value)


def test_a_session_has_a_user_and_shows_what_it_said_and_kept(browser: Browser, more: Served) -> None:
    open_page(browser, more.url + "/#/flow/shop")
    wait(browser, lambda d: len(find(d, "#flow-graph g.node")) == 3)
    retype(browser, "flow-session", "s1")
    retype(browser, "flow-user-id", "u7")
    retype(browser, "flow-user-name", "Ann")
    assert send(browser, "My shoes are late") == "Now at help"
    turn = find(browser, "#flow-turn .msg")
    assert [(m.get_attribute("data-role"), m.get_attribute("data-node")) for m in turn] == [
        ("user", None), (None, "greet"), (None, "help")]
    assert turn[0].find_element(By.CSS_SELECTOR, ".who").text == "Ann (u7)"
    assert turn[0].find_element(By.CSS_SELECTOR, ".text").text == "My shoes are late"
    assert turn[1].find_element(By.CSS_SELECTOR, ".text").text == "Hello Ann, this is the shop."
    answer = turn[2].find_element(By.CSS_SELECTOR, ".text")
    assert answer.text == "Noted: My shoes are late"
    assert answer.find_element(By.TAG_NAME, "strong").text == "Noted"  # the answer's Markdown
    assert send(browser, "They were due Monday") == "Now at help"
    assert send(browser, "Still nothing") == "Now at help"
    item = wait(browser, lambda d: find(d, '#flow-sessions li[data-session="s1"]'))[0]
    assert "6 messages kept" in item.text  # under shop-u7; the page said 0 before
    screenshot(browser, "playground-flow-user.png")

    # another page: the form remembers the user; opening the session sets its own user and shows its
    # conversation, kept under the user's key
    open_page(browser, more.url + "/#/flow/shop")
    wait(browser, lambda d: find(d, '#flow-sessions li[data-session="s1"] button'))
    assert browser.find_element(By.ID, "flow-user-id").get_attribute("value") == "u7"
    retype(browser, "flow-user-id", "")
    retype(browser, "flow-user-name", "")
    find(browser, '#flow-sessions li[data-session="s1"] button')[0].click()
    said = wait(browser, lambda d: find(d, "#flow-conversation .msg"))
    assert [m.find_element(By.CSS_SELECTOR, ".text").text for m in said] == [
        "Customer says: My shoes are late", "Noted: My shoes are late",
        "Customer says: They were due Monday", "Noted: They were due Monday",
        "Customer says: Still nothing", "Noted: Still nothing"]
    assert said[0].find_element(By.CSS_SELECTOR, ".who").text == "Ann (u7)"
    assert find(browser, "#flow-conversation .memkey")[0].text == "Kept under shop-u7"
    assert "user Ann (u7)" in browser.find_element(By.ID, "flow-session-state").text
    assert browser.find_element(By.ID, "flow-user-id").get_attribute("value") == "u7"
    assert browser.find_element(By.ID, "flow-user-name").get_attribute("value") == "Ann"
    assert send(browser, "Thanks, bye") == "Now at the end: the session ended"
    assert [m.text for m in find(browser, "#flow-turn .msg .text")][-1] == "Bye Ann."
    assert console_errors(browser) == []


def test_collaborators_are_drawn_from_the_node_that_calls_them(browser: Browser, more: Served) -> None:
    open_page(browser, more.url + "/#/flow/team")
    wait(browser, lambda d: len(find(d, "#flow-graph g.node")) == 4)  # desk, billing, bye and the auditor
    edges = {(e.get_attribute("data-from"), e.get_attribute("data-to"), e.get_attribute("data-labels"),
              "collaborator" in (e.get_attribute("class") or ""))
             for e in find(browser, "#flow-graph g.edge")}
    assert edges == {("desk", "billing", "collaborator", True),
                     ("desk", "\x00file:auditor.json", "collaborator", True),
                     ("desk", "bye", "{{output.done}} == true", False)}
    auditor = find(browser, 'g.node.collaborator')
    assert [a.get_attribute("aria-label") for a in auditor] == ["audit (agent auditor.json)"]
    x = {n.get_attribute("data-id"): n.rect["x"] for n in find(browser, "#flow-graph g.node")}
    assert x["billing"] > x["desk"] and x["\x00file:auditor.json"] > x["desk"]  # laid out after their caller
    find(browser, 'g.node[data-id="billing"]')[0].click()
    detail = browser.find_element(By.ID, "flow-detail")
    wait(browser, lambda d: "desk delegates to it as billing: Knows every order." in detail.text)
    screenshot(browser, "playground-flow-team.png")
    assert console_errors(browser) == []
