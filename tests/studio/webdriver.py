"""A minimal W3C WebDriver client (the few commands the browser test uses) over the system
`chromedriver` and `chromium`: nothing is downloaded, no Selenium needed."""

from __future__ import annotations

import base64
import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"


def find_browser() -> tuple[str, str] | None:
    """(chromium, chromedriver) paths, or None when either is missing."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Browser:
    """One headless Chromium session driven through chromedriver."""

    def __init__(self, browser: str, driver: str, log: Path) -> None:
        port = _free_port()
        self._log = log.open("w")
        self._driver = subprocess.Popen(
            [driver, f"--port={port}"], stdout=self._log, stderr=subprocess.STDOUT
        )
        self._base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                self._call("GET", "/status")
                break
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        options = {
            "binary": browser,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", "--window-size=1280,900"],
        }
        created = self._call("POST", "/session", {"capabilities": {"alwaysMatch": {
            "browserName": "chrome", "goog:chromeOptions": options,
        }}})
        self._session = f"/session/{created['sessionId']}"

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self._base + path, data=data, method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.loads(response.read())["value"]
        except urllib.error.HTTPError as error:
            raise AssertionError(f"WebDriver {method} {path}: {error.read()[:500]!r}") from None

    def go(self, url: str) -> None:
        self._call("POST", self._session + "/url", {"url": url})

    @property
    def url(self) -> str:
        return str(self._call("GET", self._session + "/url"))

    @property
    def source(self) -> str:
        return str(self._call("GET", self._session + "/source"))

    def find(self, css: str) -> str:
        found = self._call("POST", self._session + "/element",
                           {"using": "css selector", "value": css})
        return str(found[ELEMENT])

    def find_all(self, css: str) -> list[str]:
        found = self._call("POST", self._session + "/elements",
                           {"using": "css selector", "value": css})
        return [str(item[ELEMENT]) for item in found]

    def click(self, css: str) -> None:
        self._call("POST", f"{self._session}/element/{self.find(css)}/click", {})

    def type(self, css: str, text: str) -> None:
        element = self.find(css)
        self._call("POST", f"{self._session}/element/{element}/clear", {})
        self._call("POST", f"{self._session}/element/{element}/value", {"text": text})

    def text(self, css: str) -> str:
        return str(self._call("GET", f"{self._session}/element/{self.find(css)}/text"))

    def script(self, code: str) -> Any:
        return self._call("POST", self._session + "/execute/sync", {"script": code, "args": []})

    def screenshot(self, path: Path) -> Path:
        path.write_bytes(base64.b64decode(self._call("GET", self._session + "/screenshot")))
        return path

    def close(self) -> None:
        try:
            self._call("DELETE", self._session)
        finally:
            self._driver.terminate()
            try:
                self._driver.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._driver.kill()
            self._log.close()
