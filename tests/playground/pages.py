"""What the browser tests do with a page: wait for something, find elements, open a URL afresh."""

from __future__ import annotations

from typing import Any

from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

WAIT = 20
Browser = webdriver.Chrome


def wait(driver: Browser, what: Any, timeout: float = WAIT) -> Any:
    return WebDriverWait(driver, timeout).until(lambda d: what(d))


def find(driver: Browser, css: str) -> list[WebElement]:
    return driver.find_elements(By.CSS_SELECTOR, css)


def answer_starting(driver: Browser, prefix: str) -> WebElement:
    """The first answer text that starts with `prefix`, once there is one."""
    found = wait(driver, lambda d: [e for e in find(d, ".msg.assistant .text") if e.text.startswith(prefix)])
    return found[0]  # type: ignore[no-any-return]


def open_page(driver: Browser, url: str) -> None:
    # A full load every time: a URL that differs only in its #fragment would otherwise not reload the page.
    driver.get("about:blank")
    driver.get(url)
    wait(driver, lambda d: find(d, "#catalog a"))
