"""The REPL against careless and hostile input: secrets, odd files, timestamps past year 9999."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from prompt_toolkit.history import FileHistory
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output import DummyOutput

from axon.repl.prompt import make_prompt_session, open_history, run_interactive
from tests.repl.conftest import Repl, run_axon_repl

ENTER = "\r"
CTRL_D = "\x04"
SECRET = "hunter2-do-not-print"


@pytest.fixture
def pipe() -> Iterator[PipeInput]:
    with create_pipe_input() as pipe_input:
        yield pipe_input


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_history_file_is_created_private(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        path = tmp_path / "hist"
        assert isinstance(open_history(path), FileHistory)
        assert mode(path) == 0o600
    finally:
        os.umask(old)


def test_an_existing_history_file_is_made_private_and_scrubbed(tmp_path: Path) -> None:
    path = tmp_path / "hist"
    path.write_text(f'\n# 2024-01-01\n+memory P {{ location: "postgresql://bob:{SECRET}@h/db" }}\n')
    path.chmod(0o644)
    history = open_history(path)
    assert mode(path) == 0o600
    assert SECRET not in path.read_text()
    assert list(history.load_history_strings()) == [
        'memory P { location: "postgresql://bob:***@h/db" }'
    ]


def test_typed_passwords_are_not_saved_in_history(
    repl: Repl, pipe: PipeInput, tmp_path: Path
) -> None:
    path = tmp_path / "hist"
    history = open_history(path)
    prompt_session = make_prompt_session(
        repl.console, history=history, input=pipe, output=DummyOutput()
    )
    typed = f'let dsn = "host=db user=bob password={SECRET}"'
    pipe.send_text(typed + ENTER + f'let uri = "postgresql://bob:{SECRET}@db/x"' + ENTER + CTRL_D)
    assert run_interactive(repl.console, prompt_session) == 0
    saved = path.read_text()
    assert SECRET not in saved
    assert "password=***" in saved and "postgresql://bob:***@db/x" in saved
    assert repl.session.frame.values["dsn"] == f"host=db user=bob password={SECRET}"  # as typed


@pytest.mark.postgres
def test_memories_table_warnings_and_errors_never_show_the_password(tmp_path: Path) -> None:
    dsn = os.environ.get("AXON_PG_DSN")
    if not dsn or "://" not in dsn or "@" not in dsn:
        pytest.skip("needs AXON_PG_DSN as a postgresql:// URI")
    head, rest = dsn.split("://", 1)
    userinfo, host = rest.rsplit("@", 1)
    user = userinfo.split(":", 1)[0]
    with_secret = f"{head}://{user}:{SECRET}@{host}"  # a trust-auth server ignores it
    text = (
        f'memory P {{ store: session backend: pgvector location: "{with_secret}" }}\n'
        ".memories\n"
        "memory L { store: session backend: pgvector location: "
        f'"postgresql://bob:{SECRET}@127.0.0.1:1/db" }}\n'
    )
    result = run_axon_repl(["--memory-dir", str(tmp_path)], text, cwd=tmp_path)
    assert SECRET not in result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert f"{head}://{user}:***@" in result.stdout  # the .memories location column
    assert f'location: "{head}://{user}:***@' in result.stderr  # the session warning's echo
    assert "cannot open memory 'L'" in result.stderr
    assert 'location: "postgresql://bob:***@127.0.0.1:1/db"' in result.stderr


def test_memories_table_redacts_a_literal_dsn(repl: Repl) -> None:
    from axon import render

    table = render.memories_table(
        [
            {
                "name": "P",
                "store": "persistent",
                "backend": "pgvector",
                "retrieval": "hybrid",
                "decay": "none",
                "top_k": 5,
                "entries": 0,
                "location": f"postgresql://bob:{SECRET}@db:5432/app",
            }
        ]
    )
    assert SECRET not in table and "postgresql://bob:***@db:" in table


def test_far_future_expiry_does_not_end_the_repl(repl: Repl) -> None:
    assert repl.run("memory D { store: session decay: 999999999999d }")
    assert repl.run('remember("x") -> D')
    assert repl.run(".show D")
    out, err = repl.take()
    assert err == ""
    assert "expires in the far future" in out and "999999999999d" in out


def test_load_of_a_file_that_is_not_axon_echoes_none_of_it(repl: Repl, tmp_path: Path) -> None:
    secret_file = tmp_path / ".pgpass"
    secret_file.write_text(f"db:5432:app:bob:{SECRET}\n")
    for command in (f".load {secret_file}",):
        assert not repl.run(command)
        out, err = repl.take()
        assert SECRET not in out + err
        assert err == (
            f"{secret_file}:1:1: error: not an AXON program (a syntax error at line 1, "
            "column 1; AXON programs are .axon files)\n"
        )
    program = tmp_path / "typo.axon"
    program.write_text("memory M { store persistent }\n")
    assert not repl.run(f".load {program}")
    _, err = repl.take()
    assert "expected ':' after field name 'store'" in err and "   1 | memory M" in err


def test_preloading_a_file_that_is_not_axon_echoes_none_of_it(tmp_path: Path) -> None:
    secret_file = tmp_path / "env"
    secret_file.write_text(f"PGPASSWORD {SECRET}\n")
    result = run_axon_repl(["--memory-dir", str(tmp_path), str(secret_file)], "", cwd=tmp_path)
    assert result.returncode == 1
    assert SECRET not in result.stdout + result.stderr
    assert "not an AXON program" in result.stderr


def test_execute_none_is_a_clear_type_error(repl: Repl) -> None:
    with pytest.raises(TypeError, match=r"^Session.execute: text must be a str, not NoneType$"):
        repl.session.execute(None)  # type: ignore[arg-type]


def test_a_file_that_is_not_utf8_names_the_line_and_shows_it(tmp_path: Path) -> None:
    # `axon repl FILE` and `.load FILE` said only "at byte 44", with no line or caret.
    program = tmp_path / "latin1.axon"
    program.write_bytes(b'memory N { store: session }\nremember("caf\xe9") -> N\n')
    shown = [
        f"{program}:2:14: error: not UTF-8 text (invalid continuation byte: byte 0xe9 at "
        "offset 41)",
        '   2 | remember("caf\ufffd") -> N',
        "     |              ^",
    ]
    preload = run_axon_repl(["--memory-dir", str(tmp_path), str(program)], "", cwd=tmp_path)
    assert preload.returncode == 1 and preload.stderr.splitlines() == shown
    load = run_axon_repl(["--memory-dir", str(tmp_path)], f".load {program}\n", cwd=tmp_path)
    assert load.stderr.splitlines() == shown


def test_show_counts_past_the_limit_or_not_ascii_are_usage_errors(repl: Repl) -> None:
    """`.show M 99999999999999999999` was an internal OverflowError from SQLite's LIMIT
    and `.show M ²` an internal ValueError ('²'.isdigit() is true, int('²') fails)."""
    assert repl.run("memory P { store: persistent backend: sqlite }")
    assert repl.run('remember("x") -> P')
    repl.take()
    for count in ["99999999999999999999", "1000001", "²", "١"]:
        assert not repl.run(f".show P {count}"), count
        _out, err = repl.take()
        assert "usage: .show NAME [N]" in err and "internal error" not in err, count
    assert not repl.run(".show P 1000001")
    assert "at most 1,000,000" in repl.take()[1]
    assert repl.run(".show P 1000000")
    assert "P: 1 of 1 entry" in repl.take()[0]


def test_a_nul_in_a_file_name_is_an_error_not_an_internal_one(repl: Repl) -> None:
    """`.load`, `.export` and `.import` of a name with a NUL (a garbled script) were an
    internal `ValueError: embedded null byte` from the operating system call."""
    assert repl.run("memory M {}")
    repl.take()
    for line in [".load a\x00b.axon", ".export M a\x00b", ".export a\x00b", ".import a\x00b"]:
        assert not repl.run(line), line
        _out, err = repl.take()
        assert "a file name cannot contain a NUL character" in err, line
        assert "internal error" not in err, line


STORED = "\x1b]0;pwned\x07\x1b[2J\x9b31m\x7f\u202eevil [bold]B[/bold] [link=http://x.example]L[/link]"
"""Stored text that retitles the window, clears the screen, sends an 8-bit CSI, turns the
text around and holds rich markup."""


def _unsafe(text: str) -> list[str]:
    import unicodedata

    return [
        c for c in text
        if (unicodedata.category(c) == "Cc" and c not in "\n\t") or c in "\u202e\u2066"
    ]


def test_stored_control_characters_are_shown_as_escapes_in_every_view(
    repl: Repl, tmp_path: Path
) -> None:
    """Recall tables and headings, `.show`, `.trace on`, forget lines and errors that
    echo stored text (an import naming a memory no program can declare) print control
    characters as `\\x1b`, `\\x9b`, `\\u202e`, and `[bold]` as text, never as markup."""
    repl.run("memory Notes { store: persistent backend: sqlite }")
    repl.session.memory("Notes").remember(
        STORED, key="k\x1b[2J", tags=[STORED], metadata={"m": STORED}
    )
    repl.take()
    views = [
        'recall("evil B") from Notes with { retrieval: keyword }',
        'recall("\\u{1b}]0;q [bold]x[/bold]") from Notes',
        ".show Notes",
        ".memories",
        ".stats Notes",
        ".trace on",
        'recall("evil") from Notes',
        ".trace off",
        'forget("k\\u{1b}[2J") from Notes',
    ]
    printed = ""
    for view in views:
        assert repl.run(view), view
        out, err = repl.take()
        assert _unsafe(out + err) == [], (view, out + err)
        printed += out
    assert "\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\x7f\\u202eevil [bold]B[/bold]" in printed
    assert 'recall "\\u001b]0;q [bold]x[/bold]" from Notes' in printed  # as text
    assert "trace: memory_read" in printed and "k\\x1b[2J" in printed
    export = tmp_path / "x.jsonl"
    repl.session.memory("Notes").remember(STORED, key="again")
    assert repl.run(f".export Notes {export}")
    export.write_text(export.read_text().replace('"Notes"', '"Bad\\u001b]0;name\\u0007"'))
    repl.take()
    assert not repl.run(f".import {export}")
    out, err = repl.take()
    assert _unsafe(out + err) == [] and "memory 'Bad\\x1b]0;name\\x07'" in err, err


def test_styled_output_reads_no_markup_in_stored_text(tmp_path: Path) -> None:
    """With colours on, rich styles the REPL's lines; stored text in them is escaped as
    text: `[bold]` shows, a raw ESC never does (only rich's own colour codes)."""
    import io

    from axon.repl.console import Console
    from tests.repl.conftest import make_session

    session = make_session(tmp_path / "mem")
    try:
        out, err = io.StringIO(), io.StringIO()
        console = Console(session, out, err, color=True, width=100)
        assert console.run_input("memory Notes { store: session }")
        session.memory("Notes").remember(STORED, key="k")
        assert console.run_input('recall("\\u{1b}]0;t\\u{7} [bold]x[/bold] [/]") from Notes')
        text = out.getvalue()
        assert 'recall "\\u001b]0;t\\u0007 [bold]x[/bold] [/]" from Notes' in text
        assert "\x1b]0;" not in text and "\x07" not in text and "\x9b" not in text
    finally:
        session.close()
