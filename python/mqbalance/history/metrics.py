"""Prometheus metrics of ``mqbalance watch --metrics-port`` (the ``prometheus_client`` library),
updated after every tick from what the collector saw.

Per consumer group (label ``group``):

* ``mqbalance_group_members`` — connections the broker lists;
* ``mqbalance_group_unowned_queues`` / ``mqbalance_group_double_owned_queues`` — queues of the
  group's subscriptions owned by no process / by two or more;
* ``mqbalance_group_lag`` — messages between the committed and the max offsets (last reading);
* ``mqbalance_group_queues_not_progressing`` — queues with lag whose committed offset did not move
  between the last two offsets readings (a quick live signal; ``mqbalance history`` applies Burrow's
  full rules over the window);
* ``mqbalance_group_rebalances_total`` — ticks at which the group's membership changed.

Per group and topic (labels ``group``, ``topic``):

* ``mqbalance_group_lag_seconds`` — the age of the oldest message the group has not consumed, its
  worst queue (:mod:`mqbalance.fleet.rocketmq.lag_time`: now − the store time of the message at the
  committed offset; 0 without lag). Updated every tick: between offsets readings the age grows with
  the clock;
* ``mqbalance_group_lag_seconds_carried`` — 1 when that worst figure comes from an earlier reading
  carried forward (the per-tick read budget was spent on queues lagging more; an upper bound);
* ``mqbalance_group_drain_seconds`` — time to drain (:mod:`mqbalance.history.drain`): seconds until
  the lag reaches zero at each queue's consumption and production rates over the last
  ``drain_window`` offsets readings (the last queue to drain); ``0`` idle (no lag), ``+Inf``
  never (production keeps up with consumption). Absent until two readings.

Kafka groups (``watch --bootstrap``), per group: ``mqbalance_group_generation`` — the classic
generation or the consumer protocol's group epoch, the broker's number (its increase over a window
is the group's rebalances); ``mqbalance_group_assignment_epoch`` (consumer protocol); and
``mqbalance_group_state`` — 1 for the group's current state, label ``state`` as the broker names it.

For the watcher: ``mqbalance_watch_ticks_total``, ``mqbalance_watch_skipped_ticks_total``,
``mqbalance_watch_read_errors_total`` and ``mqbalance_watch_tick_seconds`` (a histogram).

>>> m = WatchMetrics()
>>> m.ticks.inc()
>>> b"mqbalance_watch_ticks_total 1.0" in m.exposition()
True
"""

from __future__ import annotations

import contextlib
from collections import Counter as Tally
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, start_http_server

from mqbalance.history.drain import DRAINING, IDLE, NEVER, group_drain, time_to_drain

__all__ = ["WatchMetrics"]


