"""The REPL core without a terminal: inputs, records as tables, diagnostics, dot commands."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NoReturn

import pytest

from axon.repl.console import COMMANDS, declarations_only, needs_more, split_inputs
from tests.repl.conftest import Repl

NOTES = "memory Notes { store: session, retrieval: keyword }"


def caret_column(err: str, source_line: str) -> int:
    """The 1-based column of the caret under `source_line` in a rendered diagnostic."""
    lines = err.splitlines()
    for i, line in enumerate(lines):
        if line.endswith(source_line) and "|" in line:
            start = line.index(source_line)
            return lines[i + 1].index("^") - start + 1
    raise AssertionError(f"{source_line!r} not in {err!r}")


@pytest.mark.parametrize(
    ("text", "more"),
    [
        ("memory M {", True),
        ("memory M {\n  store: persistent", True),
        ("flow F() {\n  step S {", True),
        ('remember("x")', True),
        ('recall("x") from', True),
        ("/* a comment that goes on", True),
        ("memory M {}", False),
        ('recall("x") from M', False),
        ('"unterminated', False),
        ("memory M {} }", False),
        (".help", False),
        ("", False),
        ("   ", False),
    ],
)
def test_needs_more_only_when_the_parser_hit_the_end(text: str, more: bool) -> None:
    assert needs_more(text) is more


def test_split_inputs_accumulates_until_complete_and_keeps_stdin_lines() -> None:
    text = (
        "memory M {\n"
        "  store: session\n"
        "\n"
        "  retrieval: exact\n"
        "}\n"
        "\n"
        '.show M\n'
        'remember("a") -> M\n'
        'remember("b")\n'
        "  -> M\n"
        "memory Broken {\n"
    )
    assert list(split_inputs(text)) == [
        (1, "memory M {\n  store: session\n\n  retrieval: exact\n}"),
        (7, ".show M"),
        (8, 'remember("a") -> M'),
        (9, 'remember("b")\n  -> M'),
        (11, "memory Broken {"),
    ]


def test_remember_prints_key_and_recall_prints_a_ranked_table(repl: Repl) -> None:
    assert repl.run(NOTES)
    assert repl.take() == ("memory Notes: session, in_memory, keyword, decay none\n", "")
    long_value = "The quarterly report shows revenue growth " + "and more detail " * 20
    assert repl.run(f'remember("{long_value}") -> Notes with {{ key: "q3" }}')
    assert repl.run('remember("Cats sleep most of the day") -> Notes')
    out, err = repl.take()
    assert err == ""
    assert out.splitlines() == [
        "remembered 'q3' in Notes",
        "remembered 'cats_sleep_most_of_the_day_" + out.split("day_")[1].split("'")[0]
        + "' in Notes",
    ]
    assert repl.run('recall("quarterly revenue report") from Notes')
    out, err = repl.take()
    assert err == ""
    lines = out.splitlines()
    # not the cats entry: Notes is not linked, its context (the entry before it) is not read
    assert lines[0] == 'recall "quarterly revenue report" from Notes: 1 result (keyword)'
    assert re.split(r"\s{2,}", lines[1].strip()) == ["#", "key", "score", "value"]
    row = re.split(r"\s{2,}", lines[3].strip())
    assert row[:2] == ["1", "q3"]
    assert float(row[2]) >= 0.0
    assert row[3].startswith("The quarterly report shows revenue growth")
    assert row[3].endswith("…") and len(lines[3]) == 100  # cut to the console width


def test_a_miss_prints_zero_results_and_no_table(repl: Repl) -> None:
    repl.run(NOTES)
    repl.take()
    assert repl.run('recall("anything") from Notes')
    assert repl.take() == ('recall "anything" from Notes: 0 results (keyword)\n', "")


def test_errors_name_the_input_and_put_the_caret_under_the_column(repl: Repl) -> None:
    repl.run(NOTES)
    repl.run('remember("x") -> Notes')
    repl.take()
    assert not repl.run('recall("x") from Notse')
    out, err = repl.take()
    assert out == ""
    assert err.startswith("<repl:3>:1:18: error: Undefined memory 'Notse' (did you mean 'Notes'?)")
    assert caret_column(err, 'recall("x") from Notse') == 18
    # a syntax error in the second line of a multi-line input
    assert not repl.run('memory Other {\n  store persistent\n}')
    _, err = repl.take()
    assert err.startswith("<repl:4>:2:9: error: expected ':' after field name 'store'")
    assert caret_column(err, "  store persistent") == 9
    assert repl.console.failures == 2


def test_state_persists_across_inputs_and_recovers_after_errors(repl: Repl) -> None:
    repl.run(NOTES)
    assert not repl.run('remember(missing) -> Notes')
    assert repl.run('let topic = "gardening tips"')
    assert repl.run("remember(topic) -> Notes")
    assert repl.run("recall topic from Notes as hits")
    out, err = repl.take()
    assert "error:" in err and "missing" in err
    assert "remembered 'topic' in Notes" in out
    assert 'recall "gardening tips" from Notes: 1 result (keyword) as hits' in out
    assert {"topic", "hits"} <= set(repl.session.bound_names())
    assert repl.console.failures == 1


def test_check_errors_list_every_diagnostic(repl: Repl) -> None:
    assert not repl.run("memory M {\n  store: quantum\n  retreival: fuzzy\n}")
    _, err = repl.take()
    assert "<repl:1>:2:10: error: Unknown store type 'quantum'" in err
    assert "<repl:1>:3:3: error:" in err and "retreival" in err


def test_stats_lists_the_counters_per_tier(repl: Repl, tmp_path: Path) -> None:
    assert repl.run(".stats")
    assert "no memories declared yet" in repl.take()[0]
    repl.run("memory T {\n  tiers: [session, persistent]\n  store: session\n}\n")
    repl.run(NOTES)
    repl.run('remember("alpha") -> T')
    repl.run('remember("beta") -> T with { tier: persistent }')
    repl.run('recall("alpha") from T')
    repl.take()
    assert repl.run(".stats T")
    out, _ = repl.take()
    lines = out.splitlines()
    assert lines[0].split() == [
        "memory", "tier", "stores", "recalls", "forgets", "promotions", "demotions",
    ]
    rows = [line.split() for line in lines[2:] if line.strip()]
    assert rows == [["T", "session", "1", "1", "0", "0", "0"],
                    ["T", "persistent", "1", "1", "0", "0", "0"]]
    assert repl.run(".stats")
    assert "Notes" in repl.take()[0]
    export = tmp_path / "t.jsonl"
    assert repl.run(f".export T {export}")
    assert "exported 2 entries" in repl.take()[0]  # both tiers
    assert not repl.run(".stats Nope")
    assert "no memory named 'Nope'" in repl.take()[1]


def test_memories_lists_settings_and_entry_counts(repl: Repl) -> None:
    assert repl.run(".memories")
    assert "no memories declared yet" in repl.take()[0]
    repl.run(NOTES)
    repl.run('memory Facts { store: persistent, backend: sqlite, decay: 7d, top_k: 3 }')
    for text in ("alpha", "beta", "gamma"):
        repl.run(f'remember("{text}") -> Facts')
    repl.take()
    assert repl.run(".memories")
    out, _ = repl.take()
    rows = {line.split()[0]: line.split() for line in out.splitlines()[2:] if line.strip()}
    assert out.splitlines()[0].split() == [
        "memory", "store", "backend", "retrieval", "decay", "top_k", "entries", "location",
    ]
    assert rows["Notes"] == ["Notes", "session", "in_memory", "keyword", "none", "5", "0"]
    assert rows["Facts"] == ["Facts", "persistent", "sqlite", "hybrid", "7d", "3", "3"]


def test_show_lists_newest_entries_first_with_age(repl: Repl) -> None:
    repl.run(NOTES)
    for i in range(4):
        repl.run(f'remember("note {i}") -> Notes with {{ key: "n{i}", tags: ["t{i}"] }}')
        repl.clock.advance(120)
    repl.take()
    assert repl.run(".show Notes 2")
    out, _ = repl.take()
    lines = out.splitlines()
    assert lines[0] == "Notes: 2 of 4 entries, newest first"
    assert [line.split()[:3] for line in lines[3:]] == [["n3", "2m", "note"], ["n2", "4m", "note"]]
    assert "t3" in lines[3]
    assert repl.run(".show Notes")
    assert len([ln for ln in repl.take()[0].splitlines() if ln.startswith("n")]) == 4


def test_show_and_clear_refuse_unknown_memories_with_a_suggestion(repl: Repl) -> None:
    repl.run(NOTES)
    repl.take()
    assert not repl.run(".show Ntoes")
    assert repl.take()[1] == "error: no memory named 'Ntoes' (did you mean 'Notes'?)\n"
    assert not repl.run(".clear Zzz")
    assert repl.take()[1] == "error: no memory named 'Zzz'; declared: Notes\n"
    assert not repl.run(".show Notes zero")
    assert "usage: .show NAME [N]" in repl.take()[1]


def test_clear_counts_removed_entries_and_asks_when_interactive(repl: Repl) -> None:
    repl.run(NOTES)
    repl.run('remember("a") -> Notes')
    repl.run('remember("b") -> Notes')
    repl.take()
    questions: list[str] = []
    repl.console.confirm = lambda q: questions.append(q) is not None  # always "no"
    assert repl.run(".clear Notes")
    assert questions == ["delete 2 entries of Notes?"]
    assert repl.take()[0] == "nothing cleared\n"
    assert repl.session.describe_memories()[0]["entries"] == 2
    repl.console.confirm = None  # piped mode: no question
    assert repl.run(".clear Notes")
    assert repl.take()[0] == "cleared Notes: 2 entries removed\n"
    assert repl.session.describe_memories()[0]["entries"] == 0


def test_trace_prints_events_as_they_happen(repl: Repl) -> None:
    repl.run(NOTES)
    repl.take()
    assert repl.run(".trace")
    assert repl.take()[0] == "trace is off\n"
    assert repl.run(".trace on")
    repl.run('remember("x") -> Notes')
    out, _ = repl.take()
    lines = out.splitlines()
    assert lines[0] == "trace on"
    assert lines[1].startswith("trace: memory_write")
    assert "memory=Notes" in lines[1] and "backend=in_memory" in lines[1]
    assert lines[-1].startswith("remembered")
    assert repl.run(".trace off")
    repl.run('recall("x") from Notes')
    assert "trace:" not in repl.take()[0]
    assert not repl.run(".trace loud")


def test_unknown_dot_commands_get_a_suggestion(repl: Repl) -> None:
    assert not repl.run(".memroies")
    assert repl.take()[1] == (
        "error: unknown command '.memroies' (did you mean '.memories'?); .help lists them\n"
    )
    assert not repl.run(".help me")
    assert repl.take()[1] == "error: .help takes no arguments\n"


def test_help_lists_every_command_and_quit_ends(repl: Repl) -> None:
    assert repl.run(".help")
    out, _ = repl.take()
    for name in COMMANDS:
        assert f"  {name} " in out
    assert not repl.console.done
    assert repl.run(".exit")
    assert repl.console.done


PROGRAM = """\
// a program with declarations and statements
memory Kb {
  store: session
  retrieval: keyword
}

