"""How many consumers a group needs: the consumer counts at which the largest share per consumer
actually drops under the group's strategy, the predicted time to drain the lag at each, and the
smallest count that meets a drain target — computed with the real allocation code (the Rust core:
:func:`mqbalance.allocation.bulk.owners` for RocketMQ's strategies, :mod:`mqbalance.kafka` for
Kafka's assignors).

The model is the one the consumers live by: each consumer works at its measured rate ``c``
(messages/s, measured while it had lag, i.e. saturated) over the queues it owns; the producers
spread ``produce_rate`` over the queues (evenly, unless given per queue). A consumer owning queues
with lag ``L`` and production ``P`` drains in ``L / (c - P)`` seconds, never when ``P >= c`` and
``L > 0``; the group drains when its slowest consumer has.

>>> a = advise(GroupLoad(queues=16, strategy="AVG", consumers=5, consume_rate=100.0, lag=96_000,
...                      produce_rate=200.0), drain_target_s=600)
>>> [(s.consumers, s.max_share) for s in a.steps]  # beyond 5, only 6, 8 and 16 help
[(1, 16), (2, 8), (3, 6), (4, 4), (6, 3), (8, 2), (16, 1)]
>>> a.current.max_share, round(a.current.drain_s), a.recommended.consumers, round(a.recommended.drain_s)
(4, 480, 4, 480)

CONSISTENT_HASH (and its bounded variant) place queues by hashing the consumers' ids, so the
largest share at a count depends on ids that do not exist yet. Each count is computed over
:data:`ID_SAMPLES` seeded sets of ids (keeping the group's current ids when given: scaling up adds
new ones, scaling down drops some), and the plan uses the *worst* set (``max_share`` and
``drain_s``; the median is reported beside it): a recommendation holds whatever ids the new pods get.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from mqbalance.allocation import bulk
from mqbalance.allocation.registry import StrategyName, StrategySpec, Use
from mqbalance.exceptions import InvalidInputError, UnsupportedStrategyError
from mqbalance.history.analysis import ms
from mqbalance.history.collector import load_state
from mqbalance.history.schema import TABLES
from mqbalance.history.writer import open_history, read_ticks
from mqbalance.kafka.assignors import assignor

__all__ = ["ID_SAMPLES", "GroupLoad", "ScaleStep", "ScalingAdvice", "advise", "measured_load"]

#: Id sets sampled per count for the strategies whose shares depend on the ids.
ID_SAMPLES = 32
#: Strategies whose largest share at a count depends on the consumers' ids.
ID_DEPENDENT = frozenset({StrategyName.CONSISTENT_HASH, StrategyName.CONSISTENT_HASH_BOUNDED})


@dataclass(frozen=True)
class GroupLoad:
    """One group on one topic, as measured. ``queues``: the queue count (one broker, ``broker-a``)
    or ``{broker: count}``; ``strategy``: a RocketMQ strategy (name or spec) or, with
    ``kafka=True``, a Kafka assignor (:data:`mqbalance.kafka.ASSIGNORS`; the sticky ones as their
    first generation); ``consumers``: the current count, or the current client ids;
    ``consume_rate``: messages/s one consumer processes (measured while lagging); ``lag``: the
    total (spread evenly) or one figure per queue (in Java's queue order: broker name, queue id);
    ``produce_rate``: messages/s into the topic (or per queue)."""

    queues: int | dict[str, int]
    strategy: str | StrategySpec
    consumers: int | Sequence[str]
    consume_rate: float
    lag: int | Sequence[int] = 0
    produce_rate: float | Sequence[float] = 0.0
    topic: str = "TopicTest"
    kafka: bool = False


@dataclass(frozen=True)
class ScaleStep:
    """One consumer count: the largest share (queues of the busiest consumer; worst id set for
    hashing strategies, ``max_share_median`` beside it), the predicted drain in seconds (``None``:
    never, production outpaces the busiest consumer; ``0``: idle, no lag and keeping up)."""

    consumers: int
    max_share: int
    drain_s: float | None
    max_share_median: float | None = None
    drain_s_median: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "consumers": self.consumers,
            "max_share": self.max_share,
            "drain_s": _seconds(self.drain_s),
            "drain": _state(self.drain_s),
        }
        if self.max_share_median is not None:
            out["max_share_median"] = self.max_share_median
            out["drain_s_median"] = _seconds(self.drain_s_median)
        return out


@dataclass(frozen=True)
class ScalingAdvice:
    """:func:`advise`'s answer. ``steps``: every count (from 1) at which the largest share drops
    below all smaller counts' — the only counts worth running; ``current``: the group as it runs;
    ``recommended``: the smallest step meeting the target, else the step draining fastest (then
    ``meets_target`` is false); ``reason``: one line saying why."""

    strategy: str
    queues: int
    target_s: float | None
    current: ScaleStep
    steps: list[ScaleStep]
    recommended: ScaleStep
    meets_target: bool
    reason: str
    id_dependent: bool = False
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The JSON an autoscaler reads: ``recommended.consumers`` is the replica count."""
        return {
            "strategy": self.strategy,
            "queues": self.queues,
            "drain_target_s": self.target_s,
            "current": self.current.to_dict(),
            "recommended": self.recommended.to_dict(),
            "meets_target": self.meets_target,
            "change": _change(self.current.consumers, self.recommended.consumers),
            "reason": self.reason,
            "steps": [s.to_dict() for s in self.steps],
            "id_dependent": self.id_dependent,
            "notes": list(self.notes),
        }

    def format(self) -> str:
        """A table for people: one line per step, the current and recommended counts marked."""
        lines = [f"{self.strategy} over {self.queues} queues; drain target {_human(self.target_s)}"]
        lines.append(f"{'consumers':>9}  {'max share':>9}  {'drain':>10}")
        shown = {s.consumers: s for s in self.steps}
        shown.setdefault(self.current.consumers, self.current)
        for n in sorted(shown):
            s = shown[n]
            mark = ("  <- now" if n == self.current.consumers else "") + (
                "  <- recommended" if n == self.recommended.consumers else ""
            )
            lines.append(f"{n:>9}  {s.max_share:>9}  {_human(s.drain_s, idle=True):>10}{mark}")
        lines.append(self.reason)
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)


