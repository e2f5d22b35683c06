"""Browser tests of the playground: Debian's chromium driven by Selenium through /usr/bin/chromedriver,
against a real uvicorn server (tests/server/conftest.py's `Served`) over the scripted FakeLLM.

Screenshots go to docs/images/ only when CHAINREACT_SCREENSHOTS=1 (`make screenshots`), so a test run
never dirties the checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from chainreact.server import Catalog, create_app
from chainreact.testing import FakeLLM
from tests.server.conftest import Served

from . import scenario_more
from .scenario import docs, responder

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).exists()]
    if missing:
        # Not a skip: CI must run these. The setup script installs both.
        raise RuntimeError(f"{', '.join(missing)} missing: run .ci/setup.d/chromium.sh (as root) to install "
                           "Debian's chromium and chromium-driver")
    profile = tempfile.mkdtemp(prefix="chainreact-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                 f"--user-data-dir={profile}", "--window-size=1280,800"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=opts, service=Service(executable_path=CHROMEDRIVER))
    # The page's viewport at 1280x800, whatever the headless window's frame takes.
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False})
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@contextmanager
def serving(folder: Path, make_docs: Callable[[str], dict[str, dict[str, Any]]],
            respond: Callable[[dict[str, Any]], dict[str, Any]]) -> Iterator[Served]:
    """A real uvicorn server of the documents `make_docs(fake model's URL)` (written into `folder`) over a
    FakeLLM answering with `respond`."""
    llm = FakeLLM(respond)
    llm.start()
    try:
        for name, doc in make_docs(llm.url).items():
            (folder / name).write_text(json.dumps(doc) if isinstance(doc, dict) else doc)
        catalog = Catalog.load([folder])
        assert not catalog.problems, catalog.problems
        with Served(create_app(catalog)) as srv:
            yield srv
    finally:
        llm.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A real uvicorn server of scenario.py's agents, chains and flow over a FakeLLM (one per test module:
    a module's tests may count the runs it made)."""
    with serving(tmp_path_factory.mktemp("served"), docs, responder) as srv:
        yield srv


@pytest.fixture(scope="module")
def more(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A real uvicorn server of scenario_more.py's documents (Markdown, secrets, user flows, a big chain)."""
    with serving(tmp_path_factory.mktemp("more"), scenario_more.docs, scenario_more.responder) as srv:
        yield srv


def console_errors(driver: webdriver.Chrome) -> list[dict[str, Any]]:
    """The browser console's errors since the last call (chromedriver hands each entry out once)."""
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]  # type: ignore[no-untyped-call]


def screenshot(driver: webdriver.Chrome, name: str) -> None:
    if os.environ.get("CHAINREACT_SCREENSHOTS") == "1":
        DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(DOCS_IMAGES / name))
