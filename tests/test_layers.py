"""The import direction never turns back: lower layers do not import higher ones.

Every `import` counts here, also those inside functions and under
`TYPE_CHECKING`: a backend that needs a runtime type for its annotations still
depends on the runtime. The floor modules (`axon.trace`) import nothing of ours.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

AXON = Path(__file__).resolve().parents[1] / "axon"


def _imports(path: Path) -> set[str]:
    """Every absolute module name `path` imports (relative imports are resolved)."""
    package = ".".join(path.relative_to(AXON.parent).with_suffix("").parts)
    if path.name == "__init__.py":
        package += ".__init__"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: -node.level]
                found.add(".".join([*base, *([node.module] if node.module else [])]))
            else:
                found.add(node.module or "")
    return found


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


@pytest.mark.parametrize(
    "path", sorted((AXON / "memory").rglob("*.py")), ids=lambda p: str(p.relative_to(AXON))
)
def test_memory_never_imports_the_runtime(path: Path) -> None:
    upward = sorted(name for name in _imports(path) if _within(name, "axon.runtime"))
    assert upward == [], f"{path.relative_to(AXON.parent)} imports {upward}"


def test_the_trace_floor_imports_nothing_of_ours() -> None:
    ours = sorted(name for name in _imports(AXON / "trace.py") if _within(name, "axon"))
    assert ours == []


def test_the_runtime_tracer_re_exports_the_floor_types() -> None:
    """Seed 000's imports (`from axon.runtime.tracer import Tracer, TraceEventType`)
    name the very classes the backends emit with."""
    import axon.trace
    from axon.runtime import tracer

    assert tracer.TraceEventType is axon.trace.TraceEventType
    assert tracer.TraceEvent is axon.trace.TraceEvent
    sink: axon.trace.TraceSink = tracer.Tracer()
    assert sink.emit(tracer.TraceEventType.MEMORY_WRITE, data={"key": "k"}) is not None


def _cycles(package: str) -> list[list[str]]:
    """The import cycles among the modules of `package` (strongly connected groups of
    two or more, every import counted; a package's `__init__` is left out)."""
    root = AXON.parent.joinpath(*package.split("."))
    modules = {
        ".".join(p.relative_to(AXON.parent).with_suffix("").parts): p
        for p in root.rglob("*.py")
        if p.name != "__init__.py"
    }
    edges = {
        name: {
            target
            for imported in _imports(path)
            for target in modules
            if target != name and (imported == target or imported.startswith(target + "."))
        }
        for name, path in modules.items()
    }

    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in edges[todo.pop()] - seen:
                seen.add(nxt)
                todo.append(nxt)
        return seen

    reached = {name: reach(name) for name in modules}
    groups = {
        tuple(sorted({name} | {o for o in reached[name] if name in reached[o]}))
        for name in modules
        if name in reached[name]
    }
    return sorted(list(g) for g in groups)


@pytest.mark.parametrize("package", ["axon.compiler"])
def test_no_module_imports_one_that_imports_it(package: str) -> None:
    """checker <-> check_memory_statements <-> check_runs and check_memory <->
    check_tiers were cycles (issue 27): the statement checks took the checker back.
    They now take the symbol table and the reporter; the tier validators a Protocol."""
    assert _cycles(package) == []


def test_the_handle_and_the_session_are_no_cycle() -> None:
    """handle <-> session was a cycle (issue 27): the session imported its handles and
    the handle its session (under TYPE_CHECKING). The handle now knows the session as
    two Protocols (`OperationRunner`, `SessionLoop`)."""
    handle, session = "axon.runtime.handle", "axon.runtime.session"
    assert [g for g in _cycles("axon.runtime") if handle in g and session in g] == []
    assert not any(_within(name, session) for name in _imports(AXON / "runtime" / "handle.py"))


PRIVATE_SESSION_NAME = re.compile(r"\bsession\.(?:sync\.)?_[A-Za-z]\w*")


@pytest.mark.parametrize(
    "path",
    sorted([*(AXON / "repl").rglob("*.py"), *(AXON / "mcp_server").rglob("*.py"),
            AXON / "agent.py"]),
    ids=lambda p: str(p.relative_to(AXON)),
)
def test_the_session_s_users_reach_no_private_name_of_it(path: Path) -> None:
    """The REPL ran its transfers with `session._lock`, `_check_open` and `_call` ("no
    public call for this yet"); it now calls `Session.run_on_loop`."""
    assert PRIVATE_SESSION_NAME.findall(path.read_text(encoding="utf-8")) == []
