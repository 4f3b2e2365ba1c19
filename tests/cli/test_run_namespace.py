"""`axon run --namespace` and `axon repl --namespace`: the session's namespace from the shell."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.cli import axon, write
from tests.repl.conftest import run_axon_repl

NOTES = "memory Notes { store: persistent backend: sqlite retrieval: keyword }\n"
WRITE = NOTES + 'remember("the u1 secret plan") -> Notes with { key: "plan" }\n'
READ = NOTES + 'recall("secret plan") from Notes\n'


def _found(result: object) -> list[str]:
    assert result.returncode == 0, result.stderr  # type: ignore[attr-defined]
    lines = [json.loads(line) for line in result.stdout.splitlines()]  # type: ignore[attr-defined]
    return [hit["key"] for line in lines for hit in line.get("results", [])]


def test_run_namespace_reads_and_writes_only_there(tmp_path: Path) -> None:
    mem = str(tmp_path / "mem")
    wrote = axon("run", str(write(tmp_path, "w.axon", WRITE)), "--memory-dir", mem,
                 "--namespace", "acme/u1")
    assert wrote.returncode == 0, wrote.stderr
    read = str(write(tmp_path, "r.axon", READ))
    assert _found(axon("run", read, "--json", "--memory-dir", mem, "--namespace", "acme/u1")) == [
        "plan"
    ]
    assert _found(axon("run", read, "--json", "--memory-dir", mem)) == []
    assert _found(axon("run", read, "--json", "--memory-dir", mem, "--namespace", "acme")) == []
    assert _found(axon("run", read, "--json", "--memory-dir", mem, AXON_NAMESPACE="acme/u1")) == [
        "plan"
    ]


def test_a_bad_namespace_exits_1_naming_it_and_the_rule(tmp_path: Path) -> None:
    program = str(write(tmp_path, "w.axon", WRITE))
    mem = tmp_path / "mem"
    bad = axon("run", program, "--memory-dir", str(mem), "--namespace", "acme/../x")
    assert bad.returncode == 1
    assert "--namespace 'acme/../x': label '..' may not be '.' or '..'" in bad.stderr
    assert "Traceback" not in bad.stderr and not mem.exists()
    env_bad = axon("run", program, "--memory-dir", str(mem), AXON_NAMESPACE="a//b")
    assert env_bad.returncode == 1 and "AXON_NAMESPACE 'a//b'" in env_bad.stderr
    assert "(from $AXON_NAMESPACE)" in env_bad.stderr
    repl_bad = run_axon_repl(["--namespace", "x\t"], "", cwd=tmp_path)
    assert repl_bad.returncode == 1 and "holds a control character" in repl_bad.stderr


def test_repl_namespace(tmp_path: Path) -> None:
    mem = str(tmp_path / "mem")
    wrote = axon("run", str(write(tmp_path, "w.axon", WRITE)), "--memory-dir", mem,
                 "--namespace", "acme/u1")
    assert wrote.returncode == 0, wrote.stderr
    inside = run_axon_repl(["--memory-dir", mem, "--namespace", "acme/u1"], READ, cwd=tmp_path)
    assert inside.returncode == 0, inside.stderr
    assert "the u1 secret plan" in inside.stdout
    outside = run_axon_repl(["--memory-dir", mem], READ, cwd=tmp_path)
    assert outside.returncode == 0, outside.stderr
    assert "the u1 secret plan" not in outside.stdout
