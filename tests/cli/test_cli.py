"""The `axon` command, run as a user runs it (a subprocess): exit codes, output, files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cli import ROOT, axon, write

EXAMPLES = ROOT / "examples"


def test_check_clean_files_exit_zero() -> None:
    files = sorted(str(p) for p in EXAMPLES.glob("*.axon"))
    result = axon("check", *files)
    assert result.returncode == 0, result.stderr
    assert "error" not in result.stderr


def test_check_reports_every_error_with_caret(tmp_path: Path) -> None:
    path = write(
        tmp_path, "bad.axon", "memory M { store: quantum retreival: x }\nrecall(1) from N\n"
    )
    result = axon("check", str(path))
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0] == (
        f"{path}:1:19: error: Unknown store type 'quantum' in memory 'M'. "
        "Valid: ephemeral, none, persistent, session"
    )
    assert lines[2].endswith("^~~~~~~")
    assert any("did you mean 'retrieval'" in line for line in lines)
    assert any(line.startswith(f"{path}:2:16: error: Undefined memory 'N'") for line in lines)
    assert "Traceback" not in result.stderr


def test_check_syntax_error_and_missing_file(tmp_path: Path) -> None:
    path = write(tmp_path, "syn.axon", "memory M { store persistent }")
    result = axon("check", str(path), str(tmp_path / "missing.axon"))
    assert result.returncode == 1
    assert f"{path}:1:18: error: expected ':' after field name 'store'" in result.stderr
    assert "missing.axon: error: no such file" in result.stderr
    assert "Traceback" not in result.stderr


def test_check_fails_when_any_file_fails_whatever_comes_after(tmp_path: Path) -> None:
    """An error in an early file decides the exit code even when later files are clean."""
    bad = write(tmp_path, "bad.axon", "memory M { store: quantum }\n")
    also_bad = write(tmp_path, "also_bad.axon", "recall(1) from Nowhere\n")
    good = write(tmp_path, "good.axon", "memory N { store: persistent }\n")
    assert axon("check", str(good)).returncode == 0
    result = axon("check", str(bad), str(also_bad), str(good))
    assert result.returncode == 1, result.stderr
    assert f"{bad}:1:19: error: Unknown store type 'quantum'" in result.stderr
    assert f"{also_bad}:1:16: error: Undefined memory 'Nowhere'" in result.stderr
    assert str(good) not in result.stderr
    assert "Traceback" not in result.stderr


def test_check_goes_on_after_a_missing_file(tmp_path: Path) -> None:
    """Every file is checked: a missing one is reported and the next is still read."""
    bad = write(tmp_path, "bad.axon", "memory M { store: quantum }\n")
    good = write(tmp_path, "good.axon", "memory N { store: persistent }\n")
    result = axon("check", str(tmp_path / "missing.axon"), str(bad), str(good))
    assert result.returncode == 1, result.stderr
    assert "missing.axon: error: no such file" in result.stderr
    assert f"{bad}:1:19: error: Unknown store type 'quantum'" in result.stderr
    assert "Traceback" not in result.stderr
    only_missing = axon("check", str(tmp_path / "missing.axon"), str(good))
    assert only_missing.returncode == 1, only_missing.stderr


@pytest.mark.parametrize("kind", ["ast", "ir"])
def test_check_dump_prints_json(kind: str) -> None:
    result = axon("check", "--dump", kind, str(EXAMPLES / "script.axon"))
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    if kind == "ir":
        assert data["node"] == "IRProgram" and data["memories"][0]["name"] == "Notes"
    else:
        assert data["node"] == "Program" and data["items"][0]["node"] == "Declaration"


def test_run_json_lines_and_trace_file(tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    result = axon(
        "run",
        str(EXAMPLES / "script.axon"),
        "--json",
        "--trace",
        str(trace),
        "--memory-dir",
        str(tmp_path / "mem"),
    )
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["op"] for r in records] == ["remember"] * 3 + ["recall"] * 3 + ["remember"]
    lines = (EXAMPLES / "script.axon").read_text().splitlines()
    line = next(n for n, text in enumerate(lines, 1) if '"q3_summary"' in text)
    assert records[0] == {**records[0], "memory": "Notes", "key": "q3_summary", "line": line}
    assert records[3]["query"] == "revenue growth"
    assert records[3]["results"][0]["key"] == "q3_summary"
    events = json.loads(trace.read_text())["events"]
    assert {e["event_type"] for e in events} >= {"memory_write", "memory_read"}
    pretty = axon("trace", str(trace))
    assert pretty.returncode == 0
    assert "memory_read" in pretty.stdout and "q3_summary" in pretty.stdout


def test_run_prints_recalls_for_people(tmp_path: Path) -> None:
    result = axon("run", str(EXAMPLES / "script.axon"), "--memory-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert 'recall "revenue growth" from Notes: ' in result.stdout
    first = result.stdout.split('recall "revenue growth" from Notes: ')[1].splitlines()[1]
    assert first.strip().startswith("1. q3_summary  score=")


def test_run_check_error_exits_1_runtime_error_exits_3(tmp_path: Path) -> None:
    bad = write(tmp_path, "bad.axon", 'recall("q") from Nowhere\n')
    result = axon("run", str(bad), "--memory-dir", str(tmp_path))
    assert result.returncode == 1 and "Undefined memory 'Nowhere'" in result.stderr
    big = "y" * 1_100_000
    runtime = write(tmp_path, "rt.axon", f'memory N {{}}\nlet v = "{big}"\nremember(v) -> N\n')
    result = axon("run", str(runtime), "--memory-dir", str(tmp_path))
    assert result.returncode == 3
    assert result.stderr.startswith(f"{runtime}:3:1: error: Value is too large to store")
    assert "memory 'N'" in result.stderr and "key 'v'" in result.stderr
    assert "Traceback" not in result.stderr


def test_persistent_example_remembers_across_runs(tmp_path: Path) -> None:
    mem = str(tmp_path / "mem")
    program = EXAMPLES / "research_assistant.axon"
    first = axon("run", str(program), "--json", "--memory-dir", mem)
    assert first.returncode == 0, first.stderr
    first_recall = next(json.loads(line) for line in first.stdout.splitlines())
    assert first_recall["op"] == "recall" and first_recall["results"] == []
    second = axon("run", str(program), "--json", "--memory-dir", mem)
    assert second.returncode == 0, second.stderr
    second_recall = next(json.loads(line) for line in second.stdout.splitlines())
    # the flow's opening recall now finds what the first run remembered
    assert second_recall["results"], second.stdout


def test_memory_dir_from_environment(tmp_path: Path) -> None:
    program = write(
        tmp_path, "p.axon", 'memory P { store: persistent retrieval: exact }\nremember("x") -> P\n'
    )
    env_dir = tmp_path / "from-env"
    result = axon("run", str(program), AXON_MEMORY_DIR=str(env_dir))
    assert result.returncode == 0, result.stderr
    assert any(env_dir.iterdir())


def test_trace_rejects_a_file_that_is_not_a_trace(tmp_path: Path) -> None:
    path = write(tmp_path, "x.json", "[1, 2]")
    result = axon("trace", str(path))
    assert result.returncode == 1 and "not an AXON trace file" in result.stderr


def test_a_memory_that_cannot_be_opened_is_a_runtime_error(tmp_path: Path) -> None:
    program = write(
        tmp_path,
        "pg.axon",
        'memory M { store: persistent backend: pgvector location: "env:AXON_NO_SUCH_VAR" }\n'
        'remember("x") -> M\n',
    )
    result = axon("run", str(program), "--memory-dir", str(tmp_path))
    assert result.returncode == 3
    assert result.stderr.startswith(f"{program}:1:1: error: cannot open memory 'M':")
    assert "AXON_NO_SUCH_VAR" in result.stderr and "Traceback" not in result.stderr
    semantic = write(tmp_path, "s.axon", 'memory S { retrieval: semantic }\nremember("x") -> S\n')
    result = axon("run", str(semantic), "--memory-dir", str(tmp_path), AXON_EMBEDDER="bogus")
    assert result.returncode == 3 and "unknown embedding model 'bogus'" in result.stderr