def _seconds(v: float | None) -> float | None:
    return None if v is None else round(v, 3)


def _state(v: float | None) -> str:
    return "never" if v is None else "idle" if v == 0 else "draining"


def _change(now: int, then: int) -> str:
    return "none" if now == then else "up" if then > now else "down"


def _human(v: float | None, *, idle: bool = False) -> str:
    if v is None:
        return "never" if idle else "none"
    if v == 0 and idle:
        return "idle"
    if v < 120:
        return f"{v:.0f}s"
    if v < 7200:
        return f"{v / 60:.1f}m"
    return f"{v / 3600:.1f}h"


def _per_queue(value: float | Sequence[float], n: int, name: str, *, total: bool) -> np.ndarray:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not (math.isfinite(value) and value >= 0):
            raise InvalidInputError(f"{name}: must be a finite number >= 0, got {value!r}", value)
        return np.full(n, float(value) / n if total else float(value))
    try:
        arr: np.ndarray = np.asarray(list(value), dtype=np.float64)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InvalidInputError(f"{name}: expected a number or one number per queue, got {value!r}", value) from None
    if arr.shape != (n,) or not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise InvalidInputError(f"{name}: expected {n} finite numbers >= 0 (one per queue), got {value!r}", value)
    return arr


def _ids(rng: random.Random, n: int) -> list[str]:
    """``n`` client ids shaped like RocketMQ's (``IP@PID``)."""
    return [
        f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}@{rng.randrange(1, 65536)}"
        for _ in range(n)
    ]


#: the largest queue count, consumer count and id sets per count ``advise`` plans for: each count
#: it considers is one allocation of every queue (times the id sets for hashing strategies)
MAX_QUEUES = 1_000_000
MAX_CONSUMERS = 100_000
MAX_ID_SAMPLES = 1_000


class _Allocator:
    """Owner of every queue (Java's queue order) for a list of ids, by the group's strategy."""

    def __init__(self, load: GroupLoad) -> None:
        spec = load.queues if isinstance(load.queues, dict) else {"broker-a": load.queues}
        if not spec or any(not isinstance(v, int) or isinstance(v, bool) or v <= 0 for v in spec.values()):
            raise InvalidInputError(f"queues: expected a count > 0 or {{broker: count > 0}}, got {load.queues!r}", spec)
        if sum(spec.values()) > MAX_QUEUES:
            raise InvalidInputError(
                f"queues: at most {MAX_QUEUES:,} for one group's topic, got {sum(spec.values()):,}", load.queues
            )
        brokers = sorted(spec)
        self.topic = load.topic
        self.brokers = [b for b in brokers for _ in range(spec[b])]
        self.qids = [q for b in brokers for q in range(spec[b])]
        self.n = len(self.qids)
        self.kafka = load.kafka
        if load.kafka:
            if not isinstance(load.strategy, str):
                raise UnsupportedStrategyError(
                    f"assignor: expected a Kafka assignor's name, got {load.strategy!r}", load.strategy
                )
            self.assignor = assignor(load.strategy)  # any of mqbalance.kafka.ASSIGNORS, first generation
            self.name, self.id_dependent = self.assignor.name, False
        else:
            self.spec = StrategySpec.parse(load.strategy, where="strategy", use=Use.WHAT_IF)
            self.name, self.id_dependent = self.spec.display_name, self.spec.name in ID_DEPENDENT
            self.built = self.spec.build()

    def owners(self, ids: list[str]) -> np.ndarray:
        if self.kafka:
            assigned = self.assignor.assign({self.topic: self.n}, {m: [self.topic] for m in ids})
            out = np.full(self.n, -1, dtype=np.int64)
            for j, m in enumerate(ids):
                for tp in assigned[m]:
                    out[tp.partition] = j
            return out
        previous = [None] * self.n if self.spec.info.needs_previous else None
        return bulk.owners(self.built, [self.topic] * self.n, self.brokers, self.qids, ids, previous=previous)


