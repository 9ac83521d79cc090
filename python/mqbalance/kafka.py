"""Kafka consumer-group assignment, exact where Kafka is deterministic.

* ``assignor(name).assign(partitions_per_topic, subscriptions)`` -> ``{member: TopicPartitionList}``
  for ``"range"``,
  ``"roundrobin"`` (exactly Kafka's Java client: static members first by instance id, then
  dynamic by member id, Java string order; topics without metadata skipped), ``"sticky"`` and
  ``"cooperative-sticky"`` (Kafka's invariants with deterministic tie-breaks; see
  :mod:`mqbalance_core` docs in ``rust/core/src/assign/sticky.rs``).
* ``zk_assign(name, partitions_per_topic, consumers)``: the ZooKeeper-era consumer's ``range`` /
  ``roundrobin`` over consumer threads ``<consumer_id>-<k>``.

Assignor names are Kafka's and are matched ignoring case (``"RoundRobin"`` is ``"roundrobin"``).
* ``assign_columns(...)``: the same assignors over numpy columns, for large groups.
* ``check_assignment(...)``: validity, Kafka's balance predicate and retention of any assignment.

>>> both = Subscription(["t0", "t1"])
>>> a = assignor("range").assign({"t0": 3, "t1": 3}, {"C0": both, "C1": both})
>>> [f"{tp.topic}p{tp.partition}" for tp in a["C0"]], [f"{tp.topic}p{tp.partition}" for tp in a["C1"]]
(['t0p0', 't0p1', 't1p0', 't1p1'], ['t0p2', 't1p2'])
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Sequence as _SequenceABC
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from . import _core
from .exceptions import InvalidInputError, UnknownStrategyError

__all__ = [
    "TopicPartition",
    "TopicPartitionList",
    "Subscription",
    "Assignor",
    "ASSIGNORS",
    "assignor",
    "zk_assign",
    "assign_columns",
    "ColumnarAssignment",
    "check_assignment",
    "AssignmentReport",
]

ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
_ZK_ASSIGNORS = ("range", "roundrobin")


def _assignor_name(name: str, known: Sequence[str], what: str = "assignor") -> str:
    """``name`` as Kafka spells it (matched ignoring case), or ``UnknownStrategyError``."""
    canonical = name.lower() if isinstance(name, str) else name
    if canonical not in known:
        raise UnknownStrategyError(f"unknown {what} {name!r}; known: {', '.join(known)}", name)
    return canonical


class TopicPartition(NamedTuple):
    """``(topic, partition)`` — the same shape as kafka-python's ``TopicPartition``."""

    topic: str
    partition: int


TopicPartitionList = _core.TopicPartitionList
_SequenceABC.register(TopicPartitionList)


@dataclass(frozen=True)
class Subscription:
    """What a member sends in JoinGroup: its topics and, for the sticky family, the partitions it
    owned and the generation they belong to (``None`` = none, Kafka's -1)."""

    topics: Sequence[str]
    owned_partitions: Sequence[TopicPartition] = ()
    generation: int | None = None
    group_instance_id: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.topics, str):
            raise InvalidInputError("Subscription.topics must be a collection of topic names, not a str", self.topics)
        object.__setattr__(self, "topics", tuple(self.topics))
        object.__setattr__(self, "owned_partitions", tuple(TopicPartition(*tp) for tp in self.owned_partitions))
        for t in self.topics:
            if not isinstance(t, str):
                raise InvalidInputError(f"topic names must be str, got {t!r}", t)
        if self.generation is not None and (not isinstance(self.generation, int) or isinstance(self.generation, bool)):
            raise InvalidInputError(f"generation must be an int or None, got {self.generation!r}", self.generation)


def _topics(partitions_per_topic: Mapping[str, int]) -> tuple[list[tuple[str, int]], dict[str, int]]:
    pairs = []
    for t, n in partitions_per_topic.items():
        if not isinstance(t, str):
            raise InvalidInputError(f"topic names must be str, got {t!r}", t)
        if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n < 2**31:
            raise InvalidInputError(f"partition count of topic {t!r} must be an int >= 0, got {n!r}", n)
        pairs.append((t, n))
    return pairs, {t: i for i, (t, _) in enumerate(pairs)}


