"""`.export` and `.import` in the REPL: session memories round-trip through an export file."""

from __future__ import annotations

import json
from pathlib import Path

from tests.repl.conftest import run_axon_repl


def test_export_then_import_into_a_new_session(tmp_path: Path) -> None:
    out = tmp_path / "notes.jsonl"
    first = (
        "memory Notes { store: session }\n"
        'remember("ｗｉｄｅ 田中さん note") -> Notes with { key: "wide", tags: ["t"] }\n'
        'remember({"n": 1}) -> Notes with { key: "obj" }\n'
        f".export Notes {out}\n"
    )
    result = run_axon_repl(["--memory-dir", str(tmp_path / "m")], first, cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, "")
    assert f"exported 2 entries of 1 memory to {out}" in result.stdout
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert records[0] == {"format": "axon-memory", "version": 1}
    assert [(r["memory"], r["key"]) for r in records[1:]] == [("Notes", "wide"), ("Notes", "obj")]
    assert records[1]["metadata"]["tags"] == ["t"]  # owned scope not leaked, tags kept

    second = (
        "memory Notes { store: session }\n"
        f".import {out}\n"
        f".import {out}\n"
        ".show Notes\n"
        f".import {tmp_path / 'missing.jsonl'}\n"
    )
    result = run_axon_repl(["--memory-dir", str(tmp_path / "m")], second, cwd=tmp_path)
    assert result.stdout.count("imported 2 entries into 1 memory") == 2
    assert "Notes: 2 of 2 entries, newest first" in result.stdout
    table = result.stdout.splitlines()
    header = next(i for i, line in enumerate(table) if line.startswith("key"))
    # Wide characters take two cells: the age column still lines up under its header.
    from rich.cells import cell_len

    age_end = cell_len(table[header].split("age")[0]) + 3
    assert cell_len(table[header + 2].split("   ")[0]) <= age_end
    assert result.stderr.strip() == f"{tmp_path / 'missing.jsonl'}: error: no such file"


def test_import_names_an_undeclared_memory(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(
        '{"format": "axon-memory", "version": 1}\n'
        '{"memory": "Note", "key": "k", "value": 1, "created_at": 1}\n'
    )
    script = f"memory Notes {{ store: session }}\n.import {path}\n"
    result = run_axon_repl(["--memory-dir", str(tmp_path / "m")], script, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"{path}:2: error: memory 'Note' is not declared in this session "
        "(did you mean 'Notes'?); declare it first"
    )


def test_import_refuses_a_blank_key(tmp_path: Path) -> None:
    """A key no program or handle could name ("   ") is a bad line, as in `remember`."""
    path = tmp_path / "x.jsonl"
    path.write_text(
        '{"format": "axon-memory", "version": 1}\n'
        '{"memory": "Notes", "key": "   ", "value": 1, "created_at": 1}\n'
    )
    script = f"memory Notes {{ store: session }}\n.import {path}\n"
    result = run_axon_repl(["--memory-dir", str(tmp_path / "m")], script, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"{path}:2: error: key must be a non-empty string (memory 'Notes', key '   ')"
    )


def test_export_with_vectors(tmp_path: Path) -> None:
    out = tmp_path / "vectors.jsonl"
    script = (
        "memory Notes { store: persistent backend: sqlite retrieval: semantic }\n"
        'remember("the quarterly report is due friday") -> Notes with { key: "report" }\n'
        'remember("lunch with the client") -> Notes with { key: "lunch" }\n'
        'recall("report") from Notes\n'
        f".export --with-vectors Notes {out}\n"
        ".export --with-vectors\n"
    )
    result = run_axon_repl(["--memory-dir", str(tmp_path / "m")], script, cwd=tmp_path)
    assert f"exported 2 entries of 1 memory to {out}" in result.stdout
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()[1:]]
    assert [r["key"] for r in records] == ["report", "lunch"]
    assert all(r["vector"]["model"] == "hashing:64" and r["vector"]["dim"] == 64
               for r in records)
    assert "error: usage: .export [--with-vectors] [NAME...] FILE" in result.stderr


