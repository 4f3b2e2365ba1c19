"""Tiered memories in the checker (docs/language.md §9 Tiered memories):
`tiers`, `promote_after`, `demote_after`, `persist_if` and the `tier` / `tiers` options."""

from __future__ import annotations

import pytest

import axon
from axon.compiler import ir


def errors(text: str) -> list[tuple[str, int, int]]:
    with pytest.raises(axon.AxonCheckError) as info:
        axon.compile(text, filename="t.axon")
    return [(d.message, d.line, d.column) for d in info.value.diagnostics]


def memory(fields: str) -> str:
    return "memory M {\n" + fields + "\n}\n"


def test_a_tiered_memory_lowers_with_its_defaults() -> None:
    program = axon.compile(memory(
        "  tiers: [session, persistent]\n  promote_after: 3\n  demote_after: 1h30m\n"
        "  persist_if: { importance: high, type: long_term }"
    ))
    m = program.memories[0]
    assert m.tiers == ("session", "persistent")
    assert m.store == "persistent"  # no store: -> persistent (seed 004's last resort)
    assert m.backend == "sqlite"  # the persistent tier's default
    assert (m.promote_after, m.demote_after, m.demote_after_seconds) == (3, "1h30m", 5400.0)
    assert m.persist_if == ir.IRTierPolicy(min_importance=0.75, types=("long_term",))
    data = m.to_dict()
    assert data["tiers"] == ["session", "persistent"]
    assert data["persist_if"] == {"node": "IRTierPolicy", "min_importance": 0.75,
                                  "types": ["long_term"]}


def test_store_of_a_tiered_memory_is_its_default_tier() -> None:
    m = axon.compile(memory("  tiers: [ephemeral, session]\n  store: ephemeral")).memories[0]
    assert (m.store, m.backend) == ("ephemeral", "in_memory")
    m = axon.compile(memory("  tiers: [ephemeral, session]")).memories[0]
    assert m.store == "session"  # no persistent tier: the slowest


def test_an_untiered_memory_keeps_the_old_shape() -> None:
    m = axon.compile(memory("  store: session")).memories[0]
    assert (m.tiers, m.promote_after, m.demote_after, m.persist_if) == ((), None, None, None)


@pytest.mark.parametrize(
    ("fields", "wanted", "line", "column"),
    [
        ("  tiers: [persistent, session]", "must be listed fastest first", 2, 23),
        # Out of order against the tier before it, not against the first: a check of the
        # first tier alone let it through, and such a memory loses data at run time.
        ("  tiers: [ephemeral, persistent, session]", "must be listed fastest first", 2, 34),
        ("  tiers: [session, session]", "Tier 'session' is listed twice", 2, 20),
        ("  tiers: [sesion]", "Unknown tier 'sesion' in memory 'M' (did you mean 'session'?)",
         2, 11),
        ("  tiers: [none]", "Unknown tier 'none'", 2, 11),
        ("  tiers: []", "tiers of memory 'M' is empty", 2, 3),
        ("  tiers: session", "tiers of memory 'M' must be a list", 2, 10),
        ("  tiers: [session, persistent]\n  store: ephemeral",
         "store: ephemeral contradicts tiers: [session, persistent]", 3, 10),
        ("  promote_after: 3", "promote_after needs a memory with two or more tiers; "
         "memory 'M' has no tiers", 2, 3),
        ("  tiers: [session]\n  demote_after: 3d", "memory 'M' has one tier (session)", 3, 3),
        ("  tiers: [session, persistent]\n  promote_after: 0",
         "promote_after of memory 'M' must be a positive integer", 3, 18),
        ("  tiers: [session, persistent]\n  promote_after: 1.5",
         "promote_after of memory 'M' must be a positive integer", 3, 18),
        ("  tiers: [session, persistent]\n  demote_after: 3",
         "Invalid demote_after 3 in memory 'M': expected a duration", 3, 17),
        ("  tiers: [session, persistent]\n  demote_after: 0s",
         "Invalid demote_after \"0s\"", 3, 17),
        ("  tiers: [session, persistent]\n  demote_after: never",
         "leave demote_after out", 3, 17),
        ("  tiers: [ephemeral, session]\n  backend: sqlite",
         "backend: of memory 'M' is its persistent tier's", 3, 12),
        ("  tiers: [session, persistent]\n  backend: in_memory",
         "Memory 'M' has a persistent tier but backend 'in_memory' keeps nothing", 3, 12),
        ("  tiers: [session, persistent]\n  persist_if: { importance: hgh }",
         "persist_if importance must be a number from 0 to 1", 3, 29),
        ("  tiers: [session, persistent]\n  persist_if: { kind: 1 }",
         "Unknown field 'kind' in persist_if", 3, 17),
        ("  tiers: [session, persistent]\n  persist_if: { type: [forever] }",
         "persist_if type must be a record type", 3, 24),
        ("  tiers: [ephemeral, session]\n  persist_if: { importance: high }",
         "persist_if sends entries to the persistent tier", 3, 3),
        ("  tiers: [session, persistent]\n  persist_if: high",
         "persist_if of memory 'M' must be a map", 3, 15),
    ],
)
def test_tier_field_errors_have_positions(fields: str, wanted: str, line: int, column: int) -> None:
    found = errors(memory(fields))
    assert len(found) == 1, found
    message, at_line, at_column = found[0]
    assert wanted in message
    assert (at_line, at_column) == (line, column)


