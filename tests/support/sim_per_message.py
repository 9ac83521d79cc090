"""The naive simulator the aggregate engine replaces: the same control plane (the engine's event
loop and state machines), but every message produced and consumed one at a time and every
consumed message id kept in a set. The benchmark's baseline, and a cross-check of the aggregate
flow model (same production exactly; consumption and duplicates agree up to how a consumer's
capacity is split between its queues within one step)."""

from __future__ import annotations

from mqbalance.sim import Simulation


class PerMessageSimulation(Simulation):
    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.seen: set[tuple[int, int]] = set()

    def _produce(self, p, n: int) -> None:
        m = self.metrics
        for _ in range(n):
            self.max_offset[p.queues[p.counter % len(p.queues)]] += 1
            p.counter += 1
            m.total_produced += 1

    def _consume(self, c, capacity: int) -> None:
        m = self.metrics
        while capacity:
            moved = False
            for pq, q in c.pulling:  # one message from each queue with a backlog, round-robin
                if capacity and pq.consumed_offset < self.max_offset[q]:
                    offset = pq.consumed_offset
                    pq.consumed_offset += 1
                    capacity -= 1
                    moved = True
                    m.total_consumed += 1
                    m.coverage[q].add(offset, offset + 1)
                    if (q, offset) in self.seen:
                        m.total_duplicates += 1
                        m.duplicates_by_queue[q] += 1
                    else:
                        self.seen.add((q, offset))
            if not moved:
                break
