"""`axon memory`, run as a user runs it (a subprocess), on a memory directory and on PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import require_extra
from tests.helpers.cli import PROGRAM, ROOT, Store, as_json, axon
from tests.memory.conftest import pg_dsn_or_skip, pg_test_schema


def test_every_command_with_json(store_every_location: Store, tmp_path: Path) -> None:
    store = store_every_location  # the embedded Chroma directory too
    listing = as_json(store("ls", "--json"))
    assert listing["memories"] == [
        {"memory": "Diary", "entries": 1}, {"memory": "Notes", "entries": 2}
    ]
    shown = as_json(store("show", "Notes", "--json"))
    assert shown["count"] == 2 and [e["key"] for e in shown["entries"]] == ["tally", "report"]
    assert as_json(store("show", "Notes", "--limit", "1", "--json"))["entries"][0]["key"] == "tally"
    got = as_json(store("get", "Notes", "tally", "--json"))
    assert got["value"] == {"count": 3, "done": False}
    assert got["metadata"]["tags"] == ["home"] and "scope" not in got["metadata"]
    found = as_json(store("search", "Notes", "quarterly report", "--retrieval", "keyword",
                          "--json"))
    assert [r["key"] for r in found["results"]] == ["report"] and found["retrieval"] == "keyword"
    assert "signals" not in found["results"][0]  # docs/cli.md: only hybrid results have them
    exact = as_json(store("search", "Notes", "tally", "--retrieval", "exact", "--json"))
    assert exact["results"][0]["key"] == "tally" and exact["results"][0]["score"] == 1.0
    hybrid = as_json(store("search", "Notes", "report", "--retrieval", "hybrid", "--top-k", "1",
                           "--json"))
    assert len(hybrid["results"]) == 1 and "signals" in hybrid["results"][0]
    stats = as_json(store("stats", "--json"))["memories"]
    assert [(s["memory"], s["entries"], s["expiring"]) for s in stats] == [
        ("Diary", 1, 0), ("Notes", 2, 0)
    ]
    assert stats[0]["bytes"] > 0 and stats[1]["oldest"] <= stats[1]["newest"]
    assert as_json(store("purge", "--json"))["purged"] == 0

    export = tmp_path / "out.jsonl"
    report = as_json(store("export", "-o", str(export), "--json"))
    assert report["entries"] == 3 and report["memories"] == {"Diary": 1, "Notes": 2}
    lines = export.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0]) == {"format": "axon-memory", "version": 1}
    assert [json.loads(line)["key"] for line in lines[1:]] == ["lunch", "report", "tally"]
    stdout_export = store("export", "Notes")
    assert stdout_export.returncode == 0
    assert stdout_export.stdout.splitlines() == [lines[0], *lines[2:]]

    forgot = as_json(store("forget", "Notes", "report", "--json"))
    assert forgot == {"op": "forget", "memory": "Notes", "key": "report", "deleted": 1}
    assert as_json(store("forget", "Notes", "--tag", "home", "--yes", "--json")) == {
        "op": "forget", "memory": "Notes", "filter": {"tags": ["home"]}, "deleted": 1
    }
    assert as_json(store("ls", "--json"))["memories"] == [{"memory": "Diary", "entries": 1}]

    imported = as_json(store("import", str(export), "--json"))
    assert imported["entries"] == 3
    again = as_json(store("import", str(export), "--json"))  # idempotent
    assert again["entries"] == 3
    assert as_json(store("ls", "--json"))["memories"] == [
        {"memory": "Diary", "entries": 1}, {"memory": "Notes", "entries": 2}
    ]
    assert as_json(store("get", "Notes", "tally", "--json")) == got  # same timestamps too
    into = as_json(store("import", "-", "--into", "Copy", "--json", stdin=export.read_text()))
    assert into["memories"] == {"Copy": 3}


def test_tables_for_people(store: Store) -> None:
    bare = store()
    assert bare.returncode == 0, bare.stderr
    assert "Notes" in bare.stdout and "subcommands:" in bare.stdout
    shown = store("show", "Diary")
    lines = shown.stdout.splitlines()
    assert lines[0].split() == [
        "key", "age", "type", "importance", "value", "tags", "expires", "in"
    ]
    assert "田中さん" in lines[2]
    got = store("get", "Notes", "tally")
    assert '{"count":3,"done":false}' in got.stdout and "object" in got.stdout


def test_a_mode_in_capitals_is_suggested_as_the_checker_suggests(store: Store) -> None:
    """`--retrieval KEYWORD` got no suggestion (difflib alone finds nothing alike in
    capitals); the CLI now uses the checker's `Suggester` (issue 27)."""
    shouted = store("search", "Notes", "x", "--retrieval", "KEYWORD")
    assert shouted.returncode == 2, shouted.stderr
    assert "not 'KEYWORD'; did you mean 'keyword'?" in shouted.stderr, shouted.stderr


