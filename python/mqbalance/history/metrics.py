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
  the clock, and between ticks too — a scrape adds the time since the tick to a lagging pair's
  age, so it is not up to an ``--interval`` young;
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

The per-group counts of members and owners are kept between ticks and updated from the tick's
changes (the connections that came and went, the queues whose owners the collector computed
again), so a tick that changed a few groups sets only their gauges; a tick that does not say what
changed (the first) counts every connection and owner.

>>> m = WatchMetrics()
>>> m.ticks.inc()
>>> b"mqbalance_watch_ticks_total 1.0" in m.exposition()
True
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter as Tally
from collections import deque
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from mqbalance.history.drain import DRAINING, IDLE, NEVER, group_drain, time_to_drain

__all__ = ["WatchMetrics"]


class LagAges(Collector):
    """``mqbalance_group_lag_seconds`` as of each scrape: per group and topic, the worst age the
    last tick computed plus the time since that tick when that queue lags (its oldest message
    keeps ageing; a pair without lag stays 0).

    >>> ages = LagAges(clock=iter([10.0, 12.5]).__next__)
    >>> ages.set({("g", "t"): (30.0, True), ("g", "u"): (0.0, False)}, measured_s_ago=0.5)
    >>> [(s.labels["topic"], s.value) for s in next(iter(ages.collect())).samples]
    [('t', 33.0), ('u', 0.0)]
    """

    NAME, HELP = "mqbalance_group_lag_seconds", "age of the oldest unconsumed message, worst queue"

    def __init__(self, *, clock: Any = time.monotonic) -> None:
        self.clock = clock
        self._last: tuple[dict[tuple[str, str], tuple[float, bool]], float] = ({}, 0.0)

    def set(self, ages: dict[tuple[str, str], tuple[float, bool]], *, measured_s_ago: float = 0.0) -> None:
        """The tick's ``(age, lagging)`` per ``(group, topic)``, measured ``measured_s_ago`` seconds
        ago (at the tick's start: its reads take a while)."""
        self._last = (dict(ages), self.clock() - max(0.0, measured_s_ago))

    def describe(self) -> list[GaugeMetricFamily]:
        return [GaugeMetricFamily(self.NAME, self.HELP, labels=["group", "topic"])]

    def collect(self) -> list[GaugeMetricFamily]:
        ages, at = self._last
        since = max(0.0, self.clock() - at) if ages else 0.0
        family = GaugeMetricFamily(self.NAME, self.HELP, labels=["group", "topic"])
        for pair, (age, lagging) in sorted(ages.items()):
            family.add_metric(list(pair), age + since if lagging else age)
        return [family]


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
        self.lag_seconds = LagAges()
        r.register(self.lag_seconds)
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
        #: per group: connections, queues owned by nobody, queues owned twice or more (as gauged)
        self._members: Tally[str] = Tally()
        self._unowned: Tally[str] = Tally()
        self._double: Tally[str] = Tally()
        self._counted = False
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
        #: the groups with a generation / assignment epoch series
        self._generations: set[str] = set()
        self._assignment_epochs: set[str] = set()

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
        previous: Any = None,
        changed_queues: Collection[tuple[str, str, str, int]] | None = None,
    ) -> None:
        """Update from one tick: the collector's new state, the offsets before it and the events;
        ``now_ms``: the tick's wall-clock time (lag seconds are measured against it);
        ``previous``: the state before the tick and ``changed_queues`` the queues whose owners may
        have changed (the per-group counts follow them; without them, every owner is counted)."""
        self.ticks.inc()
        self.skipped.inc(skipped)
        self.errors.inc(errors)
        self.duration.observe(duration_s)
        touched: set[str] | None = None  # None: every group
        if previous is None or changed_queues is None or not self._counted:
            self._count_all(state)
        else:
            touched = self._count_changes(previous, state, changed_queues)
        groups = set(state.groups) | {g for g, n in self._members.items() if n}
        for g in self._groups - groups:
            for gauge in (self.members, self.unowned, self.double, self.lag, self.stuck):
                with contextlib.suppress(KeyError):
                    gauge.remove(g)
        for g in groups if touched is None else (groups - self._groups) | (touched & groups):
            self.members.labels(g).set(self._members[g])
            self.unowned.labels(g).set(self._unowned[g])
            self.double.labels(g).set(self._double[g])
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

    def _count_all(self, state: Any) -> None:
        """Count every connection and owner of ``state``."""
        self._counted = True
        self._members = Tally(k[0] for k in state.members)
        self._unowned = Tally(q[0] for q, (_o, n) in state.ownership.items() if n == 0)
        self._double = Tally(q[0] for q, (_o, n) in state.ownership.items() if n >= 2)

    def _count_changes(self, previous: Any, state: Any, changed: Collection[tuple[str, str, str, int]]) -> set[str]:
        """Follow the tick's changes from ``previous`` to ``state``: the connections that came and
        went, the owners of the ``changed`` queues. The groups whose counts changed."""
        touched: set[str] = set()
        if state.members is not previous.members:  # an incomplete read keeps the last membership
            for key in state.members.keys() - previous.members.keys():
                self._members[key[0]] += 1
                touched.add(key[0])
            for key in previous.members.keys() - state.members.keys():
                self._members[key[0]] -= 1
                touched.add(key[0])
        for q in changed:
            before, now = previous.ownership.get(q), state.ownership.get(q)
            if before is not None:
                self._unowned[q[0]] -= before[1] == 0
                self._double[q[0]] -= before[1] >= 2
            if now is not None:
                self._unowned[q[0]] += now[1] == 0
                self._double[q[0]] += now[1] >= 2
            if before != now:
                touched.add(q[0])
        return touched

    def observe_kafka_groups(self, groups: Mapping[str, Any]) -> None:
        """Kafka groups' generation or epoch, assignment epoch and state (views with ``state``,
        ``generation`` and ``assignment_epoch``), after :meth:`observe`. A series goes when its
        group does, or when the value is no longer known: a consumer-protocol group downgraded to
        classic has no assignment epoch (its last one is not kept as if current)."""
        for g in set(self._states) - set(groups):
            with contextlib.suppress(KeyError):
                self.state.remove(g, self._states.pop(g))
        for gauge, shown, field in (
            (self.generation, self._generations, "generation"),
            (self.assignment_epoch, self._assignment_epochs, "assignment_epoch"),
        ):
            for g in [g for g in shown if g not in groups or getattr(groups[g], field) is None]:
                shown.discard(g)
                with contextlib.suppress(KeyError):
                    gauge.remove(g)
        for g, v in groups.items():
            state = v.state or "Unknown"
            if self._states.get(g) not in (None, state):
                with contextlib.suppress(KeyError):
                    self.state.remove(g, self._states[g])
            self._states[g] = state
            self.state.labels(g, state).set(1)
            if v.generation is not None:
                self.generation.labels(g).set(v.generation)
                self._generations.add(g)
            if v.assignment_epoch is not None:
                self.assignment_epoch.labels(g).set(v.assignment_epoch)
                self._assignment_epochs.add(g)

    def _lag_seconds(self, state: Any, now_ms: int) -> None:
        worst: dict[tuple[str, str], tuple[float, bool, bool]] = {}  # (age, lagging, carried)
        for q, (committed, top) in state.offsets.items():
            if committed is None or top is None:
                continue
            store, how = state.oldest.get(q, (None, None))
            if top > committed and store is None:
                continue  # lagging, not read yet: unknown, not 0
            lagging = top > committed
            age = max(0.0, (now_ms - store) / 1000) if lagging else 0.0
            pair = (q[0], q[1])
            if pair not in worst or (age, lagging) > worst[pair][:2]:
                worst[pair] = (age, lagging, how == "carried")
        for pair in self._pairs - worst.keys():
            with contextlib.suppress(KeyError):
                self.lag_carried.remove(*pair)
        for pair, (_age, _lagging, carried) in worst.items():
            self.lag_carried.labels(*pair).set(1 if carried else 0)
        # the ages are at ``now_ms``, the tick's start, when that is the present clock's (not a
        # replayed or simulated time): a scrape adds the time since then
        ago = time.time() - now_ms / 1000
        self.lag_seconds.set(
            {pair: (age, lagging) for pair, (age, lagging, _c) in worst.items()},
            measured_s_ago=ago if 0 < ago < 3600 else 0.0,
        )
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
