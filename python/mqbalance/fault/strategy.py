"""Producer queue selection and broker fault isolation, as RocketMQ's Java producer does it.

``MQFaultStrategy`` (``"4.x"`` or ``"5.x"`` :class:`~mqbalance.versions.Semantics`) keeps, in its
``LatencyFaultTolerance``, a ``FaultItem`` per broker that was slow or failed, and picks the queue
for each send from a :class:`TopicPublishInfo`. Time comes from an
injectable ``clock`` (milliseconds) and the only randomness — the seeds of the per-thread
``ThreadLocalIndex`` counters and 5.x's ``reset()`` / ``pickOneAtLeast`` — from an injectable
``rng`` or explicit starting values, so every step is reproducible.

>>> clock = ManualClock(0)
>>> tp = TopicPublishInfo.from_route("topic-a", [QueueData("broker1", 6, 4), QueueData("broker2", 6, 4)],
...                                  send_which_queue=ThreadLocalIndex(initial=-1))
>>> fs = MQFaultStrategy(semantics="4.x", send_latency_fault_enable=True, clock=clock)
>>> fs.select_one_message_queue(tp).broker_name
'broker1'
>>> fs.update_fault_item("broker1", 30_000, isolation=False)  # 30 s: avoided for 600 s (4.x table)
>>> fs.select_one_message_queue(tp).broker_name
'broker2'
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mqbalance import _core, _validate
from mqbalance.allocation.models import MessageQueue
from mqbalance.exceptions import InvalidInputError, InvalidLatencyError, InvalidSimulationError, UnknownBrokerError
from mqbalance.versions import Semantics

__all__ = [
    "ManualClock",
    "ThreadLocalIndex",
    "QueueData",
    "FaultItem",
    "TopicPublishInfo",
    "MQFaultStrategy",
    "BrokerModel",
    "SendSimulation",
    "PERM_READ",
    "PERM_WRITE",
]

PERM_READ = 4
PERM_WRITE = 2
_MASK = 0x7FFFFFFF


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class ManualClock:
    """A clock you move by hand: ``clock()`` is the time in ms, ``clock.advance(ms)`` moves it."""

    def __init__(self, now_ms: int = 0) -> None:
        self.now_ms = _validate.java_long(now_ms, "now_ms")

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, ms: int) -> int:
        self.now_ms = _validate.java_long(self.now_ms + _validate.java_long(ms, "ms"), "now_ms + ms")
        return self.now_ms


def _signed32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


class ThreadLocalIndex:
    """Java's ``ThreadLocalIndex``: one raw ``int`` counter per thread.

    A thread's first use seeds it with ``initial`` if given, else like Java: ``abs(nextInt())``
    (``semantics="4.x"``) or ``nextInt()`` (``"5.x"``, the default) from ``rng``. Each use stores
    ``raw + 1`` (32-bit wrap) and returns it masked non-negative.

    >>> i = ThreadLocalIndex(initial=2**31 - 1)
    >>> i.increment_and_get(), i.raw
    (0, -2147483648)
    """

    def __init__(
        self, *, initial: int | None = None, rng: random.Random | None = None, semantics: Semantics | str = Semantics.V5
    ) -> None:
        if initial is not None and (
            not isinstance(initial, int) or isinstance(initial, bool) or not _validate.is_java_int(initial)
        ):
            raise InvalidInputError(f"initial must be a 32-bit int, got {initial!r}", initial)
        self._initial = initial
        self._rng = rng or random.Random()
        self._semantics = Semantics.parse(semantics)
        self._local = threading.local()
        self._lock = threading.Lock()

    def _seed(self) -> int:
        if self._initial is not None:
            return self._initial
        with self._lock:
            v = _signed32(self._rng.getrandbits(32))
        return _signed32(abs(v)) if self._semantics is Semantics.V4 else v

    @property
    def raw(self) -> int:
        """This thread's stored value (seeded on first access)."""
        raw = getattr(self._local, "raw", None)
        if raw is None:
            raw = self._local.raw = self._seed()
        return raw

    @raw.setter
    def raw(self, value: int) -> None:
        self._local.raw = _signed32(value)

    def increment_and_get(self) -> int:
        self.raw = self.raw + 1
        return self.raw & _MASK

    def reset(self, value: int | None = None) -> None:
        """5.x ``reset()``: ``abs(random.nextInt(Integer.MAX_VALUE))``, or ``value`` if given."""
        if value is None:
            with self._lock:
                value = self._rng.randrange(0, _MASK)
        self.raw = _validate.java_int(value, "value")


