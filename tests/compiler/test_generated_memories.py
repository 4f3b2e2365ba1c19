"""Generated valid memory declarations compile to exactly the IR fields they were made from."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import axon
from axon.compiler.durations import format_duration
from axon.memory.registry import registry

_NAMES = st.from_regex(r"[A-Z][A-Za-z0-9_]{0,12}", fullmatch=True)


@st.composite
def memory_decls(draw: st.DrawFn) -> tuple[str, dict[str, object]]:
    name = draw(_NAMES)
    store = draw(st.sampled_from(["ephemeral", "session", "persistent", None]))
    persistent_backends = ["sqlite", "vector_db", "pgvector", "postgres"]
    backends = persistent_backends if store == "persistent" else [*persistent_backends, "in_memory"]
    backend = draw(st.sampled_from([*backends, None]))
    retrieval = draw(st.sampled_from(["exact", "keyword", "semantic", "hybrid", None]))
    millis = draw(st.integers(min_value=1, max_value=10**11))
    decay = draw(st.sampled_from([format_duration(millis / 1000), "never", "daily", None]))
    top_k = draw(st.integers(min_value=1, max_value=1000) | st.none())
    location = draw(st.sampled_from(["kb.db", "env:AXON_PG_DSN", None]))
    fields = {
        "store": store,
        "backend": backend,
        "retrieval": retrieval,
        "decay": decay,
        "top_k": top_k,
        "location": location,
    }
    order = draw(st.permutations([k for k, v in fields.items() if v is not None]))
    sep = draw(st.sampled_from([" ", ", ", "\n  ", ",\n"]))
    body = sep.join(
        f'{k}: "{fields[k]}"' if k == "location" else f"{k}: {fields[k]}" for k in order
    )
    return f"memory {name} {{ {body} }}", {"name": name, **fields}


@settings(max_examples=200, deadline=None)
@given(memory_decls())
def test_generated_declarations_compile_to_their_fields(
    case: tuple[str, dict[str, object]],
) -> None:
    source, fields = case
    [memory] = axon.compile(source).memories
    assert memory.name == fields["name"]
    store = fields["store"] or "session"
    assert memory.store == store
    default_backend = "sqlite" if store == "persistent" else "in_memory"
    info = registry.lookup(str(fields["backend"] or default_backend))
    assert info is not None and memory.backend == info.name
    assert memory.retrieval == (fields["retrieval"] or "hybrid")
    assert memory.decay == (fields["decay"] or "none")
    if fields["decay"] in (None, "never"):
        assert memory.decay_seconds is None
    else:
        assert memory.decay_seconds is not None and memory.decay_seconds > 0
    assert memory.top_k == (fields["top_k"] or 5)
    assert memory.location == fields["location"]
    assert (memory.line, memory.column) == (1, 1)
