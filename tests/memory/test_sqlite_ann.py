"""The SQLite backend's approximate index (`sqlite_ann`) on real files, threshold lowered.

Each test compares semantic recall through the index with the exact scan of the same
file (a second backend whose threshold is off, so it scans), after the changes an index
must follow: deletes, expiry, rewrites, a reopen, a killed process, a damaged or missing
index file, a pruned log. The index is built in a background thread: `_built` makes the
recall that starts the build, then waits for it (`AnnIndexes.wait`); the build's
`after_page` hook holds a build still, so recalls during it are seen not to wait.
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from axon.memory.backends import sqlite_ann
from axon.memory.backends.sqlite import SQLiteBackend
from axon.memory.embeddings.hashing import HashingEmbedder
from axon.memory.entry import NewEntry
from tests.conftest import require_extra
from tests.memory.conftest import FakeClock

require_extra("usearch", module_level=True)  # not imported here: see the last test

ROOT = Path(__file__).resolve().parents[2]
SCOPE = "Notes"
THRESHOLD = 50
WORDS = [f"w{i}" for i in range(120)]
QUERIES = ["w1 w2 w3", "w40 w7", "w99 w100 w101 w5", "w60", "w13 w77 w88"]


def _open(path: Path, clock: FakeClock, threshold: int | None = THRESHOLD) -> SQLiteBackend:
    return SQLiteBackend(
        memory_dir=path, clock=clock, embedder=HashingEmbedder(), ann_threshold=threshold
    )


def _exact(path: Path, clock: FakeClock) -> SQLiteBackend:
    """A backend on the same file that never uses the index: the exact scan."""
    return SQLiteBackend(memory_dir=path, clock=clock, embedder=HashingEmbedder(), ann_threshold=-1)


def _text(rng: random.Random, i: int) -> str:
    """Words of varied count and repetition, so few cosines tie."""
    return " ".join(rng.choices(WORDS, k=rng.randint(3, 12))) + f" unique{i}"


async def _fill(backend: SQLiteBackend, n: int, seed: int = 3, start: int = 0) -> None:
    rng = random.Random(seed)
    await backend.store_many(
        [NewEntry(f"k{i}", _text(rng, i), {"scope": SCOPE}) for i in range(start, start + n)]
    )


async def _recall(backend: SQLiteBackend, query: str, k: int = 10, **kw: Any) -> list[Any]:
    found = await backend.retrieve(query, k, SCOPE, mode="semantic", **kw)
    return [(e.key, e.score) for e in found]


def _ranks(found: list[Any]) -> list[Any]:
    """Keys grouped by equal score, best first; the last group (cut by `k` among equal
    scores, which neither search orders by anything but chance) only by its size."""
    groups: list[tuple[float, set[str]]] = []
    for key, score in found:
        if groups and abs(groups[-1][0] - score) <= 1e-6:
            groups[-1][1].add(key)
        else:
            groups.append((score, {key}))
    return [keys for _, keys in groups[:-1]] + [len(groups[-1][1])] if groups else []


async def _assert_same(ann: SQLiteBackend, exact: SQLiteBackend, k: int = 10) -> None:
    for query in QUERIES:
        got, want = await _recall(ann, query, k), await _recall(exact, query, k)
        assert _ranks(got) == _ranks(want), query
        assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-6)


def _stats(backend: SQLiteBackend) -> dict[str, int]:
    assert backend.ann is not None
    return backend.ann.stats


async def _built(backend: SQLiteBackend, query: str = "w1") -> None:
    """A recall (answered by the exact scan; it starts the build), then the build waited for."""
    await _recall(backend, query)
    assert backend.ann is not None and backend.ann.wait(120)


def _leftovers(directory: Path) -> list[str]:
    """Files beside the database that a build or a save writes."""
    return sorted(p.name for p in directory.iterdir() if ".usearch" in p.name)


async def test_results_equal_the_exact_scan_and_the_index_is_kept_beside_the_file(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    ann, exact = _open(tmp_path, clock), _exact(tmp_path, clock)
    try:
        await _fill(ann, 400)
        await _built(ann)
        for k in (1, 5, 10, 30):
            await _assert_same(ann, exact, k)
        assert _stats(ann)["built"] == 1 and _stats(exact)["built"] == 0
        assert _stats(ann)["index"] == 4 * len(QUERIES) and _stats(ann)["exact"] == 1
        index_path, meta_path = ann.ann.paths(SCOPE, "hashing:64")  # type: ignore[union-attr]
        assert index_path.parent == tmp_path and index_path.name.startswith("memory.db.")
        assert json.loads(meta_path.read_text())["count"] == 400
    finally:
        await ann.close()
        await exact.close()


async def test_filters_are_applied_to_the_candidates(tmp_path: Path) -> None:
    clock = FakeClock()
    ann, exact = _open(tmp_path, clock), _exact(tmp_path, clock)
    try:
        rng = random.Random(8)
        await ann.store_many(
            [
                NewEntry(f"k{i}", _text(rng, i), {"scope": SCOPE, "odd": i % 7 == 1})
                for i in range(300)
            ]
        )
        await _built(ann)
        for query in QUERIES:
            got = await _recall(ann, query, 5, filters={"odd": True})
            assert _ranks(got) == _ranks(await _recall(exact, query, 5, filters={"odd": True}))
            assert len(got) == 5 and all(int(key[1:]) % 7 == 1 for key, _ in got)
    finally:
        await ann.close()
        await exact.close()


async def test_small_scope_keeps_the_exact_scan(tmp_path: Path) -> None:
    clock = FakeClock()
    backend = _open(tmp_path, clock)
    try:
        await _fill(backend, THRESHOLD - 1)
        assert await _recall(backend, "w1 w2")
        assert _stats(backend)["built"] == 0
        assert not list(tmp_path.glob("*.usearch"))
    finally:
        await backend.close()


async def test_a_scope_of_exactly_the_threshold_gets_the_index(tmp_path: Path) -> None:
    """"At least the threshold": one entry short scans, the threshold's count builds."""
    clock = FakeClock()
    backend = _open(tmp_path, clock)
    try:
        await _fill(backend, THRESHOLD - 1)
        await _recall(backend, "w1 w2")
        assert backend.ann is not None and not backend.ann.building
        assert _stats(backend)["built"] == 0
        await _fill(backend, 1, start=THRESHOLD - 1)  # now exactly THRESHOLD entries
        await _built(backend)
        assert _stats(backend)["built"] == 1
        await _recall(backend, "w1 w2")
        assert _stats(backend)["index"] == 1
    finally:
        await backend.close()