@dataclass(frozen=True, slots=True)
class QueueData:
    """One ``QueueData`` of a topic route."""

    broker_name: str
    perm: int
    write_queue_nums: int
    read_queue_nums: int | None = None

    def __post_init__(self) -> None:
        _validate.text(self.broker_name, "QueueData.broker_name")
        for field in ("perm", "write_queue_nums", "read_queue_nums"):
            v = getattr(self, field)
            if v is not None or field != "read_queue_nums":
                object.__setattr__(self, field, _validate.java_int(v, f"QueueData.{field}"))


@dataclass(frozen=True, slots=True)
class FaultItem:
    """A fault-table entry. ``reachable`` and ``check_stamp`` matter in 5.x only."""

    current_latency: int
    start_timestamp: int
    reachable: bool = True
    check_stamp: int = 0


@dataclass(frozen=True, slots=True)
class BrokerModel:
    """How a broker behaves in a simulation: each attempt takes ``latency_ms + U[0, jitter_ms]``
    and fails with probability ``failure_rate``."""

    latency_ms: int
    jitter_ms: int = 0
    failure_rate: float = 0.0


@dataclass(frozen=True)
class SendSimulation:
    """Per-send outcome of :meth:`MQFaultStrategy.simulate` (numpy arrays, one entry per send).

    ``broker`` holds codes into ``brokers``; ``attempts`` counts tries (1 + retries);
    ``elapsed_ms`` is the whole send, retries included.
    """

    brokers: list[str]
    broker: np.ndarray
    queue_id: np.ndarray
    attempts: np.ndarray
    ok: np.ndarray
    elapsed_ms: np.ndarray

    def sends_per_broker(self) -> dict[str, int]:
        """How many sends ended on each broker."""
        counts = np.bincount(self.broker, minlength=len(self.brokers))
        return {b: int(c) for b, c in zip(self.brokers, counts)}

    def summary(self) -> dict[str, Any]:
        n = len(self.ok)
        return {
            "sends": n,
            "succeeded": int(self.ok.sum()),
            "retried": int((self.attempts > 1).sum()),
            "mean_elapsed_ms": float(self.elapsed_ms.mean()) if n else 0.0,
            "per_broker": self.sends_per_broker(),
        }


class TopicPublishInfo:
    """A topic's message queue list (in the producer's order) and its route's queue data.

    ``send_which_queue`` is the per-thread round-robin counter (inject ``initial`` to replay).
    """

    def __init__(
        self,
        message_queues: Sequence[MessageQueue],
        queue_datas: Iterable[QueueData] = (),
        *,
        send_which_queue: ThreadLocalIndex | None = None,
    ) -> None:
        if _validate.not_a_collection(message_queues):
            raise InvalidInputError(
                f"message_queues must be a sequence of MessageQueue, got {message_queues!r}", message_queues
            )
        queues = list(message_queues)
        for i, q in enumerate(queues):
            if not isinstance(q, MessageQueue):
                raise InvalidInputError(f"message_queues[{i}] must be a MessageQueue, got {q!r}", q)
        qds = _queue_datas(queue_datas)
        topic = queues[0].topic if queues else ""
        self._core = _core.TopicPublishInfo(
            topic,
            [(q.topic, q.broker_name, q.queue_id) for q in queues],
            [(d.broker_name, d.perm, d.write_queue_nums) for d in qds],
        )
        self.message_queues: list[MessageQueue] = queues
        self.queue_datas: list[QueueData] = qds
        self.send_which_queue = send_which_queue or ThreadLocalIndex()

    @classmethod
    def from_route(
        cls,
        topic: str,
        queue_datas: Iterable[QueueData],
        brokers_with_master: Iterable[str] | None = None,
        *,
        send_which_queue: ThreadLocalIndex | None = None,
    ) -> TopicPublishInfo:
        """``topicRouteData2TopicPublishInfo``: queue data sorted by broker name; every writable one
        whose broker has a master contributes queues ``0..write_queue_nums-1``."""
        _validate.text(topic, "topic")
        qds = _queue_datas(queue_datas)
        masters = (
            None
            if brokers_with_master is None
            else set(_validate.str_sequence(brokers_with_master, "brokers_with_master"))
        )
        writable = sum(d.write_queue_nums for d in qds if d.perm & PERM_WRITE and d.write_queue_nums > 0)
        _validate.check_memory("write_queue_nums (total)", writable, writable * _QUEUE_BYTES)
        core = _core.TopicPublishInfo.from_route(
            topic, [(d.broker_name, d.perm, d.write_queue_nums) for d in qds], masters
        )
        self = cls.__new__(cls)
        self._core = core
        self.message_queues = [MessageQueue(*q) for q in core.queues()]
        self.queue_datas = qds
        self.send_which_queue = send_which_queue or ThreadLocalIndex()
        return self

    def __len__(self) -> int:
        return len(self.message_queues)

    def __repr__(self) -> str:
        return f"TopicPublishInfo({len(self)} queues)"

    def select_one_message_queue(self, last_broker_name: str | None = None) -> MessageQueue:
        """``TopicPublishInfo.selectOneMessageQueue(lastBrokerName)``: round robin, skipping
        ``last_broker_name`` for up to one lap (each probe advances the counter)."""
        if last_broker_name is not None:
            _broker(last_broker_name)
        pos, self.send_which_queue.raw = self._core.select_avoiding(last_broker_name, self.send_which_queue.raw)
        return self.message_queues[pos]


