"""`chainreact eval --report` opened in Chromium: a report against a baseline shows each case's verdict, the
cases that broke or were fixed, and a changed answer as a word diff; the page loads nothing else and
logs no error. Its screenshot is docs/images/eval-report.png (`make screenshots`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from selenium.webdriver.common.by import By

from chainreact.testing import FakeLLM
from tests.evals.conftest import responder, write_dataset
from tests.replay.conftest import write_agent
from tests.test_cli import cli

from .conftest import console_errors, screenshot

CASES = [
    {"name": "adds", "input": "please add 2 and 3", "expect": {"contains": "5", "tool_called": "add"}},
    {"name": "greets", "input": "say hello", "expect": {"matches": r"^Hello\b", "max_tokens": 500}},
    {"name": "weather json", "input": "json weather",
     "expect": {"json_schema": {"type": "object", "required": ["city"]}}},
    {"name": "polite", "input": "say hello politely", "expect": {"contains": "please"}},
]


def model(version: int) -> Any:
    """tests/evals' scripted model (version 1); version 2 forgets the JSON, learns its manners and greets
    a friend."""
    def answer(body: dict[str, Any]) -> dict[str, Any]:
        last = body["messages"][-1]
        q = str(last["content"])
        if last["role"] != "tool":
            if "politely" in q:
                return {"text": "Hello." if version == 1 else "Hello, please come in."}
            if version == 2 and "json" in q:
                return {"text": "It is sunny in Paris."}
            if version == 2 and "hello" in q:
                return {"text": "Hello there, friend!"}
        return responder(body)
    return answer


def run_eval(tmp_path: Path, version: int, report: Path, baseline: Path | None = None) -> dict[str, Any]:
    with FakeLLM(model(version)) as llm:
        doc = write_agent(tmp_path / f"agent{version}", llm.url)
        ds = write_dataset(tmp_path / "cases.jsonl", CASES)
        extra = ["--baseline", str(baseline)] if baseline else []
        r = cli("eval", str(ds), "--agent", str(doc), "--report", str(report), "--json", *extra)
    assert r.returncode == 0, r.stderr
    data: dict[str, Any] = json.loads(r.stdout)
    return data


def test_the_report_against_a_baseline_in_chromium(browser: Any, tmp_path: Path) -> None:
    first, second = tmp_path / "first.html", tmp_path / "second.html"
    before = run_eval(tmp_path, 1, first)
    after = run_eval(tmp_path, 2, second, baseline=first)
    assert (before["passed"], after["passed"]) == (3, 3)
    browser.get(second.as_uri())
    assert browser.title == "chainreact eval"
    cards = {c.find_element(By.TAG_NAME, "span").text: c.find_element(By.TAG_NAME, "b").text
             for c in browser.find_elements(By.CSS_SELECTOR, ".card")}
    assert cards["pass rate"] == "75.0%" and cards["passed"] == "3 / 4"
    assert (cards["newly failing"], cards["fixed"], cards["answers changed"]) == ("1", "1", "1")
    rows = {r.get_attribute("data-case"): r for r in browser.find_elements(By.CSS_SELECTOR, "tbody tr")}
    assert list(rows) == ["adds", "greets", "weather json", "polite"]
    badge = {name: [b.text for b in row.find_elements(By.CSS_SELECTOR, ".badge")]
             for name, row in rows.items()}
    assert badge == {"adds": [], "greets": ["changed"], "weather json": ["broke"], "polite": ["fixed"]}
    broke = rows["weather json"]
    assert "json_schema the answer is not JSON" in broke.find_element(By.CSS_SELECTOR, "ul.checks").text
    greets = rows["greets"].find_element(By.TAG_NAME, "pre")
    assert [e.text for e in greets.find_elements(By.TAG_NAME, "del")] == ["there!"]
    assert [e.text for e in greets.find_elements(By.TAG_NAME, "ins")] == ["there, friend!"]
    # Self-contained: no script runs and nothing else is fetched.
    resources = browser.execute_script("return performance.getEntriesByType('resource').length")
    assert resources == 0 and not console_errors(browser)
    screenshot(browser, "eval-report.png")
