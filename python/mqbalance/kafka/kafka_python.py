"""Drop-in assignors for kafka-python: pass them in ``partition_assignment_strategy`` and an
existing ``KafkaConsumer`` gets mqbalance's exact range / roundrobin and a fast, valid, balanced
sticky assignment. Requires kafka-python (imported here, not by the rest of mqbalance).

``StickyAssignor`` writes and reads Java's ``StickyAssignor`` userData layout
(:mod:`mqbalance.kafka.user_data`), so Java and Python members can share a group;
``CooperativeStickyAssignor`` uses the subscription's ``owned_partitions`` and ``generation_id``
fields, as Java's ``CooperativeStickyAssignor`` does.

Usage::

    from kafka import KafkaConsumer
    from mqbalance.kafka.kafka_python import CooperativeStickyAssignor
    consumer = KafkaConsumer("orders", group_id="g", partition_assignment_strategy=[CooperativeStickyAssignor])
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from kafka.cluster import ClusterMetadata
from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor, RebalanceProtocol
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from mqbalance.kafka import user_data
from mqbalance.kafka.assignors import Assignor, Subscription, TopicPartition, assignor

log = logging.getLogger("mqbalance.kafka")

_KAFKA_PYTHON_PARTITIONS_FOR_TOPIC = ClusterMetadata.partitions_for_topic

__all__ = ["RangeAssignor", "RoundRobinAssignor", "StickyAssignor", "CooperativeStickyAssignor"]


class _AssignmentMaker:
    """Makes ``ConsumerProtocolAssignment(version, assigned_partitions, b"")`` for many members
    without kafka-python's generic ``DataContainer.__init__`` (about 5-10 µs each, most of a
    1k-member call): a new instance (``object.__new__``) receives the attribute values the
    constructor gave a probe instance, then its own ``assigned_partitions``. The recipe (``spec``)
    is checked once against the constructor (equality, repr and
    encoding); if it differs, or the probe holds a mutable value, ``spec`` is ``None`` and the
    constructor is used for every member.

    >>> make = _AssignmentMaker(0)
    >>> make([("t", (0, 1))]) == ConsumerProtocolAssignment(0, [("t", (0, 1))], b"")
    True
    """

    __slots__ = ("_version", "spec")

    def __init__(self, version: int) -> None:
        self._version = version
        self.spec: tuple[type, list[tuple[str, Any]], str] | None = None
        probe = [("t", (0, 1)), ("u", (2,))]
        real = ConsumerProtocolAssignment(version, probe, b"")
        cls = type(real)
        if cls is not ConsumerProtocolAssignment or getattr(real, "__dict__", None):
            return
        fixed: list[tuple[str, Any]] = []
        found_parts = False
        for klass in cls.__mro__:
            slots = klass.__dict__.get("__slots__", ())
            for name in (slots,) if isinstance(slots, str) else slots:
                descriptor = klass.__dict__.get(name)
                if descriptor is None or not hasattr(descriptor, "__set__") or name in (n for n, _ in fixed):
                    continue
                if name == "assigned_partitions":
                    found_parts = True
                    continue
                try:
                    value = descriptor.__get__(real, cls)
                except AttributeError:
                    continue  # not set by the constructor
                if not isinstance(value, (type(None), bool, int, str, bytes)):
                    return  # a value we would share between instances
                fixed.append((name, value))
        if not found_parts:
            return
        self.spec = (cls, fixed, "assigned_partitions")
        made = self(probe)
        if not (made == real and repr(made) == repr(real) and made.encode() == real.encode()):
            self.spec = None

    def __call__(self, assigned_partitions: Any) -> Any:
        if self.spec is None:
            return ConsumerProtocolAssignment(self._version, assigned_partitions, b"")
        cls, fixed, parts = self.spec
        obj: Any = object.__new__(cls)
        for name, value in fixed:
            setattr(obj, name, value)
        setattr(obj, parts, assigned_partitions)
        return obj


def _grouped(tps: Iterable[tuple[str, int]]) -> list[tuple[str, list[int]]]:
    by_topic: dict[str, list[int]] = defaultdict(list)
    for t, p in tps:
        by_topic[t].append(p)
    return sorted((t, sorted(ps)) for t, ps in by_topic.items())


_MAKERS: dict[int, _AssignmentMaker] = {}


def _partition_counts(cluster: Any) -> Any:
    """What to ask a topic's partitions of: ``cluster.partitions_for_topic``, or, for kafka-python's
    own ``ClusterMetadata`` (its method not replaced), the ``{partition: metadata}`` dict that
    method would copy into a new set for every topic (the same ``None`` for an unknown topic, the
    same length otherwise; only the length is read).

    >>> from kafka.cluster import ClusterMetadata
    >>> c = ClusterMetadata()
    >>> c._partitions = {"t": dict.fromkeys(range(3))}
    >>> ask = _partition_counts(c)
    >>> len(ask("t")), len(c.partitions_for_topic("t")), ask("u"), c.partitions_for_topic("u")
    (3, 3, None, None)
    """
    own = getattr(cluster, "__dict__", {})
    partitions = own.get("_partitions")
    if (
        getattr(type(cluster), "partitions_for_topic", None) is _KAFKA_PYTHON_PARTITIONS_FOR_TOPIC
        and "partitions_for_topic" not in own
        and type(partitions) is dict
    ):
        return partitions.get
    return cluster.partitions_for_topic


class _MqbalanceAssignor(AbstractPartitionAssignor):  # type: ignore[misc]  # kafka-python is untyped
    name = ""
    version = 0
    _assignor: Assignor

    def _subscription(self, member: Any) -> Subscription:
        return Subscription(list(member.metadata.topics), group_instance_id=getattr(member, "group_instance_id", None))

    def _owned(self, member: Any) -> tuple[list[tuple[str, int]] | bytes | None, int | None]:
        """The member's previous partitions (pairs, or sticky userData bytes) and their generation."""
        return None, None

    def assign(self, cluster: Any, members: Any) -> dict[str, Any]:
        """``{member_id: ConsumerProtocolAssignment}``, what kafka-python's ``ConsumerCoordinator``
        expects. The distinct topics, their partition counts (``cluster.partitions_for_topic``,
        once per topic), the sticky userData and the grouped ``(topic, (partition, ...))`` lists
        are all handled in Rust; per member, Python reads its fields and makes its assignment."""
        by_id = {m.member_id: m for m in members}  # one entry per member id, like a dict of subscriptions
        owned = self._owned
        rows = []
        for mid, m in by_id.items():
            names = m.metadata.topics
            if type(names) is not list:
                names = list(names)
            rows.append((mid, getattr(m, "group_instance_id", None), names, *owned(m)))
        make = _MAKERS.get(self.version) or _MAKERS.setdefault(self.version, _AssignmentMaker(self.version))
        grouped = self._assignor._assign_grouped(_partition_counts(cluster), rows)
        return {mid: make(g) for mid, g in zip(by_id, grouped)}

    def metadata(self, topics: Any) -> Any:
        return ConsumerProtocolSubscription(self.version, sorted(topics), b"")

    def on_assignment(self, assignment: Any, generation: int | None = None) -> None:
        pass