async def test_delete_expiry_and_rewrite_after_the_build_are_honoured(tmp_path: Path) -> None:
    clock = FakeClock()
    ann, exact = _open(tmp_path, clock), _exact(tmp_path, clock)
    try:
        await _fill(ann, 300)
        await _built(ann)
        top = await _recall(ann, "w1 w2 w3", 3)
        assert _stats(ann)["built"] == 1 and _stats(ann)["index"] == 1
        deleted, rewritten, expiring = (key for key, _ in top)
        assert await ann.delete(deleted, SCOPE)
        await ann.store(rewritten, "entirely new words zebra", {"scope": SCOPE})
        await ann.store(expiring, "w1 w2 w3", {"scope": SCOPE}, expires_at=clock.now + 5)
        await ann.store("fresh", "w1 w2 w3 fresh", {"scope": SCOPE})
        keys = [key for key, _ in await _recall(ann, "w1 w2 w3", 5)]
        assert deleted not in keys and rewritten not in keys and keys[:2] == [expiring, "fresh"]
        assert [key for key, _ in await _recall(ann, "zebra new", 1)] == [rewritten]
        clock.advance(5)
        keys = [key for key, _ in await _recall(ann, "w1 w2 w3", 5)]
        assert expiring not in keys and keys[0] == "fresh"
        await ann.purge_expired()
        await _assert_same(ann, exact)
        assert _stats(ann)["built"] == 1 and _stats(ann)["applied"] >= 5
    finally:
        await ann.close()
        await exact.close()