def test_errors_are_one_line_with_the_right_exit_code(
    store_every_location: Store, tmp_path: Path
) -> None:
    store = store_every_location  # the embedded Chroma directory too
    unknown = store("show", "Note")
    assert unknown.returncode == 1
    assert "no memory 'Note'" in unknown.stderr and "did you mean 'Notes'?" in unknown.stderr
    assert len(unknown.stderr.splitlines()) == 1
    shouted = store("show", "NOTES")  # a case-only slip is suggested, as the checker does
    assert shouted.returncode == 1 and "did you mean 'Notes'?" in shouted.stderr, shouted.stderr
    missing = store("get", "Notes", "nope")
    assert missing.returncode == 1 and missing.stderr == "error: no key 'nope' in memory 'Notes'\n"
    assert store("forget", "Notes", "nope").returncode == 1
    bad_mode = store("search", "Notes", "x", "--retrieval", "semantics")
    assert bad_mode.returncode == 2 and "did you mean 'semantic'?" in bad_mode.stderr
    assert store("show", "Notes", "--limit", "0").returncode == 2
    for count in (["show", "Notes", "--limit"], ["search", "Notes", "x", "--top-k"]):
        huge = store(*count, "99999999999999999999")  # past SQLite INTEGER / bigint
        assert huge.returncode == 2 and "must be at most 1,000,000" in huge.stderr, huge.stderr
    assert store("forget", "Notes").returncode == 2  # neither a key nor a filter
    cursor = store("show", "Notes", "--after", "garbage")  # docs/cli.md: exit 1, not 3
    assert cursor.returncode == 1 and "'garbage' is not a cursor" in cursor.stderr
    export = tmp_path / "all.jsonl"
    assert store("export", "-o", str(export)).returncode == 0
    for into in ("", "~axon|x"):  # a bad option value: exit 2, and nothing imported
        refused = store("import", str(export), "--into", into)
        assert refused.returncode == 2, refused.stderr
        assert f"--into {into!r} is not a memory name" in refused.stderr
    assert [m["memory"] for m in as_json(store("ls", "--json"))["memories"]] == ["Diary", "Notes"]

    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text('{"format": "axon-memory", "version": 1}\n{"memory": "Notes", "key"\n')
    bad = store("import", str(garbage))
    assert bad.returncode == 1
    assert bad.stderr.startswith(f"{garbage}:2: error: not JSON")
    assert "Traceback" not in bad.stderr
    assert store("import", str(tmp_path / "absent.jsonl")).returncode == 1
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    not_text = store("import", str(binary))
    assert not_text.returncode == 1 and "not UTF-8" in not_text.stderr
    into_dir = store("export", "-o", str(tmp_path / "no" / "such" / "dir.jsonl"))
    assert into_dir.returncode == 1 and "does not exist" in into_dir.stderr


def test_exporting_a_misspelt_memory_fails_and_writes_nothing(store: Store, tmp_path: Path) -> None:
    """`export Note` (the store holds Notes) exits 1 naming it, with a suggestion, before
    anything is written: no file at -o (and one already there is left as it was), nothing on
    stdout, not even the header, also when a correct name comes first."""
    out = tmp_path / "out.jsonl"
    refused = store("export", "Note", "-o", str(out))
    assert refused.returncode == 1, refused.stderr
    assert "no memory 'Note'" in refused.stderr and "did you mean 'Notes'?" in refused.stderr
    assert len(refused.stderr.splitlines()) == 1 and "Traceback" not in refused.stderr
    assert not out.exists() and not list(tmp_path.glob("*.jsonl*"))
    kept = tmp_path / "kept.jsonl"
    kept.write_text("an earlier export\n")
    assert store("export", "Note", "-o", str(kept)).returncode == 1
    assert kept.read_text() == "an earlier export\n"
    mixed = store("export", "Notes", "Note")
    assert (mixed.returncode, mixed.stdout) == (1, ""), mixed.stderr
    assert "no memory 'Note'" in mixed.stderr


