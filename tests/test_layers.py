"""The import direction never turns back: lower layers do not import higher ones.

Every `import` counts here, also those inside functions and under
`TYPE_CHECKING`: a backend that needs a runtime type for its annotations still
depends on the runtime. The floor modules (`axon.trace`) import nothing of ours.
"""

from __future__ import annotations

import ast
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
