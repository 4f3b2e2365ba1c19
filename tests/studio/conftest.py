"""A SQLite store with entries (hostile text among them) and a Studio over it, for the
HTTP tests (starlette's TestClient) and the browser test (a real uvicorn)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_extra

require_extra("starlette", "uvicorn", "httpx2", module_level=True)

HOSTILE_VALUE = '<script>alert("v")</script><img src=x onerror=alert(1)>'
HOSTILE_KEY = '"><img src=x onerror=alert(2)>'
HOSTILE_TAG = "<b onmouseover=alert(3)>"
HOSTILE_META = "</pre><script>alert(4)</script>"
START = float(int(time.time())) - 201 * 60
"""The first entry's time: the store is filled as over the last 201 minutes, so that the
backend, which purges by the real clock, sees the same expiries as the test's clock."""


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


def fill(memory_dir: Path, clock: Clock) -> None:
    """Notes: 120 plain entries one minute apart, an associated pair, a hostile entry, and
    one expiring in an hour; Empty: one entry."""
    from axon import Session

    with Session(memory_dir=memory_dir, clock=clock) as session:
        session.execute(
            "memory Notes { store: persistent backend: sqlite retrieval: hybrid }\n"
            "memory Other { store: persistent backend: sqlite }"
        )
        notes = session.memory("Notes")
        for index in range(120):
            clock.now = START + index * 60
            notes.remember(
                f"plain note number {index} about gardening", key=f"note-{index:03d}",
                tags=["even" if index % 2 == 0 else "odd"],
                importance=0.9 if index % 10 == 0 else 0.3,
                type="long_term" if index % 3 == 0 else "short_term",
                metadata={"topic": "garden" if index < 60 else "kitchen"},
                expires_in="never",  # a short_term record would expire by its type
            )
        clock.now = START + 200 * 60
        notes.remember("the first of a pair about tomatoes", key="pair-a")
        clock.now += 1
        notes.remember("the second of a pair about tomatoes", key="pair-b", related=["pair-a"])
        clock.now += 1
        notes.remember(
            HOSTILE_VALUE, key=HOSTILE_KEY, tags=[HOSTILE_TAG], metadata={"note": HOSTILE_META}
        )
        clock.now += 1
        notes.remember("expires soon about tomatoes", key="short-lived", expires_in=3600)
        session.memory("Other").remember("one other entry", key="other-1")


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, Clock]:
    clock = Clock()
    memory_dir = tmp_path / "store"
    fill(memory_dir, clock)
    clock.now = START + 201 * 60
    return memory_dir, clock


@pytest.fixture
def make_client(store: tuple[Path, Clock]) -> Iterator[Callable[..., Any]]:
    """make_client(write=False, traces=()) -> (TestClient holding the cookie, Studio)."""
    from starlette.testclient import TestClient

    from axon.studio.app import Studio, build_app
    from axon.studio.data import StudioData

    memory_dir, clock = store
    made: list[StudioData] = []

    def make(write: bool = False, traces: tuple[Path, ...] = (), login: bool = True) -> Any:
        data = StudioData(memory_dir=memory_dir, clock=clock)
        made.append(data)
        studio = Studio(data, traces, write=write, token="secret-token")
        client = TestClient(build_app(studio), follow_redirects=False)
        if login:
            assert client.get("/?token=secret-token").status_code == 303
        return client, studio

    yield make
    for data in made:
        data.summaries.wait()
        data.close()
