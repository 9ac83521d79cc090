"""A push consumer's life as one state machine: ``RebalanceImpl`` (what a rebalance does),
``RebalanceService`` (when), and the client instance's scheduled tasks (`startScheduledTask`) — heartbeat
every 30 s (first after 1 s), offset persistence every 5 s (first after 10 s), name-server route
polling every 30 s (first after 10 ms). No thread and no clock: ``due_ms()`` says when it next has
work, ``tick(now_ms)`` does everything due by then. The broker side is reached through
``transport`` (a :class:`mqbalance.rebalance.client.Broker` with ``unregister``), routes through
``name_server(topic)``.

>>> from mqbalance import MessageQueue, strategy
>>> from mqbalance.rebalance import InMemoryBroker
>>> broker = InMemoryBroker()
>>> queues = {"T": [MessageQueue("T", "b", i) for i in range(4)]}
>>> c = PushConsumer("10.0.0.1@1", "cg", ["T"], strategy("AVG"), broker, queues.get, semantics="4.x")
>>> c.start(now_ms=0); c.due_ms()           # started: rebalance at once (4.x)
0
>>> c.tick(now_ms=0); sorted(mq.queue_id for mq in c.owned()), c.due_ms()   # next: route poll at 10 ms
([0, 1, 2, 3], 10)
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from mqbalance._validate import duration_ms, str_sequence
from mqbalance.allocation.models import MessageQueue
from mqbalance.allocation.registry import StrategySpec
from mqbalance.allocation.strategies import AllocateStrategy
from mqbalance.exceptions import InvalidInputError
from mqbalance.rebalance.client import Broker, ConsumeFromWhere, ProcessQueue, RebalanceImpl, client_strategy
from mqbalance.rebalance.service import MIN_INTERVAL_MS, WAIT_INTERVAL_MS, RebalanceService
from mqbalance.versions import Semantics

__all__ = [
    "PushConsumer",
    "ConsumerState",
    "Transport",
    "HEARTBEAT_INTERVAL_MS",
    "PERSIST_INTERVAL_MS",
    "POLL_NAME_SERVER_INTERVAL_MS",
]

HEARTBEAT_INTERVAL_MS = 30_000
PERSIST_INTERVAL_MS = 5_000
POLL_NAME_SERVER_INTERVAL_MS = 30_000
_FIRST_HEARTBEAT_MS, _FIRST_PERSIST_MS, _FIRST_POLL_MS = 1_000, 10_000, 10
PULL_DELAY_5X_MS = 500


class Transport(Broker, Protocol):
    def unregister(self, client: RebalanceImpl) -> None: ...


class ConsumerState(enum.StrEnum):
    CREATED = "created"
    RUNNING = "running"
    STOPPED = "stopped"  # shut down gracefully: offsets persisted, unregistered
    CRASHED = "crashed"  # gone without a word: owns its queues until the broker forgets it


class PushConsumer:
    """One ``DefaultMQPushConsumer`` (concurrent, one group) in its own client instance.

    ``strategy``: a strategy object, or a registry name or Java-style configuration (``"AVG"``,
    ``{"name": "CONSISTENT_HASH", "virtualNodeCnt": 5}``), as :class:`~mqbalance.rocketmq.GroupMember`
    takes it. ``semantics`` (a :class:`~mqbalance.versions.Semantics` or its value): ``"5.x"`` (default): the
    1 s minimum rebalance interval with the adaptive wait, and new pull requests dispatched after
    500 ms; ``"4.x"``: neither. Intervals are keyword options
    named after the Java settings. ``active_from[mq]`` is when the queue's first pull goes out.
    """

    def __init__(
        self,
        client_id: str,
        group: str,
        topics: Iterable[str],
        strategy: AllocateStrategy | StrategySpec | str | Mapping[str, Any],
        transport: Transport,
        name_server: Callable[[str], list[MessageQueue] | None],
        *,
        semantics: Semantics | str = Semantics.V5,
        consume_from_where: ConsumeFromWhere = ConsumeFromWhere.LAST_OFFSET,
        channel: str | None = None,
        rebalance_wait_interval_ms: int = WAIT_INTERVAL_MS,
        rebalance_min_interval_ms: int | None = MIN_INTERVAL_MS,
        heartbeat_interval_ms: int = HEARTBEAT_INTERVAL_MS,
        persist_interval_ms: int = PERSIST_INTERVAL_MS,
        poll_name_server_interval_ms: int = POLL_NAME_SERVER_INTERVAL_MS,
        pull_delay_ms: int | None = None,
    ) -> None:
        semantics = Semantics.parse(semantics)
        heartbeat_interval_ms = duration_ms(heartbeat_interval_ms, "heartbeat_interval_ms", positive=True)
        persist_interval_ms = duration_ms(persist_interval_ms, "persist_interval_ms", positive=True)
        poll_name_server_interval_ms = duration_ms(
            poll_name_server_interval_ms, "poll_name_server_interval_ms", positive=True
        )
        if pull_delay_ms is not None:
            pull_delay_ms = duration_ms(pull_delay_ms, "pull_delay_ms")
        for name, value in (("client_id", client_id), ("group", group)):
            if not isinstance(value, str):
                raise InvalidInputError(f"{name} must be a str, got {value!r}", value)
        topics = str_sequence(topics, "topics")
        self.semantics = semantics
        self.transport = transport
        self.name_server = name_server
        self.routes: dict[str, list[MessageQueue]] = {}
        self.impl = RebalanceImpl(
            client_id,
            group,
            transport,
            client_strategy(strategy),
            self.routes.get,
            topics=topics,
            consume_from_where=consume_from_where,
            channel=channel,
        )
        self.state = ConsumerState.CREATED
        self._wait_ms = rebalance_wait_interval_ms
        self._min_ms = rebalance_min_interval_ms if semantics is Semantics.V5 else None
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.persist_interval_ms = persist_interval_ms
        self.poll_interval_ms = poll_name_server_interval_ms
        self.pull_delay_ms = (
            (PULL_DELAY_5X_MS if semantics is Semantics.V5 else 0) if pull_delay_ms is None else pull_delay_ms
        )
        self.service = RebalanceService(wait_interval_ms=self._wait_ms, min_interval_ms=self._min_ms)
        self.next_heartbeat_ms = self.next_persist_ms = self.next_poll_ms = 0
        self.active_from: dict[MessageQueue, int] = {}

    @property
    def client_id(self) -> str:
        return self.impl.client_id

    @property
    def running(self) -> bool:
        return self.state is ConsumerState.RUNNING

    def owned(self) -> dict[MessageQueue, ProcessQueue]:
        """The process-queue table: the queues this consumer holds (a crashed one still "holds")."""
        return self.impl.process_queues

    def start(self, *, now_ms: int) -> None:
        """``start()``: fetch routes, heartbeat to the brokers, wake the rebalance service."""
        if self.state is not ConsumerState.CREATED:
            raise InvalidInputError(f"consumer {self.client_id!r} is {self.state}, not created", self.client_id)
        self.state = ConsumerState.RUNNING
        self.poll_routes()
        self.transport.send_heartbeat(self.impl)
        self.service = RebalanceService(created_ms=now_ms, wait_interval_ms=self._wait_ms, min_interval_ms=self._min_ms)
        self.service.wakeup(now_ms=now_ms)
        self.next_heartbeat_ms = now_ms + _FIRST_HEARTBEAT_MS
        self.next_persist_ms = now_ms + _FIRST_PERSIST_MS
        self.next_poll_ms = now_ms + _FIRST_POLL_MS

    def on_notify(self, *, now_ms: int) -> None:
        """``NOTIFY_CONSUMER_IDS_CHANGED`` arrived: ``rebalanceImmediately()``."""
        if self.running:
            self.service.wakeup(now_ms=now_ms)

    def due_ms(self) -> int | None:
        if not self.running:
            return None
        return min(self.service.next_ms, self.next_heartbeat_ms, self.next_persist_ms, self.next_poll_ms)

    def tick(self, *, now_ms: int) -> None:
        """Do everything due by ``now_ms``: route poll, heartbeat, rebalance, offset persistence."""
        while self.running and (due := self.due_ms()) is not None and due <= now_ms:
            if self.next_poll_ms <= now_ms:
                self.poll_routes()
                self.next_poll_ms += self.poll_interval_ms
            if self.next_heartbeat_ms <= now_ms:
                self.transport.send_heartbeat(self.impl)
                self.next_heartbeat_ms += self.heartbeat_interval_ms
            if self.service.next_ms <= now_ms:
                self.service.run(now_ms=now_ms, rebalance=lambda: self.rebalance(now_ms=now_ms))
            if self.next_persist_ms <= now_ms:
                self.persist_all()
                self.next_persist_ms += self.persist_interval_ms

    def subscribe(self, topic: str) -> None:
        """``subscribe(topic, "*")`` on a running consumer: fetch the route, heartbeat at once (the
        broker sees a new topic: CHANGE). The next rebalance takes the topic's queues."""
        if topic not in self.impl.topics:
            self.impl.topics.append(topic)  # type: ignore[attr-defined]
            if self.running:
                self.poll_routes()
                self.transport.send_heartbeat(self.impl)

    def unsubscribe(self, topic: str) -> None:
        """``unsubscribe(topic)``: the topic leaves the heartbeat; the next rebalance drops its queues."""
        if topic in self.impl.topics:
            self.impl.topics.remove(topic)  # type: ignore[attr-defined]
            self.routes.pop(topic, None)
            if self.running:
                self.transport.send_heartbeat(self.impl)

    def poll_routes(self) -> None:
        """``updateTopicRouteInfoFromNameServer``: refresh the subscribe info of every topic."""
        for topic in self.impl.topics:
            queues = self.name_server(topic)
            if queues is not None:
                self.routes[topic] = list(queues)

    def rebalance(self, *, now_ms: int) -> bool:
        """``doRebalance`` (a running push consumer pulls all the time, so none of its queues is
        pull-expired); new pull requests go out after the pull delay. Returns ``balanced``."""
        for pq in self.impl.process_queues.values():
            pq.last_pull_ms = now_ms
        self.impl.do_rebalance(now_ms=now_ms)
        for request in self.impl.pull_requests:
            self.active_from[request.mq] = now_ms + self.pull_delay_ms
        self.impl.pull_requests.clear()
        for mq in [q for q in self.active_from if q not in self.impl.process_queues]:
            del self.active_from[mq]
        return self.impl.balanced

    def persist_all(self) -> None:
        """``persistAllConsumerOffset``: send every held queue's offset to the broker (oneway)."""
        for mq, pq in self.impl.process_queues.items():
            self.transport.commit_offset(self.impl.group, mq, pq.consumed_offset)

    def shutdown(self) -> None:
        """Graceful ``shutdown()``: persist offsets, unregister (the broker notifies the group)."""
        if not self.running:
            raise InvalidInputError(f"consumer {self.client_id!r} is {self.state}, not running", self.client_id)
        self.persist_all()
        self.transport.unregister(self.impl)
        for pq in self.impl.process_queues.values():
            pq.dropped = True
        self.impl.process_queues.clear()
        self.active_from.clear()
        self.state = ConsumerState.STOPPED

    def crash(self) -> None:
        """The process is gone: nothing persisted, nothing sent; the broker keeps its channel until
        the channel closes or expires."""
        if not self.running:
            raise InvalidInputError(f"consumer {self.client_id!r} is {self.state}, not running", self.client_id)
        self.state = ConsumerState.CRASHED