flow Learn(fact: String) {
  remember(fact) -> Kb
}

remember("loaded by the file") -> Kb
run Learn("water boils at 100 C")
recall("water") from Kb
"""


def test_declarations_only_blanks_statements_keeping_positions() -> None:
    text, skipped = declarations_only(PROGRAM, "p.axon")
    assert skipped == [11, 12, 13]
    assert len(text) == len(PROGRAM)
    assert text.splitlines()[:10] == PROGRAM.splitlines()[:10]
    assert all(not line.strip() for line in text.splitlines()[10:])


def test_preload_declares_without_running_and_load_runs_everything(
    repl: Repl, tmp_path: Path
) -> None:
    path = tmp_path / "p.axon"
    path.write_text(PROGRAM)
    assert repl.console.preload(path)
    out, err = repl.take()
    assert err == ""
    assert f"loaded the declarations of {path} (memories: Kb)" in out
    assert f"skipped 3 top-level statements (lines 11, 12, 13); .load {path} runs" in out
    assert repl.session.describe_memories()[0]["entries"] == 0
    assert repl.run('run Learn("ice melts at 0 C")')
    assert "remembered 'fact' in Kb (in flow Learn)" in repl.take()[0]
    assert repl.run(f".load {tmp_path / 'other.axon'}")is False
    assert "other.axon: error: no such file" in repl.take()[1]
    # .load runs the statements (the declarations again would be duplicates)
    statements = tmp_path / "s.axon"
    statements.write_text("\n".join(PROGRAM.splitlines()[10:]))
    assert repl.run(f".load {statements}")
    out, _ = repl.take()
    assert "remembered 'loaded_by_the_file" in out
    assert 'recall "water" from Kb: 1 result' in out


def test_preload_errors_point_into_the_file(repl: Repl, tmp_path: Path) -> None:
    path = tmp_path / "bad.axon"
    path.write_text('remember("x") -> Kb\n\nmemory Kb {\n  store: forever\n}\n')
    assert not repl.console.preload(path)
    _, err = repl.take()
    assert err.startswith(f"{path}:4:10: error: Unknown store type 'forever'")
    assert caret_column(err, "  store: forever") == 10


def test_piped_errors_report_lines_of_the_whole_input(repl: Repl) -> None:
    script = f'{NOTES}\n\nremember("a") -> Notes\n\n\nrecall("a") from Nope\n.nope\n'
    assert repl.console.run_script(script) == 1
    out, err = repl.take()
    assert "remembered" in out
    assert err.startswith("<stdin>:6:18: error: Undefined memory 'Nope'")
    assert "   6 | recall(\"a\") from Nope" in err
    assert caret_column(err, 'recall("a") from Nope') == 18
    assert "unknown command '.nope'" in err
    assert repl.console.run_script('recall("a") from Notes\n') == 1  # earlier failures count


def test_piped_messages_name_lines_of_the_whole_input_too(repl: Repl) -> None:
    """Line numbers inside a message count like the caret's: lines of stdin."""
    script = "memory A { store: session }\n\nmemory Z {\n  store: session\n"
    assert repl.console.run_script(script) == 1
    _, err = repl.take()
    assert err.startswith(
        "<stdin>:4:17: error: unexpected end of input: '{' opened at line 3, column 10"
    )
    script = 'flow F() {\n  remember(1) -> Gone\n}\n\nrun F()\n'
    assert repl.console.run_script(script) == 1
    _, err = repl.take()
    assert err.startswith("<stdin>:2:18: error: Undefined memory 'Gone'")


