"""The typed IR: on-failure nodes, a flow's result name, derived runs, positions as spans."""

from __future__ import annotations

from pathlib import Path

import pytest

import axon
from axon.compiler import ir
from axon.errors import AxonCheckError, AxonRuntimeError
from axon.source import Span

FLOW = "memory N { retrieval: exact }\nflow F() { if true -> raise Boom }\n"


def errors(source: str) -> list[tuple[int, int, str]]:
    with pytest.raises(AxonCheckError) as info:
        axon.compile(source, filename="t.axon")
    return [(d.line, d.column, d.message) for d in info.value.diagnostics]


def on_failure(option: str) -> ir.IROnFailure | None:
    [run] = axon.compile(f"{FLOW}run F() on_failure: {option}\n").runs
    return run.on_failure


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        ("log", ir.IROnFailure(kind="log")),
        ('"log"', ir.IROnFailure(kind="log")),
        ("escalate", ir.IROnFailure(kind="escalate")),
        ("retry", ir.IROnFailure(kind="retry", max_attempts=3)),
        ("retry()", ir.IROnFailure(kind="retry", max_attempts=3)),
        (
            "retry(max_attempts: 2, backoff: exponential)",
            ir.IROnFailure(
                kind="retry",
                max_attempts=2,
                arguments={"max_attempts": 2, "backoff": "exponential"},
            ),
        ),
        ("raise Stop", ir.IROnFailure(kind="raise", error="Stop")),
    ],
)
def test_on_failure_is_a_node_with_defaults_applied(option: str, expected: ir.IROnFailure) -> None:
    assert on_failure(option) == expected


def test_a_run_without_on_failure_has_none() -> None:
    [run] = axon.compile(f"{FLOW}run F()\n").runs
    assert run.on_failure is None
    assert run.to_dict()["on_failure"] is None


@pytest.mark.parametrize(
    ("option", "column", "shown"),
    [
        ('retry(max_attempts: "x")', 27, '"x"'),
        ("retry(max_attempts: 0)", 27, "0"),
        ("retry(max_attempts: 1.5)", 27, "1.5"),
        ("retry(max_attempts: true)", 27, "true"),
    ],
)
def test_retry_max_attempts_must_be_a_positive_integer(
    option: str, column: int, shown: str
) -> None:
    # Once an internal error ("x": int() failed mid-run) or a run that never ran (0).
    assert errors(f"{FLOW}run F() on_failure: {option}\n") == [
        (3, column, f"max_attempts of on_failure retry must be a positive integer, got {shown}")
    ]


@pytest.mark.parametrize(
    ("option", "column"),
    [('{ call: "retry" }', 23), ('{ raise: "Stop" }', 23), ("retry.now()", 21)],
)
def test_on_failure_written_as_a_map_or_other_call_is_invalid(option: str, column: int) -> None:
    # A map that looked like a call once passed the checker and crashed the run.
    [(line, at, message)] = errors(f"{FLOW}run F() on_failure: {option}\n")
    assert (line, at) == (3, column)
    assert message.startswith("Invalid on_failure ")
    assert message.endswith("Valid: log, escalate, retry(...), raise ErrorName")


def test_retry_runs_the_flow_max_attempts_times_then_fails(tmp_path: Path) -> None:
    with axon.Session(memory_dir=tmp_path) as session:
        with pytest.raises(AxonRuntimeError, match="Boom raised in 'F'"):
            session.execute(f"{FLOW}run F() on_failure: retry(max_attempts: 2)\n")
        attempts = [e["data"]["attempt"] for e in session.events if e["event_type"] == "error"]
    assert attempts == [1, 2]


def test_a_flow_result_name_is_the_base_name_of_its_type(tmp_path: Path) -> None:
    source = (
        "memory N { retrieval: exact }\n"
        'flow F() -> List<Party>? { step S { ask: "x" } }\n'
        "run F()\n"
        "remember(List) -> N\n"
        "remember(S) -> N\n"
    )
    program = axon.compile(source)
    [flow] = program.flows
    assert (flow.returns, flow.result_name) == ("List<Party>?", "List")
    assert flow.to_dict()["result_name"] == "List"
    result, step = axon.run(source, memory_dir=tmp_path).records
    assert result["key"] == "list" and result["value"] == step["value"]  # the run bound it
    [flow] = axon.compile("flow G() { }").flows
    assert flow.result_name is None


def test_runs_are_the_run_statements_in_order() -> None:
    program = axon.compile(f"{FLOW}run F()\nlet x = 1\nrun F() on_failure: log\n")
    assert program.runs == tuple(s for s in program.statements if isinstance(s, ir.IRRun))
    assert [r.line for r in program.runs] == [3, 5]
    assert "runs" not in program.to_dict()


def test_every_located_node_has_its_span() -> None:
    program = axon.compile('memory N {}\n  let x = "a"\nremember(x) -> N')
    memory, (let, remember) = program.memories[0], program.statements
    assert memory.span == Span(1, 1)
    assert (let.span, let.line, let.column) == (Span(2, 3), 2, 3)
    assert remember.span == Span.point(3, 1)
