"""One synchronous `Session` shared by threads, and used from inside a running event loop."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import axon
from axon.runtime.session import Session

THREADS = 8
CALLS = 15


def test_many_threads_share_one_session_and_every_call_reports_truthfully(
    tmp_path: Path,
) -> None:
    with axon.Session(memory_dir=tmp_path) as session:
        session.execute("memory Log { store: persistent backend: sqlite retrieval: keyword }")
        errors: list[BaseException] = []
        reported: list[tuple[str, str]] = []
        lock = threading.Lock()
        start = threading.Barrier(THREADS)

        def work(worker: int) -> None:
            start.wait()
            for i in range(CALLS):
                key = f"w{worker}-{i}"
                try:
                    records = session.execute(
                        f'remember("{key} of worker{worker}") -> Log with {{ key: "{key}" }}\n'
                        f'recall("worker{worker}") from Log with {{ top_k: 50 }}'
                    )
                except BaseException as exc:  # every call must succeed: collect what did not
                    with lock:
                        errors.append(exc)
                    continue
                remember, recall = records
                found = {r["key"] for r in recall["results"]}
                assert key in found, (key, found)  # a write that returned is visible at once
                with lock:
                    reported.append((remember["key"], remember["value"]))

        threads = [threading.Thread(target=work, args=(n,)) for n in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert len(reported) == THREADS * CALLS
        stored = {e.key: e.value for e in session.recent_entries("Log", limit=1000)}
        assert stored == dict(reported)  # exactly the writes that reported success


def test_execute_works_inside_a_running_event_loop_and_close_closes_every_backend(
    tmp_path: Path,
) -> None:
    session = Session(memory_dir=tmp_path)

    async def notebook_cell() -> list[dict[str, Any]]:
        session.execute("memory P { store: persistent backend: sqlite retrieval: keyword }")
        session.execute("memory S { store: session retrieval: keyword }")
        return session.execute(
            'remember("inside a loop") -> P with { key: "a" }\n'
            'remember("inside a loop") -> S with { key: "b" }\n'
            'recall("loop") from P'
        )

    records = asyncio.run(notebook_cell())
    assert [r["key"] for r in records[-1]["results"]] == ["a"]
    backends = [session.memories[name].backend for name in ("P", "S")]
    assert len(backends) == 2 and not any(b.closed for b in backends)

    async def close_in_a_loop() -> None:
        session.close()

    asyncio.run(close_in_a_loop())
    assert all(b.closed for b in backends)
    assert session.closed
    with axon.Session(memory_dir=tmp_path) as again:
        again.execute("memory P { store: persistent backend: sqlite retrieval: keyword }")
        assert [r["key"] for r in again.execute('recall("loop") from P')[0]["results"]] == ["a"]


def test_a_model_client_calling_back_into_its_session_is_refused_not_a_hang(
    tmp_path: Path,
) -> None:
    """`complete` runs on the session's thread while the caller holds the session's lock:
    a callback into the session (a handle call, `execute`, `close`) waited for that lock
    forever. It is refused with a RuntimeError that says why; the flow goes on."""
    answers: list[str] = []
    holder: dict[str, Session] = {}

    class CallingBack:
        name = "calling-back"

        def complete(self, request: Any) -> str:
            session = holder["session"]
            for call in (
                lambda: session.memory("N").count(),
                lambda: session.execute('recall("x") from N'),
                session.describe_memories,
                session.close,
            ):
                try:
                    call()
                except RuntimeError as exc:
                    answers.append(str(exc))
            return "done"

    session = axon.Session(memory_dir=tmp_path, model=CallingBack())
    holder["session"] = session
    session.execute("memory N { store: session }")
    result: list[Any] = []
    runner = threading.Thread(
        target=lambda: result.append(
            session.execute('flow F() { step A { ask: "hi" output: Out } remember(Out) -> N }\n'
                            "run F()")
        ),
        daemon=True,
    )
    runner.start()
    runner.join(timeout=30)
    assert not runner.is_alive(), "a model client's call back into its session hung"
    assert len(answers) == 4
    assert all("cannot be called from inside its own operations" in a for a in answers)
    assert result and result[0][0]["value"] == "done"
    assert session.memory("N").count() == 1
    session.close()


def test_an_embed_progress_callback_calling_back_into_its_session_is_refused(
    tmp_path: Path,
) -> None:
    """`embed(progress)` calls `progress` on the session's thread: a callback that read
    the memory (`notes.count()`) waited for the session's lock forever."""
    from tests.helpers.embedders import SlowEmbedder

    embedder = SlowEmbedder(0.2, per_texts=32)  # 300 texts: 2 s, left for embed() to do
    s = axon.Session(memory_dir=tmp_path, embedder=embedder, embed_wait=0)
    s.execute("memory N { store: persistent backend: sqlite retrieval: hybrid }")
    notes = s.memory("N")
    for i in range(300):
        notes.remember(f"entry {i}", key=f"k{i}")
    failures: list[BaseException] = []

    def embed() -> None:
        try:
            notes.embed(lambda done, total: notes.count())
        except BaseException as exc:
            failures.append(exc)

    runner = threading.Thread(target=embed, daemon=True)
    runner.start()
    runner.join(timeout=30)
    assert not runner.is_alive(), "a progress callback's call back into its session hung"
    assert len(failures) == 1 and isinstance(failures[0], RuntimeError)
    assert "an embed() progress callback" in str(failures[0])
    assert notes.count() == 300
    s.close()
