"""Plain-Python model of RocketMQ's producer fault tolerance and of the batch send simulation,
written from RocketMQ's Java sources (``MQFaultStrategy``, ``LatencyFaultToleranceImpl``,
``TopicPublishInfo``, the retry loop of ``DefaultMQProducerImpl.sendDefaultImpl``) independently of
the Rust core. It is the baseline of
the simulation benchmark and the oracle of the simulator's differential test."""

from __future__ import annotations

from dataclasses import dataclass, field

MASK32 = 0xFFFFFFFF
V4 = ([50, 100, 550, 1000, 2000, 3000, 15000], [0, 0, 30000, 60000, 120000, 180000, 600000])
V5 = ([50, 100, 550, 1800, 3000, 5000, 15000], [0, 0, 2000, 5000, 6000, 10000, 30000])


def s32(v: int) -> int:
    v &= MASK32
    return v - (1 << 32) if v >= 1 << 31 else v


class SplitMix64:
    def __init__(self, seed: int) -> None:
        self.state = seed & 0xFFFFFFFFFFFFFFFF

    def next_u64(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        return z ^ (z >> 31)

    def next_f64(self) -> float:
        return (self.next_u64() >> 11) / float(1 << 53)

    def next_below(self, n: int) -> int:
        return self.next_u64() % n


@dataclass
class Item:
    latency: int
    start: int
    reachable: bool = True


@dataclass
class Producer:
    semantics: str  # "4.x" or "5.x" (mqbalance.versions.Semantics values)
    queues: list[tuple[str, int]]  # (broker, queue_id) in publish order
    write_nums: dict[str, int]
    enabled: bool = True
    counter: int = 0
    worst: int = 0
    items: dict[str, Item] = field(default_factory=dict)

    def _next(self, which: str) -> int:
        v = s32(getattr(self, which) + 1)
        setattr(self, which, v)
        return v & 0x7FFFFFFF

    def duration(self, latency: int) -> int:
        lat_max, durations = V4 if self.semantics == "4.x" else V5
        for k in range(len(lat_max) - 1, -1, -1):
            if latency >= lat_max[k]:
                return durations[k]
        return 0

    def update(self, broker: str, latency: int, isolation: bool, reachable: bool, now: int) -> None:
        if not self.enabled:
            return
        v4 = self.semantics == "4.x"
        d = self.duration((30000 if v4 else 10000) if isolation else latency)
        item = self.items.setdefault(broker, Item(latency, 0))
        item.latency = latency
        if v4:
            item.start = now + d
        else:
            if d > 0 and now + d > item.start:
                item.start = now + d
            item.reachable = reachable

    def available(self, broker: str, now: int) -> bool:
        item = self.items.get(broker)
        return item is None or now >= item.start

    def reachable(self, broker: str) -> bool:
        item = self.items.get(broker)
        return item is None or item.reachable

    def _plain(self) -> int:
        return self._next("counter") % len(self.queues)

    def _filtered(self, ok) -> int | None:
        for _ in range(len(self.queues)):
            p = self._plain()
            if ok(self.queues[p][0]):
                return p
        return None

    def select(self, last: str | None, now: int, reset_to: int | None) -> tuple[str, int]:
        n = len(self.queues)
        if self.semantics == "4.x":
            if not self.enabled:
                p = self._filtered(lambda b: b != last) if last is not None else None
                return self.queues[self._plain() if p is None else p]
            idx = self._next("counter")
            for i in range(n):
                v = s32(idx + i)
                pos = abs(v) % n if v != -(2**31) else 0  # Java: abs(MIN_VALUE) < 0 -> clamped to 0
                if self.available(self.queues[pos][0], now):
                    return self.queues[pos]
            ranked = sorted(
                self.items.items(), key=lambda kv: (not (now >= kv[1].start), kv[1].latency, kv[1].start, kv[0])
            )
            nb = None
            if ranked:
                half = len(ranked) // 2
                nb = ranked[0][0] if half == 0 else ranked[self._next("worst") % half][0]
            if nb is not None:
                w = self.write_nums.get(nb, -1)
                if w > 0:
                    self._plain()
                    return (nb, self._next("counter") % w)
                self.items.pop(nb, None)
            return self.queues[self._plain()]
        other = (lambda b: True) if last is None else (lambda b: b != last)
        if self.enabled:
            if reset_to is not None:
                self.counter = reset_to
            for ok in (lambda b: self.available(b, now) and other(b), lambda b: self.reachable(b) and other(b)):
                p = self._filtered(ok)
                if p is not None:
                    return self.queues[p]
        else:
            p = self._filtered(other)
            if p is not None:
                return self.queues[p]
        return self.queues[self._plain()]


def simulate(
    p: Producer,
    models: dict[str, tuple[int, int, float]],
    *,
    sends: int,
    start_ms: int,
    interval_ms: int,
    retry_times: int,
    seed: int,
    failure_reachable: bool = True,
):
    """Same loop and same random draws as the Rust simulator; returns per-send lists."""
    rng = SplitMix64(seed)
    out_broker, out_qid, out_attempts, out_ok, out_elapsed = [], [], [], [], []
    free_at = -(2**63)
    for i in range(sends):
        start = max(start_ms + i * interval_ms, free_at)
        now = start
        last = None
        ok = False
        attempts = 0
        broker, qid = "", 0
        for attempt in range(retry_times + 1):
            reset = rng.next_below(0x7FFFFFFF) if (p.semantics == "5.x" and attempt > 0 and p.enabled) else None
            broker, qid = p.select(last, now, reset)
            lat, jitter, rate = models[broker]
            latency = lat + (rng.next_below(jitter + 1) if jitter > 0 else 0)
            failed = rng.next_f64() < rate
            now += latency
            attempts += 1
            if failed:
                p.update(broker, latency, True, failure_reachable, now)
                last = broker
            else:
                p.update(broker, latency, False, True, now)
                ok = True
                break
        out_broker.append(broker)
        out_qid.append(qid)
        out_attempts.append(attempts)
        out_ok.append(ok)
        out_elapsed.append(now - start)
        free_at = now
    return out_broker, out_qid, out_attempts, out_ok, out_elapsed
