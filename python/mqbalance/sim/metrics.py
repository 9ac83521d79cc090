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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mqbalance.allocation.models import MessageQueue
from mqbalance.sim.coverage import Coverage
from mqbalance.sim.model import Scenario

__all__ = ["MetricsRecorder", "EndState", "SimulationResult"]

SERIES = (
    "t_s",
    "backlog",
    "owned_nobody",
    "owned_twice",
    "consumers",
    "consumed_per_s",
    "produced_per_s",
    "duplicates",
)


@dataclass(frozen=True, slots=True)
class EndState:
    """What the results need from the cluster when they are taken, per queue index: how many
    messages the queue holds (its max offset), where the group would resume reading it (the
    broker's committed offset, or a live owner's position if further), and the rebalances run."""

    messages: Sequence[int]
    resume: Sequence[int]
    rebalances: int


class MetricsRecorder:
    """The simulation's measurements, fed by the engine as it runs; :meth:`result` turns them into a
    :class:`SimulationResult`. Queues are numbered in the order they are added (every queue that
    ever existed); ``coverage[q]`` holds the message ids consumed from queue ``q``.

    >>> m = MetricsRecorder(sample_interval_ms=1_000)
    >>> q = m.add_queue(MessageQueue("T", "broker-a", 0))
    >>> m.produced(10); m.consumed(q, 0, 6); m.consumed(q, 4, 6)  # a new owner restarts from offset 4
    >>> m.total_consumed, m.total_duplicates, m.duplicates_by_queue, m.backlog()
    (12, 2, [2], 0)
    """

    __slots__ = (
        "sample_interval_ms",
        "queues",
        "coverage",
        "duplicates_by_queue",
        "pause_ms",
        "twice_ms",
        "total_produced",
        "total_consumed",
        "total_duplicates",
        "notifications",
        "changes",
        "series",
        "_last_sample",
    )

    def __init__(self, *, sample_interval_ms: int) -> None:
        self.sample_interval_ms = sample_interval_ms
        self.queues: list[MessageQueue] = []
        self.coverage: list[Coverage] = []
        self.duplicates_by_queue: list[int] = []
        self.pause_ms: list[int] = []  # pulled by no live consumer
        self.twice_ms: list[int] = []  # pulled by two or more
        self.total_produced = self.total_consumed = self.total_duplicates = self.notifications = 0
        self.changes: list[tuple[int, bool]] = []  # (time, every readable queue pulled by exactly one consumer)
        self.series: dict[str, list[float]] = {k: [] for k in SERIES}
        self._last_sample = (0, 0)

    # ---- fed by the engine ------------------------------------------------------------------------
    def add_queue(self, mq: MessageQueue) -> int:
        """A new queue; returns its index."""
        self.queues.append(mq)
        self.coverage.append(Coverage())
        self.duplicates_by_queue.append(0)
        self.pause_ms.append(0)
        self.twice_ms.append(0)
        return len(self.queues) - 1

    def produced(self, n: int) -> None:
        self.total_produced += n

    def consumed(self, q: int, start: int, n: int) -> None:
        """Queue ``q``'s offsets ``[start, start + n)`` consumed (again, for those already seen)."""
        self.total_consumed += n
        cov = self.coverage[q]
        ends = cov.ends
        if ends and ends[-1] == start:  # the usual case: the owner continues where it stopped
            ends[-1] = start + n
            cov.count += n
            return
        dup = cov.add(start, start + n)
        if dup:
            self.total_duplicates += dup
            self.duplicates_by_queue[q] += dup

    def held(self, dt_ms: int, nobody: Sequence[int], twice: Sequence[int]) -> None:
        """For ``dt_ms`` the queues ``nobody`` were pulled by nobody and ``twice`` by two or more."""
        pause, double = self.pause_ms, self.twice_ms
        for q in nobody:
            pause[q] += dt_ms
        for q in twice:
            double[q] += dt_ms

    def ownership_changed(self, now_ms: int, exact: bool) -> None:
        """The ownership picture changed; ``exact``: every readable queue pulled by exactly one consumer."""
        self.changes.append((now_ms, exact))

    def notified(self) -> None:
        """The broker sent a consumer a ``NOTIFY_CONSUMER_IDS_CHANGED``."""
        self.notifications += 1

    def backlog(self) -> int:
        """Produced, not yet consumed by anyone."""
        return self.total_produced - sum(c.count for c in self.coverage)

    def sample(self, now_ms: int, *, owned_nobody: int, owned_twice: int, consumers: int) -> None:
        """One point of every series at ``now_ms`` (every ``sample_interval_ms``)."""
        s = self.series
        produced, consumed = self._last_sample
        interval = self.sample_interval_ms / 1000
        s["t_s"].append(now_ms / 1000)
        s["backlog"].append(self.backlog())
        s["owned_nobody"].append(owned_nobody)
        s["owned_twice"].append(owned_twice)
        s["consumers"].append(consumers)
        s["consumed_per_s"].append((self.total_consumed - consumed) / interval)
        s["produced_per_s"].append((self.total_produced - produced) / interval)
        s["duplicates"].append(self.total_duplicates)
        self._last_sample = (self.total_produced, self.total_consumed)

    # ---- read out ---------------------------------------------------------------------------------
    def result(self, scenario: Scenario, end: EndState, wall_s: float) -> SimulationResult:
        """The figures so far (the recorder is not changed: a run can go on after)."""
        s, series = scenario, self.series
        windows = [(0, "start")] + [(e.at_ms, e.describe()) for e in s.events]
        events: list[dict[str, Any]] = []
        for k, (t_e, what) in enumerate(windows):
            t_next = windows[k + 1][0] if k + 1 < len(windows) else s.duration_ms + 1
            before = [c for c in self.changes if c[0] < t_next]
            inside = [t for t, _ in before if t >= t_e]
            exact = bool(before) and before[-1][1]
            ttl = (max(inside[-1], t_e) - t_e if inside else 0) if exact else None
            lo, hi = t_e / 1000, min(t_next, s.duration_ms) / 1000
            idx = [i for i, t in enumerate(series["t_s"]) if lo < t <= hi]
            dup_end = series["duplicates"][idx[-1]] if idx else self.total_duplicates
            dup_start = series["duplicates"][idx[0] - 1] if idx and idx[0] > 0 else 0
            events.append(
                {
                    "at_ms": t_e,
                    "event": what,
                    "time_to_stable_ms": ttl,
                    "duplicates": dup_end - dup_start,
                    "max_owned_nobody": max((series["owned_nobody"][i] for i in idx), default=0),
                    "max_owned_twice": max((series["owned_twice"][i] for i in idx), default=0),
                }
            )
        queues, lost = [], 0
        for q, mq in enumerate(self.queues):
            resume = end.resume[q]
            gap = resume - self.coverage[q].covered_below(resume)
            lost += gap
            queues.append(
                {
                    "queue": f"{mq.broker_name}/{mq.topic}/{mq.queue_id}",
                    "produced": end.messages[q],
                    "consumed": self.coverage[q].count,
                    "duplicates": self.duplicates_by_queue[q],
                    "lost": gap,
                    "pause_ms": self.pause_ms[q],
                    "owned_twice_ms": self.twice_ms[q],
                }
            )
        unique = sum(c.count for c in self.coverage)
        stable: list[int | None] = [e["time_to_stable_ms"] for e in events]
        settled = [t for t in stable if t is not None]
        summary = {
            "duration_s": s.duration_ms / 1000,
            "produced": self.total_produced,
            "consumed": self.total_consumed,
            "unique_consumed": unique,
            "duplicates": self.total_duplicates,
            "lost": lost,
            "backlog_end": self.total_produced - unique,
            "max_backlog": max(series["backlog"], default=0),
            "pause_queue_s": sum(self.pause_ms) / 1000,
            "max_queue_pause_s": max(self.pause_ms, default=0) / 1000,
            "owned_twice_queue_s": sum(self.twice_ms) / 1000,
            "max_time_to_stable_s": None if len(settled) < len(stable) else max(settled, default=0) / 1000,
            "never_stable_after": [e["event"] for e in events if e["time_to_stable_ms"] is None],
            "rebalances": end.rebalances,
            "notifications": self.notifications,
            "wall_s": round(wall_s, 3),
        }
        return SimulationResult(s.name, s.strategy.display_name, s.seed, s.semantics, summary, events, queues, series)


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
