"""The discrete-event simulator: a cluster of brokers, topics and queues, producers at given rates
and push consumers with given throughput, running the real state machines of
:mod:`mqbalance.rebalance` (``PushConsumer``, ``ConsumerManager``, the offset store) over an
in-memory transport with optional delay and loss.

Control is event by event (every heartbeat, notification, rebalance, offset commit, route poll and
housekeeping scan happens at its millisecond); messages move **in aggregate**: between two events
each producer adds its messages round-robin over its write queues, and each consumer spends its
throughput over the queues it is pulling (an equal share, what one queue cannot use goes to the
others). Message ids are (queue, offset); :class:`~mqbalance.sim.coverage.Coverage` counts
duplicates and gaps exactly. Deterministic for a scenario (its seed drives network loss only).

Model choices: a running consumer is always pulling (no pull expiry); offsets reach the broker by
the 5 s persistence, when a queue is dropped and at shutdown (not piggy-backed on pulls, so the
duplicate figures are upper bounds); queue routes change by the name server and are seen at each
side's next route poll; a queue without a stored offset is read from 0 (the broker's young-queue
answer, see :class:`~mqbalance.rebalance.memory.InMemoryBroker`). A strategy that needs the previous
assignment (``STICKY``) is computed for the whole group by a coordinator that keeps the last one
(:class:`~mqbalance.sim.coordinator.GroupCoordinator`, the leader mode / a broker-side assignment).

>>> from mqbalance.sim.scenario import scenario_from_dict
>>> s = scenario_from_dict({"topics": {"T": {"queues_per_broker": 4, "rate": 100}}, "duration": "2m",
...                         "group": {"consumers": 2, "throughput": 200},
...                         "events": [{"at": "1m", "join": "10.0.0.9@1"}]})
>>> r = Simulation(s).run()
>>> r.summary["produced"], r.summary["lost"], r.events[1]["time_to_stable_ms"]  # 5.x: the joiner waits 1 s + 0.5 s
(12000, 0, 1500)
"""

from __future__ import annotations

import heapq
import math
import random
import time
from collections.abc import Callable
from functools import partial
from itertools import count
from typing import Any, assert_never

from mqbalance.allocation.models import MessageQueue
from mqbalance.allocation.strategies import AllocateStrategy
from mqbalance.exceptions import InvalidInputError, ScenarioError
from mqbalance.rebalance.broker import ConsumerManager
from mqbalance.rebalance.client import ConsumeFromWhere, OffsetStore, RebalanceImpl
from mqbalance.rebalance.consumer import PushConsumer
from mqbalance.rebalance.memory import InMemoryBroker
from mqbalance.sim.coordinator import GroupCoordinator
from mqbalance.sim.metrics import EndState, MetricsRecorder, SimulationResult
from mqbalance.sim.model import (
    Crash,
    Join,
    Leave,
    NetworkChange,
    NotificationSwitch,
    Partition,
    QueueCountChange,
    Scenario,
    ScenarioEvent,
)

__all__ = ["Simulation"]

#: the Java push consumer's default ``pullBatchSize``: the most messages one pull returns
PULL_BATCH_SIZE = 32