def _drain(owners: np.ndarray, k: int, lag: np.ndarray, prod: np.ndarray, rate: float) -> tuple[int, float | None]:
    """(largest share, drain seconds or ``None`` for never) of one assignment over ``k`` ids."""
    held = owners >= 0
    share = np.bincount(owners[held], minlength=k)
    if not np.all(held) and (lag[~held].sum() > 0 or prod[~held].sum() > 0):
        return int(share.max()), None  # a queue nobody consumes never drains
    lags = np.bincount(owners[held], weights=lag[held], minlength=k)
    prods = np.bincount(owners[held], weights=prod[held], minlength=k)
    worst = 0.0
    for behind, incoming in zip(lags, prods):
        if behind <= 0 and incoming <= rate:
            continue
        if incoming >= rate:
            return int(share.max()), None
        worst = max(worst, float(behind / (rate - incoming)))
    return int(share.max()), worst


def advise(
    load: GroupLoad,
    *,
    drain_target_s: float | None = None,
    max_consumers: int | None = None,
    id_samples: int = ID_SAMPLES,
) -> ScalingAdvice:
    """The counts worth running for ``load``, their predicted drain, and the smallest meeting
    ``drain_target_s`` (``None``: the count draining fastest with the fewest consumers). Counts
    go from 1 to ``max_consumers`` (default: the queue count; for hashing strategies, where more
    ids than queues can still spread the ring, twice it but at most four times the current count
    (at least 16): each count there costs ``id_samples`` allocations). Never below the current
    count."""
    alloc = _Allocator(load)
    n = alloc.n
    if not (isinstance(load.consume_rate, (int, float)) and math.isfinite(load.consume_rate) and load.consume_rate > 0):
        raise InvalidInputError(
            f"consume_rate: must be a number > 0 (msg/s), got {load.consume_rate!r}", load.consume_rate
        )
    if drain_target_s is not None and not drain_target_s > 0:
        raise InvalidInputError(f"drain target: must be > 0 s, got {drain_target_s!r}", drain_target_s)
    current_ids = None if isinstance(load.consumers, int) else [str(c) for c in load.consumers]
    if current_ids is not None and (not all(current_ids) or len(set(current_ids)) != len(current_ids)):
        raise InvalidInputError(
            f"consumers: client ids must be distinct and non-empty, got {current_ids!r}", current_ids
        )
    count = len(current_ids) if current_ids is not None else load.consumers
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise InvalidInputError(f"consumers: expected a count >= 1 or the client ids, got {load.consumers!r}", count)
    lag = _per_queue(load.lag, n, "lag", total=True)
    prod = _per_queue(load.produce_rate, n, "produce_rate", total=True)
    if not isinstance(id_samples, int) or isinstance(id_samples, bool) or id_samples < 1:
        raise InvalidInputError(f"id_samples: expected an integer >= 1, got {id_samples!r}", id_samples)
    if max_consumers is not None and (
        not isinstance(max_consumers, int) or isinstance(max_consumers, bool) or not 1 <= max_consumers <= MAX_CONSUMERS
    ):
        raise InvalidInputError(
            f"max_consumers: expected an integer from 1 to {MAX_CONSUMERS:,}, got {max_consumers!r}", max_consumers
        )
    if id_samples > MAX_ID_SAMPLES:
        raise InvalidInputError(f"id_samples: at most {MAX_ID_SAMPLES:,}, got {id_samples!r}", id_samples)
    if count > MAX_CONSUMERS:
        raise InvalidInputError(f"consumers: at most {MAX_CONSUMERS:,}, got {count!r}", count)
    if max_consumers is not None:
        top = max_consumers
    else:
        top = min(2 * n, max(4 * count, 16)) if alloc.id_dependent else n
    top = max(top, count)
    rate = float(load.consume_rate)

    def at(k: int) -> ScaleStep:
        if not alloc.id_dependent:
            share, drain = _drain(alloc.owners(_ids(random.Random(k), k)), k, lag, prod, rate)
            return ScaleStep(k, share, drain)
        results = []
        for sample in range(id_samples):
            rng = random.Random(k * 1_000_003 + sample)
            if current_ids is not None and k >= count:
                ids = current_ids + _ids(rng, k - count)
            elif current_ids is not None:
                ids = rng.sample(current_ids, k)
            else:
                ids = _ids(rng, k)
            results.append(_drain(alloc.owners(ids), k, lag, prod, rate))
        shares = [s for s, _ in results]
        drains = [math.inf if d is None else d for _, d in results]
        worst, median = max(drains), statistics.median(drains)
        return ScaleStep(
            k,
            max(shares),
            None if math.isinf(worst) else worst,
            float(statistics.median(shares)),
            None if math.isinf(median) else median,
        )

    if current_ids is not None and alloc.id_dependent:
        share, drain = _drain(alloc.owners(current_ids), count, lag, prod, rate)
        current = ScaleStep(count, share, drain)  # the group's own ids: exact
    else:
        current = at(count)
    steps: list[ScaleStep] = []
    best = math.inf
    for k in range(1, top + 1):
        step = current if k == count and not alloc.id_dependent else at(k)
        if step.max_share < best:
            steps.append(step)
            best = step.max_share
    meeting = [s for s in steps if s.drain_s is not None and (drain_target_s is None or s.drain_s <= drain_target_s)]
    notes = []
    if alloc.id_dependent:
        notes.append(
            f"{alloc.name} places queues by hashing client ids: each count is planned on the worst of "
            f"{id_samples} seeded id sets (current ids kept), the median beside it; counts up to {top}"
        )
    if drain_target_s is None:
        fastest = min((s.drain_s for s in steps if s.drain_s is not None), default=None)
        chosen = next((s for s in steps if s.drain_s == fastest), steps[-1])
        ok = fastest is not None
        reason = "no target: the fewest consumers draining fastest"
    elif meeting:
        chosen, ok = meeting[0], True
        reason = f"the fewest consumers draining within {_human(drain_target_s)}"
    else:
        fastest = min((s.drain_s for s in steps if s.drain_s is not None), default=None)
        chosen = next((s for s in steps if s.drain_s == fastest), steps[-1])
        ok = False
        reason = f"no count drains within {_human(drain_target_s)}: " + (
            "production outpaces every count" if fastest is None else "the fastest count shown"
        )
    if chosen.consumers > count and chosen.max_share >= current.max_share:
        chosen = current  # never scale up without lowering the largest share
        ok = current.drain_s is not None and (drain_target_s is None or current.drain_s <= drain_target_s)
        reason = "no count lowers the largest share below the current one; keep the group as it is"
    return ScalingAdvice(
        strategy=alloc.name,
        queues=n,
        target_s=drain_target_s,
        current=current,
        steps=steps,
        recommended=chosen,
        meets_target=ok,
        reason=reason,
        id_dependent=alloc.id_dependent,
        notes=notes,
    )


