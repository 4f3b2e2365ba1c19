"""The checker: memory declaration diagnostics, defaults, keys, and the seed-compatible IR."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

import axon
from axon.compiler import ir
from axon.errors import AxonCheckError


def errors(source: str) -> list[tuple[int, int, str]]:
    with pytest.raises(AxonCheckError) as info:
        axon.compile(source, filename="t.axon")
    return [(d.line, d.column, d.message) for d in info.value.diagnostics]


def test_memory_defaults() -> None:
    program = axon.compile("memory M {}\nmemory P { store: persistent }")
    m, p = program.memories
    assert (m.store, m.backend, m.top_k, m.decay, m.decay_seconds, m.location) == (
        "session",
        "in_memory",
        5,
        "none",
        None,
        None,
    )
    assert m.retrieval == "hybrid"  # the best natural-language retrieval of the backend
    assert (p.store, p.backend) == ("persistent", "sqlite")
    assert (m.line, m.column, p.line, p.column) == (1, 1, 2, 1)


def test_memory_fields_resolve() -> None:
    [m] = axon.compile(
        'memory K { store: persistent backend: "postgres" retrieval: keyword '
        'decay: 1h30m top_k: 7 location: "env:KB_DSN" }'
    ).memories
    assert m == ir.IRMemory(
        "K", "persistent", "pgvector", "keyword", "1h30m", 5400.0, 7, "env:KB_DSN", 1, 1
    )


@pytest.mark.parametrize(
    ("decay", "seconds"),
    [
        ("none", None),
        ("never", None),
        ("daily", 86400.0),
        ("weekly", 604800.0),
        ("500ms", 0.5),
        ("2w", 1209600.0),
        ("1.5h", 5400.0),
    ],
)
def test_decay_values(decay: str, seconds: float | None) -> None:
    [m] = axon.compile(f"memory M {{ decay: {decay} }}").memories
    assert (m.decay, m.decay_seconds) == (decay, seconds)


def test_store_none_means_ephemeral() -> None:
    [m] = axon.compile("memory M { store: none }").memories
    assert m.store == "ephemeral"


def test_spec_messages_exactly() -> None:
    found = errors(
        "memory M { store: quantum }\n"
        "memory N { retrieval: fuzzy }\n"
        "persona P { tone: calm }\n"
        "memory M { store: session }\n"
        'flow F() { remember("x") -> P\n recall("q") from P }\n'
    )
    messages = [m for _, _, m in found]
    assert messages == [
        "Unknown store type 'quantum' in memory 'M'. Valid: ephemeral, none, persistent, session",
        "Unknown retrieval strategy 'fuzzy' in memory 'N'. Valid: exact, hybrid, keyword, semantic",
        "Duplicate declaration: 'M' already defined as memory (first defined at line 1)",
        "'remember' target 'P' is a persona, not a memory store",
        "'recall' source 'P' is a persona, not a memory store",
    ]
    # sorted by position, each at the offending item
    assert [(line, col) for line, col, _ in found] == [(1, 19), (2, 23), (4, 1), (5, 29), (6, 19)]


def test_recall_retrieval_override_is_quoted_like_the_memory_field() -> None:
    found = errors('memory N { }\nrecall("q") from N with { retrieval: fuzzy }\n')
    assert found == [(
        2, 38,
        "Unknown retrieval strategy 'fuzzy' in recall. Valid: exact, hybrid, keyword, semantic",
    )]


def test_all_diagnostics_collected_and_sorted() -> None:
    found = errors(
        "memory A { retreival: keyword }\n"
        "memory B { backend: sqlit }\n"
        "memory C { decay: 0d }\n"
        "memory D { top_k: 0 }\n"
        "memory E { store: persistent backend: in_memory }\n"
        'remember("x") -> Notse\n'
        "memory Notes {}\n"
    )
    assert [line for line, _, _ in found] == [1, 2, 3, 4, 5, 6]
    text = "\n".join(m for _, _, m in found)
    assert "Unknown field 'retreival' in memory 'A' (did you mean 'retrieval'?)" in text
    assert "Unknown backend 'sqlit' in memory 'B' (did you mean 'sqlite'?)" in text
    assert "Registered: chroma, in_memory, pgvector, sqlite, vector_db" in text
    assert "Invalid decay '0d' in memory 'C'" in text
    assert "top_k in memory 'D' must be a positive integer, got 0" in text
    assert "store: persistent but backend 'in_memory' keeps nothing across processes" in text
    assert "Undefined memory 'Notse' (did you mean 'Notes'?)" in text


@pytest.mark.parametrize(
    ("field", "fragment"),
    [
        ("decay: -1d", "Invalid decay '-1d'"),
        ("decay: 7x", "unknown unit 'x'"),
        ("decay: 7", "add a unit"),
        ("top_k: -3", "must be a positive integer, got -3"),
        ("top_k: 2.5", "must be a positive integer, got 2.5"),
        ("top_k: true", "must be a positive integer, got true"),
        ("location: 3", "location of memory 'M' must be a non-empty string"),
        # A NUL passed the checker and failed opening the file as a raw ValueError.
        ('location: "a\\u0000b.db"', "location of memory 'M' must not contain a NUL"),
        # Blank: a file named "   " was created in the memory directory.
        ('location: "   "', "location of memory 'M' must be a non-empty string"),
        ("store: [a]", "store of memory 'M' must be a name"),
        ("store: session\n store: ephemeral", "Duplicate field 'store' in memory 'M'"),
        ("refresh_on_read: 1", "refresh_on_read of memory 'M' must be true or false, not 1"),
        ('refresh_on_read: "yes"', "must be true or false, not \"yes\""),
        ("refresh_on_read: yes", "must be true or false, not \"yes\""),
        ("refresh_on_raed: true", "(did you mean 'refresh_on_read'?)"),
    ],
)
def test_invalid_memory_fields(field: str, fragment: str) -> None:
    [(_, _, message)] = errors(f"memory M {{ {field} }}")
    assert fragment in message


def test_undefined_run_targets() -> None:
    found = errors(
        "persona P {}\ncontext C {}\nanchor A {}\nflow F(x: String) {}\n"
        "run Fx()\nrun F(1, 2) as C within P constrained_by [A, Missing]\n"
    )
    messages = [m for _, _, m in found]
    assert "Undefined flow 'Fx' (did you mean 'F'?)" in messages
    assert "'as' expects a persona, but 'C' is a context" in messages
    assert "'within' expects a context, but 'P' is a persona" in messages
    assert "Undefined anchor 'Missing'" in messages
    assert "Flow 'F' takes 1 argument but 2 were given" in messages


def test_a_run_gives_every_parameter_a_value() -> None:
    """A parameter left without an argument would be unbound (and stored as null) when
    the flow reads it: the checker names what is missing, at the run's flow name."""
    found = errors(
        "flow F(x: String, y: Int) {}\n"
        'run F("a")\nrun F(y: 3)\nrun F()\nrun F(1, 2)\nrun F(x: 1, y: 2)\nrun F(1, z: 2)\n'
    )
    assert [(line, message) for line, _, message in found] == [
        (2, "Flow 'F' takes 2 arguments but 1 was given (missing 'y')"),
        (3, "Flow 'F' takes 2 arguments but 1 was given (missing 'x')"),
        (4, "Flow 'F' takes 2 arguments but 0 were given (missing 'x', 'y')"),
        (7, "Flow 'F' has no parameter 'z'"),
    ]


