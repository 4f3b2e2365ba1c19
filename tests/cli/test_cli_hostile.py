"""The `axon` command used carelessly or hostilely: each case is one clear line and its exit code.

Every case runs `axon` as a subprocess, as a user would. Exit codes (docs/cli.md):
0 success, 1 program errors / a file cannot be read or written, 2 usage,
3 a statement failed, 4 internal error, 141 stdout closed early.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.cli import axon, write

PROGRAM = (
    "memory N { store: persistent retrieval: exact }\n"
    'remember("first") -> N\n'
    'remember("second") -> N\n'
)
TOO_BIG = "y" * 1_100_000


def assert_one_clear_line(stderr: str) -> None:
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr


def test_version() -> None:
    from axon import __version__

    result = axon("--version")
    assert (result.returncode, result.stdout.strip()) == (0, f"axon {__version__}")


def test_usage_error_is_exit_2_and_check_error_exit_1(tmp_path: Path) -> None:
    assert axon("run", "--no-such-option", "x.axon").returncode == 2
    path = write(tmp_path, "p.axon", PROGRAM)
    assert axon("check", "--dump", "xml", str(path)).returncode == 2
    bad = write(tmp_path, "bad.axon", "memory { }\n")
    assert axon("run", str(bad), "--memory-dir", str(tmp_path)).returncode == 1


def test_trace_into_a_missing_directory_fails_before_running(tmp_path: Path) -> None:
    path = write(tmp_path, "p.axon", PROGRAM)
    mem = tmp_path / "mem"
    result = axon("run", str(path), "--trace", "/missing/dir/t.json", "--memory-dir", str(mem))
    assert result.returncode == 2
    assert (
        result.stderr
        == "error: --trace /missing/dir/t.json: directory /missing/dir does not exist\n"
    )
    assert result.stdout == "" and not mem.exists()  # nothing ran


def test_trace_onto_a_directory_fails_before_running(tmp_path: Path) -> None:
    path = write(tmp_path, "p.axon", PROGRAM)
    result = axon("run", str(path), "--trace", str(tmp_path), "--memory-dir", str(tmp_path / "m"))
    assert result.returncode == 2 and "is a directory" in result.stderr
    assert not (tmp_path / "m").exists()


def test_closed_stdout_exits_quietly_with_141(tmp_path: Path) -> None:
    path = write(tmp_path, "p.axon", PROGRAM)
    env = {**os.environ, "AXON_EMBEDDER": "hashing"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "axon.cli", "run", str(path), "--memory-dir", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # like `| head -0`: every write gets EPIPE
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert stderr == ""
    # the run itself happened: both remembers are in the memory
    again = axon(
        "run",
        str(
            write(
                tmp_path,
                "q.axon",
                'memory N { store: persistent retrieval: exact }\nrecall("first") from N\n',
            )
        ),
        "--json",
        "--memory-dir",
        str(tmp_path),
    )
    assert len(json.loads(again.stdout)["results"]) == 1


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_output_to_a_full_device_is_a_clear_error(tmp_path: Path) -> None:
    lines = "".join(f'remember("value {i}") -> N\n' for i in range(300))
    path = write(tmp_path, "p.axon", "memory N { store: session }\n" + lines)
    env = {**os.environ, "AXON_EMBEDDER": "hashing"}
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [sys.executable, "-m", "axon.cli", "run", str(path), "--memory-dir", str(tmp_path)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=120,
        )
    assert result.returncode == 1
    assert result.stderr == "error: cannot write the output: No space left on device\n"


@pytest.mark.parametrize("size", ["abc", "0", "-3", "9" * 5000])
def test_bad_pool_size_is_a_clear_error(tmp_path: Path, size: str) -> None:
    path = write(
        tmp_path,
        "pg.axon",
        "memory P { store: persistent backend: pgvector "
        'location: "postgresql://u@127.0.0.1:1/d" }\n'
        'remember("x") -> P\n',
    )
    result = axon("run", str(path), AXON_PG_POOL_SIZE=size)
    assert result.returncode == 3, result.stderr
    assert_one_clear_line(result.stderr)
    assert result.stderr.startswith(f"{path}:1:1: error: cannot open memory 'P': AXON_PG_POOL_SIZE")
    assert "must be a whole number of connections of at least 1" in result.stderr
    assert len(result.stderr) < 400  # a 5,000-digit value is not echoed whole


@pytest.mark.parametrize("as_json", [False, True])
def test_records_of_what_ran_are_printed_before_a_runtime_error(
    tmp_path: Path, as_json: bool
) -> None:
    path = write(
        tmp_path,
        "p.axon",
        PROGRAM + f'let v = "{TOO_BIG}"\nremember(v) -> N\nremember("never") -> N\n',
    )
    trace = tmp_path / "t.json"
    args = ["run", str(path), "--memory-dir", str(tmp_path), "--trace", str(trace)]
    result = axon(*args, *(["--json"] if as_json else []))
    assert result.returncode == 3
    assert result.stderr.startswith(f"{path}:5:1: error: Value is too large to store")
    lines = result.stdout.splitlines()
    if as_json:
        records = [json.loads(line) for line in lines]
        assert [(r["op"], r["value"], r["line"]) for r in records] == [
            ("remember", "first", 2),
            ("remember", "second", 3),
        ]
    else:
        assert len(lines) == 2
        assert lines[0].startswith("remembered 'first_") and lines[0].endswith("(line 2)")
        assert lines[1].startswith("remembered 'second_") and lines[1].endswith("(line 3)")
    assert json.loads(trace.read_text())["events"]  # the trace of what ran is written too


def test_run_prints_warnings_like_check(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "w.axon",
        "memory S { store: session backend: sqlite }\n",
    )
    checked = axon("check", str(path))
    ran = axon("run", str(path), "--memory-dir", str(tmp_path))
    assert checked.returncode == 0 and ran.returncode == 0, ran.stderr
    assert "warning" in checked.stderr and checked.stderr.startswith(f"{path}:1:")
    assert ran.stderr == checked.stderr  # file name, position and caret alike


def test_empty_env_location_says_empty(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "e.axon",
        'memory M { store: persistent backend: pgvector location: "env:AXON_EMPTY_DSN" }\n'
        'remember("x") -> M\n',
    )
    result = axon("run", str(path), "--memory-dir", str(tmp_path), AXON_EMPTY_DSN="")
    assert result.returncode == 3
    assert "environment variable AXON_EMPTY_DSN, which is empty" in result.stderr


def test_a_password_in_a_location_is_never_printed(tmp_path: Path) -> None:
    secret = "hunter2-do-not-print"
    path = write(
        tmp_path,
        "pw.axon",
        "memory M { store: persistent backend: pgvector "
        f'location: "postgresql://bob:{secret}@127.0.0.1:1/db" }}\n'
        'remember("x") -> M\n',
    )
    trace = tmp_path / "t.json"
    ran = axon("run", str(path), "--trace", str(trace), "--memory-dir", str(tmp_path))
    assert ran.returncode == 3 and "cannot open memory 'M'" in ran.stderr
    assert "bob:***@127.0.0.1" in ran.stderr  # the echoed source line, redacted
    dumped = axon("check", "--dump", "ir", str(path))
    assert dumped.returncode == 0 and "postgresql://bob:***@127.0.0.1:1/db" in dumped.stdout
    typo = write(tmp_path, "typo.axon", path.read_text().replace("store:", "stor:"))
    checked = axon("check", str(typo))
    assert checked.returncode == 1
    for output in (ran.stdout, ran.stderr, trace.read_text(), dumped.stdout, checked.stderr):
        assert secret not in output


def test_a_huge_source_line_is_echoed_around_the_caret(tmp_path: Path) -> None:
    path = write(tmp_path, "long.axon", "let x = " + "1 + " * 250_000 + "\n")
    result = axon("check", str(path))
    assert result.returncode == 1
    assert_one_clear_line(result.stderr)
    assert len(result.stderr) < 1000, len(result.stderr)
    echoed = result.stderr.splitlines()[1]
    assert "..." in echoed and len(echoed) <= 135


def test_library_loggers_are_silent_without_verbose(tmp_path: Path) -> None:
    """psycopg_pool logs through `logging`: without -v none of it reaches stderr."""
    code = (
        "import logging, sys\n"
        "from axon.cli_output import configure_logging\n"
        "configure_logging(sys.argv[1] == 'v')\n"
        "logging.getLogger('psycopg.pool').warning('error connecting in pool-1')\n"
    )
    quiet = subprocess.run(
        [sys.executable, "-c", code, "q"], capture_output=True, text=True, timeout=60
    )
    loud = subprocess.run(
        [sys.executable, "-c", code, "v"], capture_output=True, text=True, timeout=60
    )
    assert quiet.stderr == ""
    assert "error connecting in pool-1" in loud.stderr


def test_a_file_that_is_not_utf8_names_the_line_and_shows_it(tmp_path: Path) -> None:
    program = tmp_path / "latin1.axon"
    program.write_bytes(b'memory N { store: session }\nremember("caf\xe9") -> N\n')
    for command in ("check", "run"):
        result = axon(command, str(program))
        assert result.returncode == 1
        assert result.stderr.splitlines() == [
            f"{program}:2:14: error: not UTF-8 text (invalid continuation byte: byte 0xe9 at "
            "offset 41)",
            '   2 | remember("caf\ufffd") -> N',
            "     |              ^",
        ]
