"""The broker-side assignors of Kafka's consumer-group protocol (KIP-848, Kafka 4.0+): what the
group coordinator computes with ``group.consumer.assignors`` ``uniform`` (the default) or ``range``,
exactly as Kafka's Java classes do.

* ``server_assign(name, members, topics)`` -> ``{member_id: {topic_id: [partitions]}}``.
* ``server_assign_columns(...)``: the same over numpy/Arrow columns for large groups: the owner of
  every partition.

The results depend on Java iteration orders, and those are part of the contract:

* ``members`` is taken **in the order given**: that is the coordinator's member order (the
  order of its members map). ``uniform`` hands out extra partitions and fills members in it.
* each member's ``subscribed_topic_ids`` and ``current_assignment`` (topics, and partitions in a
  topic) are taken in the order given: ``uniform`` keeps an over-quota member's *first* partitions.
* ``uniform`` over a homogeneous group (every member subscribed to the same topics) walks topics in
  the iteration order of a Java ``HashSet<Uuid>`` built from the first member's subscription: we
  compute it from the topic ids (Kafka's ``Uuid.hashCode``, Java's ``HashMap`` spreading, table
  size and resizes, and the red-black tree bins it builds when 9 ids share one bin of a table of
  64 slots or more).
* topic-id ties compare as ``Uuid.compareTo`` (signed 64-bit halves); ``range`` sorts static
  members by instance id in Java ``String`` order (UTF-16 code units), then dynamic members by id.

Topic ids are ``Uuid.toString()`` strings: 22 characters of unpadded base64url. ``rack`` is
accepted and ignored (neither assignor reads racks at the Kafka version this follows).

>>> t = "AAAAAAAAAAAAAAAAAAAAAQ"
>>> members = [
...     {"member_id": "b", "subscribed_topic_ids": [t]},
...     {"member_id": "a", "subscribed_topic_ids": [t], "current_assignment": [[t, [4, 3]]]},
... ]
>>> server_assign("uniform", members, {t: 5})  # a keeps 3 and 4, and takes the extra partition
{'b': {'AAAAAAAAAAAAAAAAAAAAAQ': [0, 1]}, 'a': {'AAAAAAAAAAAAAAAAAAAAAQ': [2, 3, 4]}}
>>> server_assign("uniform", members, {t: 5}, kafka_version="4.0")  # before 4.1 the first member took it
{'b': {'AAAAAAAAAAAAAAAAAAAAAQ': [0, 1, 2]}, 'a': {'AAAAAAAAAAAAAAAAAAAAAQ': [3, 4]}}
>>> server_assign("range", members, {t: 5})
{'b': {'AAAAAAAAAAAAAAAAAAAAAQ': [3, 4]}, 'a': {'AAAAAAAAAAAAAAAAAAAAAQ': [0, 1, 2]}}
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from mqbalance import _core, _validate
from mqbalance.exceptions import InvalidInputError, UnknownStrategyError
from mqbalance.kafka.assignors import ASSIGNORS

__all__ = [
    "KAFKA_NEWEST_RELEASE",
    "SERVER_ASSIGNORS",
    "ServerMember",
    "server_assign",
    "server_assign_columns",
    "what_if_names",
]

#: The newest Apache Kafka release whose broker-side assignors were checked against its jars (the
#: default ``kafka_version``).
KAFKA_NEWEST_RELEASE: str = _core.KAFKA_NEWEST_RELEASE

#: The broker-side assignors, by Kafka's names (``group.consumer.assignors``): the core's
#: registry (``ServerAssignor::ALL``). ``range`` is also a client-side name: which side is meant
#: follows from the call (:func:`server_assign` is the broker's), as in Kafka, where the group's
#: protocol (``consumer`` or ``classic``) decides.
SERVER_ASSIGNORS: tuple[str, ...] = _core.SERVER_ASSIGNORS


def what_if_names() -> dict[str, str]:
    """Every assignor of both sides, for a list that names them together (the fleet's what-if):
    the client-side ones (:data:`~mqbalance.kafka.ASSIGNORS`), then the broker-side ones, each
    mapped to its Kafka name. A broker-side name that is also a client-side one is told apart as
    ``server-<name>`` (Kafka tells them apart by the group's protocol, which a mixed list does not
    have); the rule is applied here, once, to the core's two lists.

    >>> what_if_names()["server-range"], what_if_names()["uniform"], what_if_names()["range"]
    ('range', 'uniform', 'range')
    """
    out = {n: n for n in ASSIGNORS}
    for n in SERVER_ASSIGNORS:
        out[f"server-{n}" if n in out else n] = n
    return out


@dataclass(frozen=True)
class ServerMember:
    """One member as the coordinator records it (the typed alternative to a plain dict).

    >>> ServerMember("m1", ["AAAAAAAAAAAAAAAAAAAAAQ"]).current_assignment
    ()
    """

    member_id: str
    subscribed_topic_ids: Sequence[str]
    current_assignment: Sequence[tuple[str, Sequence[int]]] = field(default=())
    instance_id: str | None = None
    rack: str | None = None

    def __post_init__(self) -> None:
        _validate.text(self.member_id, "member_id")
        subs = tuple(_validate.str_sequence(self.subscribed_topic_ids, "subscribed_topic_ids"))
        object.__setattr__(self, "subscribed_topic_ids", subs)
        for name in ("instance_id", "rack"):
            if getattr(self, name) is not None:
                _validate.text(getattr(self, name), name)


def server_assign(
    name: str,
    members: Sequence[Mapping[str, Any] | ServerMember],
    topics: Mapping[str, int],
    *,
    kafka_version: str = KAFKA_NEWEST_RELEASE,
) -> dict[str, dict[str, list[int]]]:
    """The target assignment the coordinator computes with assignor ``name`` (``"uniform"`` or
    ``"range"``, case ignored).

    ``kafka_version``: the broker's release, ``"MAJOR.MINOR[.PATCH]"`` (default: the newest
    checked, :data:`KAFKA_NEWEST_RELEASE`). Releases compute differently in one place: from 4.1.0
    a homogeneous ``uniform`` group gives its extra partitions to members that already hold
    partitions, else to the last members (two partitions over five new members: 4.0 gives them to
    the first two, 4.1 and later to the last two).

    ``members``: in the coordinator's order, each a dict ``{"member_id", "instance_id",
    "rack", "subscribed_topic_ids": [topic_id, ...], "current_assignment": [[topic_id,
    [partition, ...]], ...]}`` (missing keys: none / empty) or a :class:`ServerMember`.
    ``topics``: topic id -> partition count (the metadata).

    Returns every member (``{}`` for a member with nothing), partitions ascending. ``range``
    does not read ``current_assignment`` (Kafka's neither), so it neither extracts nor checks it. Raises
    :class:`~mqbalance.exceptions.PartitionAssignorError` with Java's message when a subscribed
    topic is missing from ``topics``; :class:`~mqbalance.exceptions.InvalidInputError` for a
    duplicate member id, a topic listed twice by one member, a partition owned twice or beyond
    the topic's count, a negative count or partition, or a malformed topic id;
    :class:`~mqbalance.exceptions.UnknownStrategyError` for another name. The work runs without
    the GIL.

    The cyclic garbage collector is paused for the call (and restored after): the result is
    hundreds of thousands of fresh lists and dicts for a large group, which would otherwise set
    off full collections over the caller's whole heap (the input alone can be millions of
    objects). Nothing we create can form a cycle.
    """
    _validate.text(name, "name", error=UnknownStrategyError)
    if isinstance(members, (str, bytes, Mapping)) or not isinstance(members, Iterable):
        raise InvalidInputError(f"members must be a sequence of member dicts or ServerMember, got {members!r}", members)
    if not isinstance(topics, Mapping):
        raise InvalidInputError(f"topics must be a mapping topic id -> partition count, got {topics!r}", topics)
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        return _core.server_assign(name, members, dict(topics), _validate.text(kafka_version, "kafka_version"))
    finally:
        if paused:
            gc.enable()


def _strings(values: Any, name: str) -> list[str]:
    return _validate.str_sequence(values.to_pylist() if hasattr(values, "to_pylist") else values, name)


def _ints(values: Any, name: str) -> npt.NDArray[np.int64]:
    if type(values) is np.ndarray and values.dtype == np.int64 and values.ndim == 1:
        return np.ascontiguousarray(values)  # every int64 is in range: nothing to check
    return _validate.int_array(values, name, minimum=-(2**63), maximum=2**63 - 1)


def server_assign_columns(
    name: str,
    topic_ids: Sequence[str] | Any,
    partition_counts: Any,
    member_ids: Sequence[str] | Any,
    subscription_offsets: Any,
    subscription_topics: Any,
    *,
    member_subscription: Any = None,
    instance_ids: Sequence[str | None] | None = None,
    current_offsets: Any = None,
    current_topics: Any = None,
    current_partitions: Any = None,
    kafka_version: str = KAFKA_NEWEST_RELEASE,
) -> npt.NDArray[np.int32]:
    """:func:`server_assign` over columns (numpy arrays, Arrow arrays or sequences), for large
    groups: the owner (position in ``member_ids``, -1 for none) of every partition, as one int32
    array of ``sum(partition_counts)`` entries — topic ``k``'s partitions ``0..count`` in the
    ``k``-th block, topics in the order of ``topic_ids``.

    Subscriptions are a table: row ``k`` is the topics (positions in ``topic_ids``)
    ``subscription_topics[subscription_offsets[k]:subscription_offsets[k + 1]]``, in that order.
    Member ``m`` subscribes to row ``member_subscription[m]`` — a large group usually has a few
    distinct subscriptions, so the table stays small and members sharing a row are checked and
    counted once — or, without ``member_subscription``, to row ``m`` (one row per member).
    Member ``m``'s current assignment is the rows ``current_offsets[m]:current_offsets[m + 1]``
    of ``(current_topics, current_partitions)``, in that order (a topic's partitions in the order
    its rows come; topics in the order they first appear). Without ``current_*``: a first
    assignment. ``kafka_version`` and errors are those of :func:`server_assign`.

    >>> t = ["AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAg"]
    >>> # two subscriptions: row 0 = both topics, row 1 = t0 only; a -> row 0, b -> row 1
    >>> own = server_assign_columns("uniform", t, [2, 1], ["a", "b"], [0, 2, 3], [0, 1, 0], member_subscription=[0, 1])
    >>> own.tolist()  # t1 (one subscriber) goes first, to a; then t0's two partitions to b
    [1, 1, 0]
    """
    _validate.text(name, "name", error=UnknownStrategyError)
    # Lists of str go to the core as they are (it refuses anything else); the validators then
    # name what was wrong.
    members = member_ids if type(member_ids) is list else _strings(member_ids, "member_ids")
    topics = topic_ids if type(topic_ids) is list else _strings(topic_ids, "topic_ids")
    n = len(members)
    if current_offsets is None:
        current_offsets = np.zeros(n + 1, dtype=np.int64)
        current_topics = current_partitions = np.zeros(0, dtype=np.int64)
    instances = None
    if instance_ids is not None:
        instances = [None if i is None else _validate.text(i, "instance_ids[]") for i in instance_ids]
    columns = (
        _ints(partition_counts, "partition_counts"),
        members,
        instances,
        None if member_subscription is None else _ints(member_subscription, "member_subscription"),
        _ints(subscription_offsets, "subscription_offsets"),
        _ints(subscription_topics, "subscription_topics"),
        _ints(current_offsets, "current_offsets"),
        _ints(current_topics, "current_topics"),
        _ints(current_partitions, "current_partitions"),
    )
    try:
        return _core.server_assign_columns(name, topics, *columns, _validate.text(kafka_version, "kafka_version"))
    except (TypeError, UnicodeEncodeError):
        _strings(members, "member_ids")
        _strings(topics, "topic_ids")
        raise
