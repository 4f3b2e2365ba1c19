"""A memory declaration's tier fields -> their checked values, or errors at their
positions (docs/language.md §9 Tiered memories).

    memory Assistant {
      tiers: [session, persistent]      // any ordered subset, fastest first
      promote_after: 3                  // recalls that move an entry one tier up
      demote_after: 30d                 // idle time that moves an entry one tier down
                                        // (at run time never out of persistent)
      persist_if: { importance: high }  // the write policy (importance and/or type)
    }

The rules: `tiers` is a non-empty list of distinct tier names in the order
`TIER_ORDER`; `store:` of a tiered memory is its default write tier and must be
one of them; `promote_after`, `demote_after` and `persist_if` need at least two
tiers (`persist_if` also a persistent one); `promote_after` is a positive
integer and `demote_after` a positive duration. The validators here are run by
`check_memory` with the others (`_VALIDATORS`), `tiers` first, on the declaration
being checked; they know it only as `TieredDraft`, the fields they read and set.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from axon.compiler import ast, ir
from axon.compiler.durations import DurationError, parse_decay
from axon.compiler.lowering import plain, value_span
from axon.compiler.names import did_you_mean
from axon.memory.entry import IMPORTANCE_LEVELS, RECORD_TYPES, is_number
from axon.source import Span

TIER_ORDER = ("ephemeral", "session", "persistent")
"""Every tier, fastest first: the order a `tiers:` list must keep."""

POLICY_FIELDS = ("importance", "type")
"""What `persist_if: { ... }` may test."""


class DiagnosticSink(Protocol):
    """Where the validators' errors go (`check_memory.Reporter`)."""

    def error(self, message: str, span: Span) -> None: ...


class TieredDraft(Protocol):
    """A memory declaration being checked (`check_memory`'s): its name, where errors go,
    and the settings the tier validators read (`store`) and fill in."""

    @property
    def name(self) -> str: ...

    @property
    def report(self) -> DiagnosticSink: ...

    store: str
    tiers: tuple[str, ...]
    promote_after: int | None
    demote_after: str | None
    demote_after_seconds: float | None
    persist_if: ir.IRTierPolicy | None


def default_tier(tiers: tuple[str, ...]) -> str:
    """Where a write goes when neither `with`, the policy nor `store:` says (seed 004):
    `persistent`, or the slowest tier when the memory has no persistent one."""
    return "persistent" if "persistent" in tiers else tiers[-1]


def _item_span(item: ast.Value, f: ast.Field) -> Span:
    span = getattr(item, "span", None)
    return span if isinstance(span, Span) and span.line else value_span(f)


def check_tiers(m: TieredDraft, f: ast.Field | None) -> None:
    """`tiers: [...]`: known names, each once, fastest first, at least one."""
    if f is None:
        return
    if not isinstance(f.value, ast.ListValue):
        m.report.error(
            f"tiers of memory '{m.name}' must be a list such as [session, persistent], "
            f"got {json.dumps(plain(f.value))}",
            value_span(f),
        )
        return
    if not f.value.items:
        m.report.error(
            f"tiers of memory '{m.name}' is empty: name one or more of "
            f"{', '.join(TIER_ORDER)}, fastest first",
            value_span(f),
        )
        return
    tiers: list[str] = []
    ok = True
    for item in f.value.items:
        raw = plain(item)
        span = _item_span(item, f)
        if not isinstance(raw, str) or raw not in TIER_ORDER:
            shown = raw if isinstance(raw, str) else json.dumps(raw)
            m.report.error(
                f"Unknown tier '{shown}' in memory '{m.name}'"
                f"{did_you_mean(str(raw), TIER_ORDER)}. Valid: {', '.join(TIER_ORDER)}",
                span,
            )
            ok = False
        elif raw in tiers:
            m.report.error(f"Tier '{raw}' is listed twice in memory '{m.name}'", span)
            ok = False
        elif tiers and TIER_ORDER.index(raw) < TIER_ORDER.index(tiers[-1]):
            m.report.error(
                f"Tiers of memory '{m.name}' must be listed fastest first "
                f"({', '.join(TIER_ORDER)}): '{raw}' cannot come after '{tiers[-1]}'",
                span,
            )
            ok = False
        else:
            tiers.append(raw)
    if ok:
        m.tiers = tuple(tiers)