def _as_subscription(value: Subscription | Iterable[str]) -> Subscription:
    if isinstance(value, Subscription):
        return value
    if isinstance(value, str):
        raise InvalidInputError(
            f"a subscription must be a list of topics or a Subscription, not the str {value!r}", value
        )
    return Subscription(list(value))


class Assignor:
    """A client-side assignor by its Kafka name (any case; ``name`` holds Kafka's spelling)."""

    def __init__(self, name: str) -> None:
        self.name = _assignor_name(name, ASSIGNORS)

    def __repr__(self) -> str:
        return f"assignor({self.name!r})"

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription | Iterable[str]]
    ) -> dict[str, TopicPartitionList]:
        """``{member_id: TopicPartitionList}`` for every member: its ``TopicPartition`` s sorted by
        topic, then partition, as a compact sequence that compares equal to the list of them
        (:meth:`assign_lists` returns plain lists, this method's return type before 0.2)."""
        ids, pairs, members = self._members(partitions_per_topic, subscriptions)
        return dict(zip(ids, _core.kafka_assign(self.name, pairs, members)))

    def assign_lists(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription | Iterable[str]]
    ) -> dict[str, list[TopicPartition]]:
        """As :meth:`assign`, with each member's partitions as a plain ``list[TopicPartition]``.

        >>> assignor("range").assign_lists({"t": 2}, {"a": ["t"], "b": ["t"]})["b"]
        [TopicPartition(topic='t', partition=1)]
        """
        return {m: tps.tolist() for m, tps in self.assign(partitions_per_topic, subscriptions).items()}

    def _members(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription | Iterable[str]]
    ) -> tuple[list[str], list[tuple[str, int]], list[Any]]:
        pairs, _ = _topics(partitions_per_topic)
        ids = list(subscriptions)
        members: list[Any] = []
        for mid in ids:
            if not isinstance(mid, str):
                raise InvalidInputError(f"member ids must be str, got {mid!r}", mid)
            value = subscriptions[mid]
            if type(value) is list or type(value) is tuple:  # topic names, each checked in the binding
                members.append((mid, None, value if type(value) is list else list(value), None, None))
                continue
            s = _as_subscription(value)
            members.append((mid, s.group_instance_id, list(s.topics), list(s.owned_partitions), s.generation))
        return ids, pairs, members

    def _assign_grouped(
        self,
        pairs: list[tuple[str, int]] | Callable[[str], Any],
        members: list[Any],
        *,
        make: tuple[type, list[tuple[str, Any]], str] | None = None,
    ) -> list[Any]:
        """Per member (aligned with ``members``: ``(member_id, group_instance_id, topics: list[str],
        owned: list[(topic, partition)] | sticky userData bytes | None, generation)``), what
        kafka-python's ``ConsumerProtocolAssignment`` carries: ``[(topic, (partition, ...)), ...]``
        sorted. ``pairs``: ``(topic, partition count)`` pairs, or a ``partitions_for_topic(name)``
        callable asked once per subscribed topic (``None`` or empty: no metadata). With ``make =
        (cls, [(attribute, value), ...], parts_attribute)`` each entry is a ``cls`` made without
        ``__init__``, those attributes set, the list under ``parts_attribute``."""
        return _core.kafka_assign_grouped(self.name, pairs, members, make=make)


def assignor(name: str) -> Assignor:
    """``range``, ``roundrobin``, ``sticky`` or ``cooperative-sticky`` (any case)."""
    return Assignor(name)


def _looks_like_consumers(value: Mapping[str, Any]) -> bool:
    """Whether a mapping is ``{consumer_id: {topic: streams}}`` rather than ``{topic: count}``."""
    return any(isinstance(v, Mapping) for v in value.values())