async def test_the_index_survives_close_and_reopen(tmp_path: Path) -> None:
    clock = FakeClock()
    backend = _open(tmp_path, clock)
    await _fill(backend, 200)
    await _built(backend)
    before = await _recall(backend, "w40 w7")
    await backend.close()
    backend = _open(tmp_path, clock)
    try:
        assert await _recall(backend, "w40 w7") == before
        assert _stats(backend)["loaded"] == 1 and _stats(backend)["built"] == 0
        assert _stats(backend)["index"] == 1 and not backend.ann.building  # type: ignore[union-attr]
    finally:
        await backend.close()


CHILD = textwrap.dedent(
    """
    import asyncio, os, sys
    from tests.memory.test_sqlite_ann import SCOPE, _fill, _open, _recall
    from tests.memory.conftest import FakeClock

    async def main():
        backend = _open(sys.argv[1], FakeClock())
        await _fill(backend, 200)
        await _recall(backend, "w1")          # starts the build (the exact scan answers)
        assert backend.ann.wait(120)          # built and saved by its thread
        await _fill(backend, 30, seed=9, start=200)
        await backend.delete("k0", SCOPE)
        await _recall(backend, "w1")          # applied in memory, not saved
        assert backend.ann.stats["saved"] == 1, backend.ann.stats
        os._exit(0)                           # killed: no close

    asyncio.run(main())
    """
)


async def test_a_killed_process_is_caught_up_from_the_log(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path)], env=env, capture_output=True, text=True
    )
    assert child.returncode == 0, child.stderr
    clock = FakeClock()
    ann, exact = _open(tmp_path, clock), _exact(tmp_path, clock)
    try:
        await _assert_same(ann, exact, 20)
        assert _stats(ann)["loaded"] == 1 and _stats(ann)["built"] == 0
        assert _stats(ann)["applied"] == 31
        assert ann.ann is not None
        index = ann.ann._indexes[(SCOPE, "hashing:64")].index
        assert len(index) == 229 and 0 not in index
    finally:
        await ann.close()
        await exact.close()


