"""Chain and flow graphs: every label whole and legible (nothing cut off, no text under 11 px on screen, no
label over a node), and zoom and pan on a large graph (buttons, Ctrl + wheel, keys, dragging)."""

from __future__ import annotations

from typing import Any

from selenium.webdriver.common.by import By

from tests.server.conftest import Served

from .conftest import console_errors, screenshot
from .pages import Browser, find, open_page, wait
from .scenario_more import docs

# Every text of the drawing: its size on screen, its box in its node (or, for edge labels, in the drawing).
MEASURE = """
const svg = arguments[0], zoom = svg.getScreenCTM().a;
const rects = [...svg.querySelectorAll("g.node")].map((g) => {
  const m = g.transform.baseVal.consolidate().matrix, r = g.querySelector("rect");
  return {x: m.e, y: m.f, w: r.width.baseVal.value, h: r.height.baseVal.value};
});
const texts = [...svg.querySelectorAll("text")].filter((t) => t.textContent).map((t) => {
  const b = t.getBBox(), node = t.closest("g.node");
  const r = node && node.querySelector("rect");
  return {text: [...t.querySelectorAll("tspan")].map((s) => s.textContent).join(" ") || t.textContent,
          px: parseFloat(getComputedStyle(t).fontSize) * zoom, node: node ? node.dataset.id : null,
          edge: t.closest("g.edge") ? t.closest("g.edge").dataset.labels : null,
          inside: r ? b.x >= 0 && b.y >= 0 && b.x + b.width <= r.width.baseVal.value + 0.5
                      && b.y + b.height <= r.height.baseVal.value + 0.5 : null,
          box: {x: b.x, y: b.y, w: b.width, h: b.height}};
});
return {rects, texts, zoom};
"""


def overlaps(a: dict[str, float], b: dict[str, float]) -> bool:
    return a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"] and a["y"] < b["y"] + b["h"] and \
        b["y"] < a["y"] + a["h"]


def check_legible(browser: Browser, svg: Any, names: dict[str, str]) -> None:
    got = browser.execute_script(MEASURE, svg)
    small = [t for t in got["texts"] if t["px"] < 11]
    assert small == [], small
    assert not [t for t in got["texts"] if "…" in t["text"]]
    titles: dict[str, list[str]] = {}
    for t in got["texts"]:
        if t["node"] is not None:
            assert t["inside"], t  # no text runs out of its node's box
            titles.setdefault(t["node"], []).append(t["text"])
    for node, name in names.items():
        assert name in " ".join(titles[node]), (node, titles[node])
    for t in [t for t in got["texts"] if t["edge"] is not None]:
        assert t["text"] == t["edge"].replace(",", ", "), t  # the whole label
        assert not [r for r in got["rects"] if overlaps(t["box"], r)], t