def test_unreachable_server_and_password_redacted() -> None:
    require_extra("psycopg", "psycopg_pool")  # without it the error names the extra instead
    result = axon("memory", "ls", "--pg-dsn", "postgresql://me:hunter2@127.0.0.1:1/db")
    assert result.returncode == 3
    assert "hunter2" not in result.stderr and "cannot connect" in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_memory_dir_that_does_not_exist_is_not_created(tmp_path: Path) -> None:
    where = tmp_path / "nothing-here"
    listing = axon("memory", "ls", "--memory-dir", str(where), "--json")
    assert json.loads(listing.stdout)["memories"] == []
    shown = axon("memory", "show", "Notes", "--memory-dir", str(where))
    assert shown.returncode == 1 and "no memory 'Notes'" in shown.stderr
    assert not where.exists()


def test_session_scopes_are_hidden_unless_asked(tmp_path: Path) -> None:
    # A SIGKILLed session leaves owned scopes behind: not memories, shown as dead data.
    script = (
        "import os, signal\n"
        "from axon.runtime.session import Session\n"
        f"s = Session(memory_dir={str(tmp_path / 'mem')!r})\n"
        "s.execute('memory Chat { store: session backend: sqlite }\\n"
        "remember(\"left behind\") -> Chat')\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, timeout=60, check=False)
    where = ["--memory-dir", str(tmp_path / "mem")]
    assert json.loads(axon("memory", "ls", *where, "--json").stdout)["memories"] == []
    listing = json.loads(axon("memory", "ls", "--sessions", *where, "--json").stdout)
    [owned] = listing["sessions"]
    assert owned["memory"] == "Chat" and owned["state"] == "dead" and owned["entries"] == 1
    assert axon("memory", "export", *where).stdout.count("\n") == 1  # the header only


def test_closed_stdout_exits_141_quietly(tmp_path: Path) -> None:
    where = ["--memory-dir", str(tmp_path / "mem")]
    lines = "\n".join(
        [json.dumps({"format": "axon-memory", "version": 1})]
        + [json.dumps({"memory": "Big", "key": f"k{i}", "value": "v" * 200, "created_at": i})
           for i in range(20_000)]
    )
    assert axon("memory", "import", "-", *where, stdin=lines).returncode == 0
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    shell = (
        f"{sys.executable} -m axon.cli memory export {' '.join(where)} | head -1; "
        "echo ${PIPESTATUS[0]}"
    )
    done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=120)
    assert done.stdout.splitlines() == ['{"format":"axon-memory","version":1}', "141"]
    assert done.stderr == ""



def test_embed_computes_the_missing_vectors_once(tmp_path: Path) -> None:
    program = tmp_path / "p.axon"
    program.write_text(PROGRAM.replace("BACKEND", "sqlite"))
    where = ["--memory-dir", str(tmp_path / "mem")]
    # Written without a model: every entry is left without a vector.
    assert axon("run", str(program), *where, AXON_EMBEDDER="none").returncode == 0
    first = as_json(axon("memory", "embed", "Notes", "--json", *where))
    assert first == {"op": "embed", "memory": "Notes", "model": first["model"], "embedded": 2}
    assert as_json(axon("memory", "embed", "Notes", "--json", *where))["embedded"] == 0
    shown = axon("memory", "embed", "Diary", *where)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("embedded 1 entry of Diary")
    missing = axon("memory", "embed", "Nope", *where)
    assert missing.returncode == 1 and "Nope" in missing.stderr
    no_model = axon("memory", "embed", "Notes", *where, AXON_EMBEDDER="none")
    assert no_model.returncode == 3 and no_model.stderr.startswith("error: ")

