"""Programs for the property tests: generated memory declarations (with the fields they
were made from), the hostile corpus's files and the tokens of its token soup."""

from __future__ import annotations

from pathlib import Path

from hypothesis import strategies as st

from axon.compiler.durations import format_duration
from axon.compiler.lexer import MAX_NUMBER_DIGITS

HOSTILE_FILES = sorted((Path(__file__).resolve().parents[1] / "hostile" / "corpus").glob("*.axon"))
"""The files of tests/hostile/corpus: each a clear error with a position, or it works."""

HOSTILE_TOKENS = st.sampled_from(
    [
        "memory", "flow", "step", "let", "remember", "recall", "run", "if", "with", "from",
        "->", "in", "as", "Notes", "x", "{", "}", "[", "]", "(", ")", "<", ">", ",", ":",
        "=", ".", "..", "?", "==", '"s"', "'\\q'", '"\\u{110000}"', "'\ud800'", "1.5", "-3",
        "7d", "9" * (MAX_NUMBER_DIGITS + 1), "//c\n", "/*", "*/", "\n", "\r\n", "\ufeff",
        "\x00", "\x1b", "top_k:", "tpo_k:", "where:", "metadata:", "store:", "persistant",
    ]
)
"""Words, brackets, bad escapes and bytes that token soup is made of."""


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
