"""`forget`: its three forms parse, and the checker's rules give errors with positions.

`forget("k") from M` and `forget k from M` delete one entry by key, `forget from M
with { tags | where }` what a filter matches; neither (and both) are errors, as are
undeclared memories, options other than the filters, and keys that are not strings.
"""

from __future__ import annotations

import pytest

import axon
from axon.compiler import ast, ir
from axon.errors import AxonCheckError, AxonSyntaxError

DECL = "memory Notes { store: session }\npersona Poet { tone: warm }\n"


def errors(text: str) -> list[tuple[str, int, int]]:
    with pytest.raises(AxonCheckError) as info:
        axon.compile(DECL + text, filename="t.axon")
    return [(d.message, d.line, d.column) for d in info.value.diagnostics]


def only_error(text: str) -> tuple[str, int, int]:
    found = errors(text)
    assert len(found) == 1, found
    return found[0]


def forget_ir(text: str) -> ir.IRForget:
    program = axon.compile(DECL + text)
    [stmt] = [s for s in program.statements if isinstance(s, ir.IRForget)]
    return stmt


# ---------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("text", "key", "options"),
    [
        ('forget("k") from Notes', ast.Literal("k"), None),
        ("forget k from Notes", ast.Name(("k",)), None),
        ("forget(k.output) from Notes", ast.Name(("k", "output")), None),
        (
            'forget from Notes with { tags: ["d"] }',
            None,
            ast.MapValue((ast.Field("tags", ast.ListValue((ast.Literal("d"),))),)),
        ),
        ("forget from Notes", None, None),
    ],
)
def test_the_three_forms_parse(text: str, key: ast.Value | None, options: object) -> None:
    [stmt] = axon.parse(text).items
    assert stmt == ast.Forget(key, "Notes", options)  # type: ignore[arg-type]
    assert (stmt.span.line, stmt.span.column) == (1, 1)
    assert isinstance(stmt, ast.Forget)
    assert (stmt.source_span.line, stmt.source_span.column) == (1, text.index("Notes") + 1)


def test_forget_parses_in_flows_and_branches_and_is_a_name_elsewhere() -> None:
    program = axon.parse(
        "let forget = 1\n"
        "flow F() {\n  forget x from Notes\n  if x -> forget(\"y\") from Notes\n}\n"
    )
    let, flow = program.items
    assert isinstance(let, ast.Let) and let.name == "forget"
    assert isinstance(flow, ast.Flow)
    first, branch = flow.body
    assert isinstance(first, ast.Forget) and first.span.line == 3
    assert isinstance(branch, ast.If) and isinstance(branch.then[0], ast.Forget)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ('forgett("a") from Notes', "did you mean 'forget'?"),
        ('forget("a") Notes', "expected"),
        ('forget("a" from Notes', "expected"),
    ],
)
def test_syntax_errors_of_forget(text: str, wanted: str) -> None:
    with pytest.raises(AxonSyntaxError) as info:
        axon.parse(text)
    assert wanted in info.value.message
    assert info.value.span.line == 1


# ---------------------------------------------------------------- the IR


def test_a_key_and_a_filter_lower_to_ir_forget() -> None:
    by_key = forget_ir('forget("draft_1") from Notes')
    assert by_key == ir.IRForget(
        memory_source="Notes", key=ir.IRLiteral("draft_1"), key_text="draft_1", line=3, column=1
    )
    by_name = forget_ir('let k = "a"\nforget k from Notes')
    assert by_name.key == ir.IRRef(("k",)) and by_name.key_text == "k"
    assert (by_name.line, by_name.column) == (4, 1)
    by_filter = forget_ir(
        'forget from Notes with { tags: ["draft"], where: { project: "apollo", n: [1, 2] } }'
    )
    assert by_filter.key is None and by_filter.key_text is None
    assert by_filter.filters == {"tags": ["draft"], "project": "apollo", "n": [1, 2]}
    assert by_filter.to_dict()["node"] == "IRForget"


def test_forget_in_a_flow_is_checked_like_the_top_level() -> None:
    program = axon.compile(DECL + 'flow F(k) {\n  forget k from Notes\n}\nrun F("a")')
    [flow] = program.flows
    [stmt] = flow.steps
    assert isinstance(stmt, ir.IRForget) and stmt.key == ir.IRRef(("k",))
    message, line, column = only_error('flow F() {\n  forget from Notes with { tag: ["a"] }\n}')
    assert "did you mean 'tags'?" in message and (line, column) == (4, 28)


