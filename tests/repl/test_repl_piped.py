"""`axon repl` as a process with piped stdin: scriptable, exit codes, persistence across runs."""

from __future__ import annotations

from pathlib import Path

from tests.repl.conftest import run_axon_repl


def test_the_one_liner_from_the_docs(tmp_path: Path) -> None:
    script = 'memory M {}\nremember("x") -> M\nrecall("x") from M\n'
    result = run_axon_repl(["--memory-dir", str(tmp_path / "mem")], script, cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, "")
    lines = result.stdout.splitlines()
    assert lines[0] == "memory M: session, in_memory, hybrid, decay none"
    assert lines[1].startswith("remembered 'x_") and lines[1].endswith("' in M")
    assert lines[2] == 'recall "x" from M: 1 result (hybrid)'
    rank, key, score = lines[5].split()[:3]
    assert (rank, key) == ("1", lines[1].split("'")[1])
    assert len(score) == 5 and 0.5 < float(score) <= 1.0  # absolute, not pool-scaled to 1
    assert not (tmp_path / "hist").exists()  # piped mode keeps no history


def test_errors_are_reported_with_stdin_lines_and_the_script_goes_on(tmp_path: Path) -> None:
    script = (
        "memory Notes {\n"
        "  store: session\n"
        "}\n"
        'remember("kept") -> Note\n'
        'remember("kept") -> Notes\n'
        ".shwo Notes\n"
        'recall("kept") from Notes\n'
    )
    result = run_axon_repl(["--memory-dir", str(tmp_path)], script, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "<stdin>:4:21: error: Undefined memory 'Note' (did you mean 'Notes'?)",
        '   4 | remember("kept") -> Note',
        "     | " + " " * 20 + "^~~~",
        "error: unknown command '.shwo' (did you mean '.show'?); .help lists them",
    ]
    assert 'recall "kept" from Notes: 1 result' in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_input_ending_inside_a_block_fails(tmp_path: Path) -> None:
    script = "memory M {\n  store: session\n"
    result = run_axon_repl(["--memory-dir", str(tmp_path)], script, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("<stdin>:2:17: error: unexpected end of input")


def test_a_persistent_memory_survives_to_the_next_session(tmp_path: Path) -> None:
    memory_dir = tmp_path / "mem"
    declare = "memory Journal {\n  store: persistent\n  backend: sqlite\n  retrieval: keyword\n}\n"
    first = run_axon_repl(
        ["--memory-dir", str(memory_dir)],
        declare + 'remember("We adopted a cat named Miso") -> Journal with { key: "miso" }\n',
        cwd=tmp_path,
    )
    assert (first.returncode, first.stderr) == (0, ""), first
    assert "remembered 'miso' in Journal" in first.stdout
    second = run_axon_repl(
        ["--memory-dir", str(memory_dir)],
        declare + ".memories\nrecall(\"cat\") from Journal\n.show Journal\n",
        cwd=tmp_path,
    )
    assert (second.returncode, second.stderr) == (0, ""), second
    lines = second.stdout.splitlines()
    assert lines[0] == "memory Journal: persistent, sqlite, keyword, decay none, 1 entry"
    assert lines[3].split() == ["Journal", "persistent", "sqlite", "keyword", "none", "5", "1"]
    recall_at = lines.index('recall "cat" from Journal: 1 result (keyword)')
    assert lines[recall_at + 3].split()[:2] == ["1", "miso"]
    assert "We adopted a cat named Miso" in lines[recall_at + 3]
    assert "Journal: 1 of 1 entry, newest first" in lines


def test_clear_in_piped_mode_asks_nothing(tmp_path: Path) -> None:
    memory_dir = tmp_path / "mem"
    declare = "memory Kb { store: persistent }\n"
    script = declare + 'remember("a") -> Kb\nremember("b") -> Kb\n.clear Kb\n'
    result = run_axon_repl(["--memory-dir", str(memory_dir)], script, cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines()[-1] == "cleared Kb: 2 entries removed"
    again = run_axon_repl(["--memory-dir", str(memory_dir)], declare, cwd=tmp_path)
    assert again.stdout == "memory Kb: persistent, sqlite, hybrid, decay none, 0 entries\n"


def test_file_argument_preloads_declarations_then_reads_stdin(tmp_path: Path) -> None:
    program = tmp_path / "prog.axon"
    program.write_text(
        "memory Kb { store: session, retrieval: keyword }\n"
        "flow Learn(fact: String) {\n  remember(fact) -> Kb\n}\n"
        'run Learn("never run at preload")\n'
    )
    stdin = 'run Learn("honey never spoils")\nrecall("honey") from Kb\nrecall("preload") from Kb\n'
    result = run_axon_repl(["--memory-dir", str(tmp_path), str(program)], stdin, cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, ""), result
    out = result.stdout
    assert "skipped 1 top-level statement (line 5)" in out
    assert "remembered 'fact' in Kb (in flow Learn)" in out
    assert 'recall "honey" from Kb: 1 result (keyword)' in out
    assert 'recall "preload" from Kb: 0 results (keyword)' in out


def test_a_missing_file_exits_1_before_starting(tmp_path: Path) -> None:
    result = run_axon_repl(["--memory-dir", str(tmp_path), "nope.axon"], "", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == "nope.axon: error: no such file\n"


def test_default_hybrid_retrieval_with_the_real_model(tmp_path: Path) -> None:
    """The default embedder (a local model) finds an entry by meaning, not by shared words.

    The test embedder ranks the dog last here; only a real model puts it first.
    """
    script = (
        "memory Kb { store: session }\n"
        'remember("The dog chased the ball across the park") -> Kb with { key: "dog" }\n'
        'remember("Quarterly taxes are due in April") -> Kb with { key: "taxes" }\n'
        'remember("Remember to buy milk and eggs") -> Kb with { key: "shopping" }\n'
        'remember("The meeting moved to Thursday afternoon") -> Kb with { key: "meeting" }\n'
        'recall("a puppy playing fetch") from Kb with { top_k: 2 }\n'
    )
    result = run_axon_repl(
        ["--memory-dir", str(tmp_path)], script, cwd=tmp_path, env={"AXON_EMBEDDER": None}
    )
    # (stderr may carry a one-time notice from the model runtime; errors fail the exit code)
    assert result.returncode == 0, result
    lines = result.stdout.splitlines()
    # Only the dog is related at all: the others score 0 by meaning and share no word,
    # so they are not results (a score of 0 is a miss), though top_k allowed two.
    at = lines.index('recall "a puppy playing fetch" from Kb: 1 result (hybrid)')
    assert lines[at + 3].split()[:2] == ["1", "dog"]