def test_import_into_a_tiered_memory_keeps_each_key_in_one_tier(tmp_path: Path) -> None:
    """A key a tier holds is replaced there; a new key goes where a remember would."""
    decl = "memory T { tiers: [session, persistent] store: session retrieval: keyword }\n"
    first = decl + 'remember("old") -> T with { key: "p", tier: persistent }\n'
    result = run_axon_repl(["--memory-dir", str(tmp_path / "m")], first, cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, "")
    path = tmp_path / "t.jsonl"
    lines = [
        {"format": "axon-memory", "version": 1},
        {"memory": "T", "key": "p", "value": "new p", "metadata": {}, "created_at": 1.0},
        {"memory": "T", "key": "q", "value": "first q", "metadata": {}, "created_at": 2.0},
        {"memory": "T", "key": "q", "value": "second q", "metadata": {}, "created_at": 3.0},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    second = decl + f".import {path}\n.show T\n" + 'recall("p q") from T\n'
    result = run_axon_repl(["--memory-dir", str(tmp_path / "m")], second, cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, "")
    assert "T: 2 of 2 entries, newest first" in result.stdout  # each key once
    assert "old" not in result.stdout and "first q" not in result.stdout
    # p was replaced in the persistent tier, where it lived; q went to the session tier
    # (the memory's store) and ended with that session
    third = decl + ".show T\n"
    result = run_axon_repl(["--memory-dir", str(tmp_path / "m")], third, cwd=tmp_path)
    assert "T: 1 of 1 entry, newest first" in result.stdout
    assert "new p" in result.stdout


def test_import_keeps_each_lines_namespace(tmp_path: Path) -> None:
    """Two users' entries under one key: the root REPL puts each in its own namespace (it
    used to put both in the session's namespace, one user's entry replacing the other's)."""
    path = tmp_path / "users.jsonl"
    path.write_text(
        '{"format": "axon-memory", "version": 2}\n'
        '{"memory": "Notes", "namespace": "acme/u1", "key": "diet", "value": "vegan", '
        '"created_at": 1}\n'
        '{"memory": "Notes", "namespace": "acme/u2", "key": "diet", "value": "keto", '
        '"created_at": 1}\n',
        encoding="utf-8",
    )
    memory_dir = tmp_path / "m"
    declare = "memory Notes { store: persistent backend: sqlite }\n"
    result = run_axon_repl(
        ["--memory-dir", str(memory_dir)], f"{declare}.import {path}\n", cwd=tmp_path
    )
    assert (result.returncode, result.stderr) == (0, "")
    assert "imported 2 entries into 2 memories" in result.stdout
    for user, diet in [("acme/u1", "vegan"), ("acme/u2", "keto")]:
        shown = run_axon_repl(
            ["--memory-dir", str(memory_dir), "--namespace", user],
            f'{declare}.show Notes\n', cwd=tmp_path,
        )
        assert diet in shown.stdout and "1 of 1 entry," in shown.stdout, shown.stdout
    root = run_axon_repl(["--memory-dir", str(memory_dir)], f"{declare}.show Notes\n", cwd=tmp_path)
    assert "vegan" not in root.stdout and "keto" not in root.stdout


def test_export_of_a_namespace_imports_at_another(tmp_path: Path) -> None:
    """A REPL in acme/u42 exports its namespace; a REPL in acme/u43 imports it there (as
    `axon memory import --namespace` would), never in the root or in acme/u42."""
    out = tmp_path / "u42.jsonl"
    memory_dir = tmp_path / "m"
    declare = "memory Notes { store: persistent backend: sqlite }\n"
    first = run_axon_repl(
        ["--memory-dir", str(memory_dir), "--namespace", "acme/u42"],
        f'{declare}remember("likes tea") -> Notes with {{ key: "drink" }}\n.export Notes {out}\n',
        cwd=tmp_path,
    )
    assert (first.returncode, first.stderr) == (0, "")
    header = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert header == {"format": "axon-memory", "version": 2, "namespace": "acme/u42"}
    second = run_axon_repl(
        ["--memory-dir", str(tmp_path / "m2"), "--namespace", "acme/u43"],
        f"{declare}.import {out}\n.show Notes\n",
        cwd=tmp_path,
    )
    assert (second.returncode, second.stderr) == (0, "")
    assert "likes tea" in second.stdout and "1 of 1 entry," in second.stdout
    root = run_axon_repl(
        ["--memory-dir", str(tmp_path / "m2")], f"{declare}.show Notes\n", cwd=tmp_path
    )
    assert "likes tea" not in root.stdout
