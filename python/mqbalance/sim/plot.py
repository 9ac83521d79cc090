"""PNG plots of simulation results (matplotlib, imported only here; ``mqbalance[plot]``).

- ``timeline.png``: backlog; queues pulled by nobody / by two or more; consumed and produced per
  second — with the scenario's events marked.
- ``queues.png``: per queue, pause time and duplicates.
- ``compare.png``: several strategies on one scenario: backlog over time and the totals side by side
  (duplicates, pause, owned twice, max backlog).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mqbalance.sim.metrics import SimulationResult

__all__ = ["plot_result", "plot_comparison"]


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _mark_events(ax: Any, result: SimulationResult, label: bool) -> None:
    for e in result.events[1:]:
        x = e["at_ms"] / 60_000
        ax.axvline(x, color="grey", linestyle="--", linewidth=0.8)
        if label:
            ax.annotate(
                e["event"],
                (x, 1),
                xycoords=("data", "axes fraction"),
                rotation=90,
                fontsize=7,
                va="top",
                ha="right",
                color="dimgrey",
            )


def plot_result(result: SimulationResult, out: str | Path) -> list[Path]:
    """Write ``timeline.png`` and ``queues.png`` into ``out``; returns the paths."""
    plt = _pyplot()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    s = result.series
    minutes = [t / 60 for t in s["t_s"]]
    fig, axes = plt.subplots(3, 1, figsize=(10, 8), sharex=True)
    axes[0].plot(minutes, s["backlog"], color="tab:red")
    axes[0].set_ylabel("backlog (messages)")
    axes[0].set_title(
        f"{result.scenario} — {result.strategy}, RocketMQ {result.semantics} semantics, seed {result.seed}"
    )
    axes[1].step(minutes, s["owned_nobody"], where="post", label="pulled by nobody", color="tab:orange")
    axes[1].step(minutes, s["owned_twice"], where="post", label="pulled twice or more", color="tab:purple")
    axes[1].set_ylabel("queues")
    axes[1].legend(loc="upper right", fontsize=8)
    axes[2].plot(minutes, s["produced_per_s"], label="produced/s", color="tab:blue", linewidth=0.8)
    axes[2].plot(minutes, s["consumed_per_s"], label="consumed/s", color="tab:green", linewidth=0.8)
    axes[2].set_ylabel("messages / s")
    axes[2].set_xlabel("simulated time (min)")
    axes[2].legend(loc="upper right", fontsize=8)
    for i, ax in enumerate(axes):
        _mark_events(ax, result, label=i == 0)
    fig.tight_layout()
    timeline = out / "timeline.png"
    fig.savefig(timeline, dpi=100)
    plt.close(fig)

    names = [q["queue"] for q in result.queues]
    fig, axes = plt.subplots(2, 1, figsize=(max(8, len(names) * 0.12), 6), sharex=True)
    axes[0].bar(range(len(names)), [q["pause_ms"] / 1000 for q in result.queues], color="tab:orange")
    axes[0].set_ylabel("paused (s)")
    axes[0].set_title(f"{result.scenario} — per queue")
    axes[1].bar(range(len(names)), [q["duplicates"] for q in result.queues], color="tab:purple")
    axes[1].set_ylabel("duplicates")
    step = max(1, len(names) // 32)
    axes[1].set_xticks(range(0, len(names), step), names[::step], rotation=90, fontsize=6)
    fig.tight_layout()
    queues = out / "queues.png"
    fig.savefig(queues, dpi=100)
    plt.close(fig)
    return [timeline, queues]


def plot_comparison(results: list[SimulationResult], out: str | Path) -> Path:
    """``compare.png``: the same scenario under several strategies."""
    plt = _pyplot()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    fig = plt.figure(figsize=(11, 7))
    grid = fig.add_gridspec(2, 4)
    top = fig.add_subplot(grid[0, :])
    for r in results:
        top.plot([t / 60 for t in r.series["t_s"]], r.series["backlog"], label=r.strategy, linewidth=1)
    _mark_events(top, results[0], label=True)
    top.set_ylabel("backlog (messages)")
    top.set_xlabel("simulated time (min)")
    top.set_title(f"{results[0].scenario}: strategies compared")
    top.legend(fontsize=8, loc="center left")
    metrics = [
        ("duplicates", "duplicates"),
        ("pause_queue_s", "pause (queue-s)"),
        ("owned_twice_queue_s", "owned twice (queue-s)"),
        ("max_backlog", "max backlog (messages)"),
    ]
    for i, (key, title) in enumerate(metrics):
        ax = fig.add_subplot(grid[1, i])
        values = [r.summary[key] if r.summary[key] is not None else float("nan") for r in results]
        ax.bar(range(len(results)), values, color=[f"C{k}" for k in range(len(results))])
        ax.set_xticks(range(len(results)), [r.strategy for r in results], rotation=30, fontsize=7, ha="right")
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    path = out / "compare.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