def _damage(index_path: Path, meta_path: Path, how: str) -> None:
    if how == "missing index":
        index_path.unlink()
    elif how == "missing meta":
        meta_path.unlink()
    elif how == "garbage index":
        index_path.write_bytes(b"not an index" * 100)
    elif how == "truncated index":
        data = index_path.read_bytes()
        index_path.write_bytes(data[: len(data) // 2])
    elif how == "index replaced behind its meta":  # a crash between the two renames
        data = index_path.read_bytes()
        index_path.unlink()
        index_path.write_bytes(data)
    elif how == "garbage meta":
        meta_path.write_text("{not json")
    elif how == "other dimension":
        meta = json.loads(meta_path.read_text())
        meta["dim"] = 32
        meta_path.write_text(json.dumps(meta))


@pytest.mark.parametrize(
    "how",
    [
        "missing index",
        "missing meta",
        "garbage index",
        "truncated index",
        "index replaced behind its meta",
        "garbage meta",
        "other dimension",
    ],
)
async def test_a_damaged_or_missing_index_is_rebuilt(tmp_path: Path, how: str) -> None:
    clock = FakeClock()
    backend = _open(tmp_path, clock)
    await _fill(backend, 150)
    await _built(backend)
    assert backend.ann is not None
    index_path, meta_path = backend.ann.paths(SCOPE, "hashing:64")
    await backend.close()
    _damage(index_path, meta_path, how)
    ann, exact = _open(tmp_path, clock), _exact(tmp_path, clock)
    try:
        await _assert_same(ann, exact)  # the first starts a build; the exact scan answers
        assert ann.ann is not None and ann.ann.wait(120)
        await _assert_same(ann, exact)
        assert _stats(ann)["built"] == 1 and _stats(ann)["loaded"] == 0
        assert _stats(ann)["index"] >= len(QUERIES)  # some of the first may have been too
        assert json.loads(meta_path.read_text())["count"] == 150  # saved again, whole
    finally:
        await ann.close()
        await exact.close()


async def test_an_index_of_a_recreated_file_is_not_trusted(tmp_path: Path) -> None:
    clock = FakeClock()
    backend = _open(tmp_path, clock)
    await _fill(backend, 150)
    await _built(backend)
    await backend.close()
    for suffix in ("", "-wal", "-shm"):
        (tmp_path / f"memory.db{suffix}").unlink(missing_ok=True)
    ann, exact = _open(tmp_path, clock), _exact(tmp_path, clock)
    try:
        await _fill(ann, 120, seed=11)
        await _built(ann)
        await _assert_same(ann, exact)
        assert _stats(ann)["built"] == 1 and _stats(ann)["loaded"] == 0
    finally:
        await ann.close()
        await exact.close()


async def test_an_index_behind_a_pruned_log_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_ann, "LOG_KEEP", 10)
    monkeypatch.setattr(sqlite_ann, "PRUNE_STEP", 1)
    clock = FakeClock()
    backend = _open(tmp_path, clock)
    await _fill(backend, 150)
    await _built(backend)
    await backend.close()
    other = _exact(tmp_path, clock)  # another process writes; the log is pruned
    await _fill(other, 40, seed=12, start=150)
    await _recall(other, "w1")
    await other.close()
    ann, exact = _open(tmp_path, clock), _exact(tmp_path, clock)
    try:
        await _built(ann)
        await _assert_same(ann, exact)
        assert _stats(ann)["built"] == 1
        assert ann.ann is not None and ann.ann.last_rebuild == "log does not cover the saved index"
    finally:
        await ann.close()
        await exact.close()


async def test_without_usearch_the_exact_scan_remains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "usearch.index", None)  # import fails
    clock = FakeClock()
    ann, exact = _open(tmp_path, clock), _exact(tmp_path, clock)
    try:
        await _fill(ann, 100)
        await _assert_same(ann, exact)
        assert _stats(ann)["built"] == 0 and not list(tmp_path.glob("*.usearch"))
    finally:
        await ann.close()
        await exact.close()


def test_threshold_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(sqlite_ann.THRESHOLD_ENV, raising=False)
    assert sqlite_ann.threshold_from_env(None) == 50_000  # on by default
    monkeypatch.setenv(sqlite_ann.THRESHOLD_ENV, "on")
    assert sqlite_ann.threshold_from_env(None) == sqlite_ann.ON_THRESHOLD == 50_000
    monkeypatch.setenv(sqlite_ann.THRESHOLD_ENV, "")
    assert sqlite_ann.threshold_from_env(7) == 7
    monkeypatch.setenv(sqlite_ann.THRESHOLD_ENV, "1234")
    assert sqlite_ann.threshold_from_env(None) == 1234
    monkeypatch.setenv(sqlite_ann.THRESHOLD_ENV, "off")
    assert sqlite_ann.threshold_from_env(None) is None


async def test_through_the_graph_deletes_and_rewrites_are_honoured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The HNSW search itself (not the brute force of a small index): its recall is the
    benchmarks' to measure, but what it returns is always live and current."""
    monkeypatch.setattr(sqlite_ann, "EXHAUSTIVE_BELOW", 0)
    clock = FakeClock()
    backend = _open(tmp_path, clock)
    try:
        await _fill(backend, 300)
        await _built(backend)
        top = [key for key, _ in await _recall(backend, "w1 w2 w3", 3)]
        assert await backend.delete(top[0], SCOPE)
        await backend.store(top[1], "entirely new words zebra", {"scope": SCOPE})
        for query in QUERIES:
            keys = [key for key, _ in await _recall(backend, query, 20)]
            assert top[0] not in keys and len(keys) == 20
        now_top = [key for key, _ in await _recall(backend, "w1 w2 w3", 3)]
        assert top[0] not in now_top and top[1] not in now_top  # scored by its new vector
        assert _stats(backend)["built"] == 1 and _stats(backend)["applied"] == 2
    finally:
        await backend.close()