def check_tier_store(m: TieredDraft, f: ast.Field | None) -> None:
    """A tiered memory's `store:` is its default write tier: one of its tiers.

    Run after `_store` (which has already checked the name itself). Without
    `store:` the default tier is `default_tier`.
    """
    if not m.tiers:
        return
    if f is None:
        m.store = default_tier(m.tiers)
        return
    if m.store not in m.tiers:
        m.report.error(
            f"store: {m.store} contradicts tiers: [{', '.join(m.tiers)}] of memory "
            f"'{m.name}': the store of a tiered memory is its default write tier, one of its "
            "tiers",
            value_span(f),
        )
        m.store = default_tier(m.tiers)


def _needs_tiers(m: TieredDraft, f: ast.Field, example: str) -> bool:
    if len(m.tiers) >= 2:
        return True
    have = f"has one tier ({m.tiers[0]})" if m.tiers else "has no tiers"
    m.report.error(
        f"{f.name} needs a memory with two or more tiers; memory '{m.name}' {have} "
        f"(declare tiers: [{example}])",
        f.span,
    )
    return False


def check_promote_after(m: TieredDraft, f: ast.Field | None) -> None:
    """`promote_after: N`: recalls before an entry moves one tier toward persistent."""
    if f is None or not _needs_tiers(m, f, "session, persistent"):
        return
    value = plain(f.value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        m.promote_after = value
        return
    m.report.error(
        f"promote_after of memory '{m.name}' must be a positive integer (a number of "
        f"recalls), got {json.dumps(value)}",
        value_span(f),
    )


def check_demote_after(m: TieredDraft, f: ast.Field | None) -> None:
    """`demote_after: DURATION`: idle time before an entry moves one tier back."""
    if f is None or not _needs_tiers(m, f, "session, persistent"):
        return
    raw = plain(f.value)
    problem: str
    if isinstance(raw, str):
        try:
            seconds = parse_decay(raw)
        except DurationError as exc:
            problem = str(exc)
        else:
            if seconds is not None:
                m.demote_after, m.demote_after_seconds = raw, seconds
                return
            problem = "leave demote_after out for entries that never move back"
    else:
        hint = " (add a unit: ms, s, m, h, d, w)" if is_number(raw) else ""
        problem = f"expected a duration such as 30m, 7d or 1h30m{hint}"
    m.report.error(
        f"Invalid demote_after {json.dumps(raw)} in memory '{m.name}': {problem}",
        value_span(f),
    )


def check_persist_if(m: TieredDraft, f: ast.Field | None) -> None:
    """`persist_if: { importance: LEVEL, type: TYPE or [TYPES] }`: the write policy."""
    if f is None or not _needs_tiers(m, f, "session, persistent"):
        return
    if "persistent" not in m.tiers:
        m.report.error(
            f"persist_if sends entries to the persistent tier, and memory '{m.name}' has "
            f"none (tiers: [{', '.join(m.tiers)}])",
            f.span,
        )
        return
    if not isinstance(f.value, ast.MapValue) or not f.value.fields:
        m.report.error(
            f"persist_if of memory '{m.name}' must be a map such as "
            f"{{ importance: high, type: [long_term] }}, got {json.dumps(plain(f.value))}",
            value_span(f),
        )
        return
    least: float | None = None
    types: tuple[str, ...] = ()
    seen: set[str] = set()
    ok = True
    for field in f.value.fields:
        value: Any = plain(field.value)
        if field.name in seen:
            m.report.error(f"Duplicate field '{field.name}' in persist_if", field.span)
            ok = False
            continue
        seen.add(field.name)
        if field.name == "importance":
            if is_number(value) and 0.0 <= value <= 1.0:
                least = float(value)
            elif isinstance(value, str) and value in IMPORTANCE_LEVELS:
                least = IMPORTANCE_LEVELS[value]
            else:
                m.report.error(
                    f"persist_if importance must be a number from 0 to 1 or one of "
                    f"{', '.join(IMPORTANCE_LEVELS)}, got {json.dumps(value)}"
                    f"{did_you_mean(str(value), IMPORTANCE_LEVELS)}",
                    value_span(field),
                )
                ok = False
        elif field.name == "type":
            names = value if isinstance(value, list) else [value]
            bad = [n for n in names if not isinstance(n, str) or n not in RECORD_TYPES]
            if bad or not names:
                m.report.error(
                    f"persist_if type must be a record type or a list of them "
                    f"({', '.join(RECORD_TYPES)}), got {json.dumps(value)}",
                    value_span(field),
                )
                ok = False
            else:
                types = tuple(dict.fromkeys(str(n) for n in names))
        else:
            m.report.error(
                f"Unknown field '{field.name}' in persist_if"
                f"{did_you_mean(field.name, POLICY_FIELDS)}. Valid: {', '.join(POLICY_FIELDS)}",
                field.span,
            )
            ok = False
    if ok:
        m.persist_if = ir.IRTierPolicy(min_importance=least, types=types)
