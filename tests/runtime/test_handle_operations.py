"""Sync and async written once: each handle operation and each queued session method has
one definition (signature, defaults, docstring) that both sides show, and
`Session.run_on_loop` is the public way to run work on a session's loop."""

from __future__ import annotations

import asyncio
import gc
import inspect
import pydoc
import threading
import warnings
from pathlib import Path

import pytest

import axon
from axon.errors import AxonSessionError
from axon.runtime.handle import AsyncMemoryHandle, MemoryHandle
from axon.runtime.session import AsyncSession, Session

OPERATIONS = [
    "remember", "remember_many", "update", "recall", "embed", "get", "associate", "delete",
    "list", "page", "count", "stats", "history", "purge_history",
]


def _public(cls: type) -> set[str]:
    return {name for name in vars(cls) if not name.startswith("_")}


def test_both_handles_have_the_same_operations() -> None:
    assert _public(MemoryHandle) == _public(AsyncMemoryHandle) == set(OPERATIONS)


@pytest.mark.parametrize("name", OPERATIONS)
def test_each_handle_operation_has_one_signature_and_one_docstring(name: str) -> None:
    """The sync method shows the async operation's own signature and docstring (not
    a second copy, nor 'See MemoryHandle.x'); only the async one is a coroutine."""
    sync, run = getattr(MemoryHandle, name), getattr(AsyncMemoryHandle, name)
    assert inspect.signature(sync) == inspect.signature(run)
    assert inspect.getdoc(sync) == inspect.getdoc(run)
    assert inspect.getdoc(run) and not inspect.getdoc(run).startswith("See ")
    assert inspect.iscoroutinefunction(run) and not inspect.iscoroutinefunction(sync)
    assert sync.__qualname__ == f"MemoryHandle.{name}"
    shown = pydoc.render_doc(MemoryHandle, renderer=pydoc.plaintext)
    assert f"{name}(self" in shown and inspect.getdoc(run).splitlines()[0] in shown


def test_a_bound_sync_method_takes_the_operation_s_parameters(tmp_path: Path) -> None:
    with Session(memory_dir=tmp_path) as session:
        session.execute("memory Notes { store: session backend: sqlite }")
        notes = session.memory("Notes")
        bound = inspect.signature(notes.remember)
        assert next(iter(bound.parameters)) == "value" and bound.parameters["key"].default is None
        assert notes.remember("hello", key="k") == "k"
        assert notes.page(limit=1).entries[0].key == "k"


@pytest.mark.parametrize("name", ["execute", "declare", "check"])
def test_async_session_methods_are_the_session_s(name: str) -> None:
    queued, sync = getattr(AsyncSession, name), getattr(Session, name)
    assert inspect.getdoc(queued) == inspect.getdoc(sync)
    assert inspect.signature(queued) == inspect.signature(sync)
    assert inspect.iscoroutinefunction(queued)


def test_the_two_session_constructors_take_one_set_of_arguments() -> None:
    assert inspect.signature(AsyncSession) == inspect.signature(Session)
    with pytest.raises(TypeError, match="pg_dsnn"):
        AsyncSession(pg_dsnn="x")  # type: ignore[call-arg]


def test_run_on_loop_runs_a_coroutine_on_the_session_s_thread(tmp_path: Path) -> None:
    with Session(memory_dir=tmp_path) as session:
        session.execute("memory Notes { store: persistent backend: sqlite }")
        session.memory("Notes").remember("x", key="x")

        async def where() -> str:
            await asyncio.sleep(0)
            return threading.current_thread().name

        assert session.run_on_loop(where()) == "axon-session"

        async def fails() -> None:
            raise ValueError("from the loop")

        with pytest.raises(ValueError, match="from the loop"):
            session.run_on_loop(fails())
        assert session.memory("Notes").count() == 1  # the session goes on

        async def reenter() -> None:
            session.run_on_loop(asyncio.sleep(0))

        with pytest.raises(AxonSessionError, match="cannot be called from inside"):
            session.run_on_loop(reenter())


def test_run_on_loop_refuses_a_closed_session_and_closes_the_coroutine(tmp_path: Path) -> None:
    session = Session(memory_dir=tmp_path)
    session.close()
    ran = []

    async def work() -> None:
        ran.append(1)

    coroutine = work()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(AxonSessionError, match="this session is closed"):
            session.run_on_loop(coroutine)
        del coroutine
        gc.collect()
    assert ran == []
    assert not [w for w in caught if "never awaited" in str(w.message)]


def test_a_closed_session_s_handle_leaves_no_coroutine_unawaited(tmp_path: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        session = axon.Session(memory_dir=tmp_path)
        session.execute("memory Notes { store: session backend: sqlite }")
        notes = session.memory("Notes")
        session.close()
        with pytest.raises(AxonSessionError):
            notes.count()
        gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)]
