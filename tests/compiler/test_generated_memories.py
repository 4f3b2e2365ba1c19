"""Generated valid memory declarations compile to exactly the IR fields they were made from."""

from __future__ import annotations

from hypothesis import given, settings

import axon
from axon.memory.registry import registry
from tests.helpers.programs import memory_decls


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