def test_loading_usearch_then_the_embedding_runtime_does_not_crash() -> None:
    """usearch imported first made `import onnxruntime` segfault the whole process (it
    took a pytest worker down); the index module loads onnxruntime before it."""
    script = (
        "from pathlib import Path\n"
        "from axon.memory.backends.sqlite_ann import AnnIndexes\n"
        "assert AnnIndexes(Path('unused.db'), 1)._module() is not None  # usearch\n"
        "import onnxruntime\n"
        "print('ok')\n"
    )
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert (done.returncode, done.stdout.strip()) == (0, "ok"), done.stderr[-500:]


class _Gate:
    """A build's `after_page` hook that holds the build after its first page until
    `release()` (or until the build is cancelled), and says when it got there."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.open = threading.Event()

    def __call__(self, cancel: threading.Event) -> None:
        self.reached.set()
        while not (self.open.is_set() or cancel.is_set()):
            self.open.wait(0.02)

    def release(self) -> None:
        self.open.set()


async def test_recalls_during_a_build_are_the_exact_scans_and_do_not_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build is held after its first page: every recall meanwhile is answered (by the
    exact scan, same results), and writes made during the build (to rows the build has
    read and to rows it has not) are in the index it delivers, through the log."""
    monkeypatch.setattr(sqlite_ann, "BUILD_PAGE", 100)
    clock = FakeClock()
    ann, exact = _open(tmp_path, clock), _exact(tmp_path, clock)
    gate = _Gate()
    assert ann.ann is not None
    ann.ann.after_page = gate
    try:
        await _fill(ann, 400)
        await _recall(ann, "w1")  # starts the build
        assert gate.reached.wait(60)
        await _assert_same(ann, exact)
        for k in (1, 30):
            await _assert_same(ann, exact, k)
        assert ann.ann.building and not gate.open.is_set()  # all answered while it waits
        [builder] = [t for t in threading.enumerate() if t.name == "axon-ann-build"]
        ours = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        assert builder.native_id is not None  # started, and yielding the cores to recalls:
        assert os.getpriority(os.PRIO_PROCESS, builder.native_id) == min(
            19, ours + sqlite_ann.BUILD_NICENESS
        )
        assert _stats(ann)["built"] == 0 and _stats(ann)["index"] == 0
        assert _stats(ann)["exact"] == 1 + 3 * len(QUERIES)
        assert await ann.delete("k1", SCOPE)  # read by the first page
        await ann.store("k350", "entirely new words zebra", {"scope": SCOPE})  # not read yet
        await _fill(ann, 20, seed=5, start=400)
        gate.release()
        assert ann.ann.wait(120)
        await _assert_same(ann, exact)
        assert [key for key, _ in await _recall(ann, "zebra new", 1)] == ["k350"]
        assert _stats(ann)["built"] == 1 and _stats(ann)["applied"] >= 22
        assert _stats(ann)["index"] == len(QUERIES) + 1
        assert _leftovers(tmp_path) == [
            p.name for p in ann.ann.paths(SCOPE, "hashing:64")
        ]  # index and meta; no lock or temporary file
    finally:
        gate.release()
        await ann.close()
        await exact.close()


