"""Memory declarations -> `IRMemory`: fields checked, defaults applied, backend resolved.

The rules (docs/language.md, Memory declarations): known fields only, store types,
retrieval strategies the backend can do, decay durations, a positive `top_k`, and
no `store: persistent` on a backend that keeps nothing. Backend names and
capabilities come from the registry, never from a list here.
"""

from __future__ import annotations

import json

import attrs

from axon.compiler import ast, ir
from axon.compiler.durations import DurationError, parse_decay
from axon.compiler.lowering import plain, value_span
from axon.compiler.names import did_you_mean
from axon.errors import Diagnostic
from axon.memory.backend import RETRIEVAL_MODES
from axon.memory.registry import BackendRegistry
from axon.source import Span

STORE_TYPES = ("ephemeral", "none", "persistent", "session")
MEMORY_FIELDS = ("backend", "decay", "link", "location", "retrieval", "store", "top_k")
LINK_KINDS = ("none", "sequence")
"""`link:` values. `none` (the default): every entry is found by its own words only.
`sequence`: the entries form an ordered sequence (the turns of a conversation) and
each is also found by the words of the entry stored just before it (docs/language.md, recall)."""
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


def check_memory(decl: ast.Declaration, backends: BackendRegistry, report: Reporter) -> ir.IRMemory:
    """The IR of one memory declaration with every default applied; problems go to `report`."""
    name = decl.name
    fields: dict[str, ast.Field] = {}
    for f in decl.fields:
        if f.name in fields:
            report.error(f"Duplicate field '{f.name}' in memory '{name}'", f.span)
        elif f.name not in MEMORY_FIELDS:
            report.error(
                f"Unknown field '{f.name}' in memory '{name}'"
                f"{did_you_mean(f.name, MEMORY_FIELDS)}. Valid: {', '.join(MEMORY_FIELDS)}",
                f.span,
            )
        else:
            fields[f.name] = f

    store = _word(fields.get("store"), "store", name, report)
    if store is not None and store not in STORE_TYPES:
        report.error(
            f"Unknown store type '{store}' in memory '{name}'"
            f"{did_you_mean(store, STORE_TYPES)}. Valid: {', '.join(STORE_TYPES)}",
            value_span(fields["store"]),
        )
        store = None
    store = "ephemeral" if store == "none" else (store or "session")

    backend_word = _word(fields.get("backend"), "backend", name, report)
    default_backend = (
        PERSISTENT_DEFAULT_BACKEND if store == "persistent" else SESSION_DEFAULT_BACKEND
    )
    backend = backend_word or default_backend
    info = backends.lookup(backend)
    capabilities = None
    if info is None:
        names = backends.names()
        report.error(
            f"Unknown backend '{backend}' in memory '{name}'"
            f"{did_you_mean(backend, backends.all_names())}. "
            f"Registered: {', '.join(names)}",
            value_span(fields["backend"]),
        )
    else:
        backend = info.name
        try:
            capabilities = info.resolved_capabilities()
        except Exception as exc:  # a third-party backend that fails to import
            report.error(
                f"Backend '{backend}' of memory '{name}' cannot be loaded: {exc}",
                value_span(fields["backend"]) if "backend" in fields else decl.span,
            )
    if capabilities is not None and store == "persistent" and not capabilities.persistent:
        report.error(
            f"Memory '{name}' is declared store: persistent but backend '{backend}' "
            "keeps nothing across processes (use sqlite, vector_db or pgvector)",
            value_span(fields["backend"]) if "backend" in fields else decl.span,
        )
    if capabilities is not None and store != "persistent" and capabilities.persistent:
        report.warn(
            f"Memory '{name}' is store: {store} on persistent backend '{backend}': "
            "its entries are removed when the "
            + ("session ends" if store == "session" else "writing flow ends"),
            value_span(fields["backend"]) if "backend" in fields else decl.span,
        )

    retrieval = _word(fields.get("retrieval"), "retrieval", name, report)
    if retrieval is not None and retrieval not in RETRIEVAL_MODES:
        report.error(
            f"Unknown retrieval strategy '{retrieval}' in memory '{name}'"
            f"{did_you_mean(retrieval, RETRIEVAL_MODES)}. "
            f"Valid: {', '.join(sorted(RETRIEVAL_MODES))}",
            value_span(fields["retrieval"]),
        )
        retrieval = None
    elif (
        retrieval is not None
        and capabilities is not None
        and retrieval not in capabilities.retrieval
    ):
        report.error(
            f"Backend '{backend}' cannot do {retrieval} retrieval (memory '{name}'). "
            f"It supports: {', '.join(sorted(capabilities.retrieval))}",
            value_span(fields["retrieval"]),
        )
    if retrieval is None:
        retrieval = capabilities.best_natural_language_mode if capabilities else "hybrid"

    decay_text, decay_seconds = "none", None
    if "decay" in fields:
        value = fields["decay"].value
        raw = plain(value)
        if isinstance(raw, str):
            try:
                decay_seconds = parse_decay(raw)
                decay_text = raw
            except DurationError as exc:
                report.error(
                    f"Invalid decay '{raw}' in memory '{name}': {exc}",
                    value_span(fields["decay"]),
                )
        else:
            shown = json.dumps(raw) if not isinstance(raw, str) else raw
            hint = " (add a unit: ms, s, m, h, d, w)" if isinstance(raw, int | float) else ""
            report.error(
                f"Invalid decay {shown} in memory '{name}': expected a duration such as "
                f"30m, 7d or 1h30m, or none/never/daily/weekly{hint}",
                value_span(fields["decay"]),
            )

    link = _word(fields.get("link"), "link", name, report)
    if link is not None and link not in LINK_KINDS:
        report.error(
            f"Unknown link '{link}' in memory '{name}'{did_you_mean(link, LINK_KINDS)}. "
            f"Valid: {', '.join(LINK_KINDS)}",
            value_span(fields["link"]),
        )
        link = None

    top_k = DEFAULT_TOP_K
    if "top_k" in fields:
        top_k = positive_int(fields["top_k"], f"in memory '{name}'", report) or DEFAULT_TOP_K

    location = None
    if "location" in fields:
        raw = plain(fields["location"].value)
        if isinstance(raw, str) and raw:
            location = raw
        else:
            report.error(
                f"location of memory '{name}' must be a non-empty string "
                '(a file, a DSN or "env:VAR")',
                value_span(fields["location"]),
            )
    return ir.IRMemory(
        name=name,
        store=store,
        backend=backend,
        retrieval=retrieval,
        decay=decay_text,
        decay_seconds=decay_seconds,
        top_k=top_k,
        location=location,
        link=link or "none",
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


def positive_int(f: ast.Field, where: str, report: Reporter) -> int | None:
    value = f.value
    if (
        isinstance(value, ast.Literal)
        and isinstance(value.value, int)
        and not isinstance(value.value, bool)
        and value.value >= 1
    ):
        return value.value
    report.error(
        f"top_k {where} must be a positive integer, got {json.dumps(plain(value))}",
        value_span(f),
    )
    return None