#: Memory per publish-info queue: the core's row and columns plus a Python ``MessageQueue``.
_QUEUE_BYTES = 200
#: Memory per simulated send: the core's five columns and the numpy arrays they become.
_SEND_BYTES = 40


def _queue_datas(queue_datas: Any) -> list[QueueData]:
    if isinstance(queue_datas, (str, bytes)) or not hasattr(queue_datas, "__iter__"):
        raise InvalidInputError(f"queue_datas must be a sequence of QueueData, got {queue_datas!r}", queue_datas)
    qds = list(queue_datas)
    for i, d in enumerate(qds):
        if not isinstance(d, QueueData):
            raise InvalidInputError(f"queue_datas[{i}] must be a QueueData, got {d!r}", d)
    return qds


def _broker(name: Any) -> str:
    return _validate.text(name, "broker_name")


def _latency(value: Any, name: str = "latency_ms", *, allow_negative: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidLatencyError(f"{name} must be a number of milliseconds, got {value!r}", value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise InvalidLatencyError(f"{name} must be finite, got {value!r}", value)
        if value < 0 and not allow_negative:  # before truncation: -0.5 is negative, not 0
            raise InvalidLatencyError(f"{name} must be >= 0 ms, got {value}", value)
        value = int(value)
    if value < 0 and not allow_negative:
        raise InvalidLatencyError(f"{name} must be >= 0 ms, got {value}", value)
    return _validate.java_long(value, name, error=InvalidLatencyError)


class MQFaultStrategy:
    """``MQFaultStrategy`` with its ``LatencyFaultTolerance``.

    ``semantics``: a :class:`~mqbalance.versions.Semantics` — ``"5.x"`` (default; RocketMQ 5.1.4+,
    RIP-63) or ``"4.x"`` (the 4.9.x line). The
    ``semantics`` attribute holds the canonical member. ``send_latency_fault_enable``
    defaults to ``False`` as in Java. Tables default to the generation's; custom ones must have
    equal length and ascend. ``clock()`` gives ms (wall time by default); ``rng`` seeds 5.x's
    random choices. Safe to share between threads: counters are per thread, the table is locked.
    """

    def __init__(
        self,
        *,
        semantics: Semantics | str = Semantics.V5,
        send_latency_fault_enable: bool = False,
        latency_max: Sequence[int] | None = None,
        not_available_duration: Sequence[int] | None = None,
        start_detector_enable: bool = False,
        detect_interval: int = 2000,
        clock: Callable[[], int] | None = None,
        rng: random.Random | None = None,
        which_item_worst: ThreadLocalIndex | None = None,
    ) -> None:
        self.semantics = Semantics.parse(semantics)
        tables = {}
        for tname, table in (("latency_max", latency_max), ("not_available_duration", not_available_duration)):
            if table is not None:
                if isinstance(table, (str, bytes)) or not hasattr(table, "__iter__"):
                    raise InvalidInputError(f"{tname} must be a sequence of int, got {table!r}", table)
                table = [_validate.java_long(v, f"{tname}[{i}]") for i, v in enumerate(table)]
            tables[tname] = table
        detect_interval = _validate.java_long(detect_interval, "detect_interval")
        self.send_latency_fault_enable = bool(send_latency_fault_enable)
        self.start_detector_enable = bool(start_detector_enable)
        self._core = _core.MQFaultStrategy(
            self.semantics.value,
            enabled=self.send_latency_fault_enable,
            latency_max=tables["latency_max"],
            not_available_duration=tables["not_available_duration"],
            start_detector_enable=self.start_detector_enable,
            detect_interval=detect_interval,
        )
        self.clock = clock or _wall_clock_ms
        self.rng = rng or random.Random()
        self.which_item_worst = which_item_worst or ThreadLocalIndex(rng=self.rng, semantics=Semantics.V4)

    def _now(self) -> int:
        """The clock's reading, checked: a clock returning something other than ms in Java's
        ``long`` range is refused by name, not passed on."""
        return _validate.java_long(self.clock(), "clock()", error=InvalidInputError)

    def __repr__(self) -> str:
        enabled = self.send_latency_fault_enable
        return f"MQFaultStrategy(semantics={self.semantics.value!r}, send_latency_fault_enable={enabled})"

    @property
    def latency_max(self) -> list[int]:
        return list(self._core.latency_max)

    @property
    def not_available_duration(self) -> list[int]:
        return list(self._core.not_available_duration)

    def compute_not_available_duration(self, latency_ms: int) -> int:
        """How long (ms) a broker is avoided after a send of this latency (below every
        threshold, negative included: 0)."""
        return int(self._core.compute_not_available_duration(_latency(latency_ms, allow_negative=True)))

    def update_fault_item(
        self, broker_name: str, latency_ms: int | float, isolation: bool, reachable: bool = True
    ) -> None:
        """Record a send's outcome (no-op unless ``send_latency_fault_enable``). ``isolation=True``
        for a failed send. 4.x overwrites the window; 5.x only extends it."""
        self._core.update_fault_item(
            _broker(broker_name), _latency(latency_ms), bool(isolation), bool(reachable), self._now()
        )

    def is_available(self, broker_name: str) -> bool:
        return bool(self._core.is_available(_broker(broker_name), self._now()))

    def is_reachable(self, broker_name: str) -> bool:
        return bool(self._core.is_reachable(_broker(broker_name)))

    def remove(self, broker_name: str) -> None:
        self._core.remove(_broker(broker_name))

    def fault_items(self) -> dict[str, FaultItem]:
        """The whole table, sorted by broker name."""
        return {k: FaultItem(*v) for k, v in sorted(self._core.items().items())}

    def pick_one_at_least(self) -> str | None:
        """4.x: one of the better half of the sorted table (deterministic given the counter;
        exact ties, which Java orders by hash-map iteration, are broken by name). 5.x: a random
        reachable broker (``rng``)."""
        if self.semantics is Semantics.V4:
            broker, self.which_item_worst.raw = self._core.pick_one_at_least_4x(self._now(), self.which_item_worst.raw)
            return broker
        candidates = self._core.reachable_candidates()
        return self.rng.choice(candidates) if candidates else None

    def select_one_message_queue(
        self,
        publish_info: TopicPublishInfo,
        last_broker_name: str | None = None,
        reset_index: bool = False,
        *,
        reset_to: int | None = None,
    ) -> MessageQueue:
        """The queue for the next send attempt. The producer passes the previous attempt's broker
        as ``last_broker_name`` and (5.x) ``reset_index=True`` on every retry; ``reset_to``
        injects the value 5.x's random ``reset()`` picks."""
        tp = publish_info
        if not isinstance(tp, TopicPublishInfo):
            raise InvalidInputError(f"publish_info must be a TopicPublishInfo, got {tp!r}", tp)
        if last_broker_name is not None:
            _broker(last_broker_name)
        if reset_to is not None:
            reset_to = _validate.java_int(reset_to, "reset_to")
        counter = tp.send_which_queue
        if self.semantics is Semantics.V4:
            pos, new, counter.raw, self.which_item_worst.raw = self._core.select_4x(
                tp._core, self._now(), last_broker_name, counter.raw, self.which_item_worst.raw
            )
            if new is None:
                return tp.message_queues[pos]
            return MessageQueue(tp.message_queues[pos].topic, new[0], new[1])
        reset = None
        if reset_index and self.send_latency_fault_enable:
            reset = reset_to if reset_to is not None else self.rng.randrange(0, _MASK)
        pos, counter.raw = self._core.select_5x(tp._core, self._now(), last_broker_name, reset, counter.raw)
        return tp.message_queues[pos]

    def detect_round(
        self,
        resolve: Mapping[str, str | None] | Callable[[str], str | None],
        detect: Mapping[str, bool] | Callable[[str], bool],
    ) -> None:
        """One 5.x detector round (``detectByOneRound``): ``resolve(broker)`` → address or None
        (item removed); ``detect(address)`` → whether the broker answered. Java's scheduler runs
        one every 3 s when ``start_detector_enable``; call it yourself on your own schedule."""
        for what, given in (("resolve", resolve), ("detect", detect)):
            if not isinstance(given, Mapping) and not callable(given):
                raise InvalidInputError(f"{what} must be a mapping or a callable, got {given!r}", given)
        names = list(self._core.items())
        answers = {n: (resolve.get(n) if isinstance(resolve, Mapping) else resolve(n)) for n in names}
        addresses = {a for a in answers.values() if a is not None}
        ok = {a: bool(detect.get(a, False) if isinstance(detect, Mapping) else detect(a)) for a in addresses}
        self._core.detect_round(self._now(), answers, ok)

    def simulate(
        self,
        publish_info: TopicPublishInfo,
        models: Mapping[str, BrokerModel],
        *,
        sends: int,
        interval_ms: int = 1,
        start_ms: int | None = None,
        retry_times_when_send_failed: int = 2,
        seed: int = 0,
    ) -> SendSimulation:
        """Simulate ``sends`` synchronous sends of one producer thread in Rust (send ``i`` is due
        at ``start_ms + i * interval_ms`` and starts once the previous one returned): the
        producer's retry loop (up to
        ``1 + retry_times_when_send_failed`` attempts, the previous broker passed on, 5.x
        ``reset_index`` on retries), this strategy's selection and fault-table updates.

        Runs on a copy: this strategy's table and the publish info's counter are left as they
        were. Deterministic for a given ``seed`` (and the counters' current values).
        """
        tp = publish_info
        if not isinstance(tp, TopicPublishInfo):
            raise InvalidSimulationError(f"publish_info must be a TopicPublishInfo, got {tp!r}", tp)
        _validate.mapping(models, "models", error=InvalidSimulationError)
        names = tp._core.brokers()
        unknown = sorted(set(models) - set(names))
        if unknown:
            raise UnknownBrokerError(f"models name brokers that are not in the route: {unknown}", unknown[0])
        missing = [b for b in names if b not in models]
        if missing:
            raise InvalidSimulationError(f"no BrokerModel for broker(s) {missing}", missing[0])
        sends = _validate.count(sends, "sends", bytes_each=_SEND_BYTES, error=InvalidSimulationError)
        interval_ms = _validate.java_long(interval_ms, "interval_ms", minimum=0, error=InvalidSimulationError)
        retry_times_when_send_failed = _validate.java_int(
            retry_times_when_send_failed, "retry_times_when_send_failed", minimum=0, error=InvalidSimulationError
        )
        seed = _validate.integer(seed, "seed", error=InvalidSimulationError)
        if seed < 0:
            raise InvalidSimulationError(f"seed must be an int >= 0, got {seed!r}", seed)
        if start_ms is not None:
            start_ms = _validate.java_long(start_ms, "start_ms", error=InvalidSimulationError)
        rows = []
        for b in names:
            m = models[b]
            if not isinstance(m, BrokerModel):
                raise InvalidSimulationError(f"models[{b!r}] must be a BrokerModel, got {m!r}", m)
            rate = _validate.number(m.failure_rate, f"models[{b!r}].failure_rate", error=InvalidSimulationError)
            rows.append((_latency(m.latency_ms), _latency(m.jitter_ms, "jitter_ms"), rate))
        out = self._core.simulate(
            tp._core,
            rows,
            sends=sends,
            start_ms=self._now() if start_ms is None else start_ms,
            interval_ms=interval_ms,
            retry_times=retry_times_when_send_failed,
            seed=seed & 0xFFFFFFFFFFFFFFFF,
            send_which_queue=tp.send_which_queue.raw,
            which_item_worst=self.which_item_worst.raw,
            failure_reachable=not self.start_detector_enable,
        )
        return SendSimulation(names, out["broker"], out["queue_id"], out["attempts"], out["ok"], out["elapsed_ms"])
