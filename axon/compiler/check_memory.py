"""Memory declarations -> `IRMemory`: fields checked, defaults applied, backend resolved.

The rules (docs/language.md §4 Memory declarations): known fields only, store types,
retrieval strategies the backend can do, decay durations, a positive `top_k`, a
`min_score` from 0 to 1, `refresh_on_read` true or false, `history` a positive count or
`all` on a backend that keeps versions and a memory of one lifetime, and no
`store: persistent` on a backend that keeps nothing.
Backend names and capabilities come from the registry, never from a list here.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import attrs

from axon.compiler import ast, ir
from axon.compiler.check_tiers import (
    check_demote_after,
    check_persist_if,
    check_promote_after,
    check_tier_store,
    check_tiers,
)
from axon.compiler.durations import DurationError, parse_decay
from axon.compiler.lowering import plain, value_span
from axon.compiler.names import did_you_mean
from axon.errors import Diagnostic
from axon.memory.backend import MAX_TOP_K, RETRIEVAL_MODES, Capabilities
from axon.memory.registry import BackendRegistry
from axon.memory.retrieval.scores import min_score_problem
from axon.source import Span

STORE_TYPES = ("ephemeral", "none", "persistent", "session")
LINK_KINDS = ("none", "sequence")
"""`link:` values. `none` (the default): every entry is found by its own words only.
`sequence`: the entries form an ordered sequence (the turns of a conversation) and
each is also found by the words of the entry stored just before it (docs/language.md §6 recall)."""
DEFAULT_TOP_K = 5
PERSISTENT_DEFAULT_BACKEND = "sqlite"
SESSION_DEFAULT_BACKEND = "in_memory"


@attrs.define
class Reporter:
    """Collects the diagnostics of one check."""

    errors: list[Diagnostic] = attrs.field(factory=list)
    warnings: list[Diagnostic] = attrs.field(factory=list)

    def error(self, message: str, span: Span) -> None:
        self.errors.append(Diagnostic(message, span))

    def warn(self, message: str, span: Span) -> None:
        self.warnings.append(Diagnostic(message, span, "warning"))


@attrs.define
class _Memory:
    """A memory declaration being checked: each field's validator fills in its setting.

    The settings start at their defaults; a validator leaves the default when its
    field is absent or wrong (after reporting why).
    """

    decl: ast.Declaration
    fields: dict[str, ast.Field]
    backends: BackendRegistry
    report: Reporter
    store: str = "session"
    backend: str = SESSION_DEFAULT_BACKEND
    capabilities: Capabilities | None = None
    retrieval: str = "hybrid"
    decay: str = "none"
    decay_seconds: float | None = None
    link: str = "none"
    top_k: int = DEFAULT_TOP_K
    min_score: float | None = None
    refresh_on_read: bool = False
    history: int | str | None = None
    location: str | None = None
    tiers: tuple[str, ...] = ()
    promote_after: int | None = None
    demote_after: str | None = None
    demote_after_seconds: float | None = None
    persist_if: ir.IRTierPolicy | None = None

    @property
    def name(self) -> str:
        return self.decl.name

    def backend_span(self) -> Span:
        """Where a problem with the backend is reported: its field, else the declaration."""
        f = self.fields.get("backend")
        return value_span(f) if f is not None else self.decl.span


def _store(m: _Memory, f: ast.Field | None) -> None:
    store = _word(f, "store", m.name, m.report)
    if f is not None and store is not None and store not in STORE_TYPES:
        m.report.error(
            f"Unknown store type '{store}' in memory '{m.name}'"
            f"{did_you_mean(store, STORE_TYPES)}. Valid: {', '.join(STORE_TYPES)}",
            value_span(f),
        )
        store = None
    m.store = "ephemeral" if store == "none" else (store or "session")
    check_tier_store(m, f)


def _one_of(names: list[str]) -> str:
    """`a, b or c` (the registry's persistent backends, for a message)."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def _backend(m: _Memory, f: ast.Field | None) -> None:
    """The registry's name for the backend (default by store) and what it can do.

    A tiered memory's backend is its persistent tier's (the others are in-process).
    """
    if m.tiers and "persistent" not in m.tiers:
        if f is not None:
            m.report.error(
                f"backend: of memory '{m.name}' is its persistent tier's, and its tiers "
                f"[{', '.join(m.tiers)}] have none (ephemeral and session tiers are in-process)",
                m.backend_span(),
            )
        f = None
    persistent = m.store == "persistent" or "persistent" in m.tiers
    default = PERSISTENT_DEFAULT_BACKEND if persistent else SESSION_DEFAULT_BACKEND
    m.backend = _word(f, "backend", m.name, m.report) or default
    info = m.backends.lookup(m.backend)
    if info is None:
        m.report.error(
            f"Unknown backend '{m.backend}' in memory '{m.name}'"
            f"{did_you_mean(m.backend, m.backends.all_names())}. "
            f"Registered: {', '.join(m.backends.names())}",
            m.backend_span(),
        )
        return
    m.backend = info.name
    try:
        m.capabilities = info.resolved_capabilities()
    except Exception as exc:  # a third-party backend that fails to import
        m.report.error(
            f"Backend '{m.backend}' of memory '{m.name}' cannot be loaded: {exc}",
            m.backend_span(),
        )
        return
    if persistent and not m.capabilities.persistent:
        declared = "has a persistent tier" if m.tiers else "is declared store: persistent"
        m.report.error(
            f"Memory '{m.name}' {declared} but backend '{m.backend}' "
            f"keeps nothing across processes (use {_one_of(m.backends.persistent_names())})",
            m.backend_span(),
        )
    if not persistent and m.capabilities.persistent:
        m.report.warn(
            f"Memory '{m.name}' is store: {m.store} on persistent backend '{m.backend}': "
            "its entries are removed when the "
            + ("session ends" if m.store == "session" else "writing flow ends"),
            m.backend_span(),
        )


def _retrieval(m: _Memory, f: ast.Field | None) -> None:
    """A strategy the backend can do; by default its best for natural language."""
    caps = m.capabilities
    m.retrieval = caps.best_natural_language_mode if caps is not None else "hybrid"
    retrieval = _word(f, "retrieval", m.name, m.report)
    if f is None or retrieval is None:
        return
    if retrieval not in RETRIEVAL_MODES:
        m.report.error(
            f"Unknown retrieval strategy '{retrieval}' in memory '{m.name}'"
            f"{did_you_mean(retrieval, RETRIEVAL_MODES)}. "
            f"Valid: {', '.join(sorted(RETRIEVAL_MODES))}",
            value_span(f),
        )
        return
    if caps is not None and retrieval not in caps.retrieval:
        m.report.error(
            f"Backend '{m.backend}' cannot do {retrieval} retrieval (memory '{m.name}'). "
            f"It supports: {', '.join(sorted(caps.retrieval))}",
            value_span(f),
        )
    m.retrieval = retrieval  # as written even when unsupported: the error says so


def _decay(m: _Memory, f: ast.Field | None) -> None:
    if f is None:
        return
    raw = plain(f.value)
    if isinstance(raw, str):
        try:
            m.decay_seconds = parse_decay(raw)
            m.decay = raw
        except DurationError as exc:
            m.report.error(f"Invalid decay '{raw}' in memory '{m.name}': {exc}", value_span(f))
        return
    hint = " (add a unit: ms, s, m, h, d, w)" if isinstance(raw, int | float) else ""
    m.report.error(
        f"Invalid decay {json.dumps(raw)} in memory '{m.name}': expected a duration such as "
        f"30m, 7d or 1h30m, or none/never/daily/weekly{hint}",
        value_span(f),
    )


def _link(m: _Memory, f: ast.Field | None) -> None:
    link = _word(f, "link", m.name, m.report)
    if f is not None and link is not None and link not in LINK_KINDS:
        m.report.error(
            f"Unknown link '{link}' in memory '{m.name}'{did_you_mean(link, LINK_KINDS)}. "
            f"Valid: {', '.join(LINK_KINDS)}",
            value_span(f),
        )
        link = None
    m.link = link or "none"


def _top_k(m: _Memory, f: ast.Field | None) -> None:
    if f is not None:
        m.top_k = positive_int(f, f"in memory '{m.name}'", m.report) or DEFAULT_TOP_K


def _min_score(m: _Memory, f: ast.Field | None) -> None:
    if f is not None:
        m.min_score = min_score(f, f"in memory '{m.name}'", m.report)


def _refresh_on_read(m: _Memory, f: ast.Field | None) -> None:
    if f is None:
        return
    value = f.value
    if isinstance(value, ast.Literal) and isinstance(value.value, bool):
        m.refresh_on_read = value.value
        return
    m.report.error(
        f"refresh_on_read of memory '{m.name}' must be true or false, "
        f"not {json.dumps(plain(value))}",
        value_span(f),
    )


MAX_HISTORY = 1_000_000
"""The largest count `history:` takes (more is `all`)."""


def _history(m: _Memory, f: ast.Field | None) -> None:
    """`history: N` (a positive count of earlier versions) or `history: all`; on a backend
    that keeps versions and a memory of one lifetime (docs/language.md §5.3 History)."""
    if f is None:
        return
    value = f.value
    if isinstance(value, ast.Literal) and type(value.value) is int and value.value >= 1:
        if value.value > MAX_HISTORY:
            m.report.error(
                f"history of memory '{m.name}' must be at most {MAX_HISTORY:,} versions "
                "(or all)",
                value_span(f),
            )
            return
        m.history = value.value
    elif (word := _plain_word(value)) == "all":
        m.history = "all"
    else:
        hint = did_you_mean(word, ("all",)) if word is not None else ""
        m.report.error(
            f"history of memory '{m.name}' must be a positive number of versions or all, "
            f"not {json.dumps(plain(value))}{hint}",
            value_span(f),
        )
        return
    if m.tiers:
        m.report.error(
            f"history of memory '{m.name}': a tiered memory keeps no history (an entry "
            "moves between stores); declare history on a memory of one lifetime",
            value_span(f),
        )
        m.history = None
    elif m.capabilities is not None and not m.capabilities.history:
        m.report.error(
            f"history of memory '{m.name}': the {m.backend} backend keeps no history",
            value_span(f),
        )
        m.history = None


def _plain_word(value: ast.Value) -> str | None:
    if isinstance(value, ast.Name) and len(value.parts) == 1:
        return value.parts[0]
    if isinstance(value, ast.Literal) and isinstance(value.value, str):
        return value.value
    return None


def _location(m: _Memory, f: ast.Field | None) -> None:
    if f is None:
        return
    raw = plain(f.value)
    if isinstance(raw, str) and "\x00" in raw:  # no file, DSN or variable can hold one
        m.report.error(
            f"location of memory '{m.name}' must not contain a NUL character (\\u0000)",
            value_span(f),
        )
        return
    if isinstance(raw, str) and raw.strip():  # "   " names no file, DSN or variable
        m.location = raw
        return
    m.report.error(
        f"location of memory '{m.name}' must be a non-empty string "
        '(a file, a DSN or "env:VAR")',
        value_span(f),
    )


_VALIDATORS: dict[str, Callable[[_Memory, ast.Field | None], None]] = {
    "tiers": check_tiers,  # first: the store and backend of a tiered memory depend on it
    "store": _store,
    "backend": _backend,  # after store: the default backend depends on it
    "retrieval": _retrieval,  # after backend: its capabilities decide
    "decay": _decay,
    "link": _link,
    "top_k": _top_k,
    "min_score": _min_score,
    "refresh_on_read": _refresh_on_read,
    "history": _history,  # after tiers and backend: both decide whether it may be kept
    "location": _location,
    "promote_after": check_promote_after,
    "demote_after": check_demote_after,
    "persist_if": check_persist_if,
}
"""Each memory field's validator, run in this order (diagnostics come out in it)."""

MEMORY_FIELDS = tuple(sorted(_VALIDATORS))

FIELD_MEANINGS: dict[str, str] = {
    "store": "How long entries live: ephemeral | session | persistent | none (= ephemeral)",
    "backend": "Where entries are kept: a registered backend name (sqlite, pgvector, ...)",
    "retrieval": "How recall ranks entries: exact | keyword | semantic | hybrid",
    "decay": "How long an entry is recalled after it is written: none | never | daily | "
    "weekly | a duration (7d)",
    "top_k": "How many entries a recall returns by default (1 to 1,000,000)",
    "min_score": "The relevance floor of its recalls, 0 to 1",
    "refresh_on_read": "true: a get or a recall that returns an entry restarts its expiry",
    "history": "How many earlier versions of each entry to keep: a count or all (default none)",
    "location": "A backend-specific place: a file, a DSN or \"env:VAR\"",
    "link": "none | sequence: each entry is also found by the words of the one before it",
    "tiers": "The lifetimes a tiered memory spans, fastest first: [session, persistent]",
    "promote_after": "Recalls that move an entry one tier toward persistent",
    "demote_after": "Idle time that moves an entry one tier back (never out of persistent)",
    "persist_if": "The write policy of a tiered memory: which entries go straight to persistent",
}
"""One line on what each memory field means (editor hover: `axon lsp`; docs/language.md)."""


def check_memory(decl: ast.Declaration, backends: BackendRegistry, report: Reporter) -> ir.IRMemory:
    """The IR of one memory declaration with every default applied; problems go to `report`.

    Unknown and duplicated fields are reported first, then each field's validator
    (`_VALIDATORS`) runs, whether the field is written or not: an absent field
    still gets its default, which may depend on the fields before it.
    """
    fields: dict[str, ast.Field] = {}
    for f in decl.fields:
        if f.name in fields:
            report.error(f"Duplicate field '{f.name}' in memory '{decl.name}'", f.span)
        elif f.name not in _VALIDATORS:
            report.error(
                f"Unknown field '{f.name}' in memory '{decl.name}'"
                f"{did_you_mean(f.name, MEMORY_FIELDS)}. Valid: {', '.join(MEMORY_FIELDS)}",
                f.span,
            )
        else:
            fields[f.name] = f
    memory = _Memory(decl, fields, backends, report)
    for name, validate in _VALIDATORS.items():
        validate(memory, fields.get(name))
    return ir.IRMemory(
        name=decl.name,
        store=memory.store,
        backend=memory.backend,
        retrieval=memory.retrieval,
        decay=memory.decay,
        decay_seconds=memory.decay_seconds,
        top_k=memory.top_k,
        min_score=memory.min_score,
        refresh_on_read=memory.refresh_on_read,
        history=memory.history,
        location=memory.location,
        link=memory.link,
        tiers=memory.tiers,
        promote_after=memory.promote_after,
        demote_after=memory.demote_after,
        demote_after_seconds=memory.demote_after_seconds,
        persist_if=memory.persist_if,
        line=decl.span.line,
        column=decl.span.column,
    )


def _word(f: ast.Field | None, what: str, memory: str, report: Reporter) -> str | None:
    """A memory field that must be a single word (identifier or string)."""
    if f is None:
        return None
    value = f.value
    if isinstance(value, ast.Name) and len(value.parts) == 1:
        return value.parts[0]
    if isinstance(value, ast.Literal) and isinstance(value.value, str) and value.value:
        return value.value
    report.error(
        f"{what} of memory '{memory}' must be a name, not {json.dumps(plain(value))}",
        value_span(f),
    )
    return None


def min_score(f: ast.Field, where: str, report: Reporter) -> float | None:
    """A `min_score`: a number from 0 to 1 (`scores.min_score_problem`, the rule the
    Python API and the backends apply too)."""
    value = plain(f.value)
    problem = min_score_problem(value)
    if problem is not None:
        report.error(problem.replace("min_score", f"min_score {where}", 1), value_span(f))
        return None
    assert isinstance(value, int | float)  # min_score_problem accepts only numbers
    return float(value)


def positive_int(f: ast.Field, where: str, report: Reporter) -> int | None:
    """A `top_k`: an integer from 1 to `MAX_TOP_K` (a larger one would overflow the SQL
    `LIMIT` it becomes)."""
    value = f.value
    if (
        isinstance(value, ast.Literal)
        and isinstance(value.value, int)
        and not isinstance(value.value, bool)
        and value.value >= 1
    ):
        if value.value <= MAX_TOP_K:
            return value.value
        shown = str(value.value)
        report.error(
            f"top_k {where} must be at most {MAX_TOP_K:,}, got "
            f"{shown if len(shown) <= 40 else shown[:37] + '...'}",
            value_span(f),
        )
        return None
    report.error(
        f"top_k {where} must be a positive integer, got {json.dumps(plain(value))}",
        value_span(f),
    )
    return None