def measured_load(
    root: str | Path, group: str, *, topic: str | None = None, window_s: float = 300.0, until_ms: int | None = None
) -> GroupLoad:
    """A :class:`GroupLoad` measured from a ``mqbalance watch`` history at ``root``: the group's
    queues, strategy and client ids at the last tick; per queue, the lag at the last offsets
    reading and the production rate (max offsets moving) over the last ``window_s`` seconds; and
    the per-consumer rate: the median, over the consumers whose every queue lagged at both ends of
    the window (saturated), of the consumption (committed offsets moving) over their queues.
    ``until_ms``: the window ends at the last reading at or before it (default: the last one).

    >>> load = measured_load("history/", "cg-orders", window_s=120)  # doctest: +SKIP
    >>> advise(load, drain_target_s=600).recommended.consumers  # doctest: +SKIP
    6
    """
    if not (isinstance(window_s, (int, float)) and window_s > 0):
        raise InvalidInputError(f"window: must be > 0 s, got {window_s!r}", window_s)
    path = open_history(root, create=False)
    state = load_state(path)
    if group not in state.groups:
        raise InvalidInputError(
            f"group {group!r} is not in the history's last tick ({len(state.groups)} groups)", group
        )
    _model, subscriptions, strategy = state.groups[group]
    topics = sorted({q[1] for q in state.ownership if q[0] == group} & set(subscriptions or ())) or sorted(
        {q[1] for q in state.ownership if q[0] == group}
    )
    if topic is None:
        if len(topics) != 1:
            raise InvalidInputError(f"group {group!r} consumes {topics or 'no topic'}: choose one with topic=", topics)
        topic = topics[0]
    queues = sorted((b, i) for g, t, b, i in state.ownership if g == group and t == topic)
    if not queues:
        raise InvalidInputError(f"group {group!r} owns no queue of {topic!r} at the history's last tick", topic)
    ids = sorted({c for g, c, _a in state.members if g == group})
    if not ids:
        raise InvalidInputError(f"group {group!r} has no consumer at the history's last tick", group)
    if strategy is None:
        told = {s for (g, _c, _a), (_l, _v, s) in state.members.items() if g == group and s}
        strategy = told.pop() if len(told) == 1 else None
    if strategy is None:
        raise InvalidInputError(f"the history does not say group {group!r}'s strategy", group)
    ticks = read_ticks(path).to_pylist()
    readings = [
        (ms(t["ts"]), t["tick_id"])
        for t in ticks
        if t["kind"] in ("offsets", "both") and (until_ms is None or ms(t["ts"]) <= until_ms)
    ]
    if len(readings) < 2:
        raise InvalidInputError("the history holds fewer than two offsets readings", len(readings))
    end = readings[-1][0]
    start = max((r for r in readings if r[0] <= end - window_s * 1000), default=readings[0])[0]
    if start >= end:
        raise InvalidInputError("the window holds fewer than two offsets readings", window_s)
    first_tick = max((t["tick_id"] for t in ticks if t["checkpoint"] and ms(t["ts"]) <= start), default=0)
    # per queue: (since when, committed, max offset) at the window's start — or at the first reading
    # after it that knows both (a broker may say nothing of a group before its first commit) — and
    # at its end; a row is written when a value changes, so a value holds until the next row
    at_start: dict[tuple[str, int], tuple[int, int | None, int | None]] = {}
    at_end: dict[tuple[str, int], tuple[int | None, int | None]] = {}
    files = sorted((int(f.name[5:17]), f) for f in (path / "offsets").glob("date=*/hour=*/part-*.parquet"))
    for _tick, f in (x for x in files if x[0] >= first_tick):
        for r in pq.read_table(f, schema=TABLES["offsets"]).to_pylist():
            if r["group"] != group or r["topic"] != topic:
                continue
            at_ms, q, c, m = ms(r["ts"]), (r["broker_name"], r["queue_id"]), r["committed"], r["max_offset"]
            if at_ms <= start:
                at_start[q] = (start, c, m)
            elif at_ms <= end and None in at_start.get(q, (0, None, None)) and None not in (c, m):
                at_start[q] = (at_ms, c, m)
            if at_ms <= end:
                at_end[q] = (c, m)
    lag, produced, consumed, lagging = [], [], {}, {}
    for q in queues:
        t0, c0, m0 = at_start.get(q, (end, None, None))
        c1, m1 = at_end.get(q, (None, None))
        span = (end - t0) / 1000
        known = span > 0 and None not in (c0, m0, c1, m1)
        lag.append(max(0, m1 - c1) if c1 is not None and m1 is not None else 0)
        produced.append(max(0.0, (m1 - m0) / span) if known else 0.0)  # type: ignore[operator]
        consumed[q] = max(0.0, (c1 - c0) / span) if known else 0.0  # type: ignore[operator]
        lagging[q] = known and m0 > c0 and m1 > c1  # type: ignore[operator]
    per_owner: dict[str, list[tuple[str, int]]] = {}
    for (g, t, b, i), (owner, _n) in state.ownership.items():
        if g == group and t == topic and owner is not None:
            per_owner.setdefault(owner, []).append((b, i))
    rates = [sum(consumed[q] for q in qs) for qs in per_owner.values() if all(lagging[q] for q in qs)]
    if not rates or not statistics.median(rates) > 0:
        raise InvalidInputError(
            f"no consumer of {group!r} lagged and consumed through the last {window_s:g} s: give the rate", group
        )
    counts: dict[str, int] = {}
    for b, _i in queues:
        counts[b] = counts.get(b, 0) + 1
    return GroupLoad(
        queues=counts,
        strategy=strategy,
        consumers=ids,
        consume_rate=statistics.median(rates),
        lag=lag,
        produce_rate=produced,
        topic=topic,
    )
