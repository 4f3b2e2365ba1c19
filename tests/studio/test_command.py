"""`axon studio` as a process: `--port 0` serves on a free port and prints the address
with its token, the token opens it (and nothing else does), a host that is not loopback
is warned about, and a port it cannot bind is one line, not a traceback."""

from __future__ import annotations

import http.cookiejar
import os
import re
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.conftest import require_extra
from tests.helpers.signals import sigint_at_default

require_extra("starlette", "uvicorn", module_level=True)

AXON = [sys.executable, "-m", "axon.cli"]


@contextmanager
def studio(*args: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """Run `axon studio ARGS --port 0 --no-open`; yields the printed address."""
    with sigint_at_default():  # stopped by the Ctrl-C of its `finally`
        process = subprocess.Popen(
            [*AXON, "studio", *args, "--port", "0", "--no-open"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.fullmatch(r"AXON Studio: (http://\S+/\?token=\S+)\n", line)
        assert match, (line, process.stderr.read() if process.poll() is not None else "")
        yield match.group(1), process
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _status(opener: Any, url: str) -> int:
    try:
        with opener.open(url, timeout=20) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def test_port_0_prints_the_address_and_only_the_token_opens_it(
    store: tuple[Path, Any],
) -> None:
    memory_dir, _ = store
    with studio("--memory-dir", str(memory_dir)) as (address, _):
        base = address.split("?")[0]
        assert re.match(r"http://127\.0\.0\.1:\d+/$", base) and not base.endswith(":8470/")
        plain = urllib.request.build_opener()
        assert _status(plain, base) == 401
        assert _status(plain, base + "?token=nope") == 403
        browser = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        with browser.open(address, timeout=20) as response:  # 303, then the page
            page = response.read().decode()
        assert "Notes" in page and "AXON Studio" in page
        assert _status(browser, base + "memory?name=Notes") == 200


def test_a_host_that_is_not_loopback_is_warned_about(tmp_path: Path) -> None:
    with studio("--memory-dir", str(tmp_path), "--host", "0.0.0.0") as (address, process):
        assert address.startswith("http://0.0.0.0:")
    assert process.stderr is not None
    assert "warning: serving on 0.0.0.0, not a loopback address" in process.stderr.read()


def test_a_busy_port_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            [*AXON, "studio", "--memory-dir", str(tmp_path), "--port", str(port), "--no-open"],
            capture_output=True, text=True, timeout=60,
        )
    assert result.returncode != 0
    assert result.stderr.startswith(f"error: cannot listen on 127.0.0.1:{port}")
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1


def test_without_starlette_it_names_the_extra(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['starlette'] = None\n"
        "from axon.cli import main\n"
        f"sys.argv = ['axon', 'studio', '--memory-dir', {str(tmp_path)!r}, '--no-open']\n"
        "main()\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 3, result.stderr
    assert result.stderr == (
        "error: axon studio needs starlette: install the 'studio' extra: pip install "
        "'.[studio]' in an AXON checkout (or the wheel, 'axon_memory-*.whl[studio]')\n"
    )