def test_show_pages_by_cursor_and_export_with_vectors(store: Store, tmp_path: Path) -> None:
    """`show --after CURSOR` continues where the last page ended; `export --with-vectors`
    writes each embedded entry's vector, and `import` keeps those of its own model."""
    first = as_json(store("show", "Notes", "--limit", "1", "--json"))
    assert [e["key"] for e in first["entries"]] == ["tally"] and first["next"]
    second = as_json(store("show", "Notes", "--limit", "1", "--after", first["next"], "--json"))
    assert [e["key"] for e in second["entries"]] == ["report"] and second["next"] is None
    people = store("show", "Notes", "--limit", "1")
    assert f"--after {first['next']}" in people.stdout
    bad = store("show", "Notes", "--after", "nonsense")
    assert bad.returncode != 0 and "not a cursor of this listing" in bad.stderr
    assert "Traceback" not in bad.stderr

    # Embed Notes (a semantic search computes its vectors), then export with vectors.
    assert store("search", "Notes", "report", "--retrieval", "semantic").returncode == 0
    export = tmp_path / "vectors.jsonl"
    report = as_json(store("export", "Notes", "-o", str(export), "--with-vectors", "--json"))
    assert report["entries"] == 2 and report["vectors_kept"] == 2
    records = [json.loads(line) for line in export.read_text().splitlines()[1:]]
    assert [r["vector"]["model"] for r in records] == ["hashing:64", "hashing:64"]
    assert as_json(store("forget", "Notes", "report", "--json"))["deleted"] == 1
    imported = as_json(store("import", str(export), "--json"))
    assert (imported["vectors_kept"], imported["vectors_dropped"]) == (2, 0)
    other = axon("memory", "import", str(export), "--memory-dir", str(tmp_path / "other"),
                 "--json", AXON_EMBEDDER="none")
    assert as_json(other)["vectors_dropped"] == 2
    unknown = axon("memory", "import", str(export), "--memory-dir", str(tmp_path / "third"),
                   "--json", AXON_EMBEDDER="no-such-model")
    assert (as_json(unknown)["entries"], as_json(unknown)["vectors_dropped"]) == (2, 2)


def test_a_store_that_cannot_be_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """A regular file given as the memory directory, or two stores at once, is a usage
    error on one line (not "no memories", not a traceback)."""
    file = tmp_path / "afile"
    file.write_text("x")
    for args, says in [
        (("ls", "--memory-dir", str(file)), "is a file, not a directory"),
        (("ls", "--memory-dir", str(tmp_path), "--pg-dsn", "postgresql://u@h/d"), "not both"),
        (("ls", "--chroma", "kb#notes", "--pg-dsn", "postgresql://u@h/d"), "not both"),
        (("ls", "--chroma", "ftp://h/x"), "chroma location 'ftp://h/x' is not usable"),
        (("--memory-dir", str(file), "show", "Notes"), "is a file, not a directory"),
    ]:
        result = axon("memory", *args)
        assert result.returncode == 2, result
        assert says in result.stderr and "Traceback" not in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert file.read_text() == "x"


def test_a_far_future_expiry_reads_as_words_in_get_and_show(tmp_path: Path) -> None:
    """`decay: 999999999999d` expires ~2.7 billion years on: past what `time.localtime`
    converts, so `get` says `far future` (not `8.64e+16`) and `show` caps the day count."""
    program = tmp_path / "far.axon"
    program.write_text(
        "memory Far { store: persistent backend: sqlite decay: 999999999999d }\n"
        'remember("far future note") -> Far with { key: "far" }\n'
    )
    where = ["--memory-dir", str(tmp_path / "mem")]
    assert axon("run", str(program), *where).returncode == 0
    got = axon("memory", "get", "Far", "far", *where)
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines()[-1].split() == ["expires", "far", "future"]
    shown = axon("memory", "show", "Far", *where)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[2].split()[-1] == ">99999d"
    assert "e+" not in got.stdout + shown.stdout


def _pg_schema_exists(dsn: str, schema: str) -> bool:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM information_schema.schemata WHERE schema_name = %s", [schema]
        ).fetchone()
    return row is not None and row[0] == 1