def test_ephemeral_entries_end_with_the_input(repl: Repl) -> None:
    repl.run("memory Tmp { store: ephemeral, retrieval: exact }")
    repl.run('remember("gone soon") -> Tmp\nrecall("gone") from Tmp')
    out, _ = repl.take()
    assert 'recall "gone" from Tmp: 1 result (exact)' in out
    repl.run('recall("gone") from Tmp')
    assert 'recall "gone" from Tmp: 0 results (exact)' in repl.take()[0]


def test_warnings_are_printed_with_their_position(repl: Repl) -> None:
    repl.run(NOTES)
    repl.take()
    assert repl.run("flow F() {\n  remember(ghost) -> Notes\n}")
    out, err = repl.take()
    assert out == ""
    assert err.startswith("<repl:2>:2:12: warning: Unbound name 'ghost'")
    assert caret_column(err, "  remember(ghost) -> Notes") == 12
    assert repl.console.failures == 0


def test_main_in_piped_mode_fails_when_the_file_does_not_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from axon.repl import main

    monkeypatch.setenv("AXON_EMBEDDER", "hashing")
    bad = tmp_path / "bad.axon"
    bad.write_text("memory M { store: forever }\n")
    out, err = io.StringIO(), io.StringIO()
    stdin = io.StringIO("memory Ok {}\n")
    code = main(bad, tmp_path / "mem", stdin=stdin, stdout=out, stderr=err, interactive=False)
    assert code == 1
    assert err.getvalue().startswith(f"{bad}:1:19: error: Unknown store type 'forever'")
    assert out.getvalue() == "memory Ok: session, in_memory, hybrid, decay none\n"