class WatchMetrics:
    """The watcher's metrics in their own registry (see the module docs)."""

    def __init__(self, *, drain_window: int = 5) -> None:
        self.registry = CollectorRegistry()
        self.drain_window = drain_window
        self._readings: dict[tuple[str, str, str, int], deque[tuple[int, int, int]]] = {}
        self._drain_pairs: set[tuple[str, str]] = set()
        r = self.registry
        self.members = Gauge("mqbalance_group_members", "connections the broker lists", ["group"], registry=r)
        self.unowned = Gauge("mqbalance_group_unowned_queues", "queues owned by no process", ["group"], registry=r)
        self.double = Gauge(
            "mqbalance_group_double_owned_queues", "queues owned by two processes or more", ["group"], registry=r
        )
        self.lag = Gauge("mqbalance_group_lag", "messages between committed and max offsets", ["group"], registry=r)
        self.stuck = Gauge(
            "mqbalance_group_queues_not_progressing",
            "queues with lag whose committed offset did not move between the last two readings",
            ["group"],
            registry=r,
        )
        self.lag_seconds = Gauge(
            "mqbalance_group_lag_seconds",
            "age of the oldest unconsumed message, worst queue",
            ["group", "topic"],
            registry=r,
        )
        self.lag_carried = Gauge(
            "mqbalance_group_lag_seconds_carried",
            "1 when the worst lag seconds is an earlier reading carried forward",
            ["group", "topic"],
            registry=r,
        )
        self._pairs: set[tuple[str, str]] = set()
        self.drain = Gauge(
            "mqbalance_group_drain_seconds",
            "seconds until the lag reaches zero at the window's rates (0 idle, +Inf never)",
            ["group", "topic"],
            registry=r,
        )
        self.rebalances = Counter(
            "mqbalance_group_rebalances", "ticks at which the group's membership changed", ["group"], registry=r
        )
        self.ticks = Counter("mqbalance_watch_ticks", "ticks run", registry=r)
        self.skipped = Counter("mqbalance_watch_skipped_ticks", "ticks skipped because one ran late", registry=r)
        self.errors = Counter("mqbalance_watch_read_errors", "reads that failed (gaps)", registry=r)
        self.duration = Histogram("mqbalance_watch_tick_seconds", "tick duration", registry=r)
        self._groups: set[str] = set()
        self.generation = Gauge(
            "mqbalance_group_generation",
            "Kafka: the classic generation or the consumer group epoch, the broker's number",
            ["group"],
            registry=r,
        )
        self.assignment_epoch = Gauge(
            "mqbalance_group_assignment_epoch",
            "Kafka consumer protocol: the target assignment epoch",
            ["group"],
            registry=r,
        )
        self.state = Gauge(
            "mqbalance_group_state", "Kafka: 1 for the group's current state", ["group", "state"], registry=r
        )
        self._states: dict[str, str] = {}
        self._epochs: set[str] = set()

    def serve(self, port: int, addr: str = "127.0.0.1") -> Any:
        """Serve ``/metrics`` on ``addr:port`` in a daemon thread; the server."""
        return start_http_server(port, addr=addr, registry=self.registry)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)

    def observe(
        self,
        state: Any,
        previous_offsets: Mapping[tuple[str, str, str, int], tuple[int | None, int | None]],
        events: Mapping[str, Sequence[Mapping[str, Any]]],
        *,
        duration_s: float,
        skipped: int,
        errors: int,
        offsets_read: bool,
        now_ms: int | None = None,
    ) -> None:
        """Update from one tick: the collector's new state, the offsets before it and the events;
        ``now_ms``: the tick's wall-clock time (lag seconds are measured against it)."""
        self.ticks.inc()
        self.skipped.inc(skipped)
        self.errors.inc(errors)
        self.duration.observe(duration_s)
        members = Tally(k[0] for k in state.members)
        unowned = Tally(q[0] for q, (_o, n) in state.ownership.items() if n == 0)
        double = Tally(q[0] for q, (_o, n) in state.ownership.items() if n >= 2)
        groups = set(state.groups) | set(members)
        for g in self._groups - groups:
            for gauge in (self.members, self.unowned, self.double, self.lag, self.stuck):
                with contextlib.suppress(KeyError):
                    gauge.remove(g)
        for g in groups:
            self.members.labels(g).set(members[g])
            self.unowned.labels(g).set(unowned[g])
            self.double.labels(g).set(double[g])
        if offsets_read:
            lag: Tally[str] = Tally()
            stuck: Tally[str] = Tally()
            for q, (committed, top) in state.offsets.items():
                if committed is None or top is None:
                    continue
                behind = max(0, top - committed)
                lag[q[0]] += behind
                before = previous_offsets.get(q)
                if behind and before is not None and before[0] == committed:
                    stuck[q[0]] += 1
            for g in groups | set(lag):
                self.lag.labels(g).set(lag[g])
                self.stuck.labels(g).set(stuck[g])
        if now_ms is not None:
            self._lag_seconds(state, now_ms)
            if offsets_read:
                self._drain(state, now_ms)
        for g in {r["group"] for r in events.get("members", ()) if r.get("event") in ("join", "leave")}:
            self.rebalances.labels(g).inc()
        self._groups = groups

    def observe_kafka_groups(self, groups: Mapping[str, Any]) -> None:
        """Kafka groups' generation or epoch, assignment epoch and state (views with ``state``,
        ``generation`` and ``assignment_epoch``), after :meth:`observe`."""
        for g in set(self._states) - set(groups):
            with contextlib.suppress(KeyError):
                self.state.remove(g, self._states.pop(g))
        for g in self._epochs - set(groups):
            for gauge in (self.generation, self.assignment_epoch):
                with contextlib.suppress(KeyError):
                    gauge.remove(g)
        self._epochs = set()
        for g, v in groups.items():
            state = v.state or "Unknown"
            if self._states.get(g) not in (None, state):
                with contextlib.suppress(KeyError):
                    self.state.remove(g, self._states[g])
            self._states[g] = state
            self.state.labels(g, state).set(1)
            if v.generation is not None:
                self.generation.labels(g).set(v.generation)
                self._epochs.add(g)
            if v.assignment_epoch is not None:
                self.assignment_epoch.labels(g).set(v.assignment_epoch)
                self._epochs.add(g)

    def _lag_seconds(self, state: Any, now_ms: int) -> None:
        worst: dict[tuple[str, str], tuple[float, bool]] = {}
        for q, (committed, top) in state.offsets.items():
            if committed is None or top is None:
                continue
            store, how = state.oldest.get(q, (None, None))
            if top > committed and store is None:
                continue  # lagging, not read yet: unknown, not 0
            age = 0.0 if top <= committed or store is None else max(0.0, (now_ms - store) / 1000)
            pair = (q[0], q[1])
            if pair not in worst or age > worst[pair][0]:
                worst[pair] = (age, how == "carried")
        for pair in self._pairs - worst.keys():
            for gauge in (self.lag_seconds, self.lag_carried):
                with contextlib.suppress(KeyError):
                    gauge.remove(*pair)
        for pair, (age, carried) in worst.items():
            self.lag_seconds.labels(*pair).set(age)
            self.lag_carried.labels(*pair).set(1 if carried else 0)
        self._pairs = set(worst)

    def _drain(self, state: Any, now_ms: int) -> None:
        per_pair: dict[tuple[str, str], list[tuple[str, float | None]]] = {}
        seen = set()
        for q, (committed, top) in state.offsets.items():
            if committed is None or top is None:
                continue
            seen.add(q)
            window = self._readings.setdefault(q, deque(maxlen=max(2, self.drain_window)))
            window.append((now_ms, committed, max(top, committed)))
            per_pair.setdefault((q[0], q[1]), []).append(time_to_drain(window))
        for q in self._readings.keys() - seen:
            del self._readings[q]
        for pair in self._drain_pairs - per_pair.keys():
            with contextlib.suppress(KeyError):
                self.drain.remove(*pair)
        for pair, queues in per_pair.items():
            how, seconds = group_drain(queues)
            if how in (DRAINING, IDLE):
                self.drain.labels(*pair).set(seconds or 0.0)
            elif how == NEVER:
                self.drain.labels(*pair).set(float("inf"))
            else:
                with contextlib.suppress(KeyError):
                    self.drain.remove(*pair)
        self._drain_pairs = set(per_pair)