def zk_assign(
    name: str, partitions_per_topic: Mapping[str, int], consumers: Mapping[str, Mapping[str, int]]
) -> dict[str, TopicPartitionList]:
    """The ZooKeeper-era consumer's assignment (Kafka 0.8–0.10 ``ZookeeperConsumerConnector`` with
    ``partition.assignment.strategy`` ``range`` or ``roundrobin``, any case):
    ``{thread_id: TopicPartitionList}`` (``.tolist()`` for a plain list) for every thread
    ``<consumer_id>-<k>`` (``k`` below the consumer's stream count for a topic). Arguments in the
    order of :meth:`Assignor.assign`: partitions first, then the group.

    The older order ``zk_assign(name, consumers, partitions_per_topic)`` is recognised by its
    values (stream-count mappings where partition counts belong) and still works, with a
    ``DeprecationWarning``.

    >>> zk_assign("range", {"t": 5}, {"C1": {"t": 2}, "C2": {"t": 2}})["C1-0"]
    TopicPartitionList([TopicPartition(topic='t', partition=0), TopicPartition(topic='t', partition=1)])
    """
    if _looks_like_consumers(partitions_per_topic) or (
        not partitions_per_topic and consumers and not _looks_like_consumers(consumers)
    ):
        warnings.warn(
            "zk_assign(name, consumers, partitions_per_topic) is deprecated; pass "
            "zk_assign(name, partitions_per_topic, consumers), the order of assignor(name).assign",
            DeprecationWarning,
            stacklevel=2,
        )
        partitions_per_topic, consumers = consumers, partitions_per_topic  # type: ignore[assignment]
    name = _assignor_name(name, _ZK_ASSIGNORS, "ZooKeeper-era assignor")
    pairs, index = _topics(partitions_per_topic)
    extra: dict[str, int] = {}
    rows = []
    threads: list[str] = []
    for cid, sub in consumers.items():
        subs = []
        most = 0
        for topic, streams in sub.items():
            if streams.__class__ is not int and (not isinstance(streams, int) or isinstance(streams, bool)):
                streams = -1  # reported below
            if not 0 <= streams < 2**31:
                bad = sub[topic]
                raise InvalidInputError(f"stream count of {cid!r} for {topic!r} must be an int >= 0, got {bad!r}", bad)
            code = index.get(topic)
            if code is None:
                code = extra.get(topic)
                if code is None:  # no metadata: owns nothing
                    code = extra[topic] = len(pairs) + len(extra)
            subs.append((code, streams))
            if streams > most:
                most = streams
        # Threads <consumer_id>-<k>, k below the consumer's largest stream count, in the order the
        # topics first name them (k ascending).
        threads.extend(f"{cid}-{k}" for k in range(most))
        rows.append((cid, subs))
    all_pairs = pairs + [(t, 0) for t in extra]
    ids = list(dict.fromkeys(threads))
    return dict(zip(ids, _core.zk_assign(name, all_pairs, rows, ids)))


@dataclass(frozen=True)
class ColumnarAssignment:
    """An assignment as columns: row ``k`` gives ``topics[topic[k]]`` partition ``partition[k]`` to
    ``member_ids[member[k]]``."""

    member_ids: list[str]
    topics: list[str]
    member: np.ndarray
    topic: np.ndarray
    partition: np.ndarray

    def counts(self) -> np.ndarray:
        """Partitions per member (aligned with ``member_ids``)."""
        return np.bincount(self.member, minlength=len(self.member_ids))


def assign_columns(
    name: str,
    partitions_per_topic: Mapping[str, int],
    member_ids: Sequence[str],
    member_topics: Sequence[Sequence[str]],
    *,
    owned: tuple[Any, Any, Any] | None = None,
    generations: Sequence[int | None] | None = None,
) -> ColumnarAssignment:
    """Large groups: members as a list with their topic lists; ``owned`` as three aligned columns
    ``(member index, topic name or index, partition)``. Returns columns instead of objects."""
    name = _assignor_name(name, ASSIGNORS)
    pairs, index = _topics(partitions_per_topic)
    ids = list(member_ids)
    if len(member_topics) != len(ids):
        raise InvalidInputError(
            f"member_topics has {len(member_topics)} entries for {len(ids)} members", len(member_topics)
        )
    if owned is None:
        om = ot = op = np.zeros(0, dtype=np.uint32)
    else:
        om = np.asarray(owned[0], dtype=np.uint32)
        topics_col = np.asarray(owned[1])
        if topics_col.dtype.kind in "iu":
            ot = topics_col.astype(np.uint32)
        else:
            ot = np.array([index.get(t, len(pairs)) for t in topics_col.tolist()], dtype=np.uint32)
        op = np.asarray(owned[2], dtype=np.uint32)
    gens = np.full(len(ids), np.iinfo(np.int64).min, dtype=np.int64)
    if generations is not None:
        for m, g in enumerate(generations):
            if g is not None:
                gens[m] = g
    member, topic, partition = _core.kafka_assign_columns(
        name, pairs, ids, [list(ts) for ts in member_topics], om, ot, op, gens
    )
    return ColumnarAssignment(ids, [t for t, _ in pairs], member, topic, partition)