def test_a_read_on_a_postgres_schema_without_a_store_creates_nothing(tmp_path: Path) -> None:
    """docs/cli.md: a read never creates. Opening the backend used to create the schema
    and its tables for `ls`; and the label said "(schema default)" under AXON_PG_SCHEMA."""
    dsn = pg_dsn_or_skip()
    schema = pg_test_schema(tmp_path)
    where = ["--pg-dsn", dsn, "--pg-schema", schema]
    listing = axon("memory", "ls", *where)
    assert listing.returncode == 0, listing.stderr
    assert listing.stdout.strip().endswith(f"(schema {schema}) (no AXON store in that schema)")
    for command in (["show", "Notes"], ["get", "Notes", "k"], ["search", "Notes", "q"],
                    ["export"], ["forget", "Notes", "k"]):
        refused = axon("memory", *command, *where)
        assert refused.returncode == 1, (command, refused.stderr)
        assert refused.stderr.endswith("(no AXON store in that schema)\n"), refused.stderr
        assert len(refused.stderr.splitlines()) == 1
    assert axon("memory", "stats", *where).returncode == 0
    assert axon("memory", "purge", *where).returncode == 0
    assert not _pg_schema_exists(dsn, schema)
    by_env = axon("memory", "ls", "--json", "--pg-dsn", dsn, AXON_PG_SCHEMA=schema)
    assert json.loads(by_env.stdout)["store"].endswith(f"(schema {schema})")
    assert not _pg_schema_exists(dsn, schema)
    # Once a program stored there, the same read finds it.
    program = tmp_path / "p.axon"
    program.write_text('memory Notes { store: persistent backend: pgvector }\n'
                       'remember("x") -> Notes with { key: "k" }\n')
    ran = axon("run", str(program), "--pg-dsn", dsn, AXON_PG_SCHEMA=schema)
    assert ran.returncode == 0, ran.stderr
    assert as_json(axon("memory", "ls", "--json", *where))["memories"] == [
        {"memory": "Notes", "entries": 1}
    ]


def test_update_changes_only_what_it_is_given(store: Store) -> None:
    """`axon memory update MEMORY KEY [--value V] [--tag T]... [--importance I]`."""
    before = as_json(store("get", "Notes", "tally", "--json"))
    changed = as_json(store("update", "Notes", "tally", "--tag", "a", "--tag", "b",
                            "--importance", "high", "--json"))
    assert changed["value"] == before["value"] and changed["metadata"]["tags"] == ["a", "b"]
    assert changed["metadata"]["importance"] == 0.75
    assert changed["created_at"] == before["created_at"]
    assert changed["updated_at"] >= before["updated_at"]
    done = store("update", "Notes", "tally", "--value", "three")
    assert done.returncode == 0 and done.stdout == "updated tally in Notes\n", done.stderr
    got = as_json(store("get", "Notes", "tally", "--json"))
    assert got["value"] == "three" and got["metadata"]["tags"] == ["a", "b"]
    assert got["created_at"] == before["created_at"]
    missing = store("update", "Notes", "nope", "--value", "x")
    assert missing.returncode == 1 and missing.stderr == "error: no key 'nope' in memory 'Notes'\n"
    nothing = store("update", "Notes", "tally")
    assert nothing.returncode == 2 and "update needs --value, --tag or --importance" in (
        nothing.stderr
    )
    bad = store("update", "Notes", "tally", "--importance", "7")
    assert bad.returncode == 2 and "importance" in bad.stderr


def test_show_and_search_take_since_and_until(store: Store) -> None:
    """`--since` / `--until` (an ISO date, Unix seconds or a duration before now) keep
    the entries last written in that window; the next page's command keeps them."""
    report = as_json(store("get", "Notes", "report", "--json"))
    tally = as_json(store("get", "Notes", "tally", "--json"))
    assert report["updated_at"] <= tally["updated_at"]
    cut = str(tally["updated_at"])
    shown = as_json(store("show", "Notes", "--since", cut, "--json"))
    assert [e["key"] for e in shown["entries"]] == ["tally"]
    shown = as_json(store("show", "Notes", "--until", cut, "--json"))
    assert [e["key"] for e in shown["entries"]] == (
        ["report"] if report["updated_at"] < tally["updated_at"] else []
    )
    recent = as_json(store("show", "Notes", "--since", "1h", "--json"))
    assert [e["key"] for e in recent["entries"]] == ["tally", "report"]
    assert as_json(store("show", "Notes", "--until", "2001-01-01", "--json"))["entries"] == []
    found = as_json(store("search", "Notes", "report", "--retrieval", "keyword",
                          "--since", "2001-01-01T00:00:00Z", "--json"))
    assert [r["key"] for r in found["results"]] == ["report"]
    none = as_json(store("search", "Notes", "report", "--retrieval", "keyword",
                         "--until", "1h", "--json"))
    assert none["results"] == []
    bad = store("show", "Notes", "--since", "soon")
    assert bad.returncode == 2 and "--since must be an ISO 8601 date" in bad.stderr
    empty = store("search", "Notes", "x", "--since", "10", "--until", "5")
    assert empty.returncode == 2 and "--since must be before --until" in empty.stderr
    paged = store("show", "Notes", "--limit", "1", "--since", "1h")
    assert "--since 1h" in paged.stdout, paged.stdout
