"""Answers render Markdown (markdown.js), safely: raw HTML stays text, only http(s) and mailto links are
kept (rel="noopener noreferrer", a new tab), code blocks are monospace, nothing is fetched from elsewhere."""

from __future__ import annotations

from typing import Any

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from tests.server.conftest import Served

from .conftest import console_errors, screenshot
from .pages import Browser, find, open_page, wait

# Each case rendered into a div of the page (attached, so that anything executable would run).
RENDER = """
const cases = arguments[0], done = arguments[arguments.length - 1];
import("/playground/markdown.js").then((md) => {
  const out = cases.map((text) => {
    const div = document.createElement("div");
    div.className = "probe";
    div.append(md.renderMarkdown(text));
    document.body.append(div);
    return div.innerHTML;
  });
  setTimeout(() => done({ html: out, pwned: window.__pwned ?? null }), 300);
}, (e) => done({ error: String(e) }));
"""

CASES = {
    "**bold**, *em*, ~~gone~~ and `a < b`":
        "<p><strong>bold</strong>, <em>em</em>, <del>gone</del> and <code>a &lt; b</code></p>",
    "# Title\n\nsome text": "<h3>Title</h3><p>some text</p>",
    "Title\n===": "<h3>Title</h3>",
    "line one\nline two": "<p>line one<br>line two</p>",
    "- a\n- b\n  1. c\n  2. d": "<ul><li>a</li><li>b<ol><li>c</li><li>d</li></ol></li></ul>",
    "3. three\n4. four": '<ol start="3"><li>three</li><li>four</li></ol>',
    "```js\nif (x < 1) {}\n```": '<pre class="code"><code class="language-js">if (x &lt; 1) {}</code></pre>',
    "```\nstill streaming": '<pre class="code"><code>still streaming</code></pre>',
    "> quoted *text*": "<blockquote><p>quoted <em>text</em></p></blockquote>",
    "a\n\n---\n\nb": "<p>a</p><hr><p>b</p>",
    "| a | b |\n|---|--:|\n| 1 | 2 |":
        '<div class="tablewrap"><table><thead><tr><th>a</th><th class="al-right">b</th></tr></thead>'
        '<tbody><tr><td>1</td><td class="al-right">2</td></tr></tbody></table></div>',
    "[docs](https://example.com/a_b \"the docs\")":
        '<p><a href="https://example.com/a_b" target="_blank" rel="noopener noreferrer" title="the docs">'
        'docs</a></p>',
    "see https://example.com/x.": '<p>see <a href="https://example.com/x" target="_blank" '
                                  'rel="noopener noreferrer">https://example.com/x</a>.</p>',
    "mail <mailto:a@example.com>": '<p>mail <a href="mailto:a@example.com" target="_blank" '
                                   'rel="noopener noreferrer">mailto:a@example.com</a></p>',
    "snake_case_name \\*not em\\* &amp; &#65;": "<p>snake_case_name *not em* &amp; A</p>",
}

XSS = [
    "<script>window.__pwned = 's1'</script>",
    "<img src=x onerror=\"window.__pwned = 's2'\">",
    "<svg onload=\"window.__pwned = 's3'\"></svg>",
    "<iframe src=\"javascript:window.__pwned = 's4'\"></iframe>",
    "<a href=\"javascript:window.__pwned = 's5'\">x</a>",
    "[a](javascript:window.__pwned='s6')",
    "[a](JaVaScRiPt:window.__pwned='s7')",
    "[a](&#106;avascript:window.__pwned='s8')",
    "[a](&#x6A;&#x61;vascript:window.__pwned='s9')",
    "[a](java&#9;script:window.__pwned='s10')",
    "[a](<javascript:window.__pwned='s11'>)",
    "[a](  javascript:window.__pwned='s12')",
    "[a](\\javascript:window.__pwned='s13')",
    "[a](data:text/html;base64,PHNjcmlwdD53aW5kb3cuX19wd25lZD0xPC9zY3JpcHQ+)",
    "[a](vbscript:msgbox(1))",
    "![a](javascript:window.__pwned='s14')",
    "![tracker](https://example.com/t.png)",
    "[<img src=x onerror=window.__pwned='s15'>](https://example.com)",
    "[a](https://example.com \"x\\\" onmouseover=\\\"window.__pwned='s16'\")",
    "<javascript:window.__pwned='s17'>",
    "```\"><img src=x onerror=window.__pwned='s18'>\nx\n```",
    "&lt;script&gt;window.__pwned='s19'&lt;/script&gt;",
    "**<svg onload=window.__pwned='s20'>**",
    "| <img src=x onerror=window.__pwned='s21'> |\n|---|\n| [x](javascript:window.__pwned='s22') |",
]
ALLOWED = {"p", "br", "strong", "em", "del", "code", "pre", "a", "span", "h3", "h4", "h5", "h6", "ul", "ol",
           "li", "blockquote", "hr", "div", "table", "thead", "tbody", "tr", "th", "td"}

