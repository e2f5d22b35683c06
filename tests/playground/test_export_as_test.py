"""The playground's past runs have "export as test": the run as a cassette, which replays offline."""

from __future__ import annotations

import httpx
from selenium.webdriver.common.by import By

from chainreact.testing import replay
from tests.server.conftest import Served

from .conftest import console_errors
from .pages import Browser, find, open_page, wait


def test_a_past_run_exports_as_a_cassette_that_replays(browser: Browser, server: Served) -> None:
    started = httpx.post(server.url + "/api/v1/rules/pipeline/runs", json={"input": "count chainreact"},
                         timeout=30).json()
    assert started["status"] == "done"
    open_page(browser, server.url + "/#/chain/pipeline/chat")
    browser.find_element(By.ID, "past-runs").click()
    links = wait(browser, lambda d: find(d, "#past-runs-panel a.export"))
    link = next(a for a in links if started["id"] in (a.get_attribute("href") or ""))
    assert link.text == "export as test"
    assert link.get_attribute("download") == f"pipeline-{started['id']}.cassette.json"
    got = httpx.get(link.get_attribute("href"), timeout=30)
    assert got.status_code == 200 and "attachment" in got.headers["content-disposition"]
    cassette = got.json()
    assert (cassette["kind"], cassette["chain"]) == ("chain", "pipeline")
    assert [a["agent"] for a in cassette["agents"]] == ["count"]
    result = replay(cassette)  # offline: the chain file the cassette names, its agent node from the tape
    assert result.ok, result.report()
    assert "It has 10 letters." in (result.answer or "")
    wrong = httpx.get(server.url + f"/playground/api/chains/router/runs/{started['id']}/cassette", timeout=30)
    assert wrong.status_code == 404
    assert console_errors(browser) == []
