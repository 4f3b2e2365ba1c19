"""AXON Studio in a real headless browser (Debian's Chromium and chromedriver, which
scripts/test installs): overview -> memory -> entry -> search, and a forget in write
mode, with screenshots under the test's temporary directory. Skips without Chromium,
fails under CI=true. `AXON_STUDIO_SCREENSHOT=PATH` also saves the search page there
(docs/studio.png is made so)."""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_extra, unavailable

require_extra("starlette", "uvicorn", module_level=True)

from tests.studio.webdriver import Browser, find_browser  # noqa: E402


@pytest.fixture
def served(store: tuple[Path, Any]) -> Iterator[tuple[str, Any]]:
    """A real uvicorn serving Studio (write mode) on a free port; yields (address, studio)."""
    import uvicorn

    from axon.studio.app import Studio, build_app
    from axon.studio.data import StudioData

    memory_dir, clock = store
    data = StudioData(memory_dir=memory_dir, clock=clock)
    studio = Studio(data, write=True)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(build_app(studio), log_level="warning",
                                           lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/", studio
    finally:
        server.should_exit = True
        thread.join(timeout=20)
        sock.close()
        data.summaries.wait()
        data.close()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    found = find_browser()
    if found is None:
        unavailable("chromium and chromedriver are not installed (scripts/test installs them)")
    driver = Browser(*found, log=tmp_path / "chromedriver.log")
    try:
        yield driver
    finally:
        driver.close()


def _wait_for(browser: Browser, css: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not browser.find_all(css):
        assert time.monotonic() < deadline, f"no {css} on {browser.url}"
        time.sleep(0.05)


def test_overview_memory_entry_search_and_forget(
    served: tuple[str, Any], browser: Browser, tmp_path: Path
) -> None:
    address, studio = served
    shots = tmp_path / "screenshots"
    shots.mkdir()

    browser.go(address)  # without the token: refused
    assert "no token" in browser.source
    browser.go(f"{address}?token={studio.token}")
    _wait_for(browser, "svg.chart")
    assert browser.url == address  # the token left the address for the cookie
    assert browser.script("return document.cookie") == ""  # HttpOnly: not for scripts
    browser.screenshot(shots / "1-overview.png")

    browser.click('a[href="/memory?name=Notes"]')
    _wait_for(browser, "table")
    assert "Memory Notes" in browser.text("h1")
    hostile = browser.script("return document.querySelectorAll('main img, main b').length")
    assert hostile == 0  # the stored <img onerror> and <b> are text
    browser.screenshot(shots / "2-memory.png")

    browser.click('a[href="/entry?memory=Notes&key=pair-b"]')
    _wait_for(browser, "pre.value")
    assert "the second of a pair about tomatoes" in browser.text("pre.value")
    browser.click('a[href="/entry?memory=Notes&key=pair-a"]')  # an associated entry
    _wait_for(browser, "pre.value")
    assert "the first of a pair" in browser.text("pre.value")
    browser.screenshot(shots / "3-entry.png")

    browser.click('header a[href="/search"]')
    browser.type('input[name="q"]', "tomatoes pair")
    browser.click('main form button[type="submit"]')
    _wait_for(browser, "svg.signals")
    assert "pair-a" in browser.text("table")
    shot = browser.screenshot(shots / "4-search.png")
    target = os.environ.get("AXON_STUDIO_SCREENSHOT")
    if target:
        shutil.copyfile(shot, target)

    browser.go(f"{address}entry?memory=Notes&key=note-005")
    _wait_for(browser, "form[action='/write/forget'] button")
    browser.click("form[action='/write/forget'] button")
    _wait_for(browser, "table")
    assert browser.url.endswith("/memory?name=Notes")
    assert studio.data.session.memory("Notes").get("note-005") is None
    browser.screenshot(shots / "5-after-forget.png")
    assert len(list(shots.glob("*.png"))) == 5
