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

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Sequence as _SequenceABC
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from mqbalance import _core, _validate
from mqbalance.exceptions import InvalidInputError, UnknownStrategyError

__all__ = [
    "TopicPartition",
    "TopicPartitionList",
    "Subscription",
    "Assignor",
    "ASSIGNORS",
    "STICKY_ASSIGNORS",
    "ZK_ASSIGNORS",
    "assignor",
    "zk_assign",
    "assign_columns",
    "ColumnarAssignment",
    "check_assignment",
    "AssignmentReport",
]

#: Kafka's client-side assignors, by Kafka's names: the core's registry (``Assignor::ALL``).
ASSIGNORS: tuple[str, ...] = _core.KAFKA_ASSIGNORS
#: Those of :data:`ASSIGNORS` that read the members' previous assignment (the sticky family).
STICKY_ASSIGNORS: tuple[str, ...] = _core.KAFKA_STICKY_ASSIGNORS
#: The ZooKeeper-era assignors (the core's ``ZkAssignor::ALL``).
ZK_ASSIGNORS: tuple[str, ...] = _core.ZK_ASSIGNORS


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
            raise InvalidInputError(
                f"Subscription.topics must be a collection of topic names, not the str {self.topics!r}", self.topics
            )
        object.__setattr__(self, "topics", tuple(_validate.str_sequence(self.topics, "Subscription.topics")))
        object.__setattr__(
            self, "owned_partitions", _partitions(self.owned_partitions, "Subscription.owned_partitions")
        )
        if self.generation is not None:
            object.__setattr__(self, "generation", _validate.java_int(self.generation, "Subscription.generation"))
        if self.group_instance_id is not None:
            _validate.text(self.group_instance_id, "Subscription.group_instance_id")


#: Memory per partition of an assignment: the core's entries and the Python objects returned.
_PARTITION_BYTES = 200