def test_imported_names_stand_for_declarations_made_elsewhere() -> None:
    """`import a.b.{X}` names a persona, context, anchor or tool of another module (not
    read): references accept it; a memory must still be declared here, and a name
    neither imported nor declared is still undefined."""
    axon.compile(
        "import axon.anchors.{NoHallucination, Expert}\n"
        'flow F() { step A { ask: "x" } }\n'
        "run F() as Expert constrained_by [NoHallucination]\n"
        "persona Expert {}\n"  # a declaration here replaces the import, no duplicate
    )
    found = errors(
        'import lib.{M}\nflow F() {}\nrun F() constrained_by [NoBias]\nremember("x") -> M\n'
    )
    assert [m for _, _, m in found] == [
        "Undefined anchor 'NoBias'",
        "'remember' target 'M' is an imported name, not a memory store",
    ]


def test_keys_and_values_of_remember() -> None:
    program = axon.compile(
        "memory N {}\n"
        "flow F(doc: Document) {\n"
        '  step Extract { given: doc ask: "x" output: ContractSummary }\n'
        "  remember(ContractSummary) -> N\n"
        "  remember(Extract.output) -> N\n"
        "  remember(HTTPResponse) -> N\n"
        "}\n"
        'remember("The client prefers short answers") -> N\n'
        'remember("The client prefers short answers") in N\n'
        'remember(42) -> N with { key: "answer", tags: ["t"], importance: 0.8 }\n'
    )
    steps = program.flows[0].steps
    assert [s.key for s in steps if isinstance(s, ir.IRRemember)] == [
        "contract_summary",
        "extract_output",
        "http_response",
    ]
    a, b, c = program.statements
    assert isinstance(a, ir.IRRemember) and isinstance(b, ir.IRRemember)
    assert a.key == b.key and a.key.startswith("the_client_prefers_short_answers_")
    assert isinstance(c, ir.IRRemember)
    assert (c.key, c.options) == ("answer", {"key": "answer", "tags": ["t"], "importance": 0.8})


