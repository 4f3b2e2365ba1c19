"""The interactive loop driven through prompt_toolkit's pipe input and a dummy output."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from prompt_toolkit.history import FileHistory
from prompt_toolkit.input import PipeInput
from prompt_toolkit.output import DummyOutput

from axon.repl.prompt import (
    HISTORY_ENV,
    confirm_with,
    history_path,
    make_prompt_session,
    open_history,
    run_interactive,
)
from tests.repl.conftest import CTRL_C, CTRL_D, ENTER, Repl, run_main


def drive(repl: Repl, pipe: PipeInput, keys: str, history: FileHistory | None = None) -> int:
    """Type `keys` (ending with Ctrl-D) into the interactive loop; returns its exit code."""
    prompt_session = make_prompt_session(
        repl.console, history=history, input=pipe, output=DummyOutput()
    )
    repl.console.confirm = confirm_with(prompt_session)
    pipe.send_text(keys)
    return run_interactive(repl.console, prompt_session)


def test_multi_line_input_continues_until_the_block_closes(repl: Repl, pipe: PipeInput) -> None:
    keys = (
        "memory Notes {" + ENTER
        + "store: session" + ENTER
        + "retrieval: keyword" + ENTER
        + "}" + ENTER
        + 'remember("tea is brewed at 80 degrees")' + ENTER  # continues: '->' is missing
        + "-> Notes" + ENTER
        + 'recall("tea") from Notes' + ENTER
        + CTRL_D
    )
    assert drive(repl, pipe, keys) == 0
    out, err = repl.take()
    assert err == ""
    assert out.splitlines()[0] == "memory Notes: session, in_memory, keyword, decay none"
    assert "remembered 'tea_is_brewed_at_80_degrees" in out
    assert 'recall "tea" from Notes: 1 result (keyword)' in out
    # three inputs, each executed once: the continuation lines were not separate inputs
    assert repl.console.inputs == 3
    assert repl.session.memory_decls["Notes"].retrieval == "keyword"


def test_an_error_then_recovery(repl: Repl, pipe: PipeInput) -> None:
    keys = (
        "memory Notes {}" + ENTER
        + 'rememer("x") -> Notes' + ENTER
        + 'remember("x") -> Notes' + ENTER
        + CTRL_D
    )
    drive(repl, pipe, keys)
    out, err = repl.take()
    assert err.splitlines() == [
        "<repl:2>:1:1: error: unknown keyword 'rememer' (did you mean 'remember'?)",
        '   1 | rememer("x") -> Notes',
        "     | ^~~~~~~",
    ]
    assert "remembered 'x_" in out
    assert repl.session.describe_memories()[0]["entries"] == 1


def test_an_empty_line_ends_an_unfinished_input_with_its_error(
    repl: Repl, pipe: PipeInput
) -> None:
    keys = "memory Notes {" + ENTER + "store: session" + ENTER + ENTER + ".memories" + ENTER
    drive(repl, pipe, keys + CTRL_D)
    out, err = repl.take()
    assert err.startswith("<repl:1>:2:")
    assert "unexpected end of input" in err
    assert "no memories declared yet" in out


def test_ctrl_c_cancels_the_current_input(repl: Repl, pipe: PipeInput) -> None:
    keys = "memory Lost {" + ENTER + "store: session" + CTRL_C + "memory Kept {}" + ENTER + CTRL_D
    drive(repl, pipe, keys)
    assert repl.session.memory_names() == ["Kept"]
    assert repl.take()[1] == ""


def test_quit_leaves_and_later_input_is_not_read(repl: Repl, pipe: PipeInput) -> None:
    drive(repl, pipe, ".quit" + ENTER + "memory Never {}" + ENTER + CTRL_D)
    assert repl.console.done
    assert repl.session.memory_names() == []


def test_clear_asks_for_confirmation_at_the_terminal(repl: Repl, pipe: PipeInput) -> None:
    keys = (
        "memory Notes {}" + ENTER
        + 'remember("a") -> Notes' + ENTER
        + ".clear Notes" + ENTER + "n" + ENTER
        + ".clear Notes" + ENTER + "y" + ENTER
        + CTRL_D
    )
    drive(repl, pipe, keys)
    out, _ = repl.take()
    assert "nothing cleared" in out
    assert "cleared Notes: 1 entry removed" in out


@pytest.mark.parametrize("leave", [CTRL_D, ".quit" + ENTER, ".exit" + ENTER])
def test_leaving_closes_every_backend(
    tmp_path: Path, pipe: PipeInput, monkeypatch: pytest.MonkeyPatch, leave: str
) -> None:
    monkeypatch.setenv("AXON_EMBEDDER", "hashing")
    monkeypatch.setenv(HISTORY_ENV, str(tmp_path / "hist"))
    memory_dir = tmp_path / "mem"
    keys = (
        "memory Kb { store: persistent, backend: sqlite }" + ENTER
        + 'remember("kept") -> Kb' + ENTER
        + leave
    )
    code, out, err = run_main(pipe, keys, memory_dir)
    assert (code, err) == (0, "")
    assert "remembered 'kept" in out
    # SQLite removes the write-ahead log when the last connection closes
    assert sorted(p.name for p in memory_dir.iterdir()) == ["memory.db"]
    with sqlite3.connect(memory_dir / "memory.db") as db:
        assert db.execute("SELECT count(*) FROM entries").fetchone()[0] == 1


def test_interactive_main_preloads_a_file(
    tmp_path: Path, pipe: PipeInput, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AXON_EMBEDDER", "hashing")
    monkeypatch.setenv(HISTORY_ENV, str(tmp_path / "hist"))
    program = tmp_path / "p.axon"
    program.write_text('memory Kb {}\nremember("skipped") -> Kb\n')
    code, out, err = run_main(pipe, ".show Kb" + ENTER + CTRL_D, tmp_path / "mem", program)
    assert (code, err) == (0, "")
    assert out.startswith("AXON ")
    assert "skipped 1 top-level statement (line 2)" in out
    assert "Kb is empty" in out


def test_history_is_saved_to_the_file_and_read_back(
    repl: Repl, pipe: PipeInput, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "hist"
    monkeypatch.setenv(HISTORY_ENV, str(path))
    assert history_path() == path
    history = open_history()
    assert isinstance(history, FileHistory)
    keys = "memory Notes {" + ENTER + "}" + ENTER + ".memories" + ENTER + CTRL_D
    drive(repl, pipe, keys, history)
    saved = list(FileHistory(str(path)).load_history_strings())
    assert saved == [".memories", "memory Notes {\n}"]  # newest first, whole inputs


def test_unwritable_history_falls_back_to_memory(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    history = open_history(blocker / "hist")  # a path under a regular file
    assert not isinstance(history, FileHistory)


def test_what_is_typed_is_highlighted_by_the_axon_lexer(repl: Repl, pipe: PipeInput) -> None:
    from prompt_toolkit.document import Document
    from prompt_toolkit.lexers import PygmentsLexer

    from axon.highlight import AxonLexer

    session = make_prompt_session(repl.console, input=pipe, output=DummyOutput())
    assert isinstance(session.lexer, PygmentsLexer)
    assert issubclass(session.lexer.pygments_lexer_cls, AxonLexer)
    line = session.lexer.lex_document(Document("memory Notes { store: session }"))(0)
    styles = {text: style for style, text, *_ in line}
    assert "keyword" in styles["memory"] and "attribute" in styles["store"]
    # a dot command is not AXON: its path is plain text, not error tokens
    line = session.lexer.lex_document(Document(".load ~/notes/my-file.axon"))(0)
    assert [text for _, text, *_ in line] == [".load", " ~/notes/my-file.axon"]
    assert all("error" not in style for style, *_ in line)