def _partitions(value: Any, name: str) -> tuple[TopicPartition, ...]:
    """``(topic, partition)`` pairs as :class:`TopicPartition`, each field checked."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise InvalidInputError(f"{name} must be a sequence of (topic, partition), got {value!r}", value)
    out = []
    for i, tp in enumerate(value):
        if isinstance(tp, (str, bytes)) or not hasattr(tp, "__len__") or len(tp) != 2:
            raise InvalidInputError(f"{name}[{i}] must be a (topic, partition) pair, got {tp!r}", tp)
        topic, partition = tp
        _validate.text(topic, f"{name}[{i}].topic")
        out.append(TopicPartition(topic, _validate.java_int(partition, f"{name}[{i}].partition")))
    return tuple(out)


def _topics(partitions_per_topic: Mapping[str, int]) -> tuple[list[tuple[str, int]], dict[str, int]]:
    _validate.mapping(partitions_per_topic, "partitions_per_topic")
    pairs = []
    for t, n in partitions_per_topic.items():
        _validate.text(t, "topic name")
        pairs.append((t, _validate.count(n, f"partition count of topic {t!r}")))
    total = sum(n for _, n in pairs)
    _validate.check_memory("partitions_per_topic (total partitions)", total, total * _PARTITION_BYTES)
    return pairs, {t: i for i, (t, _) in enumerate(pairs)}


def _as_subscription(value: Subscription | Iterable[str]) -> Subscription:
    if isinstance(value, Subscription):
        return value
    if _validate.not_a_collection(value):
        raise InvalidInputError(f"a subscription must be a list of topics or a Subscription, got {value!r}", value)
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
        try:
            return dict(zip(ids, _core.kafka_assign(self.name, pairs, members)))
        except UnicodeEncodeError:
            raise _not_unicode(members) from None

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
        ids = list(_validate.mapping(subscriptions, "subscriptions"))
        members: list[Any] = []
        for mid in ids:
            if not isinstance(mid, str):
                raise InvalidInputError(f"member ids must be str, got {mid!r}", mid)
            value = subscriptions[mid]
            if type(value) is list or type(value) is tuple:  # topic names, each checked in the binding
                members.append((mid, None, value if type(value) is list else list(value), None, None))
                continue
            try:
                s = _as_subscription(value)
            except InvalidInputError as e:
                raise type(e)(f"member {mid!r}: {e}", *e.args[1:]) from None
            members.append((mid, s.group_instance_id, list(s.topics), list(s.owned_partitions), s.generation))
        return ids, pairs, members

    def _assign_grouped(self, pairs: list[tuple[str, int]] | Callable[[str], Any], members: list[Any]) -> list[Any]:
        """Per member (aligned with ``members``: ``(member_id, group_instance_id, topics: list[str],
        owned: list[(topic, partition)] | sticky userData bytes | None, generation)``), what
        kafka-python's ``ConsumerProtocolAssignment`` carries: ``[(topic, (partition, ...)), ...]``
        sorted. ``pairs``: ``(topic, partition count)`` pairs, or a ``partitions_for_topic(name)``
        callable asked once per subscribed topic (``None`` or empty: no metadata). Sticky userData
        that is not in Java's layout claims nothing (Java's rule, decided in the core)."""
        try:
            return _core.kafka_assign_grouped(self.name, pairs, members)
        except UnicodeEncodeError:
            raise _not_unicode(members) from None


def _not_unicode(members: list[Any]) -> InvalidInputError:
    """The error naming the member whose id or topic name does not encode as UTF-8 (a lone
    surrogate), found after the core refused one: the fast path checks nothing twice."""
    for mid, instance, topics, *_ in members:
        where = f"member {mid!r}"
        if not _encodes(mid):
            return InvalidInputError(f"member id is not valid Unicode (a lone surrogate?): {mid!r}", mid)
        if instance is not None and not _encodes(instance):
            return InvalidInputError(f"{where}: group_instance_id is not valid Unicode: {instance!r}", instance)
        for t in topics:
            if isinstance(t, str) and not _encodes(t):
                return InvalidInputError(f"{where}: topic name is not valid Unicode (a lone surrogate?): {t!r}", t)
    return InvalidInputError("a member id or topic name is not valid Unicode (a lone surrogate?)", None)


def _encodes(text: Any) -> bool:
    try:
        str(text).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def assignor(name: str) -> Assignor:
    """``range``, ``roundrobin``, ``sticky`` or ``cooperative-sticky`` (any case)."""
    return Assignor(name)


def zk_assign(
    name: str, partitions_per_topic: Mapping[str, int], consumers: Mapping[str, Mapping[str, int]]
) -> dict[str, TopicPartitionList]:
    """The ZooKeeper-era consumer's assignment (Kafka 0.8–0.10 ``ZookeeperConsumerConnector`` with
    ``partition.assignment.strategy`` ``range`` or ``roundrobin``, any case):
    ``{thread_id: TopicPartitionList}`` (``.tolist()`` for a plain list) for every thread
    ``<consumer_id>-<k>`` (``k`` below the consumer's stream count for a topic). Arguments in the
    order of :meth:`Assignor.assign`: partitions first, then the group.

    >>> zk_assign("range", {"t": 5}, {"C1": {"t": 2}, "C2": {"t": 2}})["C1-0"]
    TopicPartitionList([TopicPartition(topic='t', partition=0), TopicPartition(topic='t', partition=1)])
    """
    _validate.mapping(partitions_per_topic, "partitions_per_topic")
    _validate.mapping(consumers, "consumers")
    name = _assignor_name(name, ZK_ASSIGNORS, "ZooKeeper-era assignor")
    pairs, index = _topics(partitions_per_topic)
    _validate.mapping(consumers, "consumers")
    threads_total = 0
    for cid, sub in consumers.items():
        if not isinstance(cid, str):
            raise InvalidInputError(f"consumer ids must be str, got {cid!r}", cid)
        for topic, streams in _validate.mapping(sub, f"consumers[{cid!r}]").items():
            if not isinstance(topic, str):
                raise InvalidInputError(f"topic names must be str, got {topic!r}", topic)
            threads_total += _validate.count(streams, f"stream count of {cid!r} for {topic!r}")
    _validate.check_memory("consumers (total streams)", threads_total, threads_total * _PARTITION_BYTES)
    extra: dict[str, int] = {}
    rows = []
    threads: list[str] = []
    for cid, sub in consumers.items():
        subs = []
        most = 0
        for topic, value in sub.items():
            streams = value if value.__class__ is int else int(value)  # a count: checked above
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
    ids = _validate.str_sequence(member_ids, "member_ids")
    if isinstance(member_topics, (str, bytes)) or not hasattr(member_topics, "__len__"):
        raise InvalidInputError(
            f"member_topics must be a sequence of topic lists, got {member_topics!r}", member_topics
        )
    member_topics = [_validate.str_sequence(ts, f"member_topics[{m}]") for m, ts in enumerate(member_topics)]
    if len(set(ids)) != len(ids):
        dup = next(m for m in ids if ids.count(m) > 1)
        raise InvalidInputError(f"member_ids must be distinct; {dup!r} appears twice", dup)
    if len(member_topics) != len(ids):
        raise InvalidInputError(
            f"member_topics has {len(member_topics)} entries for {len(ids)} members", len(member_topics)
        )
    if owned is None:
        om = ot = op = np.zeros(0, dtype=np.uint32)
    else:
        if isinstance(owned, (str, bytes)) or not hasattr(owned, "__len__") or len(owned) != 3:
            raise InvalidInputError(
                f"owned must be three aligned columns (member, topic, partition), got {owned!r}", owned
            )
        om = _validate.int_array(owned[0], "owned[0] (member index)", minimum=0, maximum=2**32 - 1).astype(np.uint32)
        topics_col = np.asarray(owned[1]) if not isinstance(owned[1], (str, bytes)) else None
        if topics_col is None or topics_col.ndim != 1:
            raise InvalidInputError(f"owned[1] must be a column of topic names or indices, got {owned[1]!r}", owned[1])
        if topics_col.dtype.kind in "iub" or (topics_col.size and topics_col.dtype.kind == "f"):
            ot = _validate.int_array(topics_col, "owned[1] (topic index)", minimum=0, maximum=2**32 - 1).astype(
                np.uint32
            )
        else:
            names = topics_col.tolist()
            for k, t in enumerate(names):
                if not isinstance(t, str):
                    raise InvalidInputError(f"owned[1][{k}] must be a topic name or index, got {t!r}", t)
            ot = np.array([index.get(t, len(pairs)) for t in names], dtype=np.uint32)
        op = _validate.int_array(owned[2], "owned[2] (partition)", minimum=0).astype(np.uint32)
        _validate.check_lengths(**{"owned[0]": len(om), "owned[1]": len(ot), "owned[2]": len(op)})
    gens = np.full(len(ids), np.iinfo(np.int64).min, dtype=np.int64)
    if generations is not None:
        if isinstance(generations, (str, bytes)) or not hasattr(generations, "__len__"):
            raise InvalidInputError(f"generations must be a sequence of int or None, got {generations!r}", generations)
        if len(generations) != len(ids):
            raise InvalidInputError(
                f"generations has {len(generations)} entries for {len(ids)} members", len(generations)
            )
        for m, g in enumerate(generations):
            if g is not None:
                gens[m] = _validate.java_int(g, f"generations[{m}]")
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
    pairs, _ = _topics(partitions_per_topic)
    subs = {m: _as_subscription(s) for m, s in _validate.mapping(subscriptions, "subscriptions").items()}
    topics = {t: n for t, n in pairs if n > 0}
    subscribers: dict[str, list[str]] = defaultdict(list)
    for m, s in subs.items():
        for t in set(s.topics):
            if t in topics:
                subscribers[t].append(m)
    assignable = {TopicPartition(t, p) for t in subscribers for p in range(topics[t])}
    report = AssignmentReport()
    seen: dict[TopicPartition, str] = {}
    for m, tps in _validate.mapping(assignment, "assignment").items():
        tps = list(_partitions(tps, f"assignment[{m!r}]"))
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