def test_recall_resolution() -> None:
    program = axon.compile(
        "memory N { top_k: 4 retrieval: keyword }\n"
        'recall("a") from N\n'
        'recall(q) from N with { top_k: 2, tags: ["x"] } as hits\n'
    )
    a, b = program.statements
    assert isinstance(a, ir.IRRecall) and isinstance(b, ir.IRRecall)
    assert (a.query, a.top_k, a.alias, a.retrieval) == ("a", 4, None, "keyword")
    assert (b.query, b.top_k, b.alias, b.filters) == ("q", 2, "hits", {"tags": ["x"]})


def test_unbound_name_at_top_level_is_an_error_with_suggestion() -> None:
    [(line, col, message)] = errors('memory N {}\nlet summary = "s"\nremember(sumary) -> N')
    assert (line, col) == (3, 10)
    assert "Unbound name 'sumary'" in message and "did you mean 'summary'" in message


def test_seed_v01_memory_syntax_compiles_to_spec_ir() -> None:
    program = axon.compile(
        "memory M { store: session backend: in_memory retrieval: semantic decay: 7d }\n"
        "flow Analyze(doc: Document) -> Summary {\n"
        '  step Summarize { given: doc ask: "Summarize" output: ContractSummary }\n'
        "  remember(ContractSummary) -> M\n"
        '  recall("contract types") from M\n'
        '  if confidence < 0.5 -> recall("prior cases") from M else -> remember(Summarize) -> M\n'
        "}\n"
    )
    [memory] = program.memories
    assert memory == ir.IRMemory(
        name="M",
        store="session",
        backend="in_memory",
        retrieval="semantic",
        decay="7d",
        decay_seconds=604800.0,
        top_k=5,
        location=None,
        line=1,
        column=1,
    )
    [flow] = program.flows
    step, remember, recall, branch = flow.steps
    assert isinstance(step, ir.IRStep) and step.output == "ContractSummary"
    assert isinstance(remember, ir.IRRemember)
    assert (remember.expression, remember.memory_target, remember.key) == (
        "ContractSummary",
        "M",
        "contract_summary",
    )
    assert (remember.line, remember.column) == (4, 3)
    assert isinstance(recall, ir.IRRecall)
    assert (recall.query, recall.memory_source, recall.top_k, recall.alias) == (
        "contract types",
        "M",
        5,
        None,
    )
    assert isinstance(branch, ir.IRIf)
    assert branch.condition.text == "confidence < 0.5"
    [then] = branch.then
    [otherwise] = branch.otherwise
    assert isinstance(then, ir.IRRecall) and then.query == "prior cases"
    assert isinstance(otherwise, ir.IRRemember) and otherwise.key == "summarize"
    data = program.to_dict()
    assert data["flows"][0]["steps"][1]["node"] == "IRRemember"
    assert data["memories"][0]["decay_seconds"] == 604800.0


EVERY_CONSTRUCT = Path(__file__).with_name("every_construct.axon")