def test_a_large_chains_labels_are_whole_and_legible_and_it_zooms_and_pans(browser: Browser,
                                                                           more: Served) -> None:
    open_page(browser, more.url + "/#/chain/big/graph")
    nodes = wait(browser, lambda d: len(find(d, "#chain-graph g.node")) == 26)
    nodes = find(browser, "#chain-graph g.node")
    svg = browser.find_element(By.CSS_SELECTOR, "#chain-graph svg")
    chain = docs("http://x")["big.json"]["metadata"]
    check_legible(browser, svg, {n["id"]: n["name"] for n in chain["nodes"]})
    assert len(nodes) == 26
    scroller = browser.find_element(By.CSS_SELECTOR, "#chain-graph .graphscroll")
    level = browser.find_element(By.CSS_SELECTOR, "#chain-graph .zoomlevel")
    width = float(svg.get_attribute("data-width") or 0)
    def size() -> float:
        return float(browser.execute_script("return arguments[0].getBoundingClientRect().width", svg))

    assert level.text == "100 %" and abs(size() - width) < 1
    assert browser.execute_script("return arguments[0].scrollWidth > arguments[0].clientWidth", scroller)
    # the start node is in view
    start = browser.find_element(By.CSS_SELECTOR, 'g.node[data-id="start"]')
    assert browser.execute_script("""const a = arguments[0].getBoundingClientRect(),
        b = arguments[1].getBoundingClientRect(); return a.left >= b.left && a.right <= b.right
        && a.top >= b.top && a.bottom <= b.bottom""", start, scroller)
    screenshot(browser, "playground-graph-zoom.png")

    browser.find_element(By.CSS_SELECTOR, "#chain-graph .zoom-in").click()
    assert level.text == "125 %" and abs(size() - width * 1.25) < 1
    browser.find_element(By.CSS_SELECTOR, "#chain-graph .zoom-fit").click()
    assert size() <= browser.execute_script("return arguments[0].clientWidth", scroller)
    assert int(level.text.split()[0]) < 100
    browser.find_element(By.CSS_SELECTOR, "#chain-graph .zoom-reset").click()
    assert level.text == "100 %"
    # keys: + zooms in, - out, 0 back to 100 %
    scroller.click()
    browser.switch_to.active_element.send_keys("+")
    assert level.text == "125 %"
    browser.switch_to.active_element.send_keys("-", "-")
    assert level.text == "80 %"
    browser.switch_to.active_element.send_keys("0")
    assert level.text == "100 %"
    # Ctrl + wheel zooms around the pointer
    box = browser.execute_script("return arguments[0].getBoundingClientRect().toJSON()", scroller)
    x, y = box["left"] + 200, box["top"] + 150
    browser.execute_cdp_cmd("Input.dispatchMouseEvent", {"type": "mouseWheel", "x": x, "y": y, "deltaX": 0,
                                                         "deltaY": -200, "modifiers": 2})
    wait(browser, lambda d: int(level.text.split()[0]) > 100)
    browser.find_element(By.CSS_SELECTOR, "#chain-graph .zoom-reset").click()
    # dragging the background pans
    spot = browser.execute_script("""const r = arguments[0].getBoundingClientRect();
        for (let y = r.top + 10; y < r.bottom - 10; y += 7)
          for (let x = r.left + 10; x < r.right - 10; x += 7) {
          const e = document.elementFromPoint(x, y); if (e && e.tagName === "svg") return [x, y]; }
        return null;""", scroller)
    assert spot is not None
    before = browser.execute_script("return arguments[0].scrollLeft", scroller)
    moves = (("mousePressed", 0), ("mouseMoved", -150), ("mouseMoved", -300), ("mouseReleased", -300))
    for kind, dx in moves:
        browser.execute_cdp_cmd("Input.dispatchMouseEvent", {"type": kind, "x": spot[0] + dx, "y": spot[1],
                                                             "button": "left", "buttons": 1, "clickCount": 1})
    assert abs(browser.execute_script("return arguments[0].scrollLeft", scroller) - before - 300) <= 2
    # a node far to the right is still reachable and opens on click
    browser.find_element(By.CSS_SELECTOR, 'g.node[data-id="b11"]').click()
    detail = browser.find_element(By.ID, "node-detail")
    wait(browser, lambda d: "Write the order to the accounting ledger (B)" in detail.text)
    assert console_errors(browser) == []


def test_a_small_graph_fits_with_its_labels_whole(browser: Browser, server: Served) -> None:
    open_page(browser, server.url + "/#/flow/helpdesk")
    wait(browser, lambda d: len(find(d, "#flow-graph g.node")) == 3)
    svg = browser.find_element(By.CSS_SELECTOR, "#flow-graph svg")
    check_legible(browser, svg, {"greet": "greet (start)", "agent": "agent", "bye": "bye"})
    scroller = browser.find_element(By.CSS_SELECTOR, "#flow-graph .graphscroll")
    assert not browser.execute_script("return arguments[0].scrollWidth > arguments[0].clientWidth", scroller)
    label = browser.find_element(By.CSS_SELECTOR, 'g.edge[data-to="bye"] text')
    assert label.text == "{{output.done}} == true"
    assert console_errors(browser) == []