@dataclass
class AssignmentReport:
    """What :func:`check_assignment` found. ``ok`` is validity and balance together."""

    problems: list[str] = field(default_factory=list)
    balanced: bool = True
    retained: int = 0
    max_retainable: int | None = None
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems and self.balanced


def check_assignment(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, Subscription | Iterable[str]],
    assignment: Mapping[str, Iterable[TopicPartition]],
    *,
    cooperative: bool = False,
) -> AssignmentReport:
    """Check an assignment the way the Kafka vectors define it: every assignable partition (an
    existing topic with a subscriber) at most once, only to subscribers, nothing unknown, complete
    (eager) or safe (cooperative: never given while another member is its valid previous owner),
    Kafka's balance predicate, and retention against valid previous owners (with the maximum
    possible when all subscriptions are identical).

    >>> subs = {"a": Subscription(["t"]), "b": Subscription(["t"])}
    >>> check_assignment({"t": 2}, subs, {"a": [TopicPartition("t", 0), TopicPartition("t", 1)], "b": []}).balanced
    False
    """
    subs = {m: _as_subscription(s) for m, s in subscriptions.items()}
    topics = {t: n for t, n in partitions_per_topic.items() if n > 0}
    subscribers: dict[str, list[str]] = defaultdict(list)
    for m, s in subs.items():
        for t in set(s.topics):
            if t in topics:
                subscribers[t].append(m)
    assignable = {TopicPartition(t, p) for t in subscribers for p in range(topics[t])}
    report = AssignmentReport()
    seen: dict[TopicPartition, str] = {}
    for m, tps in assignment.items():
        tps = [TopicPartition(*tp) for tp in tps]
        report.counts[m] = len(tps)
        for tp in tps:
            if tp in seen:
                report.problems.append(f"{tp} assigned to both {seen[tp]} and {m}")
            seen[tp] = m
            if tp not in assignable:
                report.problems.append(f"{tp} given to {m} is not an assignable partition")
            elif m not in subs or tp.topic not in subs[m].topics:
                report.problems.append(f"{tp} given to {m}, which does not subscribe to {tp.topic}")
    for m in subs:
        report.counts.setdefault(m, 0)
    # Valid previous owners.
    best: dict[TopicPartition, tuple[int, str | None]] = {}
    for m, s in subs.items():
        g = -1 if s.generation is None else s.generation
        for tp in set(s.owned_partitions):
            cur = best.get(tp)
            if cur is None or g > cur[0]:
                best[tp] = (g, m)
            elif g == cur[0] and cur[1] != m:
                best[tp] = (g, None)
    valid_owner = {tp: o for tp, (_, o) in best.items() if o is not None}
    if cooperative:
        for tp, m in seen.items():
            prev = valid_owner.get(tp)
            if prev is not None and prev != m:
                report.problems.append(f"{tp} given to {m} while {prev} still owns it")
    else:
        missing = assignable - set(seen)
        if missing:
            report.problems.append(f"{len(missing)} assignable partitions unassigned, e.g. {sorted(missing)[0]}")
    report.retained = sum(1 for tp, m in seen.items() if valid_owner.get(tp) == m)
    # Kafka's balance predicate.
    counts = report.counts
    if counts and max(counts.values()) - min(counts.values()) > 1:
        for t, members in subscribers.items():
            holders = {seen[tp] for tp in assignable if tp.topic == t and tp in seen}
            for c in members:
                if any(counts[h] >= counts[c] + 2 for h in holders):
                    report.balanced = False
                    break
    first = next(iter(subs.values()), None)
    if first is not None and all(
        {t for t in s.topics if t in topics} == {t for t in first.topics if t in topics} for s in subs.values()
    ):
        total = len(assignable)
        q, r = divmod(total, len(subs)) if subs else (0, 0)
        owned_counts = sorted(
            (sum(1 for tp, o in valid_owner.items() if o == m and tp in assignable) for m in subs), reverse=True
        )
        report.max_retainable = sum(min(c, q + 1) for c in owned_counts[:r]) + sum(min(c, q) for c in owned_counts[r:])
    return report
