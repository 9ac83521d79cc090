"""Benchmark helpers. Every hot path is timed against a baseline measured in the same run; the
ratio (baseline median / our median, same rounds, interleaved, GC on) is the figure, since absolute
times on a shared machine are noise.

With ``--benchmark-disable`` (CI) the suite runs on small inputs as plain correctness tests. With
timing on (``make bench``) it uses the issue's sizes, prints a ratio table, and writes
``out/bench_ratios.json`` and ``out/bench_ratios.png``.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

RESULTS: list[dict[str, Any]] = []
OUT = Path(__file__).resolve().parent.parent / "out"


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def median_of(fn: Callable[[], Any], rounds: int) -> tuple[float, Any]:
    """Median wall time of ``rounds`` calls, and the last result."""
    times, result = [], None
    for _ in range(rounds):
        t, result = _timed(fn)
        times.append(t)
    return sorted(times)[len(times) // 2], result


@pytest.fixture
def full_size(benchmark) -> bool:
    """True when timing is on: use the issue's sizes."""
    return not benchmark.disabled


@pytest.fixture
def compare(benchmark, request):
    """``compare(ours, baseline, check=..., rounds=..., target_s=..., min_ratio=...)``: time both
    callables the same way and record the ratio of their medians.

    Both callables take prebuilt inputs (build them outside) and return what their user gets. Each
    runs once untimed (the results go to ``check``), then ``rounds`` timed rounds each, interleaved
    (baseline, ours, baseline, ours, ...: neither side always runs on a fresh heap), with the
    garbage collector in its normal state. Ours is timed by pytest-benchmark (its median), the
    baseline by the same clock in the round's setup. Targets are recorded and reported, not asserted
    (a shared machine's noise would make them flaky)."""

    def run(
        ours: Callable[[], Any],
        baseline: Callable[[], Any],
        *,
        check: Callable[[Any, Any], None],
        rounds: int = 5,
        target_s: float | None = None,
        min_ratio: float | None = None,
        label: str = "plain Python",
        baseline_rounds: int | None = None,
    ) -> Any:
        if baseline_rounds is not None:  # the older spelling: now the rounds of both sides
            rounds = baseline_rounds
        result, base_result = ours(), baseline()
        check(result, base_result)
        if benchmark.disabled:
            benchmark(ours)
            return result
        base_times: list[float] = []

        def setup() -> None:
            t, _ = _timed(baseline)
            base_times.append(t)

        benchmark.pedantic(ours, setup=setup, rounds=rounds, iterations=1)
        base_t = statistics.median(base_times)
        ours_t = benchmark.stats.stats.median
        ratio = base_t / ours_t
        row = {
            "name": request.node.name,
            "baseline": label,
            "baseline_s": base_t,
            "ours_s": ours_t,
            "ratio": ratio,
            "rounds": rounds,
            "target_s": target_s,
            "min_ratio": min_ratio,
        }
        benchmark.extra_info.update(row)
        RESULTS.append(row)
        return result

    return run


@pytest.fixture
def alone(benchmark, request):
    """``alone(ours, rounds=..., target_s=..., reference=...)``: a timed path with no baseline
    (median recorded). ``reference(ours_median_s) -> (label, seconds, target_s)``, called after
    the timing, adds a figure measured another way (e.g. a time taken inside Rust) to the row,
    shown in the baseline columns without a ratio."""

    def run(
        ours: Callable[[], Any],
        *,
        rounds: int = 5,
        target_s: float | None = None,
        reference: Callable[[float], tuple[str, float, float | None]] | None = None,
    ) -> Any:
        if benchmark.disabled:
            return benchmark(ours)
        result = benchmark.pedantic(ours, rounds=rounds, iterations=1, warmup_rounds=1)
        ours_t = benchmark.stats.stats.median
        label, ref_s = None, None
        if reference is not None:
            label, ref_s, target_s = reference(ours_t)
        row = {
            "name": request.node.name,
            "baseline": label,
            "baseline_s": ref_s,
            "ours_s": ours_t,
            "ratio": None,
            "rounds": rounds,
            "target_s": target_s,
            "min_ratio": None,
        }
        RESULTS.append(row)
        return result

    return run


@pytest.fixture
def record(request):
    """``record(ours_s, rounds=..., label=..., reference_s=..., target_s=...)``: a row the test
    timed itself (e.g. interleaved with a figure measured inside Rust); the reference shows in
    the baseline columns, without a ratio."""

    def run(
        ours_s: float,
        *,
        rounds: int,
        label: str | None = None,
        reference_s: float | None = None,
        target_s: float | None = None,
    ) -> None:
        RESULTS.append(
            {
                "name": request.node.name,
                "baseline": label,
                "baseline_s": reference_s,
                "ours_s": ours_s,
                "ratio": None,
                "rounds": rounds,
                "target_s": target_s,
                "min_ratio": None,
            }
        )

    return run


def _met(r: dict[str, Any]) -> str:
    checks = []
    if r["target_s"] is not None:
        checks.append(r["ours_s"] <= r["target_s"])
    if r["min_ratio"] is not None and r["ratio"] is not None:
        checks.append(r["ratio"] >= r["min_ratio"])
    if not checks:
        return ""
    return "met" if all(checks) else "MISSED"


def pytest_terminal_summary(terminalreporter) -> None:
    if not RESULTS:
        return
    tr = terminalreporter
    tr.section("mqbalance: same-run ratios (medians)")
    tr.write_line(
        f"{'benchmark':<58} {'ours (ms)':>10} {'baseline (ms)':>14} {'ratio':>9} {'target':>14} {'':>6}  baseline"
    )
    for r in RESULTS:
        target = []
        if r["target_s"] is not None:
            target.append(f"<={r['target_s'] * 1e3:g}ms")
        if r["min_ratio"] is not None:
            target.append(f">={r['min_ratio']:g}x")
        base = "" if r["baseline_s"] is None else f"{r['baseline_s'] * 1e3:.1f}"
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.1f}x"
        tr.write_line(
            f"{r['name']:<58} {r['ours_s'] * 1e3:>10.2f} {base:>14} {ratio:>9} {' '.join(target):>14} "
            f"{_met(r):>6}  {r['baseline'] or ''}"
        )
    OUT.mkdir(exist_ok=True)
    (OUT / "bench_ratios.json").write_text(json.dumps(RESULTS, indent=2))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    rows = [r for r in RESULTS if r["ratio"] is not None]
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(rows) + 1.5))
    names = [r["name"] for r in rows]
    ax.barh(names, [r["ratio"] for r in rows], color="#3b7dd8")
    ax.set_xscale("log")
    ax.set_xlabel("speed-up over the same-run baseline (log scale)")
    ax.invert_yaxis()
    ax.axvline(1, color="grey", lw=0.8)
    for y, r in enumerate(rows):
        ax.text(r["ratio"], y, f" {r['ratio']:.1f}x ({r['ours_s'] * 1e3:.1f} ms)", va="center", fontsize=8)
    ax.set_title("mqbalance vs the same-run baseline (medians)")
    fig.tight_layout()
    fig.savefig(OUT / "bench_ratios.png", dpi=110)
    tr.write_line(f"wrote {OUT / 'bench_ratios.png'}")