def _ir_node_classes() -> dict[str, type]:
    """Every IR node class, found by walking the `ir` module (a new node is included)."""
    return {
        name: cls
        for name, cls in vars(ir).items()
        if isinstance(cls, type) and issubclass(cls, ir._Node) and attrs.has(cls)
    }


def _nodes_in(data: object) -> Iterator[dict[str, object]]:
    """Every `{"node": ...}` object in serialised IR, checking the data is plain JSON."""
    if isinstance(data, dict):
        assert all(isinstance(k, str) for k in data), data
        if "node" in data:
            yield data
        for value in data.values():
            yield from _nodes_in(value)
    elif isinstance(data, list):
        for item in data:
            yield from _nodes_in(item)
    else:
        assert data is None or isinstance(data, str | int | float | bool), repr(data)


def test_every_ir_node_serialises_to_plain_json() -> None:
    program = axon.compile(EVERY_CONSTRUCT.read_text(), filename="every_construct.axon")
    data = program.to_dict()
    assert json.loads(json.dumps(data)) == data  # plain JSON: it round-trips unchanged
    classes = _ir_node_classes()
    seen: set[str] = set()
    for node in _nodes_in(data):
        cls = classes[str(node["node"])]
        assert set(node) == {"node"} | {f.name for f in attrs.fields(cls)}, node["node"]
        seen.add(cls.__name__)
    assert seen == set(classes), f"not in the program: {sorted(set(classes) - seen)}"
    assert data["ir_version"] == ir.IR_VERSION


def test_ir_nodes_are_frozen_slotted_and_keep_positions_out_of_equality() -> None:
    program = axon.compile(EVERY_CONSTRUCT.read_text())
    for cls in _ir_node_classes().values():
        assert "__dict__" not in dir(cls), f"{cls.__name__} has no slots"
        assert cls.__setattr__ is not object.__setattr__, f"{cls.__name__} is not frozen"
    moved = axon.compile("\n\n  " + EVERY_CONSTRUCT.read_text().replace("\n", "\n  "))
    assert moved == program
    assert moved.memories[0].line == program.memories[0].line + 2
    assert moved.memories[0].span == (program.memories[0].line + 2, 3, None, None)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        program.memories[0].top_k = 1  # type: ignore[misc]


def test_unknown_step_field_is_a_warning_not_an_error() -> None:
    program = axon.compile('flow F() { step S { ask: "x" otput: Y } }')
    [warning] = program.warnings
    assert "Unknown field 'otput' in step 'S' (did you mean 'output'?)" in warning.message


def test_every_repeated_step_is_an_error_at_the_repeat() -> None:
    found = errors(
        "flow F() {\n"
        '  step S { ask: "x" }\n'
        '  step T { ask: "y" }\n'
        '  step S { ask: "z" }\n'
        '  step T { ask: "w" }\n'
        '  step S { ask: "v" }\n'
        "}\n"
    )
    assert found == [
        (4, 3, "Duplicate step 'S' in flow 'F' (first defined at line 2)"),
        (5, 3, "Duplicate step 'T' in flow 'F' (first defined at line 3)"),
        (6, 3, "Duplicate step 'S' in flow 'F' (first defined at line 2)"),
    ]


def test_a_kind_takes_its_article() -> None:
    found = errors("import lib.{X}\nrun X()\n")
    assert [m for _, _, m in found] == ["'run' expects a flow, but 'X' is an imported name"]


def test_a_bound_name_as_a_memory_says_what_it_is() -> None:
    found = errors(
        'let x = 1\nrecall("a") from x\nflow F() { step S { ask: "q" }\n  remember("a") -> S }\n'
    )
    assert found == [
        (2, 18, "'recall' source 'x' is a bound name (a value), not a memory store"),
        (4, 20, "'remember' target 'S' is a bound name (a value), not a memory store"),
    ]


def test_refresh_on_read_is_a_boolean_field_defaulting_to_false() -> None:
    on, off, default = axon.compile(
        "memory A { decay: 1h refresh_on_read: true }\n"
        "memory B { refresh_on_read: false }\nmemory C {}"
    ).memories
    assert (on.refresh_on_read, off.refresh_on_read, default.refresh_on_read) == (
        True, False, False
    )
    assert on.to_dict()["refresh_on_read"] is True
