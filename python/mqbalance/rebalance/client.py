"""Client-side rebalance: RocketMQ's ``RebalanceImpl`` for one consumer (client id + group), with
no I/O and no clock of its own — the broker side is an injected :class:`Broker` (here usually a
:class:`mqbalance.rebalance.broker.ConsumerManager` plus an :class:`OffsetStore` behind an
in-memory transport), time arrives as ``now_ms``.

One ``do_rebalance(now_ms)`` does, per subscribed topic: BROADCASTING → own every readable queue;
CLUSTERING → ask the broker for the group's client ids (``None`` → skip the topic this round),
sort queues and ids the Java way, ``allocate`` with the consumer's strategy (an exception → skip),
then update the process-queue table: a queue no longer owned is dropped after its offset is
persisted; a new queue gets a process queue and a pull request from its start offset
(``ConsumeFromWhere``). A changed topic triggers the push consumer's reaction: ``sub_version =
now`` and a heartbeat.

>>> from mqbalance import MessageQueue, strategy
>>> class B:
...     def find_consumer_id_list(self, topic, group): return ["c2", "c1"]
...     def query_offset(self, group, mq): return -1
...     def max_offset(self, mq): return 100
...     def commit_offset(self, group, mq, offset): pass
...     def send_heartbeat(self, client): pass
>>> queues = {"T": [MessageQueue("T", "b", i) for i in range(4)]}
>>> r = RebalanceImpl("c1", "cg", B(), strategy("AVG"), queues.get, topics=["T"])
>>> r.do_rebalance(now_ms=0)
True
>>> sorted(q.queue_id for q in r.process_queues), r.pull_requests[-1].next_offset  # c1 sorts first
([0, 1], 100)
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from mqbalance._validate import str_sequence
from mqbalance.allocation.models import MessageQueue
from mqbalance.allocation.ordering import sort_client_ids, sort_queues
from mqbalance.allocation.registry import StrategySpec, Use
from mqbalance.allocation.strategies import AllocateStrategy
from mqbalance.exceptions import MQBalanceError

__all__ = [
    "client_strategy",
    "ConsumeFromWhere",
    "Broker",
    "ProcessQueue",
    "PullRequest",
    "RebalanceImpl",
    "OffsetStore",
    "PULL_MAX_IDLE_MS",
]

PULL_MAX_IDLE_MS = 120_000


class ConsumeFromWhere(enum.StrEnum):
    LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


class Broker(Protocol):
    """What a client asks the broker side (an in-memory transport in simulations)."""

    def find_consumer_id_list(self, topic: str, group: str) -> list[str] | None: ...

    def query_offset(self, group: str, mq: MessageQueue) -> int: ...

    def max_offset(self, mq: MessageQueue) -> int: ...

    def commit_offset(self, group: str, mq: MessageQueue, offset: int) -> None: ...

    def send_heartbeat(self, client: RebalanceImpl) -> None: ...


class OffsetStore:
    """The brokers' consumer offsets. Each broker keeps its own ``ConsumerOffsetManager`` table
    ``"<topic>@<group>" → {queue_id: offset}``, so here: broker name → that table.
    Unknown → -1.

    >>> s = OffsetStore()
    >>> s.commit("cg", MessageQueue("T", "broker-a", 0), 42)
    >>> s.query("cg", MessageQueue("T", "broker-a", 0)), s.query("cg", MessageQueue("T", "broker-b", 0))
    (42, -1)
    >>> s.tables
    {'broker-a': {'T@cg': {0: 42}}}
    """

    def __init__(self) -> None:
        self.tables: dict[str, dict[str, dict[int, int]]] = {}

    def commit(self, group: str, mq: MessageQueue, offset: int) -> None:
        self.tables.setdefault(mq.broker_name, {}).setdefault(f"{mq.topic}@{group}", {})[mq.queue_id] = offset

    def query(self, group: str, mq: MessageQueue) -> int:
        return self.tables.get(mq.broker_name, {}).get(f"{mq.topic}@{group}", {}).get(mq.queue_id, -1)


@dataclass
class ProcessQueue:
    dropped: bool = False
    last_pull_ms: int = 0
    consumed_offset: int = 0


@dataclass(frozen=True, slots=True)
class PullRequest:
    group: str
    mq: MessageQueue
    next_offset: int


@dataclass
class RebalanceImpl:
    """One consumer's rebalance state (push consumer, concurrent consumption).

    ``route(topic)`` gives the topic's readable queues (its subscribe info), or ``None`` when the
    client has no route for it. ``strategy``: a strategy object, or a registry name or Java-style
    configuration (``"AVG"``, ``{"name": "CONSISTENT_HASH", "virtualNodeCnt": 5}``, a
    :class:`~mqbalance.allocation.registry.StrategySpec`), built by :func:`client_strategy`.
    """

    client_id: str
    group: str
    broker: Broker
    strategy: AllocateStrategy
    route: Callable[[str], list[MessageQueue] | None]
    topics: Iterable[str] = ()
    message_model: str = "CLUSTERING"
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.LAST_OFFSET
    process_queues: dict[MessageQueue, ProcessQueue] = field(default_factory=dict)
    pull_requests: list[PullRequest] = field(default_factory=list)
    sub_version: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    channel: str | None = None
    balanced: bool = True
    #: the errors ``allocate`` raised in the last rebalance, by topic (Java logs and skips them)
    allocate_errors: list[tuple[str, MQBalanceError]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.topics = str_sequence(self.topics, "topics")
        self.strategy = client_strategy(self.strategy)

    def do_rebalance(self, *, now_ms: int) -> bool:
        """One rebalance of every subscribed topic; then queues of unsubscribed topics are dropped.
        Returns whether anything changed; ``balanced`` then tells (5.x) whether every topic's
        allocation is now the set of queues being worked on — a topic skipped for a missing route
        or member list counts as balanced, a failed ``allocate`` or a queue without a start offset
        does not, as in Java."""
        self.skipped.clear()
        self.allocate_errors.clear()
        changed = False
        self.balanced = True
        for topic in self.topics:
            changed |= self._rebalance_topic(topic, now_ms)
        for mq in [q for q in self.process_queues if q.topic not in self.topics]:
            changed |= self._drop(mq)
        return changed

    def _rebalance_topic(self, topic: str, now_ms: int) -> bool:
        mq_set = self.route(topic)
        if mq_set is None:
            self.skipped.append((topic, "no route"))
            return False
        if self.message_model == "BROADCASTING":
            mine = set(mq_set)
        else:
            cids = self.broker.find_consumer_id_list(topic, self.group)
            if cids is None:
                self.skipped.append((topic, "no consumer list"))
                return False
            try:
                allocated = self.strategy.allocate(
                    self.group, self.client_id, sort_queues(mq_set), sort_client_ids(cids)
                )
            except MQBalanceError as e:
                self.skipped.append((topic, str(e)))
                self.allocate_errors.append((topic, e))
                self.balanced = False
                return False
            mine = set(allocated or [])
        changed = self._update_process_queue_table(topic, mine, now_ms)
        self.balanced &= mine == {mq for mq in self.process_queues if mq.topic == topic}
        if changed:
            self.sub_version = now_ms  # RebalancePushImpl.messageQueueChanged
            self.broker.send_heartbeat(self)
        return changed

    def _drop(self, mq: MessageQueue) -> bool:
        pq = self.process_queues[mq]
        pq.dropped = True
        self.broker.commit_offset(self.group, mq, pq.consumed_offset)  # persist before removal
        del self.process_queues[mq]
        return True

    def _update_process_queue_table(self, topic: str, mine: set[MessageQueue], now_ms: int) -> bool:
        changed = False
        for mq, pq in list(self.process_queues.items()):
            if mq.topic != topic:
                continue
            if mq not in mine or now_ms - pq.last_pull_ms > PULL_MAX_IDLE_MS:
                changed |= self._drop(mq)
        for mq in sort_queues(q for q in mine if q not in self.process_queues):
            offset = self.compute_pull_from_where(mq)
            if offset < 0:
                self.skipped.append((topic, f"no start offset for {mq}"))
                continue
            self.process_queues[mq] = ProcessQueue(last_pull_ms=now_ms, consumed_offset=offset)
            self.pull_requests.append(PullRequest(self.group, mq, offset))
            changed = True
        return changed

    def on_pull(self, mq: MessageQueue, *, now_ms: int, consumed_offset: int | None = None) -> None:
        """Record a pull (and, optionally, consumption progress) of an owned queue; a push
        consumer's queue not pulled for ``PULL_MAX_IDLE_MS`` is dropped and re-created by the next
        rebalance, as in Java."""
        pq = self.process_queues[mq]
        pq.last_pull_ms = now_ms
        if consumed_offset is not None:
            pq.consumed_offset = consumed_offset

    def compute_pull_from_where(self, mq: MessageQueue) -> int:
        """Start offset: the stored offset if any; else LAST → broker max (0 for retry topics),
        FIRST → 0. (TIMESTAMP needs a time index: treated as LAST here.)"""
        last = self.broker.query_offset(self.group, mq)
        if last >= 0:
            return last
        if last != -1:
            return -1
        if self.consume_from_where is ConsumeFromWhere.FIRST_OFFSET or mq.topic.startswith("%RETRY%"):
            return 0
        return self.broker.max_offset(mq)


def client_strategy(strategy: AllocateStrategy | str | StrategySpec | Any, where: str = "strategy") -> AllocateStrategy:
    """The strategy a client computes its share with: a strategy object as it is, anything else
    parsed by the registry (a name in any case, a Java-style configuration, a
    :class:`~mqbalance.allocation.registry.StrategySpec`) and refused with a typed error naming the
    value when it is no strategy or cannot run in a client.

    >>> client_strategy("avg").name, client_strategy({"name": "CONSISTENT_HASH", "virtualNodeCnt": 5}).name
    ('AVG', 'CONSISTENT_HASH')
    """
    if isinstance(strategy, AllocateStrategy):
        return strategy
    return StrategySpec.parse(strategy, where=where, use=Use.ROCKETMQ_CLIENT).build()
