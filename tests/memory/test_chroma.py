"""`backend: chroma` beyond the conformance suite: locations, the missing extra, no default
embedding function, the embedded directory, model changes, two processes, a server restart.

The conformance suite and the stateful model test run on Chroma through
`conftest.BACKEND_FACTORIES` (a server from `scripts/chroma`, `AXON_CHROMA_URL`).
The restart test starts its own server, on its own port, and restarts only that one.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from axon.errors import AxonMemoryError
from axon.memory.backends.chroma import ChromaBackend
from axon.memory.backends.chroma_client import parse_location
from axon.memory.embeddings.hashing import HashingEmbedder
from axon.memory.entry import NewEntry
from tests.conftest import require_extra, unavailable
from tests.memory.conftest import chroma_test_url

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def chromadb_installed() -> None:
    """The tests that open a store themselves (not through `chroma_test_url`, which
    checks) need the chroma extra: without it they skip, or fail under CI=true."""
    require_extra("chromadb")


needs_chromadb = pytest.mark.usefixtures("chromadb_installed")


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


# ---------------------------------------------------------------------- locations


def test_server_urls_name_the_collection() -> None:
    target = parse_location("http://127.0.0.1:8000/axon", None)
    assert (target.host, target.port, target.collection, target.ssl) == (
        "127.0.0.1",
        8000,
        "axon",
        False,
    )
    assert parse_location("https://chroma.example", None).port == 443
    assert parse_location("http://h:9/", None).collection == "axon"


def test_env_locations_and_directories(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MY_CHROMA", "http://10.0.0.1:8123/notes")
    assert parse_location("env:MY_CHROMA", None).shown == "http://10.0.0.1:8123/notes"
    target = parse_location("kb#facts", tmp_path)
    assert (target.path, target.collection) == (tmp_path / "kb", "facts")
    monkeypatch.delenv("AXON_CHROMA_URL", raising=False)
    assert parse_location(None, tmp_path).path == tmp_path / "chroma"


@pytest.mark.parametrize(
    ("location", "says"),
    [
        ("ftp://127.0.0.1/axon", "scheme 'ftp' is not http or https"),
        ("http://127.0.0.1:99999/axon", "port is not a number"),
        ("http://127.0.0.1:8000/a/b", "one collection name"),
        ("http://127.0.0.1:8000/x", "collection name 'x' must be 3 to 42"),
        ("http://127.0.0.1:8000/axon?x=1", "query or fragment"),
        ("env:AXON_CHROMA_NOT_SET", "AXON_CHROMA_NOT_SET, which is not set"),
    ],
)
def test_bad_locations_say_what_is_wrong(location: str, says: str) -> None:
    with pytest.raises(AxonMemoryError) as caught:
        ChromaBackend(location=location)
    assert says in str(caught.value)
    if not location.startswith("env:"):
        assert f"'{location}'" in str(caught.value)


def test_a_file_is_not_a_directory(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    with pytest.raises(AxonMemoryError, match="exists and is not a directory"):
        ChromaBackend(location=str(tmp_path / "f"))


def test_axon_run_names_the_memory_and_the_location(tmp_path: Path) -> None:
    source = tmp_path / "bad.axon"
    source.write_text(
        'memory M { store: persistent backend: chroma location: "ftp://127.0.0.1/axon" }\n'
        'remember("x") -> M\n'
    )
    ran = subprocess.run(
        [sys.executable, "-m", "axon.cli", "run", str(source), "--memory-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    assert ran.returncode == 3, ran.stderr
    assert "memory 'M'" in ran.stderr and "ftp://127.0.0.1/axon" in ran.stderr
    assert f"{source}:" in ran.stderr and "Traceback" not in ran.stderr


def test_a_missing_chromadb_names_the_extra(tmp_path: Path) -> None:
    """Without chromadb installed (simulated: the import fails) the error names the extra."""
    code = textwrap.dedent(
        """
        import sys
        sys.modules["chromadb"] = None  # what an uninstalled package looks like to import
        from axon.memory.registry import registry
        try:
            registry.create("chroma", location=sys.argv[1])
        except Exception as exc:
            print(type(exc).__name__, exc)
        """
    )
    ran = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "db")],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert ran.stdout.startswith("AxonMemoryError"), ran.stderr
    assert "pip install '.[chroma]'" in ran.stdout


# ---------------------------------------------------------------------- embedded directory


@needs_chromadb
async def test_a_directory_is_an_embedded_store_that_persists(tmp_path: Path) -> None:
    embedder = HashingEmbedder()
    first = ChromaBackend(location=str(tmp_path / "db"), embedder=embedder)
    await first.store("k1", {"n": 1}, {"scope": "M"})
    await first.store("k2", "the invoice was paid", {"scope": "M"})
    assert [e.key for e in await first.retrieve("invoice paid", 1, "M", mode="semantic")] == ["k2"]
    await first.close()
    del first
    # A second process opens the same directory: everything is there.
    code = textwrap.dedent(
        """
        import asyncio, sys
        from axon.memory.backends.chroma import ChromaBackend
        async def main():
            b = ChromaBackend(location=sys.argv[1])
            print(sorted((e.key, repr(e.value)) for e in await b.list_entries("M")))
        asyncio.run(main())
        """
    )
    ran = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "db")],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    assert ran.stdout.strip() == "[('k1', \"{'n': 1}\"), ('k2', \"'the invoice was paid'\")]", (
        ran.stderr
    )


@needs_chromadb
async def test_a_directory_used_by_another_process_is_refused_at_open(tmp_path: Path) -> None:
    """Embedded Chroma serves one process at a time (a second one failed mid-run with
    "Error finding id"): while a process holds the directory, another one's first use
    is an error naming the directory and the holder's pid; the holder's death releases
    it. In one process, memories sharing the directory share the hold."""
    location = str(tmp_path / "db")
    code = textwrap.dedent(
        """
        import asyncio, sys
        from axon.memory.backends.chroma import ChromaBackend
        async def main():
            b = ChromaBackend(location=sys.argv[1] + "#held")
            await b.store("k", "v")
            print("ready", flush=True)
            sys.stdin.readline()
        asyncio.run(main())
        """
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, location],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        refused = ChromaBackend(location=location + "#other")
        with pytest.raises(AxonMemoryError, match="in use by another process") as info:
            await refused.store("k", "v")
        assert f"(pid {holder.pid})" in str(info.value) and location in str(info.value)
        await refused.close()
    finally:
        holder.send_signal(signal.SIGKILL)  # no close: the system releases the lock
        holder.wait(timeout=60)
    first = ChromaBackend(location=location + "#held")
    second = ChromaBackend(location=location + "#other")
    try:
        assert (await first.get("k")) is not None and (await first.get("k")).value == "v"
        await second.store("k2", "w")  # same process, same directory: shared
        await first.close()
        assert (await second.get("k2")) is not None
    finally:
        await first.close()
        await second.close()
    ran = subprocess.run(  # all closed: another process may open it now
        [sys.executable, "-c", code, location],
        input="\n",
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    assert ran.stdout.strip() == "ready", ran.stderr


# ---------------------------------------------------------------------- vectors


@needs_chromadb
async def test_vectors_are_ours_and_no_default_embedding_function_exists(
    tmp_path: Path,
) -> None:
    """Chroma's default embedding function would download a model: it is never made.

    The collection's configuration records no embedding function ("legacy" is what
    Chroma writes for `embedding_function=None`), and a whole session in a process
    whose HOME is empty leaves no model cache behind (Chroma's default downloads to
    ~/.cache/chroma).
    """
    home = tmp_path / "home"
    home.mkdir()
    code = textwrap.dedent(
        """
        import asyncio, sys, json
        from axon.memory.backends.chroma import ChromaBackend
        from axon.memory.embeddings.hashing import HashingEmbedder
        async def main():
            b = ChromaBackend(location=sys.argv[1], embedder=HashingEmbedder())
            await b.store("a", "red apples", {"scope": "M"})
            await b.store("b", "the meeting", {"scope": "M"})
            hits = await b.retrieve("apples", 2, "M", mode="hybrid")
            names = {}
            for c in b._db._open().list_collections():
                name = c if isinstance(c, str) else c.name
                col = b._db.collection(name, create=False)
                names[name] = col.configuration_json.get("embedding_function")
            print(json.dumps({"hits": [e.key for e in hits], "configs": names}))
        asyncio.run(main())
        """
    )
    ran = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "db")],
        capture_output=True,
        text=True,
        env={**_env(), "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")},
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    out = json.loads(ran.stdout)
    assert out["hits"][0] == "a"
    assert len(out["configs"]) == 2  # the entries and the hashing model's vectors
    assert all(config in (None, {"type": "legacy"}) for config in out["configs"].values())
    assert not list(home.rglob("*onnx*")) and not (home / ".cache" / "chroma").exists()


@needs_chromadb
async def test_a_model_change_re_embeds(tmp_path: Path) -> None:
    backend = ChromaBackend(location=str(tmp_path / "db"), embedder=HashingEmbedder())
    for i in range(5):
        await backend.store(f"k{i}", f"text number {i}", {"scope": "M"})
    assert await backend.ensure_vectors("M") == 5
    assert await backend.ensure_vectors("M") == 0
    await backend.store("k0", "rewritten text", {"scope": "M"})
    assert await backend.ensure_vectors("M") == 1  # only the rewritten entry
    backend.embedder = HashingEmbedder(dim=32)  # another model, of another dimension
    assert await backend.ensure_vectors("M") == 5  # every entry, for the new model
    hits = await backend.retrieve("rewritten", 1, "M", mode="semantic")
    assert [e.key for e in hits] == ["k0"]
    await backend.close()


@needs_chromadb
async def test_a_batch_larger_than_chromas_limit_is_stored_whole(tmp_path: Path) -> None:
    backend = ChromaBackend(location=str(tmp_path / "db"))
    limit = backend._db.batch_limit()
    items = [NewEntry(f"k{i}", i, {"scope": "M"}) for i in range(limit + 10)]
    await backend.store_many(items)
    assert await backend.count("M") == limit + 10
    await backend.close()


@needs_chromadb
async def test_reads_that_match_many_records_are_paged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chroma refuses one answer of more than 32,766 records (SQL variables): every read
    that may match many is paged (`GET_PAGE`), so count, list, keyword, expiry and clear
    see every entry. A page of 3 here stands for the 5,000 of a real store."""
    from chromadb.api.models.Collection import Collection

    from axon.memory.backends import chroma

    monkeypatch.setattr(chroma, "GET_PAGE", 3)
    answers: list[int] = []  # records per answer of Chroma, read at the real client
    real_get = Collection.get

    def counted_get(self: Collection, *args: object, **kwargs: object) -> object:
        got = real_get(self, *args, **kwargs)  # type: ignore[arg-type]
        answers.append(len(got["ids"]))
        return got

    monkeypatch.setattr(Collection, "get", counted_get)
    now = [1000.0]
    backend = ChromaBackend(location=str(tmp_path / "db"), clock=lambda: now[0])
    await backend.store_many(
        [NewEntry(f"k{i}", f"note {i} about paging", {"scope": "M"}) for i in range(10)]
        + [NewEntry(f"x{i}", f"short lived {i}", {"scope": "M"}, 1010.0) for i in range(7)]
    )
    assert await backend.count("M") == 17
    assert len(await backend.list_entries("M", limit=None)) == 17
    hits = await backend.retrieve("paging", 20, "M", mode="keyword")
    assert sorted(e.key for e in hits) == sorted(f"k{i}" for i in range(10))
    now[0] = 1020.0
    assert await backend.purge_expired() == 7
    assert await backend.count("M") == 10
    assert await backend.clear("M") == 10
    assert await backend.count("M") == 0
    assert answers and max(answers) <= 3, answers
    await backend.close()