class _Link:
    """One consumer's connections to the brokers: delay and loss from the simulation's network;
    ``cut`` while a :class:`~mqbalance.sim.model.Partition` holds (nothing gets through)."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.cut = False

    def send_heartbeat(self, client: RebalanceImpl) -> None:
        """``MQClientInstance.sendHeartbeatToAllBroker``: to every broker in turn."""

        def deliver(broker: InMemoryBroker) -> None:
            if not self.cut:
                self.sim.send(lambda: broker.send_heartbeat(client))

        self.sim.in_turn(deliver)

    def find_consumer_id_list(self, topic: str, group: str) -> list[str] | None:
        """``MQClientInstance.findConsumerIdList``: asks ONE broker of the topic's route, picked by
        ``findBrokerAddrByTopic`` at random (``random.nextInt``, 4.9 and 5.3 alike) — a broker that
        has not yet heard a heartbeat or an unregistration answers the old list."""
        if self.cut or self.sim.lose():
            return None
        return self.sim.pick_broker().find_consumer_id_list(topic, group)

    def query_offset(self, group: str, mq: MessageQueue) -> int:
        if self.cut or self.sim.lose():
            return -2  # the request failed
        return self.sim.brokers[0].query_offset(group, mq)  # one offset store: a queue's broker keeps its own

    def max_offset(self, mq: MessageQueue) -> int:
        return self.sim.max_offset[self.sim.index[mq]]

    def commit_offset(self, group: str, mq: MessageQueue, offset: int) -> None:
        if not self.cut:
            self.sim.send(lambda: self.sim.offsets.commit(group, mq, offset))

    def unregister(self, client: RebalanceImpl) -> None:
        """``MQClientInstance.unregisterClient``: from every broker in turn (reliable: followed by
        the channel closing)."""
        self.sim.in_turn(lambda broker: broker.unregister(client))


class _Producer:
    __slots__ = ("rate", "queues", "counter")

    def __init__(self, rate: float) -> None:
        self.rate, self.queues, self.counter = rate, list[int](), 0  # queues: its cached write queues


class _Consumer:
    __slots__ = ("pc", "link", "throughput", "credit", "version", "pulling")

    def __init__(self, pc: PushConsumer, link: _Link, throughput: float) -> None:
        self.pc, self.link, self.throughput, self.credit, self.version = pc, link, throughput, 0.0, 0
        self.pulling: list[tuple[Any, int]] = []  # (process queue, queue index) being pulled now


class Simulation:
    """Run one scenario: ``Simulation(scenario).run()`` → :class:`SimulationResult`.
    ``progress(sim_ms, duration_ms)`` is called about every simulated minute.

    What it measures goes to ``metrics`` (a :class:`~mqbalance.sim.metrics.MetricsRecorder`) as it
    runs; :meth:`result` builds the result from it and the cluster's :meth:`end_state`."""

    def __init__(self, scenario: Scenario, *, progress: Callable[[int, int], None] | None = None) -> None:
        if not isinstance(scenario, Scenario):
            raise ScenarioError(f"Simulation needs a Scenario (see load_scenario), got {scenario!r}", scenario)
        self.scenario = s = scenario
        self.progress = progress
        self.rng = random.Random(s.seed)
        self.network = s.network
        self.now = 0
        self._heap: list[tuple[int, int, Callable[[], None]]] = []
        self._seq = count()
        # one consumer list per broker (each broker's ``ConsumerManager`` hears the heartbeats sent
        # to it and notifies its own channels), one offset store (a queue's offset lives on its broker)
        self.offsets = OffsetStore()
        self.managers = [
            ConsumerManager(
                notify=self._notify,
                semantics=s.semantics,
                notify_consumer_ids_changed_enable=s.broker.notify,
                channel_expired_timeout_ms=s.broker.channel_expired_timeout_ms,
                client_ids=s.broker.client_ids,
                notify_on_leave=s.broker.notify_on_leave,
            )
            for _ in s.brokers
        ]
        self.brokers = [InMemoryBroker(m, self.offsets) for m in self.managers]
        # which broker a client asks for the member list: its own stream, so loss draws stay as they were
        self._pick = random.Random(f"findBrokerAddrByTopic/{s.seed}")
        self.strategy: AllocateStrategy = s.strategy.build()
        if s.strategy.info.needs_previous:
            self.strategy = GroupCoordinator(self.strategy)  # STICKY: one party computes the group
        self.metrics = MetricsRecorder(sample_interval_ms=s.sample_interval_ms)
        # queues: every queue that ever existed, by index (the metrics' queue numbers)
        self.queues: list[MessageQueue] = []
        self.index: dict[MessageQueue, int] = {}
        self.max_offset: list[int] = []
        #: per queue, the messages of its last pull batch (what a pull sent after it does not yet count)
        self._last_batch: dict[int, int] = {}
        self.readable: dict[str, list[MessageQueue]] = {}  # topic → its readable queues now
        self._readable_idx: list[int] = []  # the same, as queue indices
        self.producers = {t.name: _Producer(t.rate) for t in s.topics}
        for t in s.topics:
            self._set_route(t.name, t.queues_per_broker)
            self.producers[t.name].queues = [self.index[q] for q in self.readable[t.name]]
        self.consumers: list[_Consumer] = []
        self.by_channel: dict[str, _Consumer] = {}
        self._dirty = True
        self._nobody: list[int] = []
        self._twice: list[int] = []
        self._signature: tuple[Any, ...] | None = None  # the first picture is always recorded
        self._scheduled = False
        self._wall = time.perf_counter()

    # ---- plumbing -----------------------------------------------------------------------------
    def at(self, when_ms: int, action: Callable[[], None]) -> None:
        heapq.heappush(self._heap, (when_ms, next(self._seq), action))

    def lose(self) -> bool:
        return self.network.loss > 0 and self.rng.random() < self.network.loss

    def send(self, deliver: Callable[[], None]) -> None:
        """A oneway message over the network: maybe lost, maybe late."""
        if self.lose():
            return
        if self.network.delay_ms:
            self.at(self.now + self.network.delay_ms, deliver)
        else:
            deliver()

    def in_turn(self, action: Callable[[InMemoryBroker], None]) -> None:
        """``action`` on every broker in route order, each ``network.round_trip_ms`` after the
        previous one (a client's synchronous request loop; the brokers noticing a closed connection)."""
        rt = self.network.round_trip_ms
        for k, broker in enumerate(self.brokers):
            if k == 0 or rt == 0:
                action(broker)
            else:
                self.at(self.now + k * rt, partial(action, broker))

    def pick_broker(self) -> InMemoryBroker:
        """A broker of the route at random (every topic has queues on every broker)."""
        brokers = self.brokers
        return brokers[self._pick.randrange(len(brokers))] if len(brokers) > 1 else brokers[0]

    def _notify(self, channel: str, group: str) -> None:
        consumer = self.by_channel.get(channel)
        if consumer is None:
            return
        self.metrics.notified()
        if consumer.link.cut:
            return

        def arrive() -> None:
            consumer.pc.on_notify(now_ms=self.now)
            self._reschedule(consumer)

        self.send(arrive)

    def _reschedule(self, c: _Consumer) -> None:
        c.version += 1
        due = c.pc.due_ms()
        if due is not None:
            version = c.version
            self.at(max(due, self.now), lambda: self._tick(c, version))

    def _tick(self, c: _Consumer, version: int) -> None:
        if version != c.version:
            return
        held = tuple(c.pc.impl.process_queues)
        c.pc.tick(now_ms=self.now)
        if c.pc.impl.allocate_errors:  # a client skips it (as Java does); a simulation must not go on
            topic, e = c.pc.impl.allocate_errors[0]
            raise ScenarioError(
                f"{self.scenario.source}: {c.pc.client_id} at {self.now} ms: allocate failed for topic "
                f"{topic!r} ({self.scenario.strategy.display_name}): {e}",
                e.value,
            ) from e
        if tuple(c.pc.impl.process_queues) != held:
            self._dirty = True
            for t in {t for t in c.pc.active_from.values() if t > self.now}:
                self.at(t, self._mark_dirty)  # a pull starts: ownership changes then
        self._reschedule(c)

    def _mark_dirty(self) -> None:
        self._dirty = True

    # ---- cluster --------------------------------------------------------------------------------
    def _set_route(self, topic: str, per_broker: int) -> None:
        queues = [MessageQueue(topic, b, i) for b in self.scenario.brokers for i in range(per_broker)]
        for q in queues:
            if q not in self.index:
                self.index[q] = self.metrics.add_queue(q)
                self.queues.append(q)
                self.max_offset.append(0)
        self.readable[topic] = queues
        self._readable_idx = [self.index[q] for qs in self.readable.values() for q in qs]
        self._dirty = True

    def name_server(self, topic: str) -> list[MessageQueue] | None:
        return self.readable.get(topic)

    def _poll_producer(self, topic: str) -> None:
        self.producers[topic].queues = [self.index[q] for q in self.readable[topic]]
        self.at(self.now + self.scenario.client.poll_name_server_interval_ms, partial(self._poll_producer, topic))

    def _scan(self) -> None:
        for manager in self.managers:
            manager.scan_not_active_channel(now_ms=self.now)
        self.at(self.now + self.scenario.broker.scan_interval_ms, self._scan)

    def _create_consumer(self, client_id: str, throughput: float, startup_ms: int | None) -> None:
        """``start()`` is called now: the client instance exists from now, it registers after its
        start-up (``ClientSettings.startup_ms``)."""
        startup = self.scenario.client.startup_ms if startup_ms is None else startup_ms
        if startup > 0:
            self.at(self.now + startup, partial(self._start_consumer, client_id, throughput, self.now))
        else:
            self._start_consumer(client_id, throughput, self.now)

    def _start_consumer(self, client_id: str, throughput: float, created_ms: int) -> None:
        s = self.scenario
        channel = f"ch-{len(self.consumers) + 1}"
        link = _Link(self)
        pc = PushConsumer(
            client_id,
            s.group,
            [t.name for t in s.topics],
            self.strategy,
            link,
            self.name_server,
            semantics=s.semantics,
            consume_from_where=ConsumeFromWhere[s.consume_from_where],
            channel=channel,
            rebalance_wait_interval_ms=s.client.rebalance_interval_ms,
            rebalance_min_interval_ms=s.client.min_interval_ms,
            heartbeat_interval_ms=s.client.heartbeat_interval_ms,
            persist_interval_ms=s.client.persist_interval_ms,
            poll_name_server_interval_ms=s.client.poll_name_server_interval_ms,
            pull_delay_ms=s.client.pull_delay_ms,
        )
        c = _Consumer(pc, link, throughput)
        self.consumers.append(c)
        self.by_channel[channel] = c
        pc.start(now_ms=self.now)
        if created_ms < self.now:
            # the instance was created at start(): RebalanceService's lastRebalanceTimestamp (its
            # constructor) and startScheduledTask's first heartbeat / persistence / route poll count
            # from then, not from the registration
            shift = self.now - created_ms
            pc.service.last_rebalance_ms = created_ms
            pc.next_heartbeat_ms = max(self.now, pc.next_heartbeat_ms - shift)
            pc.next_persist_ms = max(self.now, pc.next_persist_ms - shift)
            pc.next_poll_ms = max(self.now, pc.next_poll_ms - shift)
        self._dirty = True
        self._reschedule(c)

    def _find(self, client_id: str, event: Leave | Crash | Partition) -> _Consumer:
        running = [c for c in self.consumers if c.pc.running and c.pc.client_id == client_id]
        if not running:
            raise InvalidInputError(
                f"{self.scenario.source}: event at {event.at_ms} ms ({event.describe()}): no running consumer "
                f"with id {client_id!r}",
                client_id,
            )
        return running[-1]

    def _apply(self, event: ScenarioEvent) -> None:
        """The one place where events act on the cluster (exhaustive over :data:`ScenarioEvent`)."""
        match event:
            case Join(client_id=client_id, throughput=throughput, startup_ms=startup_ms):
                self._create_consumer(client_id, throughput, startup_ms)
            case Leave(client_id=client_id):
                c = self._find(client_id, event)
                c.pc.shutdown()
                self._reschedule(c)
            case Crash(client_id=client_id, close_connection=close_connection):
                c = self._find(client_id, event)
                c.pc.crash()
                self._reschedule(c)
                if close_connection:
                    # its sockets close together; each broker's ``ClientHousekeepingService`` sees its
                    # own close (``doChannelCloseEvent``), ``network.round_trip`` apart here
                    channel = c.pc.impl.channel or ""

                    def close(broker: InMemoryBroker) -> None:
                        broker.manager.do_channel_close_event(channel)

                    self.in_turn(close)
            case QueueCountChange(topic=topic, queues_per_broker=queues_per_broker):
                self._set_route(topic, queues_per_broker)
            case NetworkChange(network=network):
                self.network = network
            case NotificationSwitch(enabled=enabled):
                for manager in self.managers:
                    manager.notify_consumer_ids_changed_enable = enabled
            case Partition(client_id=client_id, duration_ms=duration_ms):
                c = self._find(client_id, event)
                c.link.cut = True
                self.at(self.now + duration_ms, partial(self._heal, c))
            case _:
                assert_never(event)
        self._dirty = True

    def _heal(self, c: _Consumer) -> None:
        """A partition ends: the consumer pulls again from where it stopped. If the broker dropped
        its channel meanwhile, its connection is re-established and it heartbeats and rebalances at
        once (``RocketMQMember``'s rejoin)."""
        c.link.cut = False
        self._dirty = True
        channel = c.pc.impl.channel or ""
        groups = [m.groups.get(self.scenario.group) for m in self.managers]
        if c.pc.running and any(g is None or channel not in g.channels for g in groups):
            c.link.send_heartbeat(c.pc.impl)
            c.pc.on_notify(now_ms=self.now)
            self._reschedule(c)

    # ---- flow -----------------------------------------------------------------------------------
    def _ownership(self) -> None:
        """Who pulls which queue right now; records a change of the ownership picture."""
        owners: dict[int, list[int]] = {}
        for i, c in enumerate(self.consumers):
            c.pulling = []
            if not c.pc.running or c.link.cut:
                continue
            active = c.pc.active_from
            for mq, pq in c.pc.impl.process_queues.items():
                if active.get(mq, 0) <= self.now:
                    q = self.index[mq]
                    c.pulling.append((pq, q))
                    owners.setdefault(q, []).append(i)
        readable = self._readable_idx
        self._nobody = [q for q in readable if q not in owners]
        self._twice = [q for q in readable if len(owners.get(q, ())) > 1]
        signature = tuple(tuple(owners.get(q, ())) for q in readable)
        if signature != self._signature:
            self._signature = signature
            self.metrics.ownership_changed(self.now, not self._nobody and not self._twice)
        self._dirty = False

    def _advance(self, until: int) -> None:
        """Move messages from ``now`` to ``until`` under the current ownership (constant between events)."""
        if self._dirty:
            self._ownership()
        t0, dt = self.now, until - self.now
        if dt <= 0:
            return
        for p in self.producers.values():
            n = math.floor(until * p.rate / 1000) - math.floor(t0 * p.rate / 1000)
            if p.queues and n > 0:
                self._produce(p, n)
        if self._nobody or self._twice:
            self.metrics.held(dt, self._nobody, self._twice)
        for c in self.consumers:
            if c.pulling:
                c.credit += c.throughput * dt / 1000
                capacity = int(c.credit)
                c.credit -= capacity  # unused capacity is not banked
                if capacity > 0:
                    self._consume(c, capacity)
        if self.scenario.client.commit_on_pull:
            self._commit_on_pull()
        self.now = until

    def _commit_on_pull(self) -> None:
        """The next pull of every queue being pulled carries its consumed offset, which the broker
        stores (``ClientSettings.commit_on_pull``; a consumer cut off from the broker sends none).
        Java sends that pull as soon as a batch is handed to the consume threads
        (``DefaultMQPushConsumerImpl.pullMessage``'s callback: ``submitConsumeRequest``, then
        ``executePullRequestImmediately``), so the offset it carries (``offsetStore.readOffset``,
        ``READ_FROM_MEMORY``) does not yet count that batch: the stored offset lags by the last
        batch (:meth:`_consume` keeps its size)."""
        commit, group, last = self.offsets.commit, self.scenario.group, self._last_batch
        for c in self.consumers:
            for pq, q in c.pulling:
                offset = pq.consumed_offset - last.get(q, 0)
                if offset > 0:  # commitOffsetEnable: only a positive offset
                    commit(group, self.queues[q], offset)

    def _produce(self, p: _Producer, n: int) -> None:
        """``n`` messages round-robin over the producer's write queues, continuing its counter."""
        qs = p.queues
        k, start = len(qs), p.counter % len(qs)
        base, extra = divmod(n, k)
        for j, q in enumerate(qs):
            self.max_offset[q] += base + (1 if (j - start) % k < extra else 0)
        p.counter += n
        self.metrics.produced(n)

    def _consume(self, c: _Consumer, capacity: int) -> None:
        """Spend ``capacity`` messages over the queues the consumer pulls: all of every backlog if
        it fits, else water-filling (equal shares, what a short queue leaves goes to the rest).
        The last pull batch of a queue (for :meth:`_commit_on_pull`): one message when the consumer
        keeps up (a producer's messages reach one queue one at a time, and a long-polling pull
        returns each as it comes), up to ``PULL_BATCH_SIZE`` from a backlog."""
        mo, consumed, last = self.max_offset, self.metrics.consumed, self._last_batch
        work = [(mo[q] - pq.consumed_offset, q, pq) for pq, q in c.pulling]
        if sum(w[0] for w in work) <= capacity:
            for backlog, q, pq in work:
                if backlog > 0:
                    consumed(q, pq.consumed_offset, backlog)
                    pq.consumed_offset += backlog
                    last[q] = 1
            return
        work.sort(key=lambda w: w[0])
        left = len(work)
        for backlog, q, pq in work:
            share = capacity // left
            left -= 1
            take = backlog if backlog < share else share
            if take > 0:
                capacity -= take
                consumed(q, pq.consumed_offset, take)
                pq.consumed_offset += take
                last[q] = min(take, PULL_BATCH_SIZE)

    def _sample(self) -> None:
        self.metrics.sample(
            self.now,
            owned_nobody=len(self._nobody),
            owned_twice=len(self._twice),
            consumers=sum(1 for c in self.consumers if c.pc.running),
        )
        if self.progress and self.now % 60_000 < self.scenario.sample_interval_ms:
            self.progress(self.now, self.scenario.duration_ms)
        self.at(self.now + self.scenario.sample_interval_ms, self._sample)

    # ---- run ------------------------------------------------------------------------------------
    def _schedule(self) -> None:
        s = self.scenario
        for spec in s.consumers:
            self.at(spec.start_ms, partial(self._create_consumer, spec.client_id, spec.throughput, spec.startup_ms))
        for e in s.events:
            self.at(e.at_ms, partial(self._apply, e))
        for topic in self.producers:
            self.at(s.client.poll_name_server_interval_ms, partial(self._poll_producer, topic))
        self.at(s.broker.scan_interval_ms, self._scan)
        self.at(s.sample_interval_ms, self._sample)
        self._scheduled = True

    def run_until(self, until_ms: int) -> None:
        """Advance the simulation to ``until_ms`` (for driving it step by step; ``run`` does it all)."""
        if not self._scheduled:
            self._schedule()
        heap = self._heap
        while heap and heap[0][0] <= until_ms:
            t, _, action = heapq.heappop(heap)
            if t > self.now:
                self._advance(t)
            for broker in self.brokers:
                broker.now_ms = self.now
            action()
        self._advance(until_ms)
        if self._dirty:
            self._ownership()

    def apply(self, event: ScenarioEvent) -> None:
        """Apply an event now (the stateful tests' way in; scenario events are scheduled by ``run``)."""
        for broker in self.brokers:
            broker.now_ms = self.now
        self._apply(event)

    def ownership(self) -> dict[MessageQueue, list[str]]:
        """Readable queue → client ids of the running consumers pulling it now."""
        if self._dirty:
            self._ownership()
        out: dict[MessageQueue, list[str]] = {q: [] for qs in self.readable.values() for q in qs}
        for c in self.consumers:
            for _, q in c.pulling:
                out.setdefault(self.queues[q], []).append(c.pc.client_id)
        return out

    def end_state(self) -> EndState:
        """The cluster as the results see it now: messages per queue, where the group would resume
        each queue (the broker's committed offset, or a live owner's position if further), and the
        rebalances run so far."""
        live: dict[int, int] = {}
        for c in self.consumers:
            if c.pc.running:
                for mq, pq in c.pc.impl.process_queues.items():
                    q = self.index[mq]
                    live[q] = max(live.get(q, 0), pq.consumed_offset)
        committed, group = self.offsets, self.scenario.group
        resume = [max(committed.query(group, mq), live.get(q, 0), 0) for q, mq in enumerate(self.queues)]
        return EndState(
            messages=tuple(self.max_offset),
            resume=resume,
            rebalances=sum(c.pc.service.rebalances for c in self.consumers),
        )

    def result(self) -> SimulationResult:
        """The figures so far (the run can go on after)."""
        return self.metrics.result(self.scenario, self.end_state(), time.perf_counter() - self._wall)

    def run(self) -> SimulationResult:
        """The whole scenario → its metrics."""
        self.run_until(self.scenario.duration_ms)
        return self.result()