# A closed session refuses every command: the internal error this test provokes.
def test_an_internal_error_in_a_command_is_reported_and_the_repl_goes_on(
    repl: Repl, monkeypatch: pytest.MonkeyPatch
) -> None:
    repl.run(NOTES)
    repl.take()

    def broken(*args: object, **kwargs: object) -> NoReturn:
        raise KeyError("a fault inside AXON")  # not an AxonError: a bug, not a user mistake

    monkeypatch.setattr(repl.session, "recent_entries", broken)
    monkeypatch.setattr(repl.session, "execute", broken)
    assert not repl.run(".show Notes")
    _, err = repl.take()
    assert err.startswith("internal error: KeyError:")
    assert "Set AXON_DEBUG=1" in err and "Traceback" not in err
    assert not repl.run('recall("x") from Notes')
    assert "internal error" in repl.take()[1]
    assert repl.run(".help")
    monkeypatch.undo()
    assert repl.run(".show Notes")  # the session itself was never harmed


def test_a_closed_session_is_an_error_not_an_internal_one(repl: Repl) -> None:
    repl.run(NOTES)
    repl.take()
    repl.session.close()
    assert not repl.run(".show Notes")
    _, err = repl.take()
    assert err.startswith("error: this session is closed") and "internal" not in err


def test_suggestions_follow_the_checkers_rule_case_only_slips_too(repl: Repl) -> None:
    """The REPL computed "did you mean" with difflib alone (cutoff 0.5 for commands):
    `.SHOW` and `kb` for `KB` had no suggestion. It now uses the checker's
    `Suggester`, which also suggests a name that differs only in case (issue 27)."""
    repl.run("memory KB { store: session, retrieval: keyword }")
    repl.take()
    assert not repl.run(".show kb")
    assert repl.take()[1] == "error: no memory named 'kb' (did you mean 'KB'?)\n"
    assert not repl.run(".SHOW KB")
    assert repl.take()[1] == (
        "error: unknown command '.SHOW' (did you mean '.show'?); .help lists them\n"
    )
    assert not repl.run(".shwo KB")
    assert "(did you mean '.show'?)" in repl.take()[1]


