"""No silent waits for vectors: `axon memory import/embed/search`, `axon run` and the REPL's
`.import` say what they wait for, `--embed-wait` bounds it, and the first Ctrl-C stops
`axon memory embed` and `axon run` cleanly (real subprocesses, real SQLite files, SIGINT).

The embedder is the deterministic `hashing` one made slow (`SLOW_AXON`: a sleep per text,
like a real model's cost), so an interrupt lands while vectors are being computed; one
test runs the real model."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.signals import sigint_at_default

ROOT = Path(__file__).resolve().parents[2]

SLOW_AXON = """\
import os, sys, time
from axon.memory.embeddings.hashing import HashingEmbedder
per_text = float(os.environ["SLOW_EMBED_SECONDS"])
plain = HashingEmbedder.embed_passages
def slow(self, texts):
    time.sleep(per_text * len(texts))
    return plain(self, texts)
HashingEmbedder.embed_passages = slow
from axon.cli import main
sys.argv[0] = "axon"
main()
"""

ENTRIES = 3000
PROGRAM = """\
memory Notes { store: persistent backend: sqlite retrieval: hybrid }
recall "note number 7" from Notes
"""


def export_file(path: Path, count: int = ENTRIES) -> Path:
    lines = [json.dumps({"format": "axon-memory", "version": 1})]
    lines += [
        json.dumps(
            {
                "memory": "Notes",
                "key": f"k{i}",
                "value": f"note number {i} about things",
                "metadata": {},
                "created_at": 1_700_000_000 + i,
                "expires_at": None,
            }
        )
        for i in range(count)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def command(*args: str, slow: float = 0.0) -> list[str]:
    if slow:
        return [sys.executable, "-c", SLOW_AXON, *args]
    return [sys.executable, "-m", "axon.cli", *args]


def environment(slow: float = 0.0, embedder: str = "hashing") -> dict[str, str]:
    return {**os.environ, "AXON_EMBEDDER": embedder, "SLOW_EMBED_SECONDS": str(slow)}


def axon(
    *args: str, slow: float = 0.0, embedder: str = "hashing"
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command(*args, slow=slow),
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=environment(slow, embedder),
        timeout=300,
    )


def imported(tmp_path: Path, count: int = ENTRIES) -> Path:
    store = tmp_path / "mem"
    done = axon(
        "memory",
        "import",
        str(export_file(tmp_path / "notes.jsonl", count)),
        "--memory-dir",
        str(store),
    )
    assert done.returncode == 0, done.stderr
    return store


def vectors(store: Path) -> list[np.ndarray]:
    with sqlite3.connect(store / "memory.db") as conn:
        rows = conn.execute("SELECT dim, vector FROM vectors").fetchall()
    return [np.frombuffer(blob, dtype=np.float32)[:dim] for dim, blob in rows]


class Terminal:
    """A command whose stderr is a terminal (a pty), so it shows its progress bar. A
    thread reads the terminal all along, so a chatty child never blocks on it."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        with sigint_at_default():  # the Ctrl-C these tests send must reach it
            self.proc = subprocess.Popen(
                args,
                stdout=subprocess.PIPE,
                stderr=slave,
                stdin=subprocess.DEVNULL,
                cwd=ROOT,
                env=env,
            )
        os.close(slave)
        self.chunks: list[bytes] = []
        self.reader = threading.Thread(target=self._read_all, daemon=True)
        self.reader.start()

    def _read_all(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # the child closed its end
                return
            if not chunk:
                return
            self.chunks.append(chunk)

    @property
    def seen(self) -> str:
        return b"".join(self.chunks).decode("utf-8", "replace")

    def wait_for(self, text: str, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.seen:
            assert self.proc.poll() is None, f"ended before showing {text!r}: {self.seen!r}"
            assert time.monotonic() < deadline, f"never showed {text!r}: {self.seen!r}"
            time.sleep(0.05)

    def interrupt(self) -> tuple[int, str, str, float]:
        """SIGINT (the first Ctrl-C); the exit code, stdout, stderr and seconds it took."""
        began = time.monotonic()
        self.proc.send_signal(signal.SIGINT)
        assert self.proc.stdout is not None
        stdout = self.proc.stdout.read().decode()
        code = self.proc.wait(timeout=120)
        took = time.monotonic() - began
        self.reader.join(timeout=10)
        os.close(self.master)
        return code, stdout, self.seen, took


def last_line(text: str) -> str:
    """The last line a terminal shows (the progress bar's cursor moves taken out)."""
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
    return plain.replace("\r", "\n").strip().splitlines()[-1]


# ---------------------------------------------------------------------- Ctrl-C


def test_the_first_ctrl_c_stops_axon_memory_embed_and_embed_finishes_later(
    tmp_path: Path,
) -> None:
    store = imported(tmp_path)
    term = Terminal(
        command("memory", "embed", "Notes", "--memory-dir", str(store), slow=0.004),
        environment(0.004),
    )
    term.wait_for("embedding Notes")
    time.sleep(1.0)  # some batches saved, most not (3,000 texts take 12 s)
    code, stdout, stderr, took = term.interrupt()
    assert code == 130, stderr
    assert took < 5, f"the first Ctrl-C took {took:.1f} s to stop it"
    assert "Traceback" not in stderr and stdout == ""
    assert last_line(stderr) == (
        f"interrupted: the vectors computed so far are saved; axon memory embed Notes "
        f"--memory-dir {store} computes the rest"
    )
    saved = vectors(store)
    assert 0 < len(saved) < ENTRIES
    assert all(v.shape == (64,) and abs(float(np.linalg.norm(v)) - 1) < 1e-3 for v in saved)
    again = axon("memory", "embed", "Notes", "--memory-dir", str(store), "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["embedded"] == ENTRIES - len(saved)
    assert len(vectors(store)) == ENTRIES


def test_the_first_ctrl_c_stops_axon_run_while_its_recall_waits_for_vectors(
    tmp_path: Path,
) -> None:
    store = imported(tmp_path)
    program = tmp_path / "p.axon"
    program.write_text(PROGRAM, encoding="utf-8")
    term = Terminal(
        command("run", str(program), "--memory-dir", str(store), slow=0.004), environment(0.004)
    )
    term.wait_for("computing 3,000 vectors of Notes")  # the recall's wait, shown
    time.sleep(1.0)
    code, stdout, stderr, took = term.interrupt()
    assert code == 130, stderr
    assert took < 5, f"the first Ctrl-C took {took:.1f} s to stop it"
    assert "Traceback" not in stderr and stdout == ""
    assert last_line(stderr) == "interrupted"
    saved = len(vectors(store))
    assert 0 < saved < ENTRIES
    again = axon("memory", "embed", "Notes", "--memory-dir", str(store), "--json")
    assert json.loads(again.stdout)["embedded"] == ENTRIES - saved


def test_the_first_ctrl_c_stops_axon_memory_embed_with_the_real_model(tmp_path: Path) -> None:
    from axon.memory.embeddings.default import available_models

    models = available_models()
    if not models:
        pytest.skip("no real embedding model can run on this machine")
    store = imported(tmp_path, 600)
    term = Terminal(
        command("memory", "embed", "Notes", "--memory-dir", str(store)),
        environment(embedder=models[-1]),
    )
    term.wait_for("embedding Notes")
    deadline = time.monotonic() + 60
    while not vectors(store):  # the model loaded and a first batch is saved
        assert time.monotonic() < deadline and term.proc.poll() is None
        time.sleep(0.1)
    code, _, stderr, took = term.interrupt()
    assert code == 130 and "Traceback" not in stderr, stderr
    assert took < 10
    saved = vectors(store)
    assert 0 < len(saved) < 600
    assert all(abs(float(np.linalg.norm(v)) - 1) < 1e-2 for v in saved)


# ---------------------------------------------------------------------- --embed-wait


def test_axon_run_embed_wait_bounds_the_recalls_wait_and_says_what_was_pending(
    tmp_path: Path,
) -> None:
    store = imported(tmp_path)
    program = tmp_path / "p.axon"
    program.write_text(PROGRAM, encoding="utf-8")
    where = ["--memory-dir", str(store)]
    hurried = axon("run", str(program), *where, "--embed-wait", "0", "--json")
    assert hurried.returncode == 0, hurried.stderr
    record = json.loads(hurried.stdout.splitlines()[-1])
    assert record["pending_vectors"] == ENTRIES  # none was computed before the recall
    assert record["results"][0]["key"] == "k7"  # found by keyword all the same
    text = axon("run", str(program), *where, "--embed-wait", "0")  # (the first run saved some)
    assert re.search(
        r"\(\d[\d,]* entries had no vector yet \(not compared by meaning; ", text.stdout
    )
    patient = axon("run", str(program), *where, "--embed-wait", "all", "--json")
    assert "pending_vectors" not in json.loads(patient.stdout.splitlines()[-1])
    assert len(vectors(store)) == ENTRIES
    for bad in ("soon", "-1", "nan", "inf"):
        wrong = axon("run", str(program), *where, "--embed-wait", bad)
        assert wrong.returncode == 2
        assert wrong.stderr.strip() == (
            f"error: --embed-wait takes a number of seconds (0 or more) or 'all', not '{bad}'"
        )


def test_axon_memory_search_embed_wait(tmp_path: Path) -> None:
    store = imported(tmp_path)
    where = ["--memory-dir", str(store)]
    search = ["memory", "search", "Notes", "note number 7", "--retrieval", "hybrid", *where]
    hurried = axon(*search, "--embed-wait", "0", "--json")
    assert hurried.returncode == 0, hurried.stderr
    found = json.loads(hurried.stdout)
    assert found["pending_vectors"] == ENTRIES and found["results"][0]["key"] == "k7"
    assert hurried.stderr == ""  # a pipe: nothing for a wait it did not make
    text = axon(*search, "--embed-wait", "0")
    assert re.search(r"\d[\d,]* entries had no vector yet \(not compared by meaning; ", text.stdout)
    patient = axon(*search, "--json")  # all, by default
    assert "pending_vectors" not in json.loads(patient.stdout)
    assert len(vectors(store)) == ENTRIES
    wrong = axon(*search, "--embed-wait", "later")
    assert wrong.returncode == 2 and "--embed-wait takes" in wrong.stderr


def test_a_search_that_waits_shows_progress_on_a_terminal_and_one_line_on_a_pipe(
    tmp_path: Path,
) -> None:
    store = imported(tmp_path, 1000)
    search = [
        "memory",
        "search",
        "Notes",
        "note",
        "--retrieval",
        "semantic",
        "--memory-dir",
        str(store),
    ]
    term = Terminal(command(*search, slow=0.003), environment(0.003))
    term.wait_for("computing 1,000 vectors of Notes")
    assert term.proc.wait(timeout=60) == 0
    other = tmp_path / "other"
    other.mkdir()
    piped = imported(other, 1000)
    slow = axon(
        "memory",
        "search",
        "Notes",
        "note",
        "--retrieval",
        "semantic",
        "--memory-dir",
        str(piped),
        slow=0.003,
    )
    assert slow.returncode == 0, slow.stderr
    assert slow.stderr == (
        "computing 1,000 vectors of Notes before the recall "
        "(--embed-wait SECONDS bounds the wait)\n"
    )


# ---------------------------------------------------------------------- after an import


def test_axon_memory_import_says_how_many_vectors_are_pending(tmp_path: Path) -> None:
    store = tmp_path / "mem"
    source = export_file(tmp_path / "notes.jsonl", 40)
    done = axon("memory", "import", str(source), "--memory-dir", str(store))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1:] == [
        "40 entries of Notes have no vector yet: the first semantic or hybrid recall "
        f"computes them (showing progress), or now: axon memory embed Notes --memory-dir {store}"
    ]
    again = axon("memory", "import", str(source), "--memory-dir", str(store), "--json")
    assert json.loads(again.stdout)["vectors_pending"] == 40
    assert axon("memory", "embed", "Notes", "--memory-dir", str(store)).returncode == 0
    after = axon("memory", "import", str(source), "--memory-dir", str(store), "--json")
    assert json.loads(after.stdout)["vectors_pending"] == 0
    keyword_only = axon(
        "memory", "import", str(source), "--memory-dir", str(tmp_path / "k"), embedder="none"
    )
    assert len(keyword_only.stdout.splitlines()) == 1  # no model: no vectors to speak of


def test_the_repls_import_computes_vectors_in_the_background(tmp_path: Path) -> None:
    from axon.repl import main

    source = export_file(tmp_path / "notes.jsonl", 50)
    stdout, stderr = io.StringIO(), io.StringIO()
    script = (
        "memory Notes { store: persistent backend: sqlite retrieval: hybrid }\n"
        f".import {source}\n"
        'recall "note number 7" from Notes\n'
    )
    code = main(
        memory_dir=tmp_path / "mem",
        stdin=io.StringIO(script),
        stdout=stdout,
        stderr=stderr,
        interactive=False,
    )
    assert code == 0, stderr.getvalue()
    lines = stdout.getvalue().splitlines()
    assert (
        "computing 50 vectors of Notes in the background (a semantic or hybrid recall waits "
        "for them, showing progress)"
    ) in lines
    assert len(vectors(tmp_path / "mem")) == 50