class RangeAssignor(_MqbalanceAssignor):
    """Kafka's ``RangeAssignor`` (static members first, Java string order)."""

    name = "range"
    _assignor = assignor("range")


class RoundRobinAssignor(_MqbalanceAssignor):
    """Kafka's ``RoundRobinAssignor`` (also correct for unequal subscriptions)."""

    name = "roundrobin"
    _assignor = assignor("roundrobin")


class _StickyState(_MqbalanceAssignor):
    def __init__(self) -> None:
        self.member_assignment: list[TopicPartition] = []
        self.generation: int | None = None

    def on_assignment(self, assignment: Any, generation: int | None = None) -> None:
        self.member_assignment = [TopicPartition(t, p) for t, ps in assignment.assigned_partitions for p in ps]
        self.generation = generation


class StickyAssignor(_StickyState):
    """Eager ``sticky``; previous assignment and generation travel in Java's userData layout."""

    name = "sticky"
    _assignor = assignor("sticky")

    def metadata(self, topics: Any) -> Any:
        return ConsumerProtocolSubscription(
            self.version, sorted(topics), user_data.encode(self.member_assignment, self.generation)
        )

    def _owned(self, member: Any) -> tuple[bytes | None, int | None]:
        """The userData as is: the binding decodes Java's layout (as :mod:`mqbalance.kafka.user_data`).

        userData that is not in Java's layout (kafka-python's own sticky assignor writes a 2-byte
        version first) is no claim at all, as in Kafka's assignor: the member is treated as owning
        nothing, and a warning names it."""
        data = member.metadata.user_data
        raw = data if type(data) is bytes else bytes(data) if data else None
        if raw and user_data.decode(raw) is None:
            log.warning(
                "member %s: sticky userData (%d bytes) is not in Java's layout; its previous assignment is ignored",
                getattr(member, "member_id", "?"),
                len(raw),
            )
        return raw, None

    def _subscription(self, member: Any) -> Subscription:
        decoded = user_data.decode(member.metadata.user_data)
        if decoded is None and member.metadata.user_data:
            log.warning(
                "member %s: sticky userData is not in Java's layout; its previous assignment is ignored",
                getattr(member, "member_id", "?"),
            )
        owned, generation = decoded if decoded is not None else ([], None)
        return Subscription(
            list(member.metadata.topics),
            [TopicPartition(t, p) for t, p in owned],
            generation,
            getattr(member, "group_instance_id", None),
        )


class CooperativeStickyAssignor(_StickyState):
    """``cooperative-sticky`` (KIP-429): partitions moving between members are held back for one
    round; owned partitions and generation travel in the subscription's v2 fields."""

    name = "cooperative-sticky"
    _assignor = assignor("cooperative-sticky")
    version = 2

    def supported_protocols(self) -> list[Any]:
        return [RebalanceProtocol.COOPERATIVE]

    def metadata(self, topics: Any) -> Any:
        owned = [
            ConsumerProtocolSubscription.TopicPartition(topic=t, partitions=ps)
            for t, ps in _grouped(self.member_assignment)
        ]
        return ConsumerProtocolSubscription(
            version=self.version,
            topics=sorted(topics),
            user_data=b"",
            owned_partitions=owned,
            generation_id=-1 if self.generation is None else self.generation,
        )

    def _owned(self, member: Any) -> tuple[list[tuple[str, int]] | bytes | None, int | None]:
        md = member.metadata
        owned = [(tp.topic, p) for tp in (getattr(md, "owned_partitions", None) or ()) for p in tp.partitions]
        gen = getattr(md, "generation_id", -1)
        return owned, None if gen is None or gen < 0 else gen

    def _subscription(self, member: Any) -> Subscription:
        md = member.metadata
        owned = [
            TopicPartition(tp.topic, p) for tp in (getattr(md, "owned_partitions", None) or ()) for p in tp.partitions
        ]
        gen = getattr(md, "generation_id", -1)
        return Subscription(
            list(md.topics), owned, None if gen is None or gen < 0 else gen, getattr(member, "group_instance_id", None)
        )
