"""`with { ... }` on remember and recall: a closed set of options (docs/language.md).

A misspelt option is a checker error with a suggestion and its position, never
a silent metadata filter; options are checked for the statement they are on and
for the type of their value; `metadata:` and `where:` carry free metadata, and
reach the backends (SQLite here, a real file) as the entry's metadata and as
recall filters.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import axon
from axon.errors import AxonCheckError

DECL = "memory Notes { store: persistent, backend: sqlite, retrieval: keyword }\n"


def errors(text: str) -> list[tuple[str, int, int]]:
    with pytest.raises(AxonCheckError) as info:
        axon.compile(DECL + text)
    return [(d.message, d.line, d.column) for d in info.value.diagnostics]


def only_error(text: str) -> tuple[str, int, int]:
    found = errors(text)
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize(
    ("text", "wanted", "column"),
    [
        ('recall("a") from Notes with { tpo_k: 3 }', "did you mean 'top_k'?", 31),
        ('recall("a") from Notes with { retreival: exact }', "did you mean 'retrieval'?", 31),
        ('remember("a") -> Notes with { tgas: ["x"] }', "did you mean 'tags'?", 31),
        ('remember("a") -> Notes with { importnce: 0.5 }', "did you mean 'importance'?", 31),
        ('remember("a") -> Notes with { metdata: { a: 1 } }', "did you mean 'metadata'?", 31),
        ('recall("a") from Notes with { wher: { a: 1 } }', "did you mean 'where'?", 31),
    ],
)
def test_a_misspelt_option_is_an_error_with_a_suggestion(
    text: str, wanted: str, column: int
) -> None:
    message, line, col = errors(text)[0]  # `tags: t` also is not a list
    assert message.startswith("Unknown option")
    assert wanted in message
    assert (line, col) == (2, column)


def test_free_fields_point_to_metadata_and_where() -> None:
    message, _, _ = only_error('remember("a") -> Notes with { project: "apollo" }')
    assert "metadata: { project: ... }" in message
    message, _, _ = only_error('recall("a") from Notes with { project: "apollo" }')
    assert "where: { project: ... }" in message


def test_options_of_the_other_statement_are_refused() -> None:
    message, _, col = only_error('remember("a") -> Notes with { top_k: 3 }')
    assert message.startswith("'top_k' is a recall option, not valid in remember")
    assert col == 31
    message, _, _ = only_error('recall("a") from Notes with { importance: 0.5 }')
    assert message.startswith("'importance' is a remember option, not valid in recall")
    message, _, _ = only_error('recall("a") from Notes with { metadata: { a: 1 } }')
    assert "remember option" in message


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ('remember("a") -> Notes with { tier: session }', "Memory 'Notes' has no tiers"),
        ('recall("a") from Notes with { tiers: [session] }', "Memory 'Notes' has no tiers"),
        ('remember("a") -> Notes with { tiers: [session] }', "'tiers' is a recall option"),
        ('recall("a") from Notes with { tier: session }', "'tier' is a remember option"),
    ],
)
def test_tier_options_need_a_tiered_memory(text: str, wanted: str) -> None:
    message, _, _ = only_error(text)
    assert message.startswith(wanted)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ('remember("a") -> Notes with { importance: 1.5 }', "importance must be a number"),
        ('remember("a") -> Notes with { importance: "hihg" }', "Unknown importance level"),
        ('remember("a") -> Notes with { importance: true }', "importance must be a number"),
        ('remember("a") -> Notes with { tags: "x" }', "tags must be a list of strings"),
        ('remember("a") -> Notes with { tags: [1, 2] }', "tags must be a list of strings"),
        ('recall("a") from Notes with { tags: "x" }', "tags must be a list of strings"),
        ('remember("a") -> Notes with { metadata: [1] }', "metadata in remember must be a map"),
        ('recall("a") from Notes with { where: "x" }', "where in recall must be a map"),
        ('recall("a") from Notes with { where: { a: { b: 1 } } }',
         "where: unknown operator 'b' for 'a'"),
        ('recall("a") from Notes with { top_k: 0 }', "top_k in recall must be a positive"),
        ('recall("a") from Notes with { top_k: 99999999999999999999 }',
         "top_k in recall must be at most 1,000,000, got 99999999999999999999"),
        ('remember("a") -> Notes with { key: "" }', "key in 'with' must be a non-empty"),
        ('remember("a") -> Notes with { metadata: { scope: "x" } }', "set by the runtime"),
        ('remember("a") -> Notes with { source: "x" }', "set by the runtime"),
        ('remember("a") -> Notes with { metadata: { tags: ["x"] } }', "an option of its own"),
        ('recall("a") from Notes with { tags: ["a"], where: { tags: ["b"] } }',
         "as an option and in where"),
        ('recall("a") from Notes with { top_k: 1, top_k: 2 }', "Duplicate option 'top_k'"),
    ],
)
def test_option_values_are_checked(text: str, wanted: str) -> None:
    message, line, _ = only_error(text)
    assert wanted in message
    assert line == 2


@pytest.mark.parametrize(
    ("text", "wanted", "column"),
    [
        ('recall("a") from Notes with { where: { n: { gtee: 3 } } }',
         "where: unknown operator 'gtee' for 'n' (did you mean 'gte'?). Valid: gte, gt, lte, "
         "lt, ne, in, exists", 45),
        ('forget from Notes with { where: { n: { exist: true } } }',
         "(did you mean 'exists'?)", 40),
        ('recall("a") from Notes with { where: { n: { gte: [1, 2] } } }',
         "where: 'n': gte takes a number or a string, got [1, 2]", 51),
        ('recall("a") from Notes with { where: { n: { lt: true } } }',
         "where: 'n': lt takes a number or a string, got true", 49),
        ('recall("a") from Notes with { where: { n: { in: "a" } } }',
         "where: 'n': in takes a list of strings, numbers or booleans, got \"a\"", 49),
        ('recall("a") from Notes with { where: { n: { ne: [1] } } }',
         "where: 'n': ne takes a string, number or boolean, got [1]", 50),
        ('recall("a") from Notes with { where: { n: { exists: 1 } } }',
         "where: 'n': exists takes true or false, got 1", 53),
        ('recall("a") from Notes with { where: { n: { gte: 1, lt: "b" } } }',
         "where: 'n' compares with a number and a string in one map", 40),
        ('recall("a") from Notes with { where: { n: { } } }', "has an empty operator map", 40),
        ('recall("a") from Notes with { where: { n: { gt: 1, gt: 2 } } }',
         "where: operator 'gt' given twice for 'n'", 52),
    ],
)
def test_operator_maps_in_where_are_checked_at_their_operator(
    text: str, wanted: str, column: int
) -> None:
    message, line, col = only_error(text)
    assert wanted in message
    assert (line, col) == (2, column)


def test_operator_maps_in_where_compile_to_the_filter() -> None:
    program = axon.compile(
        DECL + 'recall("a") from Notes with { where: { n: { gte: 3, lt: 10 }, '
        'day: { lt: "2024-06" }, k: { in: ["a", 2] }, j: { exists: false }, m: { ne: 0 } } }'
    )
    recall = program.to_dict()["statements"][0]
    assert recall["filters"] == {
        "n": {"gte": 3, "lt": 10},
        "day": {"lt": "2024-06"},
        "k": {"in": ["a", 2]},
        "j": {"exists": False},
        "m": {"ne": 0},
    }


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ('recall("a") from Notes with { retrieval: semantc }', "did you mean 'semantic'?"),
        ('recall("a") from Notes with { retrieval: keywrd }', "did you mean 'keyword'?"),
        ("memory M { store: persistant }", "did you mean 'persistent'?"),
        ("memory M { retrieval: semantc }", "did you mean 'semantic'?"),
        ("memory M { backend: sqlit }", "did you mean 'sqlite'?"),
    ],
)
def test_enum_values_get_a_suggestion(text: str, wanted: str) -> None:
    message, _, _ = only_error(text)
    assert wanted in message


def test_the_documented_options_check() -> None:
    program = axon.compile(
        DECL
        + 'remember("a") -> Notes with { key: "k", tags: ["x"], importance: 0.5, '
        'metadata: { project: "apollo", n: 2 } }\n'
        'recall("a") from Notes with { top_k: 2, retrieval: exact, tags: ["x"], '
        'where: { project: "apollo" } }\n'
    )
    remember, recall = program.statements
    assert remember.to_dict()["tags"] == ["x"]
    assert remember.to_dict()["importance"] == 0.5
    assert remember.to_dict()["metadata"] == {"project": "apollo", "n": 2}
    assert recall.to_dict()["filters"] == {"tags": ["x"], "project": "apollo"}
    assert recall.to_dict()["top_k"] == 2


def test_metadata_and_where_reach_sqlite(tmp_path: Path) -> None:
    with axon.Session(memory_dir=tmp_path) as session:
        records = session.execute(
            DECL
            + 'remember("apollo launch plan") -> Notes with { key: "a", tags: ["space"], '
            'importance: 0.9, metadata: { project: "apollo" } }\n'
            'remember("gemini launch plan") -> Notes with { key: "g", '
            'metadata: { project: "gemini" } }\n'
        )
        assert records[0]["metadata"] == {
            "source": "main",
            "tags": ["space"],
            "importance": 0.9,
            "project": "apollo",
            "scope": "Notes",
        }
    with axon.Session(memory_dir=tmp_path) as session:
        (hit,) = session.execute(
            DECL + 'recall("launch plan") from Notes with { where: { project: "gemini" } }'
        )
        assert [r["key"] for r in hit["results"]] == ["g"]
        (both,) = session.execute('recall("launch plan") from Notes')
        assert sorted(r["key"] for r in both["results"]) == ["a", "g"]
        (tagged,) = session.execute(
            'recall("launch plan") from Notes with { tags: ["space"], where: { importance: 0.9 } }'
        )
        assert [r["key"] for r in tagged["results"]] == ["a"]


def test_a_memorys_top_k_past_the_maximum_is_refused_at_its_value() -> None:
    # A count past SQLite's INTEGER was an OverflowError when the recall ran.
    message, line, column = only_error("memory M { top_k: 1000001 }")
    assert message == "top_k in memory 'M' must be at most 1,000,000, got 1000001"
    assert (line, column) == (2, 19)


@pytest.mark.parametrize(
    ("text", "name", "option", "column"),
    [
        ("flow Save(k, v) {\n  remember(v) -> Notes with { key: k }\n}", "k", "key", 36),
        ('let t = "ann"\nrecall("x") from Notes with { where: { speaker: t } }', "t", "where", 49),
        ('let t = "ann"\nremember("x") -> Notes with { metadata: { who: t } }', "t",
         "metadata", 48),
        ('let t = ["a"]\nremember("x") -> Notes with { tags: t }', "t", "tags", 37),
        ('let t = "a"\nremember("x") -> Notes with { tags: [t] }', "t", "tags", 38),
        ('let t = "a"\nforget from Notes with { where: { who: t } }', "t", "where", 40),
        ("let t = 3\nrecall(\"x\") from Notes with { where: { n: { gte: t } } }", "t", "where",
         50),
    ],
)
def test_a_bound_name_where_an_option_takes_a_constant_is_an_error(
    text: str, name: str, option: str, column: int
) -> None:
    """It used to be stored or matched as its own text: `key: k` wrote the key 'k'."""
    message, line, col = errors(text)[0]  # `tags: t` also is not a list
    assert message.startswith(
        f"'{name}' is a bound name, but the values of `with {{ {option}: ... }}` are constants"
    )
    assert (line, col) == (3, column)


def test_an_unbound_bare_word_in_an_option_is_still_its_text(tmp_path: Path) -> None:
    text = DECL + 'remember("x") -> Notes with { key: plain_word }'
    records = axon.run(text, memory_dir=tmp_path)[0]
    assert records[0]["key"] == "plain_word"


@pytest.mark.parametrize(
    ("value", "column"),
    [("1e3", 10), ("0x10", 10), ("7x", 10), ("3d", 10), ("[1, 7d]", 14), ('{"a": 12abc}', 16)],
)
def test_a_duration_like_word_is_not_a_value(value: str, column: int) -> None:
    """The lexer reads `1e3` and `7x` as durations; as a value each was stored as its text."""
    message, line, col = only_error(f"remember({value}) -> Notes")
    assert message.startswith("'") and "' is not a value: a number is written 42" in message
    assert (line, col) == (2, column)


@pytest.mark.parametrize(
    ("text", "wanted", "column"),
    [
        ('recall("x") from Notes with { since: "soon" }', "since must be an ISO 8601 date", 38),
        ('recall("x") from Notes with { until: [1] }', "until must be a date or time", 39),
        ('recall("x") from Notes with { since: true }', "not a boolean", 38),
        (
            'recall("x") from Notes with { since: "2024-04-01", until: "2024-03-01" }',
            "since must be before until",
            59,
        ),
        ('recall("x") from Notes with { sinse: "7d" }', "did you mean 'since'?", 31),
    ],
)
def test_since_and_until_are_checked_with_positions(text: str, wanted: str, column: int) -> None:
    message, line, col = only_error(text)
    assert wanted in message and (line, col) == (2, column), (message, line, col)


def test_a_recall_statement_keeps_its_window(tmp_path: Path) -> None:
    """`with { since, until }` (docs/language.md §6.4): dates, seconds, durations."""
    from axon.testing import FakeClock

    clock = FakeClock(1_709_251_200.0)  # 2024-03-01T00:00:00Z
    with axon.Session(memory_dir=tmp_path, clock=clock) as session:
        session.execute(DECL)
        notes = session.memory("Notes")
        notes.remember("apple in march", key="march")
        clock.advance(31 * 86400.0)  # 2024-04-01
        notes.remember("apple in april", key="april")
        session.execute(
            'recall("apple") from Notes with { since: "2024-03-01", until: "2024-04-01" }'
        )
        assert [r["key"] for r in session.records[-1]["results"]] == ["march"]
        session.execute('recall("apple") from Notes with { since: "1d" }')
        assert [r["key"] for r in session.records[-1]["results"]] == ["april"]
        session.execute('recall("apple") from Notes with { until: 1711929600 }')
        assert [r["key"] for r in session.records[-1]["results"]] == ["march"]
