"""What one simulation run measured: totals, per scenario event, per queue, and over time.

- ``duplicates``: consumptions of a message id (queue, offset) already consumed;
  ``lost``: messages below the point the group would resume from (the broker's committed offset,
  or a live owner's position if further) that nobody consumed — at-least-once means 0.
- ``pause``: time a readable queue was pulled by no live consumer (per queue, and queue-seconds
  in total); ``owned twice``: time it was pulled by two or more.
- ``time_to_stable_ms`` per event: from the event until the ownership picture last changed before
  the next event, if it then had every readable queue pulled by exactly one consumer; ``None``
  when it never got there (a duplicated client id, for one).
- ``series``: one sample per ``sample_interval`` — backlog (produced, not yet consumed by anyone),
  queues owned by nobody / twice, running consumers, consumed and produced per second,
  cumulative duplicates.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine import Simulation

__all__ = ["SimulationResult"]


@dataclass
class SimulationResult:
    scenario: str
    strategy: str
    seed: int
    semantics: str
    summary: dict[str, Any]
    events: list[dict[str, Any]]
    queues: list[dict[str, Any]]
    series: dict[str, list[float]]

    @classmethod
    def collect(cls, sim: Simulation, wall_s: float) -> SimulationResult:
        s = sim.scenario
        windows = [(0, "start")] + [(e.at_ms, e.describe()) for e in s.events]
        events: list[dict[str, Any]] = []
        for k, (t_e, what) in enumerate(windows):
            t_next = windows[k + 1][0] if k + 1 < len(windows) else s.duration_ms + 1
            before = [c for c in sim.changes if c[0] < t_next]
            inside = [t for t, _ in before if t >= t_e]
            exact = bool(before) and before[-1][1]
            ttl = (max(inside[-1], t_e) - t_e if inside else 0) if exact else None
            lo, hi = t_e / 1000, min(t_next, s.duration_ms) / 1000
            idx = [i for i, t in enumerate(sim.series["t_s"]) if lo < t <= hi]
            dup_end = sim.series["duplicates"][idx[-1]] if idx else sim.duplicates
            dup_start = sim.series["duplicates"][idx[0] - 1] if idx and idx[0] > 0 else 0
            events.append(
                {
                    "at_ms": t_e,
                    "event": what,
                    "time_to_stable_ms": ttl,
                    "duplicates": dup_end - dup_start,
                    "max_owned_nobody": max((sim.series["owned_nobody"][i] for i in idx), default=0),
                    "max_owned_twice": max((sim.series["owned_twice"][i] for i in idx), default=0),
                }
            )
        committed = sim.broker.offsets
        live: dict[int, int] = {}
        for c in sim.consumers:
            if c.pc.running:
                for mq, pq in c.pc.impl.process_queues.items():
                    q = sim.index[mq]
                    live[q] = max(live.get(q, 0), pq.consumed_offset)
        queues, lost = [], 0
        for q, mq in enumerate(sim.queues):
            resume = max(committed.query(s.group, mq), live.get(q, 0), 0)
            gap = resume - sim.coverage[q].covered_below(resume)
            lost += gap
            queues.append(
                {
                    "queue": f"{mq.broker_name}/{mq.topic}/{mq.queue_id}",
                    "produced": sim.max_offset[q],
                    "consumed": sim.coverage[q].count,
                    "duplicates": sim.dup_by_queue[q],
                    "lost": gap,
                    "pause_ms": sim.pause_ms[q],
                    "owned_twice_ms": sim.twice_ms[q],
                }
            )
        unique = sum(c.count for c in sim.coverage)
        stable: list[int | None] = [e["time_to_stable_ms"] for e in events]
        settled = [t for t in stable if t is not None]
        summary = {
            "duration_s": s.duration_ms / 1000,
            "produced": sim.produced,
            "consumed": sim.consumed,
            "unique_consumed": unique,
            "duplicates": sim.duplicates,
            "lost": lost,
            "backlog_end": sim.produced - unique,
            "max_backlog": max(sim.series["backlog"], default=0),
            "pause_queue_s": sum(sim.pause_ms) / 1000,
            "max_queue_pause_s": max(sim.pause_ms, default=0) / 1000,
            "owned_twice_queue_s": sum(sim.twice_ms) / 1000,
            "max_time_to_stable_s": None if len(settled) < len(stable) else max(settled, default=0) / 1000,
            "never_stable_after": [e["event"] for e in events if e["time_to_stable_ms"] is None],
            "rebalances": sum(c.pc.service.rebalances for c in sim.consumers),
            "notifications": sim.notifications,
            "wall_s": round(wall_s, 3),
        }
        return cls(s.name, s.strategy, s.seed, s.semantics, summary, events, queues, sim.series)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "strategy": self.strategy,
            "seed": self.seed,
            "semantics": self.semantics,
            "summary": self.summary,
            "events": self.events,
            "queues": self.queues,
            "series": self.series,
        }

    def write_json(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=1) + "\n", encoding="utf-8")
        return path

    def format(self) -> str:
        """A few lines for the terminal."""
        m = self.summary
        stable = "never" if m["max_time_to_stable_s"] is None else f"{m['max_time_to_stable_s']:.1f} s"
        lines = [
            (
                f"{self.scenario} [{self.strategy}, {self.semantics}, seed {self.seed}]: {m['duration_s'] / 60:.0f} "
                f"simulated min in {m['wall_s']:.2f} s"
            ),
            (
                f"  produced {m['produced']:,}  consumed {m['consumed']:,}  duplicates {m['duplicates']:,}  lost "
                f"{m['lost']:,}  backlog at end {m['backlog_end']:,} (max {m['max_backlog']:,})"
            ),
            (
                f"  queue pause {m['pause_queue_s']:,.1f} queue-s (max {m['max_queue_pause_s']:.1f} s on one queue)  "
                f"owned twice {m['owned_twice_queue_s']:,.1f} queue-s  slowest to stable {stable}"
            ),
        ]
        for e in self.events:
            ttl = (
                "never stable"
                if e["time_to_stable_ms"] is None
                else f"stable after {e['time_to_stable_ms'] / 1000:.1f} s"
            )
            lines.append(
                f"  {e['at_ms'] / 1000:>7.1f} s  {e['event']:<44} {ttl:<22} dup {e['duplicates']:>7,}  "
                f"nobody≤{e['max_owned_nobody']:<3} twice≤{e['max_owned_twice']}"
            )
        return "\n".join(lines)