def test_every_tier_problem_is_reported_at_once() -> None:
    found = errors(memory("  tiers: [sesion, session, session]\n  promote_after: -1"))
    assert [m for m, _, _ in found][:2] == [
        "Unknown tier 'sesion' in memory 'M' (did you mean 'session'?). "
        "Valid: ephemeral, session, persistent",
        "Tier 'session' is listed twice in memory 'M'",
    ]
    assert len(found) == 3  # the bad list also leaves the memory untiered: promote_after too


def test_tier_options_name_tiers_the_memory_has() -> None:
    source = memory("  tiers: [session, persistent]")
    program = axon.compile(
        source + 'remember("a") -> M with { tier: session }\n'
        'recall("a") from M with { tiers: [persistent] }\n'
    )
    remember, recall = program.statements
    assert isinstance(remember, ir.IRRemember) and remember.tier == "session"
    assert isinstance(recall, ir.IRRecall) and recall.tiers == ("persistent",)
    found = errors(
        source + 'remember("a") -> M with { tier: ephemeral }\n'
        'recall("a") from M with { tiers: [ephemeral] }\n'
        'recall("a") from M with { tiers: [] }\n'
        'remember("a") -> M with { tier: cold }\n'
    )
    assert found == [
        ("Memory 'M' has no tier 'ephemeral'. Its tiers: session, persistent", 4, 33),
        ("Memory 'M' has no tier 'ephemeral'. Its tiers: session, persistent", 5, 35),
        ("tiers must be a non-empty list of tiers, such as [session], got []", 6, 27),
        ('Unknown tier "cold". Valid: ephemeral, session, persistent', 7, 33),
    ]


def test_a_wrong_tiers_declaration_is_reported_once_not_at_each_use() -> None:
    """A memory whose `tiers:` is wrong has no tiers in the IR: its uses are not told
    again that it "has no tiers" (it declares some); a memory without any still is."""
    found = errors(
        memory("  tiers: [persistent, session]")
        + 'remember("x") -> M with { tier: ephemeral }\n'
        + "memory N { store: session }\n"
        + 'remember("x") -> N with { tier: session }\n'
    )
    assert [message.split(":")[0] for message, _, _ in found] == [
        "Tiers of memory 'M' must be listed fastest first (ephemeral, session, persistent)",
        "Memory 'N' has no tiers",
    ]


def test_rendered_diagnostic_has_file_line_column_and_caret() -> None:
    with pytest.raises(axon.AxonCheckError) as info:
        axon.compile(memory("  tiers: [persistent, session]"), filename="t.axon")
    text = str(info.value)
    assert text.startswith("t.axon:2:23: error: Tiers of memory 'M' must be listed fastest first")
    assert "  tiers: [persistent, session]\n" in text and "^~~~~~~" in text