ELEMENTS = """
return [...document.querySelectorAll(".probe *")].map((e) => ({
  tag: e.tagName.toLowerCase(), attrs: [...e.attributes].map((a) => [a.name, a.value])}));
"""


def render(browser: Browser, texts: list[str]) -> dict[str, Any]:
    got = browser.execute_async_script(RENDER, texts)
    assert "error" not in got, got
    return got  # type: ignore[no-any-return]


def test_the_renderer_draws_markdown(browser: Browser, server: Served) -> None:
    open_page(browser, server.url + "/")
    got = render(browser, list(CASES))
    assert dict(zip(CASES, got["html"], strict=True)) == CASES


def test_nothing_an_answer_says_becomes_markup_or_a_script_link(browser: Browser, server: Served) -> None:
    open_page(browser, server.url + "/")
    got = render(browser, XSS)
    assert got["pwned"] is None
    elements = browser.execute_script(ELEMENTS)
    assert {e["tag"] for e in elements} <= ALLOWED
    for e in elements:
        names = [name for name, _ in e["attrs"]]
        assert not [n for n in names if n.startswith("on") or n in ("style", "src")], e
        attrs = dict(e["attrs"])
        if e["tag"] == "a":
            assert attrs["href"].startswith("https://example.com"), e
            assert attrs["rel"] == "noopener noreferrer" and attrs["target"] == "_blank"
    links = [dict(e["attrs"])["href"] for e in elements if e["tag"] == "a"]
    assert links == ["https://example.com/t.png", "https://example.com/", "https://example.com/"]
    # what was refused is still there, as text: the raw HTML, and the refused links' labels
    shown = browser.execute_script("return [...document.querySelectorAll('.probe')].map((d) => "
                                   "d.textContent)")
    assert shown[0] == XSS[0] and shown[4] == XSS[4] and shown[5] == "a"
    assert browser.execute_script("return document.querySelectorAll('.probe .badlink').length") == 12
    assert console_errors(browser) == []


def test_an_agents_markdown_answer_in_the_chat(browser: Browser, more: Served) -> None:
    open_page(browser, more.url + "/#/agent/writer")
    wait(browser, lambda d: find(d, "#chat-input"))[0].send_keys("What changed?", Keys.ENTER)
    wait(browser, lambda d: find(d, '.msg.assistant[aria-busy="false"] .meta')
         and find(d, "#send")[0].is_enabled())
    answer = find(browser, ".msg.assistant .text.md")[0]

    def check(answer: Any) -> None:
        assert answer.find_element(By.TAG_NAME, "h3").text == "Release notes"
        assert [li.text.split("\n")[0] for li in answer.find_elements(By.CSS_SELECTOR, "ul > li")] == [
            "a faster serve start", "safer answers"]
        nested = answer.find_elements(By.CSS_SELECTOR, "ul ol > li")
        assert [li.text for li in nested] == ["nested one", "nested two"]
        code = answer.find_element(By.CSS_SELECTOR, "pre.code code.language-python")
        assert "return a + b  # <b>not bold</b>" in code.text
        font = browser.execute_script("return getComputedStyle(arguments[0]).fontFamily", code).lower()
        assert "mono" in font or "consolas" in font or "menlo" in font
        link = answer.find_element(By.CSS_SELECTOR, "a")
        got = (link.text, link.get_attribute("href"), link.get_attribute("rel"), link.get_attribute("target"))
        assert got == (
            "the changelog", "https://example.com/changes", "noopener noreferrer", "_blank")
        assert answer.find_elements(By.CSS_SELECTOR, "script, img, iframe, svg") == []
        assert "<script>window.__pwned = 'script'</script>" in answer.text
        assert [e.text for e in answer.find_elements(By.CSS_SELECTOR, ".badlink")] == ["click me", "encoded"]
        assert browser.execute_script("return window.__pwned ?? null") is None

    check(answer)
    screenshot(browser, "playground-markdown.png")
    browser.refresh()  # the session is kept: drawn again from its saved text
    check(wait(browser, lambda d: find(d, ".msg.assistant .text.md h3")
               and find(d, ".msg.assistant .text.md"))[0])
    assert console_errors(browser) == []
