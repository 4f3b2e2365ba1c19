"""A backend that is not built in becomes first-class through its registry entry alone.

`tests/helpers/toy_backend.py` holds the toy (a persistent backend: the in-memory one
with a JSON Lines log) and its `BackendInfo`; registering it (the registry's public
`register`) is all it takes for the checker to accept `backend: toy` from its
capabilities, a program to run against it through the Session, `axon memory show` and
`stats` to reach its store through its own option `--toy` (the store options are built
from the registry), and the checker's "use ..." list of persistent backends to name it.
Also: per-backend settings from a mapping and the shortcut keywords
(`registry.backend_settings`), and opening a backend from (info, location, settings).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import axon
from axon.memory.registry import BackendRegistry, backend_settings, registry
from tests.helpers.toy_backend import TOY, ToyBackend

PROGRAM = """\
memory Notes { store: persistent backend: toy retrieval: keyword }
remember("the deploy is on friday") -> Notes with { key: "deploy" }
remember("lunch with the design team") -> Notes with { key: "lunch" }
"""


@pytest.fixture
def toy() -> Iterator[None]:
    registry.register(TOY)
    try:
        yield
    finally:
        registry.unregister(TOY.name)


def test_without_its_registry_entry_the_toy_is_an_unknown_backend() -> None:
    with pytest.raises(axon.AxonCheckError, match="Unknown backend 'toy'"):
        axon.compile(PROGRAM)


def test_the_checker_accepts_the_toy_from_its_capabilities(toy: None) -> None:
    program = axon.compile(PROGRAM)
    (memory,) = program.memories
    assert memory.backend == "toy" and memory.store == "persistent"
    with pytest.raises(axon.AxonCheckError) as refused:
        axon.compile("memory Cache { store: persistent backend: in_memory }")
    assert "(use sqlite, vector_db, pgvector, chroma or toy)" in str(refused.value)


def test_a_program_runs_against_the_toy_and_a_second_session_reads_it(
    toy: None, tmp_path: Path
) -> None:
    with axon.Session(memory_dir=tmp_path) as session:
        session.execute(PROGRAM)
        found = session.memory("Notes").recall("when is the deploy")
        assert [r.key for r in found] == ["deploy"]
    assert (tmp_path / "toy" / "toy.jsonl").is_file()
    with axon.Session(memory_dir=tmp_path) as session:
        session.execute("memory Notes { store: persistent backend: toy retrieval: keyword }")
        entry = session.memory("Notes").get("lunch")
        assert entry is not None and entry.value == "lunch with the design team"


def test_axon_memory_reaches_the_toy_through_its_own_option(toy: None, tmp_path: Path) -> None:
    from axon.cli import app

    with axon.Session(memory_dir=tmp_path) as session:
        session.execute(PROGRAM)
    runner = CliRunner()
    store = ["--memory-dir", str(tmp_path), "--toy", "toy"]
    shown = runner.invoke(app, ["memory", "show", "Notes", "--json", *store])
    assert shown.exit_code == 0, shown.output
    page = json.loads(shown.output)
    assert sorted(entry["key"] for entry in page["entries"]) == ["deploy", "lunch"]
    stats = runner.invoke(app, ["memory", "stats", "--json", *store])
    assert stats.exit_code == 0, stats.output
    counted = json.loads(stats.output)
    assert counted["store"] == f"toy {tmp_path / 'toy'}"
    assert [(m["memory"], m["entries"]) for m in counted["memories"]] == [("Notes", 2)]
    # Given to `axon memory` itself, and a directory without a toy log: nothing there.
    empty = runner.invoke(app, ["memory", "--toy", "elsewhere", "--memory-dir", str(tmp_path)])
    assert f"toy {tmp_path / 'elsewhere'}" in empty.output, empty.output
    assert "(no toy log there)" in empty.output, empty.output
    assert not (tmp_path / "elsewhere").exists()  # a read creates nothing
    both = runner.invoke(app, ["memory", "ls", "--toy", "t", "--pg-dsn", "postgresql://u@h/d"])
    assert both.exit_code == 2 and "not both" in both.output


def test_settings_come_from_a_mapping_and_the_shortcut_keywords() -> None:
    assert backend_settings({"postgres": {"schema": "s1"}}, pg_dsn="postgresql://h/d") == {
        "pgvector": {"schema": "s1", "dsn": "postgresql://h/d"}
    }
    assert backend_settings(pg_schema="s2") == {"pgvector": {"schema": "s2"}}
    assert backend_settings() == {}
    with pytest.raises(axon.AxonError, match="unknown backend 'nosuch'"):
        backend_settings({"nosuch": {"x": "1"}})
    with pytest.raises(axon.AxonError, match="backend 'pgvector' has no setting 'port'"):
        backend_settings({"pgvector": {"port": "5432"}})
    with pytest.raises(axon.AxonError, match="schema name 'bad-name' is not allowed"):
        backend_settings(pg_schema="bad-name")
    with pytest.raises(axon.AxonError, match="disagrees") as clash:
        backend_settings({"pgvector": {"dsn": "postgresql://a:secret@h/d"}}, pg_dsn="other")
    assert "secret" not in str(clash.value)
    with pytest.raises(TypeError, match="pg_dsn must be a str"):
        backend_settings(pg_dsn=5)  # type: ignore[arg-type]


def test_the_store_backend_and_opening_one_without_its_name(tmp_path: Path) -> None:
    own = BackendRegistry()
    own.register(TOY)
    assert own.store_backend({}).name == "sqlite"
    assert own.store_backend(backend_settings(pg_dsn="postgresql://h/d")).name == "pgvector"
    info = own.lookup("toy")
    assert info is not None
    assert not info.exists("kept", {}, tmp_path)
    backend = info.open("kept", {}, memory_dir=tmp_path)
    assert isinstance(backend, ToyBackend) and backend.directory == tmp_path / "kept"
    assert not info.exists("kept", {}, tmp_path)  # no log until a write
    sqlite = own.lookup("sqlite")
    assert sqlite is not None and not sqlite.exists(None, {}, tmp_path)
    pg = own.lookup("postgresql")
    assert pg is not None
    assert pg.default_location({"dsn": "postgresql://h/d"}) == "postgresql://h/d"
    assert pg.keywords({"dsn": "postgresql://h/d", "schema": "s"}) == {"schema": "s"}


def test_an_entry_point_may_name_the_backend_info(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A distribution's `axon.backends` entry naming a `BackendInfo` registers it whole
    (options and store function); one naming a class registers the class."""
    dist = tmp_path / "axon_toy-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: axon-toy\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[axon.backends]\ntoy = tests.helpers.toy_backend:TOY\n"
        "toyclass = tests.helpers.toy_backend:ToyBackend\n"
        "broken = axon_no_such_module:Backend\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    own = BackendRegistry()
    assert own.lookup("toy") is TOY
    as_class = own.lookup("toyclass")
    assert as_class is not None and as_class.load() is ToyBackend and not as_class.options
    assert as_class.resolved_capabilities().persistent
    # Listing the names imports nothing; a target that cannot be imported fails when used.
    assert "broken" in own.names()
    broken = own.lookup("broken")
    assert broken is not None and broken.target == "axon_no_such_module:Backend"
    with pytest.raises(ModuleNotFoundError):
        broken.load()
