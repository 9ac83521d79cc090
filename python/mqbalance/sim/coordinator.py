"""Whole-group assignment in the simulator: one party computes every member's share and keeps it.

A strategy that needs the previous assignment (``STICKY``) cannot be computed by each client for
itself. Real deployments run it where one party sees the whole group and keeps the last result:
the ZooKeeper leader mode of :mod:`mqbalance.coordination` (the leader recomputes from the
published assignment and publishes the next one), or a broker-side assignment (RocketMQ 5's
server-side rebalance, where the broker answers each client's query for its queues). The
simulator models that coordinator: when a client rebalances, it sends the member list and queues it
sees, as usual; the coordinator keeps, per group and topic, the last view it computed and the
assignment it published for it. The same view → the same assignment (every member reads its slice
of one published result); a new view → a new assignment computed from the new view with the last
one as ``previous`` (restricted to members and queues still in the view). Rebalance timing,
notifications, heartbeats and offsets are unchanged: only who computes the assignment differs.

>>> from mqbalance import MessageQueue, strategy
>>> qs = [MessageQueue("T", "b", i) for i in range(6)]
>>> leader = GroupCoordinator(strategy("STICKY"))
>>> [q.queue_id for q in leader.allocate("cg", "c1", qs, ["c1", "c2"])]  # first run: AVG
[0, 1, 2]
>>> [q.queue_id for q in leader.allocate("cg", "c3", qs, ["c1", "c2", "c3"])]  # c3 joins: two queues move
[2, 5]
>>> [q.queue_id for q in leader.allocate("cg", "c1", qs, ["c1", "c2", "c3"])], leader.computed
([0, 1], 2)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mqbalance.allocation.models import MessageQueue
from mqbalance.allocation.strategies import AllocateStrategy

__all__ = ["GroupCoordinator"]


@dataclass(frozen=True, slots=True)
class _Published:
    view: tuple[tuple[MessageQueue, ...], tuple[str, ...]]
    assignment: dict[str, list[MessageQueue]]


class GroupCoordinator(AllocateStrategy):
    """``inner`` computed for the whole group by one party that keeps its last assignment per
    (group, topic); each client's :meth:`allocate` reads its slice. ``computed`` counts the
    assignments computed (one per new view)."""

    def __init__(self, inner: AllocateStrategy) -> None:
        self.inner = inner
        self.computed = 0
        self._published: dict[tuple[str, str], _Published] = {}

    @property
    def name(self) -> str:
        return self.inner.name

    def __repr__(self) -> str:
        return f"GroupCoordinator({self.inner!r})"

    def allocate(
        self,
        consumer_group: str | None,
        current_id: str | None,
        queues: Sequence[MessageQueue] | None,
        consumers: Iterable[str] | None,
    ) -> list[MessageQueue] | None:
        """``current_id``'s share of the assignment published for this view (computed now if the
        view is new)."""
        qs = tuple(queues or ())
        ids = tuple(consumers or ())
        if not qs:
            return []
        key = (consumer_group or "", qs[0].topic)
        last = self._published.get(key)
        if last is None or last.view != (qs, ids):
            members, present = set(ids), set(qs)
            previous = (
                {}
                if last is None
                else {c: [q for q in owned if q in present] for c, owned in last.assignment.items() if c in members}
            )
            last = _Published((qs, ids), self.inner.assign(list(qs), list(ids), previous=previous))  # type: ignore[call-arg]
            self._published[key] = last
            self.computed += 1
        return list(last.assignment.get(current_id or "", []))