def _count_queries(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the `n_results` of every HNSW query Chroma is asked, at the real client."""
    from chromadb.api.models.Collection import Collection

    asked: list[int] = []
    real_query = Collection.query

    def counted(self: Collection, *args: object, **kwargs: object) -> object:
        asked.append(int(kwargs.get("n_results", 10)))  # type: ignore[call-overload]
        return real_query(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Collection, "query", counted)
    return asked


@needs_chromadb
async def test_small_collections_are_searched_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HNSW is approximate and loses neighbours after updates (CI once saw an import
    repeated drop one): up to `EXACT_SEARCH_LIMIT` vectors every vector of the scope is
    compared, so results after rewrites are the in-memory backend's, score for score."""
    from axon.memory import registry

    asked = _count_queries(monkeypatch)
    chroma = ChromaBackend(location=str(tmp_path / "db"), embedder=HashingEmbedder())
    reference = registry.create("in_memory", embedder=HashingEmbedder())
    words = ["apple", "river", "cloud", "stone", "note", "garden"]
    for round_ in range(3):  # every entry rewritten twice: the case HNSW handles worst
        for backend in (chroma, reference):
            await backend.store_many(
                [
                    NewEntry(f"k{i}", f"{words[i % 6]} {words[(i * 5 + round_) % 6]} {i}", {})
                    for i in range(60)
                ]
            )
    for query in words:
        got = await chroma.retrieve(query, 60, None, mode="semantic")
        want = await reference.retrieve(query, 60, None, mode="semantic")
        # Equal cosines may differ in the last float32 bit between backends: compared
        # rounded, ties by key.
        assert sorted((-round(e.score, 5), e.key) for e in got) == sorted(
            (-round(e.score, 5), e.key) for e in want
        ), query
    assert asked == []
    await chroma.close()


@needs_chromadb
async def test_larger_collections_use_hnsw(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from axon.memory.backends import chroma

    monkeypatch.setattr(chroma, "EXACT_SEARCH_LIMIT", 5)
    asked = _count_queries(monkeypatch)
    backend = ChromaBackend(location=str(tmp_path / "db"), embedder=HashingEmbedder())
    await backend.store_many(
        [NewEntry(f"k{i}", f"entry {i} about topic{i}", {"scope": "M"}) for i in range(100)]
    )
    hits = await backend.retrieve("entry 7 about topic7", 3, "M", mode="semantic")
    assert hits[0].key == "k7" and hits[0].score > 0.99
    # a semantic recall ranks IMPORTANCE_POOL candidates (importance weighs them before
    # the cut), and asks HNSW for 16 more than it needs
    from axon.memory.retrieval.scores import IMPORTANCE_POOL

    assert asked and asked[0] == IMPORTANCE_POOL + 16
    await backend.close()


# ---------------------------------------------------------------------- shared server

_WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from axon.memory.backends.chroma import ChromaBackend
    async def main():
        b = ChromaBackend(location=sys.argv[1])
        for i in range(int(sys.argv[3])):
            await b.store(f"{sys.argv[2]}{i}", f"written by {sys.argv[2]}", {"scope": "M"})
        print("done")
    asyncio.run(main())
    """
)


async def test_two_processes_share_one_collection(tmp_path: Path) -> None:
    url = chroma_test_url(tmp_path)
    other = subprocess.Popen(
        [sys.executable, "-c", _WRITER, url, "p", "40"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    here = ChromaBackend(location=url)
    for i in range(40):
        await here.store(f"q{i}", "written here", {"scope": "M"})
    out, err = await asyncio.to_thread(other.communicate, timeout=300)
    assert other.returncode == 0 and out.strip() == "done", err
    assert await here.count("M") == 80
    found = await here.retrieve("written by p", 50, "M", mode="exact")
    assert {e.key for e in found} == {f"p{i}" for i in range(40)}
    assert await here.scopes("") == ["M"]
    await here.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _OwnServer:
    """A Chroma server private to one test, on its own port and data directory."""

    def __init__(self, data: Path) -> None:
        self.data = data
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        chroma = Path(sys.executable).with_name("chroma")
        command = [str(chroma), "run", "--path", str(self.data), "--host", "127.0.0.1"]
        self.process = subprocess.Popen(
            [*command, "--port", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.url}/api/v2/heartbeat", timeout=2):
                    return
            except OSError:
                time.sleep(0.2)
        raise AssertionError("the test's Chroma server did not start")

    def kill(self) -> None:
        if self.process is not None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
            self.process = None


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[_OwnServer]:
    require_extra("chromadb")  # which installs the `chroma` command
    if not Path(sys.executable).with_name("chroma").exists():
        unavailable("no chroma command beside this Python")
    server = _OwnServer(tmp_path / "server")
    server.start()
    try:
        yield server
    finally:
        server.kill()


async def test_a_server_restart_loses_nothing_acknowledged(own_server: _OwnServer) -> None:
    """Entries acknowledged before the server is killed (SIGKILL) are all there after it
    restarts, and an operation made while it is down waits and then succeeds."""
    backend = ChromaBackend(
        location=f"{own_server.url}/restart", embedder=HashingEmbedder(), connect_timeout=60
    )
    for i in range(50):
        await backend.store(f"k{i}", f"entry {i}", {"scope": "M"})
    await backend.store_many([NewEntry(f"b{i}", i, {"scope": "M"}) for i in range(20)])
    own_server.kill()
    # The server comes back two seconds later, while the next write is retrying.
    restarter = asyncio.get_running_loop().run_in_executor(
        None, lambda: (time.sleep(2), own_server.start())
    )
    await backend.store("during", "written while the server was down", {"scope": "M"})
    await restarter
    assert await backend.count("M") == 71
    assert (await backend.get("k49", "M")) is not None
    hits = await backend.retrieve("entry 7", 1, "M", mode="exact")
    assert hits[0].key == "k7"
    assert [e.key for e in await backend.retrieve("down", 1, "M", mode="hybrid")] == ["during"]
    await backend.close()


@needs_chromadb
async def test_an_unreachable_server_is_a_clear_error() -> None:
    backend = ChromaBackend(location=f"http://127.0.0.1:{_free_port()}/axon", connect_timeout=1)
    with pytest.raises(AxonMemoryError, match="cannot reach the Chroma server at http://"):
        await backend.count("M")
    await backend.close()


async def test_a_clear_by_one_client_leaves_the_others_working(tmp_path: Path) -> None:
    url = chroma_test_url(tmp_path)
    first, second = ChromaBackend(location=url), ChromaBackend(location=url)
    await first.store("a", 1, {"scope": "M"})
    assert await second.count("M") == 1
    assert await first.clear() == 1
    await second.store("b", 2, {"scope": "M"})
    assert [e.key for e in await first.list_entries("M")] == ["b"]
    # A collection deleted under a client (by hand, or by another tool) is looked up again.
    first._db._open().delete_collection(first.collection_name)
    await second.store("c", 3, {"scope": "M"})
    assert [e.key for e in await second.list_entries("M")] == ["c"]
    await first.close()
    await second.close()


async def test_expired_entries_are_deleted_by_writes(tmp_path: Path) -> None:
    """Decay: an expired entry is invisible at once and deleted by a later write's sweep
    (every `PURGE_INTERVAL` seconds of the clock), which reports it per scope."""
    from axon.memory.backends.chroma import PURGE_INTERVAL, entry_id
    from axon.testing import FakeClock

    clock = FakeClock()
    backend = ChromaBackend(location=chroma_test_url(tmp_path), clock=clock)
    reports: list[tuple[int, object]] = []
    backend.set_purge_listener(lambda count, by_scope: reports.append((count, by_scope)))
    await backend.store("old", "soon gone", {"scope": "M"}, expires_at=clock() + 5)
    clock.advance(10)
    assert await backend.get("old", "M") is None
    assert await backend.retrieve("soon gone", 5, "M", mode="exact") == []
    raw = backend._db.collection(backend.collection_name)
    assert raw.get(ids=[entry_id("M", "old")], include=[])["ids"]  # still stored
    clock.advance(PURGE_INTERVAL)
    await backend.store("new", "a write sweeps", {"scope": "M"})
    assert not raw.get(ids=[entry_id("M", "old")], include=[])["ids"]
    assert reports == [(1, {"M": 1})]
    await backend.close()


# ---------------------------------------------------------------------- missing collections


@pytest.mark.parametrize("digits", ["502", "503"])
async def test_a_missing_collection_is_not_a_down_server_whatever_its_name(
    tmp_path: Path, digits: str
) -> None:
    """Looking up a collection that is not there yet (the model's vectors before the first
    embedding, or a store `axon memory` is asked about) answers "not there" at once, also
    when the name holds an HTTP status's digits. The failures in CI: a server error's
    text was searched for "502"/"503", so a test collection whose random name held them
    was taken for a restarting server, retried for `connect_timeout` seconds and then
    reported as unreachable ("... Collection [...] does not exist); is it running?")."""
    from axon.memory.backends.chroma import store_place
    from tests.memory.conftest import CHROMA_TEST_COLLECTIONS

    name = chroma_test_url(tmp_path).rsplit("/", 1)[1] + f"-{digits}"
    CHROMA_TEST_COLLECTIONS.add(name)  # deleted with the session's others
    url = chroma_test_url(tmp_path).rsplit("/", 1)[0] + f"/{name}"
    assert not store_place(url, {}, tmp_path).exists()
    backend = ChromaBackend(location=url, embedder=HashingEmbedder(), connect_timeout=2)
    await backend.store("k", "rivers and stones", {"scope": "S"})
    assert store_place(url, {}, tmp_path).exists()
    assert await backend.read_vectors("S", ["k"], backend.embedder.model_id) == {}
    assert await backend.ensure_vectors("S") == 1
    assert set(await backend.read_vectors("S", ["k"], backend.embedder.model_id)) == {"k"}
    await backend.close()


@needs_chromadb
def test_only_errors_of_an_absent_server_are_retried() -> None:
    """What `ChromaConnection.run` waits on (a restart) and what it reports at once."""
    import httpx
    from chromadb.errors import InvalidArgumentError, NotFoundError

    from axon.memory.backends.chroma_client import _retryable

    assert _retryable(httpx.ConnectError("[Errno 111] Connection refused"))
    assert _retryable(ValueError("Could not connect to a Chroma server. Is it running?"))
    assert _retryable(Exception("<html><title>502 Bad Gateway</title></html>"))
    assert _retryable(Exception("503 Service Unavailable"))
    assert not _retryable(NotFoundError("Collection [notes-2503-v0123456789ab] does not exist."))
    assert not _retryable(InvalidArgumentError("connection refused by the 503 rule"))
    assert not _retryable(ValueError("Expected IDs to be unique, found e503 and e502"))


@needs_chromadb
async def test_a_failing_server_is_an_error_not_a_missing_collection(tmp_path: Path) -> None:
    """Only "does not exist" means a collection is not there: a server that fails the
    lookup (its answer when it had run out of file descriptors is below) is an error
    naming the location, not a semantic recall or `read_vectors` that quietly finds no
    vectors. The client is a stand-in for the one chromadb builds, failing every lookup."""
    from chromadb.errors import InternalError, NotFoundError

    failure = "Database error: (code: 14) unable to open database file"

    class _Client:
        def __init__(self, error: Exception) -> None:
            self.error = error

        def get_collection(self, name: str, **_: object) -> object:
            raise self.error

    backend = ChromaBackend(location="http://127.0.0.1:9/notes", connect_timeout=1)
    backend._db._client = _Client(NotFoundError("Collection [notes-v0123456789ab] does not exist"))
    assert backend._db.run(lambda db: db.collection("notes-v0123456789ab", create=False)) is None
    backend._db._client = _Client(InternalError(failure))
    with pytest.raises(AxonMemoryError) as caught:
        await backend.read_vectors("S", ["k"], "hashing:64")
    assert "Chroma at http://127.0.0.1:9/notes refused the operation" in str(caught.value)
    assert "unable to open database file" in str(caught.value)
    await backend.close()