def test_update_changes_an_entry_s_value_and_keeps_the_rest(repl: Repl) -> None:
    repl.run(NOTES)
    repl.run('remember("draft") -> Notes with { key: "r", tags: ["work"] }')
    repl.take()
    assert repl.run('.update Notes r {"done": true, "n": 2}')
    assert repl.take()[0] == "updated r in Notes\n"
    entry = repl.session.memory("Notes").get("r")
    assert entry is not None and entry.value == {"done": True, "n": 2}
    assert entry.metadata["tags"] == ["work"]
    assert repl.run(".update Notes r final words")  # not JSON: the text
    repl.take()
    entry = repl.session.memory("Notes").get("r")
    assert entry is not None and entry.value == "final words"
    assert not repl.run(".update Notes nope x")
    assert repl.take()[1] == (
        "error: no entry to update (update changes a stored entry; remember writes one) "
        "(memory 'Notes', key 'nope')\n"
    )
    assert not repl.run(".update Notes r")
    assert "usage: .update NAME KEY VALUE" in repl.take()[1]
    assert not repl.run(".update Ntoes r x")
    assert "did you mean 'Notes'?" in repl.take()[1]


def test_history_lists_an_entry_s_versions_newest_first(repl: Repl) -> None:
    repl.run("memory Profile { store: session history: 3 }")
    repl.run('remember("likes tea") -> Profile with { key: "drink" }')
    repl.run(".update Profile drink likes coffee")
    repl.run('forget("drink") from Profile')
    repl.take()
    assert repl.run(".history Profile drink")
    lines = repl.take()[0].splitlines()
    assert [line.split()[0] for line in lines] == ["forget", "update", "remember"]
    assert lines[0].endswith("(forgotten)") and lines[1].endswith("likes coffee")
    assert repl.run(".history Profile nothing")
    assert repl.take()[0] == "no history of nothing in Profile\n"
    repl.run(NOTES)
    repl.take()
    assert not repl.run(".history Notes r")
    assert "keeps no history" in repl.take()[1]
    assert not repl.run(".history Profile")
    assert "usage: .history NAME KEY" in repl.take()[1]
