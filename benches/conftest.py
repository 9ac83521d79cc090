"""Benchmark helpers. Every hot path is timed against a baseline measured in the same run; the
ratio (baseline time / our time) is the figure, since absolute times on a shared machine are noise.

With ``--benchmark-disable`` (CI) the suite runs on small inputs as plain correctness tests. With
timing on (``make bench``) it uses the issue's sizes, prints a ratio table, and writes
``out/bench_ratios.json`` and ``out/bench_ratios.png``.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

RESULTS: list[dict[str, Any]] = []
OUT = Path(__file__).resolve().parent.parent / "out"


def best_of(fn: Callable[[], Any], rounds: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(rounds):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


@pytest.fixture
def full_size(benchmark) -> bool:
    """True when timing is on: use the issue's sizes."""
    return not benchmark.disabled


@pytest.fixture
def compare(benchmark, request):
    """``compare(ours, baseline, target_s=..., baseline_rounds=...)``: time both, check they agree
    (the caller's ``check``), record the ratio of best times."""

    def run(
        ours: Callable[[], Any],
        baseline: Callable[[], Any],
        *,
        check: Callable[[Any, Any], None],
        target_s: float | None = None,
        baseline_rounds: int = 1,
        label: str = "plain Python",
    ) -> Any:
        base_t, base_result = best_of(baseline, baseline_rounds)
        result = benchmark(ours)
        check(result, base_result)
        if benchmark.disabled:
            return result
        ours_t = benchmark.stats.stats.min
        ratio = base_t / ours_t
        benchmark.extra_info.update(baseline=label, baseline_s=base_t, ours_s=ours_t, ratio=ratio, target_s=target_s)
        RESULTS.append(
            {
                "name": request.node.name,
                "baseline": label,
                "baseline_s": base_t,
                "ours_s": ours_t,
                "ratio": ratio,
                "target_s": target_s,
            }
        )
        if target_s is not None:
            assert ours_t <= target_s, f"{request.node.name}: {ours_t * 1e3:.1f} ms > target {target_s * 1e3:.0f} ms"
        return result

    return run


def pytest_terminal_summary(terminalreporter) -> None:
    if not RESULTS:
        return
    tr = terminalreporter
    tr.section("mqbalance: same-run ratios")
    tr.write_line(f"{'benchmark':<58} {'ours (ms)':>10} {'baseline (ms)':>14} {'ratio':>9} {'target (ms)':>12}")
    for r in RESULTS:
        target = "" if r["target_s"] is None else f"{r['target_s'] * 1e3:.0f}"
        tr.write_line(
            f"{r['name']:<58} {r['ours_s'] * 1e3:>10.2f} {r['baseline_s'] * 1e3:>14.1f} {r['ratio']:>8.0f}x "
            f"{target:>12}"
        )
    OUT.mkdir(exist_ok=True)
    (OUT / "bench_ratios.json").write_text(json.dumps(RESULTS, indent=2))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(RESULTS) + 1.5))
    names = [r["name"] for r in RESULTS]
    ax.barh(names, [r["ratio"] for r in RESULTS], color="#3b7dd8")
    ax.set_xscale("log")
    ax.set_xlim(left=1)
    ax.set_xlabel("speed-up over the same-run baseline (log scale)")
    ax.invert_yaxis()
    for y, r in enumerate(RESULTS):
        ax.text(r["ratio"], y, f" {r['ratio']:.0f}x ({r['ours_s'] * 1e3:.1f} ms)", va="center", fontsize=8)
    ax.set_title("mqbalance vs plain-Python reference (same run)")
    fig.tight_layout()
    fig.savefig(OUT / "bench_ratios.png", dpi=110)
    tr.write_line(f"wrote {OUT / 'bench_ratios.png'}")
