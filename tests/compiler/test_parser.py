"""The parser: every construct of docs/language.md parses to the AST it means, with exact spans."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import axon
from axon.compiler import ast
from axon.errors import AxonSyntaxError


def only(source: str) -> object:
    [item] = axon.parse(source).items
    return item


def test_memory_declaration_fields_and_position() -> None:
    program = axon.parse("\n\n  memory LongTermKnowledge { store: persistent  backend: sqlite }")
    [decl] = program.items
    assert isinstance(decl, ast.Declaration)
    assert (decl.kind, decl.name) == ("memory", "LongTermKnowledge")
    assert [f.name for f in decl.fields] == ["store", "backend"]
    assert (decl.span.line, decl.span.column) == (3, 3)
    assert (decl.fields[1].span.line, decl.fields[1].span.column) == (3, 49)


def test_commas_between_fields_are_optional_and_comments_ignored() -> None:
    a = axon.parse("memory M { store: session, decay: 7d, top_k: 3 }")
    b = axon.parse(
        "// a comment\nmemory M {\n  store: session /* inline */\n  decay: 7d\n  top_k: 3,\n}"
    )
    assert a == b  # spans are excluded from equality


@pytest.mark.parametrize("text", ["500ms", "30s", "15m", "1.5h", "7d", "2w", "1h30m", "1d12h"])
def test_durations_are_single_tokens(text: str) -> None:
    decl = only(f"memory M {{ decay: {text} }}")
    assert isinstance(decl, ast.Declaration)
    assert decl.fields[0].value == ast.Duration(text)


def test_remember_forms() -> None:
    call = only('remember(ContractSummary) -> Notes with { key: "k", tags: ["a"] }')
    prep = only('remember ContractSummary in Notes with { key: "k", tags: ["a"] }')
    assert call == prep
    assert isinstance(call, ast.Remember)
    assert call.value == ast.Name(("ContractSummary",))
    assert call.target == "Notes"
    assert call.options is not None and [f.name for f in call.options.fields] == ["key", "tags"]
    dotted = only("remember(Extract.output) -> Notes")
    assert isinstance(dotted, ast.Remember) and dotted.value == ast.Name(("Extract", "output"))
    literal = only('remember("The client prefers short answers") -> Prefs')
    assert isinstance(literal, ast.Remember)
    assert literal.value == ast.Literal("The client prefers short answers")


def test_recall_forms_with_options_and_alias_in_either_order() -> None:
    a = only("recall(question) from Notes with { top_k: 3 } as hits")
    b = only("recall(question) from Notes as hits with { top_k: 3 }")
    c = only("recall question from Notes as hits with { top_k: 3 }")
    assert a == b == c
    assert isinstance(a, ast.Recall) and a.alias == "hits" and a.source == "Notes"
    plain = only('recall("contract types") from LongTermKnowledge')
    assert isinstance(plain, ast.Recall)
    assert plain.query == ast.Literal("contract types") and plain.alias is None


def test_exact_positions_of_remember_and_recall() -> None:
    program = axon.parse(
        'memory M {}\nflow F() {\n    remember("x") -> M\n  recall("y") from M\n}\n'
        'recall("z") from M\n'
    )
    flow = program.items[1]
    assert isinstance(flow, ast.Flow)
    remember, recall = flow.body
    assert (remember.span.line, remember.span.column) == (3, 5)
    assert (recall.span.line, recall.span.column) == (4, 3)
    top = program.items[2]
    assert (top.span.line, top.span.column) == (6, 1)


def test_whole_surface_parses() -> None:
    source = """
    import axon.legal.{ContractSchema, RiskAnalysis}
    import std.tools
    persona Expert { domain: ["law"], tone: precise, confidence_threshold: 0.85, cite: true }
    context Review { memory: session, depth: exhaustive, max_tokens: 4096 }
    anchor NoLies { require: source_citation, on_violation: raise AnchorBreachError }
    tool Search { provider: brave, timeout: 10s, fallback: fallback("none found") }
    intent Extract { given: Document, ask: "Extract", output: List<Party> }
    type Score(0.0..1.0)
    type Party { name: FactualClaim, roles: List<String>, note: String? }
    type Strong where confidence >= 0.85 and verified == true
    memory M { store: session }
    flow Analyze(doc: Document, depth: Int) -> Report {
      step Extract { given: doc ask: "Extract parties" use: Search("q") output: Entities }
      step Assess {
        given: Extract.output
        probe doc for [risks]
        confidence_floor: 0.8
      }
      probe doc for [parties, dates]
      reason about Risks { given: Assess.output, depth: 3 }
      reason { show_work: true }
      validate Assess.output against Schema {
        strict: true
        if confidence < 0.80 -> refine(max_attempts: 2)
        if structural_mismatch -> raise ValidationError
      }
      refine { max_attempts: 3 }
      weave [Extract.output, Assess.output] into Report { format: Structured }
      weave [Extract.output] into Short
      use Search("contracts", limit: 3)
      let threshold = 0.5
      if confidence > threshold -> remember(Report) -> M else -> recall("old") from M
      if flagged -> { remember(Report) -> M  recall("x") from M as xs } else -> escalate
    }
    run Analyze(myContract.pdf, depth: 2) as Expert within Review constrained_by [NoLies]
      on_failure: retry(backoff: exponential) output_to: "out.json" effort: high
    let x = [1, 2, "three", true, -4.5]
    remember x in M
    recall x from M
    """
    program = axon.parse(source)
    kinds = [type(item).__name__ for item in program.items]
    assert kinds == [
        "Import",
        "Import",
        "Declaration",
        "Declaration",
        "Declaration",
        "Declaration",
        "Declaration",
        "TypeDecl",
        "TypeDecl",
        "TypeDecl",
        "Declaration",
        "Flow",
        "Run",
        "Let",
        "Remember",
        "Recall",
    ]
    flow = program.items[11]
    assert isinstance(flow, ast.Flow)
    assert [type(s).__name__ for s in flow.body] == [
        "Step",
        "Step",
        "Probe",
        "Reason",
        "Reason",
        "Validate",
        "Refine",
        "Weave",
        "Weave",
        "Use",
        "Let",
        "If",
        "If",
    ]
    run = program.items[12]
    assert isinstance(run, ast.Run)
    assert (run.persona, run.context, run.anchors) == ("Expert", "Review", ("NoLies",))
    assert [f.name for f in run.options] == ["on_failure", "output_to", "effort"]
    let = program.items[13]
    assert isinstance(let, ast.Let) and isinstance(let.value, ast.ListValue)


@pytest.mark.parametrize(
    ("source", "message", "line", "column"),
    [
        ("memory M { store persistent }", "expected ':' after field name 'store'", 1, 18),
        ("memroy M { }", "unknown keyword 'memroy' (did you mean 'memory'?)", 1, 1),
        ('memory M { store: "abc }', "unterminated string", 1, 19),
        ("memory M {\n  store: session\n", "unexpected end of input", 2, 17),
        ("flow F() {\n  step S { ask: 1 }\n  @\n}", "unexpected character '@'", 3, 3),
        ("remember(x) M", "unexpected 'M': expected one of '->', 'in'", 1, 13),
        # an `if` as the branch of an `if`: at the inner `if`, not at its condition
        ("flow F() {\n  if a -> if b -> use T(a)\n}", "an 'if' cannot be the branch", 2, 11),
        ("flow F() {\n  if a -> use T(a) else -> if b -> use T(b)\n}",
         "write it in a block, -> { if ... }", 2, 28),
    ],
)
def test_syntax_errors_say_what_was_expected(
    source: str, message: str, line: int, column: int
) -> None:
    with pytest.raises(AxonSyntaxError) as info:
        axon.parse(source, filename="prog.axon")
    err = info.value
    assert message in err.message
    assert (err.line, err.column) == (line, column)
    rendered = str(err)
    assert rendered.startswith(f"prog.axon:{line}:{column}: error: ")
    source_line, caret_line = rendered.splitlines()[1:3]
    gutter = source_line.index("| ") + 2
    # the echoed line is the source line, and the caret sits under the reported column
    assert source_line[gutter:] == source.splitlines()[line - 1]
    assert caret_line.index("^") == gutter + column - 1


def test_end_of_input_inside_a_block_is_incomplete() -> None:
    with pytest.raises(AxonSyntaxError) as info:
        axon.parse("memory M {\n  store: persistent")
    assert info.value.incomplete
    with pytest.raises(AxonSyntaxError) as info:
        axon.parse("memory M { store persistent }")
    assert not info.value.incomplete


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=200))
def test_arbitrary_text_raises_only_syntax_errors(text: str) -> None:
    try:
        axon.parse(text)
    except AxonSyntaxError as err:
        assert err.line >= 0 and err.column >= 0
        str(err)  # rendering never fails either


_TOKENS = st.sampled_from(
    [
        "memory",
        "M",
        "{",
        "}",
        "(",
        ")",
        "[",
        "]",
        ":",
        ",",
        "->",
        "remember",
        "recall",
        "from",
        "in",
        "with",
        "as",
        "flow",
        "step",
        "run",
        "if",
        "else",
        "let",
        "=",
        '"s"',
        "7d",
        "1.5",
        "-2",
        "store",
        "persistent",
        ".",
        "<",
        ">",
        "?",
        "raise",
        "type",
        "..",
        "\n",
        " ",
        "//c\n",
        "/*",
        "*/",
        "'q",
        "import",
        ".{",
    ]
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_TOKENS, max_size=40))
def test_token_soup_raises_only_syntax_errors(tokens: list[str]) -> None:
    with contextlib.suppress(AxonSyntaxError):
        axon.parse(" ".join(tokens))
