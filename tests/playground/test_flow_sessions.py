"""A flow's sessions in the playground: listed from the server's store (current node, last message time,
messages kept) and opened (the conversation so far)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import httpx
from selenium.webdriver.common.by import By

from chainreact.server import Catalog, KeyStore, create_app
from tests.server.conftest import Served

from .conftest import console_errors, screenshot
from .pages import Browser, find, open_page, wait
from .scenario import docs


def send(server: Served, session: str, text: str) -> dict[str, object]:
    resp = httpx.post(server.url + f"/api/v1/flows/helpdesk/sessions/{session}/messages",
                      json={"text": text, "stream": False}, timeout=30)
    assert resp.status_code == 200, resp.text
    return resp.json()  # type: ignore[no-any-return]


def test_past_sessions_are_listed_and_open_with_their_conversation(browser: Browser, server: Served) -> None:
    send(server, "ann", "My shoes are late")
    send(server, "ann", "They were due Monday")
    send(server, "bob", "Hi")
    open_page(browser, server.url + "/#/flow/helpdesk")
    items = wait(browser, lambda d: find(d, "#flow-sessions li"))
    assert [i.get_attribute("data-session") for i in items] == ["bob", "ann"]  # the last active first
    assert [i.get_attribute("data-node") for i in items] == ["agent", "agent"]
    assert "· last message " in items[1].text and "4 messages kept" in items[1].text
    assert "2 messages kept" in items[0].text
    items[1].find_element(By.TAG_NAME, "button").click()
    said = wait(browser, lambda d: find(d, "#flow-conversation .msg"))
    assert [(m.get_attribute("data-role"), m.find_element(By.CSS_SELECTOR, ".text").text) for m in said] == [
        ("user", "My shoes are late"), ("assistant", "Noted: My shoes are late"),
        ("user", "They were due Monday"), ("assistant", "Noted: They were due Monday")]
    assert browser.find_element(By.ID, "flow-session-state").text.startswith("At agent")
    assert browser.find_element(By.ID, "flow-session").get_attribute("value") == "ann"  # the box sends to it
    agent = find(browser, 'g.node[data-id="agent"]')[0]
    assert "selected" in (agent.get_attribute("class") or "").split()
    screenshot(browser, "playground-flow-session.png")
    # the session ends: opened again, it says where it starts again; its conversation stays
    send(server, "ann", "Thanks, bye")
    open_page(browser, server.url + "/#/flow/helpdesk")
    wait(browser, lambda d: find(d, '#flow-sessions li[data-session="ann"] button'))[0].click()
    state = wait(browser, lambda d: find(d, "#flow-session-state"))[0]
    assert state.text.startswith("Ended: its next message starts again at greet")
    assert len(find(browser, "#flow-conversation .msg")) == 6
    assert console_errors(browser) == []


def test_the_session_route_answers_the_conversation_and_404s(server: Served) -> None:
    send(server, "cy", "Where is my parcel?")
    got = httpx.get(server.url + "/playground/api/flows/helpdesk/sessions/cy").json()
    assert (got["flow"], got["session"], got["node"], got["ended"]) == ("helpdesk", "cy", "agent", False)
    assert got["updated_at"] > 0
    # the stored answer is the agent's JSON output; `text` is its response field
    assert got["messages"][1]["role"] == "assistant"
    stored = json.loads(got["messages"][1]["content"])
    assert stored == {"response": "Noted: Where is my parcel?", "done": False}
    assert [m["text"] for m in got["messages"]] == ["Where is my parcel?", "Noted: Where is my parcel?"]
    listed = httpx.get(server.url + "/playground/api/flows/helpdesk").json()["sessions"]
    cy = next(s for s in listed if s["session"] == "cy")
    assert cy == {"session": "cy", "node": "agent", "ended": False, "updated_at": got["updated_at"],
                  "messages": 2}
    missing = httpx.get(server.url + "/playground/api/flows/helpdesk/sessions/nobody")
    assert missing.status_code == 404 and "no session 'nobody'" in missing.json()["error"]["message"]
    assert httpx.get(server.url + "/playground/api/flows/nope/sessions/cy").status_code == 404
    assert httpx.get(server.url + "/playground/api/flows/router/sessions/cy").status_code == 404  # a chain


def test_a_flows_sessions_need_read_on_the_flow(tmp_path: Path) -> None:
    folder = tmp_path / "served"
    folder.mkdir()
    for name, doc in docs("http://127.0.0.1:9/v1").items():
        if name in ("router.json", "echo.json", "helpdesk.json"):
            (folder / name).write_text(json.dumps(doc))
    keys = {"keys": [
        {"name": "router", "sha256": hashlib.sha256(b"k-router").hexdigest(), "ids": ["router"],
         "permissions": ["read", "execute"]},
        {"name": "desk", "sha256": hashlib.sha256(b"k-desk").hexdigest(), "ids": ["helpdesk"],
         "permissions": ["read"]}]}
    (tmp_path / "keys.json").write_text(json.dumps(keys))
    with Served(create_app(Catalog.load([folder]), keys=KeyStore.load(tmp_path / "keys.json"))) as srv:
        url = srv.url + "/playground/api/flows/helpdesk/sessions/ann"
        assert httpx.get(url).status_code == 401
        assert httpx.get(url, headers={"Authorization": "Bearer k-router"}).status_code == 403
        # may read the flow: the session is looked up (there is none)
        assert httpx.get(url, headers={"Authorization": "Bearer k-desk"}).status_code == 404