async def test_close_during_a_build_cancels_it_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_ann, "BUILD_PAGE", 50)
    clock = FakeClock()
    backend = _open(tmp_path, clock)
    gate = _Gate()  # never released: only the cancel lets the build go on
    assert backend.ann is not None
    backend.ann.after_page = gate
    await _fill(backend, 300)
    assert await _recall(backend, "w1")
    assert gate.reached.wait(60) and backend.ann.building
    assert _leftovers(tmp_path) == [backend.ann.paths(SCOPE, "hashing:64")[0].name + ".lock"]
    await backend.close()
    assert not any(t.name == "axon-ann-build" for t in threading.enumerate())
    assert _leftovers(tmp_path) == []  # no index, meta, lock or temporary file
    assert _stats(backend)["cancelled"] == 1 and _stats(backend)["built"] == 0
    backend = _open(tmp_path, clock)  # the next process builds it
    try:
        await _built(backend)
        assert _stats(backend)["built"] == 1 and _stats(backend)["loaded"] == 0
    finally:
        await backend.close()


async def test_another_process_building_the_index_is_left_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two backends on one file stand for two processes (the build lock is a flock, which
    conflicts between open files of one process as between processes): while one builds,
    the other answers with the exact scan and builds nothing; then it loads the index."""
    monkeypatch.setattr(sqlite_ann, "BUILD_PAGE", 100)
    clock = FakeClock()
    first, second = _open(tmp_path, clock), _open(tmp_path, clock)
    exact = _exact(tmp_path, clock)
    gate = _Gate()
    assert first.ann is not None and second.ann is not None
    first.ann.after_page = gate
    try:
        await _fill(first, 300)
        await _recall(first, "w1")
        assert gate.reached.wait(60)
        await _assert_same(second, exact)
        assert not second.ann.building and _stats(second)["exact"] == len(QUERIES)
        gate.release()
        assert first.ann.wait(120)
        await _assert_same(second, exact)
        assert _stats(second)["loaded"] == 1 and _stats(second)["built"] == 0
        assert _stats(second)["index"] == len(QUERIES)
    finally:
        gate.release()
        await first.close()
        await second.close()
        await exact.close()


async def test_temporary_files_of_dead_processes_are_removed_on_open(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead = int(done.stdout)
    tmp_path.mkdir(exist_ok=True)
    stale = [
        tmp_path / f"memory.db.abc.model-1.usearch.tmp{dead}-77",
        tmp_path / f"memory.db.abc.model-1.usearch.json.tmp{dead}",
    ]
    ours = tmp_path / f"memory.db.abc.model-1.usearch.tmp{os.getpid()}-5"  # a save under way
    other_file = tmp_path / f"other.db.abc.model-1.usearch.tmp{dead}"  # not this database's
    for path in (*stale, ours, other_file):
        path.write_bytes(b"half")
    left_lock = tmp_path / "memory.db.abc.model-1.usearch.lock"  # its builder exited
    left_lock.touch()
    held_lock = tmp_path / "memory.db.def.model-1.usearch.lock"  # a build under way
    held = os.open(held_lock, os.O_RDWR | os.O_CREAT)
    fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        backend = _open(tmp_path, FakeClock())
        await backend.close()
    finally:
        os.close(held)
    assert not any(path.exists() for path in (*stale, left_lock))
    assert ours.exists() and other_file.exists() and held_lock.exists()


async def test_on_by_default_at_fifty_thousand_and_off_by_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(sqlite_ann.THRESHOLD_ENV, raising=False)
    backend = SQLiteBackend(memory_dir=tmp_path, embedder=HashingEmbedder())
    assert backend.ann is not None and backend.ann.threshold == 50_000
    await backend.close()
    monkeypatch.setenv(sqlite_ann.THRESHOLD_ENV, "off")
    backend = SQLiteBackend(memory_dir=tmp_path, embedder=HashingEmbedder())
    try:
        await _fill(backend, 60)
        await _recall(backend, "w1")
        assert backend.ann is not None and backend.ann.threshold is None
        assert _stats(backend)["exact"] == 0 and not backend.ann.building
    finally:
        await backend.close()