# ---------------------------------------------------------------- checker errors


def test_the_source_must_be_a_declared_memory() -> None:
    assert only_error('forget("a") from Notse') == (
        "Undefined memory 'Notse' (did you mean 'Notes'?)", 3, 18
    )
    assert only_error('forget("a") from Poet') == (
        "'forget' source 'Poet' is a persona, not a memory store", 3, 18
    )
    assert only_error('forget from Poet with { tags: ["x"] }') == (
        "'forget' source 'Poet' is a persona, not a memory store", 3, 13
    )


def test_forget_needs_a_key_or_a_filter() -> None:
    message, line, column = only_error("forget from Notes")
    assert message.startswith("forget from Notes needs a key or a filter")
    assert "there is no statement that deletes every entry" in message
    assert "with { tags: [...] }" in message and (line, column) == (3, 1)
    message, line, column = only_error("forget from Notes with {}")
    assert "needs a key or a filter" in message and (line, column) == (3, 19)


def test_a_key_and_a_filter_together_are_an_error() -> None:
    message, line, column = only_error('forget("a") from Notes with { tags: ["x"] }')
    assert message.startswith("forget takes a key or a filter, not both")
    assert (line, column) == (3, 24)


@pytest.mark.parametrize(
    ("text", "wanted", "column"),
    [
        ('forget from Notes with { tgas: ["x"] }', "Unknown option 'tgas' in forget (did you "
         "mean 'tags'?). Valid: tags, where", 26),
        ('forget from Notes with { wher: { a: 1 } }', "(did you mean 'where'?)", 26),
        ("forget from Notes with { top_k: 3 }",
         "'top_k' is a recall option, not valid in forget. Valid: tags, where", 26),
        ("forget from Notes with { importance: 1 }",
         "'importance' is a remember option, not valid in forget", 26),
        ('forget from Notes with { key: "a" }',
         "'key' is not an option of forget: write the key before from, forget(\"a\") from M", 26),
        ("forget from Notes with { type: reflex }", "not valid in forget", 26),
        ('forget from Notes with { tags: ["a"], tags: ["b"] }',
         "Duplicate option 'tags' in forget", 39),
        ('forget from Notes with { tags: "a" }', "tags must be a list of strings", 32),
        ("forget from Notes with { where: 3 }", "where in forget must be a map", 33),
        ('forget from Notes with { tags: ["a"], where: { tags: ["b"] } }',
         "Filter 'tags' given as an option and in where", 48),
        ("forget from Notes with { where: { a: { b: 1 } } }",
         "where: unknown operator 'b' for 'a'", 40),
    ],
)
def test_options_of_forget_are_a_closed_set(text: str, wanted: str, column: int) -> None:
    message, line, col = only_error(text)
    assert wanted in message
    assert (line, col) == (3, column)


@pytest.mark.parametrize(
    ("text", "wanted", "column"),
    [
        ("forget(3) from Notes", "The key of forget must be a string or a name bound to one, "
         "got 3", 8),
        ('forget(["a"]) from Notes', "must be a string or a name bound to one", 9),
        ('forget("") from Notes', "key of forget must be a non-empty string", 8),
        ('forget("  ") from Notes', "key of forget must be a non-empty string", 8),
        ("forget nobody from Notes", "Unbound name 'nobody' in forget", 8),
    ],
)
def test_the_key_is_a_string_or_a_bound_name(text: str, wanted: str, column: int) -> None:
    message, line, col = only_error(text)
    assert wanted in message
    assert (line, col) == (3, column)


def test_an_unbound_key_in_a_flow_is_a_warning_not_an_error() -> None:
    program = axon.compile(DECL + "flow F() {\n  forget nobody from Notes\n}")
    [warning] = program.warnings
    assert "Unbound name 'nobody' in forget" in warning.message
    assert (warning.line, warning.column) == (4, 10)


def test_every_problem_is_reported_at_once_in_order() -> None:
    found = errors('forget from Notes\nforget(1) from Nope\nforget from Notes with { x: 1 }')
    assert [(line, col) for _, line, col in found] == [(3, 1), (4, 8), (4, 16), (5, 26)]
