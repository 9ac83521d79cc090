"""RocketMQ allocation strategies with Java's names and Java's behaviour.

``strategy(name, **params)`` builds one; each has ``.name`` (Java's ``getName()``),
``.allocate(...)`` (Java's per-client call, on the lists exactly as given) and ``.assign(...)``
(every member's share in one pass).

>>> from mqbalance import MessageQueue, strategy
>>> qs = [MessageQueue("TopicTest", "broker-a", i) for i in range(5)]
>>> avg = strategy("AVG")
>>> [q.queue_id for q in avg.allocate("cg", "c2", qs, ["c1", "c2"])]
[3, 4]
>>> {c: [q.queue_id for q in l] for c, l in avg.assign(qs, ["c1", "c2"]).items()}
{'c1': [0, 1, 2], 'c2': [3, 4]}
>>> strategy("MACHINE_ROOM_NEARBY", inner=strategy("AVG_BY_CIRCLE")).name
'MACHINE_ROOM_NEARBY-AVG_BY_CIRCLE'
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from mqbalance import _core
from mqbalance._validate import JAVA_INT_MAX, JAVA_INT_MIN, integer, not_a_collection, str_sequence, text
from mqbalance._validate import epsilon as check_epsilon
from mqbalance.allocation.columns import QueueTable, check_current_id, id_list, queue_columns
from mqbalance.allocation.models import MessageQueue
from mqbalance.allocation.ordering import sort_client_ids, sort_queues
from mqbalance.allocation.rooms import PrefixRoomResolver, RoomResolver
from mqbalance.exceptions import (
    InvalidInputError,
    InvalidPreviousAssignmentError,
    InvalidQueueError,
    MachineRoomError,
    PreviousAssignmentRequiredError,
    PreviousAssignmentWarning,
    RingTooLargeError,
    UnsupportedStrategyError,
    VirtualNodeCountError,
)

__all__ = [
    "AllocateStrategy",
    "Avg",
    "AvgByCircle",
    "ConsistentHash",
    "ConsistentHashBounded",
    "Sticky",
    "MachineRoom",
    "MachineRoomNearby",
    "Config",
    "QueueTable",
]


def _first_per_id(ids: list[Any], lists: list[list[MessageQueue]]) -> dict[str, list[MessageQueue]]:
    """``{id: list}`` keeping each id's first slot (a repeated id's later slots are empty)."""
    out: dict[str, list[MessageQueue]] = {}
    for cid, lst in zip(ids, lists):
        if cid not in out:
            out[cid] = lst
    return out


def _shares(ids: list[Any], lists: list[list[int]], qs: list[MessageQueue]) -> dict[str, list[MessageQueue]]:
    """:func:`_first_per_id` of the core's positions into ``qs``, as the queues themselves (only the
    kept slots are materialised)."""
    out: dict[str, list[MessageQueue]] = {}
    for cid, positions in zip(ids, lists):
        if cid not in out:
            out[cid] = [qs[i] for i in positions]
    return out


class AllocateStrategy:
    """Base of every strategy. Subclasses backed by the Rust core set ``_handle``."""

    _handle: Any = None

    @property
    def name(self) -> str:
        """Java's ``getName()``."""
        return str(self._handle.name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def _rooms(self, queues: Sequence[MessageQueue], consumers: list[Any]) -> dict[str, Any]:
        return {}

    def allocate(
        self,
        consumer_group: str | None,
        current_id: str | None,
        queues: Sequence[MessageQueue] | None,
        consumers: Iterable[str] | None,
    ) -> list[MessageQueue] | None:
        """Java's ``allocate(consumerGroup, currentCID, mqAll, cidAll)`` on the lists as given.

        Returns the queues ``current_id`` consumes (the same objects as in ``queues``), in Java's
        order; ``[]`` when ``current_id`` is not in ``consumers``. Raises the
        :class:`~mqbalance.exceptions.IllegalArgumentError` subclasses where Java throws.
        ``consumer_group`` only appears in Java's log lines. Pass a :class:`QueueTable` to allocate
        over the same queues many times without extracting them again.
        """
        check_current_id(current_id)
        ids = id_list(consumers)
        if isinstance(queues, QueueTable):
            rooms = self._rooms(queues, ids)
            return _core.allocate_prepared(self._handle, current_id, queues._handle, queues._items, ids, **rooms)
        qs = _queue_list(queues, "queues")
        positions = _core.allocate_positions(self._handle, current_id, *queue_columns(qs), ids, **self._rooms(qs, ids))
        return [qs[i] for i in positions]

    def assign(
        self,
        queues: Sequence[MessageQueue] | None,
        consumers: Iterable[str] | None,
        *,
        java_sort: bool = False,
    ) -> dict[str, list[MessageQueue]]:
        """Every member's ``allocate`` result, computed in one pass.

        Keys are the distinct ids in ``consumers`` order. With ``java_sort=True`` both lists are
        first sorted the way ``RebalanceImpl`` does (what real clients compute); otherwise they are
        used as given, like :meth:`allocate`.
        """
        ids = id_list(consumers)
        if isinstance(queues, QueueTable) and not java_sort:
            rooms = self._rooms(queues, ids)
            lists = _core.assign_prepared(self._handle, queues._handle, queues._items, ids, **rooms)
            return _first_per_id(ids, lists)
        qs = _queue_list(queues, "queues")
        if java_sort:
            qs, ids = sort_queues(qs), sort_client_ids(ids)
        lists = _core.assign_positions(self._handle, *queue_columns(qs), ids, **self._rooms(qs, ids))
        return _shares(ids, lists, qs)


class Avg(AllocateStrategy):
    """``AVG``: contiguous blocks; the first ``len(queues) % len(consumers)`` get one more.

    >>> qs = [MessageQueue("T", "b", i) for i in range(10)]
    >>> [len(v) for v in Avg().assign(qs, ["a", "b", "c", "d"]).values()]
    [3, 3, 2, 2]
    """

    def __init__(self) -> None:
        self._handle = _core.Strategy("AVG")


class AvgByCircle(AllocateStrategy):
    """``AVG_BY_CIRCLE``: round robin — queue ``k`` goes to consumer ``k % len(consumers)``.

    >>> qs = [MessageQueue("T", "b", i) for i in range(5)]
    >>> [q.queue_id for q in AvgByCircle().allocate("cg", "a", qs, ["a", "b"])]
    [0, 2, 4]
    """

    def __init__(self) -> None:
        self._handle = _core.Strategy("AVG_BY_CIRCLE")


def _queue_list(queues: Any, name: str) -> list[MessageQueue]:
    """A list of queues (``None`` is empty); a lone str or a non-iterable is refused by name."""
    if queues is None:
        return []
    if not_a_collection(queues):
        raise InvalidQueueError(f"{name} must be a sequence of MessageQueue, got {queues!r}", queues)
    return list(queues)


def _virtual_node_cnt(value: Any) -> int:
    """An int-like ``virtualNodeCnt``; beyond Java's ``int`` it names the value passed: too many
    (:class:`RingTooLargeError`) or negative (:class:`VirtualNodeCountError`, Java's message)."""
    v = integer(value, "virtual_node_cnt")
    if v > JAVA_INT_MAX:
        raise RingTooLargeError(
            f"virtual_node_cnt {v} is beyond Java's int range: the consistent-hash ring would be too large", v
        )
    if v < JAVA_INT_MIN:
        raise VirtualNodeCountError(f"illegal virtualNodeCnt :{v}", v)
    return v


class ConsistentHash(AllocateStrategy):
    """``CONSISTENT_HASH``: an MD5 ring with ``virtual_node_cnt`` virtual nodes per client id.

    ``charset`` is how strings become bytes before hashing: ``"UTF-8"`` (RocketMQ 5.x, default),
    or the JVM default charset of a 4.x client: ``"ISO-8859-1"`` or ``"US-ASCII"``. Clients that
    hash differently disagree about owners whenever ids, topics or brokers are non-ASCII.

    >>> qs = [MessageQueue("TopicTest", "broker-a", i) for i in range(4)]
    >>> ConsistentHash(virtual_node_cnt=0).allocate("cg", "a", qs, ["a"])  # empty ring
    []
    """

    def __init__(self, virtual_node_cnt: int = 10, *, charset: str = "UTF-8") -> None:
        virtual_node_cnt = _virtual_node_cnt(virtual_node_cnt)
        text(charset, "charset")
        self.virtual_node_cnt = virtual_node_cnt
        self.charset = charset
        self._handle = _core.Strategy("CONSISTENT_HASH", virtual_node_cnt=virtual_node_cnt, charset=charset)

    def __repr__(self) -> str:
        return f"ConsistentHash(virtual_node_cnt={self.virtual_node_cnt}, charset={self.charset!r})"


class ConsistentHashBounded(AllocateStrategy):
    """``CONSISTENT_HASH_BOUNDED``: ``CONSISTENT_HASH``'s ring, with nobody above
    ``cap = ceil((1 + epsilon) * queues / consumers)``; a queue whose ring owner is full walks on
    clockwise to the next consumer with room (Mirrokni, Thorup, Zadimoghaddam, SODA 2018). A queue
    stays on its CONSISTENT_HASH owner unless that owner has more than ``cap`` of them.

    Stateless like the Java strategies: the result depends only on the two lists (as given; clients
    sort them first) and the parameters, so every client's ``allocate`` is its slice of the
    whole-group result. With ``epsilon`` so large that the cap is the queue count, it is exactly
    ``CONSISTENT_HASH``. ``epsilon`` must be finite and ≥ 0
    (:class:`~mqbalance.exceptions.InvalidEpsilonError`, :class:`~mqbalance.exceptions.EpsilonTooSmallError`).

    The canonical algorithm, to port to Java (``k`` = distinct ids owning a ring node, ``n`` =
    queues):

    1. the ring of ``CONSISTENT_HASH`` (``ConsistentHashRouter``: ``virtual_node_cnt`` nodes
       ``<clientId>-<i>``, MD5, first four digest bytes as a big-endian unsigned int; collisions and
       repeated ids exactly as Java);
    2. ``cap = (int) Math.min(n, Math.ceil((1.0 + epsilon) * n / k))`` in IEEE double;
    3. take the queues in ascending unsigned MD5 key of ``MessageQueue.toString()``, equal keys in
       ``mqAll`` order; each goes to its ``CONSISTENT_HASH`` owner (first ring node at or after its
       key, wrapping) while that owner holds fewer than ``cap``, else is set aside (in order);
    4. each set-aside queue, in order, walks clockwise from that node to the first node whose
       client holds fewer than ``cap`` queues, and goes there;
    5. a client's ``allocate`` returns its queues in ``mqAll`` order.

    Worked example (64 queues, 8 consumers, ε = 0.25: cap 10; plain CONSISTENT_HASH gives one of
    them 13 here):

    >>> qs = [MessageQueue("TopicTest", f"broker-{b}", i) for b in "ab" for i in range(32)]
    >>> ids = [f"10.0.0.{i}@DEFAULT" for i in range(8)]
    >>> sorted(len(v) for v in ConsistentHashBounded().assign(qs, ids).values())
    [7, 7, 7, 7, 8, 8, 10, 10]
    >>> sorted(len(v) for v in ConsistentHash().assign(qs, ids).values())
    [6, 6, 7, 7, 8, 8, 9, 13]
    """

    def __init__(self, virtual_node_cnt: int = 10, *, charset: str = "UTF-8", epsilon: float = 0.25) -> None:
        virtual_node_cnt = _virtual_node_cnt(virtual_node_cnt)
        eps = check_epsilon(epsilon)
        text(charset, "charset")
        self.virtual_node_cnt = virtual_node_cnt
        self.charset = charset
        self._handle = _core.Strategy(
            "CONSISTENT_HASH_BOUNDED", virtual_node_cnt=virtual_node_cnt, charset=charset, epsilon=eps
        )
        self.epsilon = eps

    def __repr__(self) -> str:
        return (
            f"ConsistentHashBounded(virtual_node_cnt={self.virtual_node_cnt}, charset={self.charset!r}, "
            f"epsilon={self.epsilon!r})"
        )


Previous = Mapping[str, Iterable[MessageQueue]]


def previous_owners(previous: Previous, queues: Sequence[MessageQueue], ids: Sequence[str]) -> npt.NDArray[np.int64]:
    """A previous assignment (client id → its queues, what :meth:`AllocateStrategy.assign`
    returns) as the owner column the core takes: per queue of ``queues``, the position of its
    previous owner in ``ids`` (first occurrence), ``-1`` for nobody.

    Consumers and queues not in the current lists are ignored and named in a
    :class:`~mqbalance.exceptions.PreviousAssignmentWarning`; a queue owned twice, or an
    assignment sharing no queue with ``queues`` (another group's or topic's) raises
    :class:`~mqbalance.exceptions.InvalidPreviousAssignmentError`.
    """
    if not isinstance(previous, Mapping):
        raise InvalidPreviousAssignmentError(
            f"previous must map client ids to their queues, got {type(previous).__name__}", previous
        )
    where = {q: k for k, q in reversed(list(enumerate(queues)))}
    slot: dict[str, int] = {}
    for j, cid in enumerate(ids):
        slot.setdefault(cid, j)
    out = np.full(len(queues), -1, dtype=np.int64)
    holder: dict[MessageQueue, str] = {}
    unknown_ids: list[str] = []
    unknown_queues: list[MessageQueue] = []
    named = 0
    for cid, owned in previous.items():
        if isinstance(owned, (str, MessageQueue)) or not isinstance(owned, Iterable):
            raise InvalidPreviousAssignmentError(
                f"previous[{cid!r}] must be a collection of MessageQueue, got {owned!r}", owned
            )
        at = slot.get(cid)
        if at is None:
            unknown_ids.append(cid)
        for q in owned:
            if not isinstance(q, MessageQueue):
                raise InvalidPreviousAssignmentError(f"previous[{cid!r}] holds {q!r}, not a MessageQueue", q)
            named += 1
            if q in holder and holder[q] != cid:
                raise InvalidPreviousAssignmentError(
                    f"{q} is owned twice in the previous assignment: by {holder[q]!r} and {cid!r}", q
                )
            holder[q] = cid
            k = where.get(q)
            if k is None:
                unknown_queues.append(q)
            elif at is not None:
                out[k] = at
    if named and len(unknown_queues) == named:
        raise InvalidPreviousAssignmentError(
            "the previous assignment shares no queue with the current list (another group's or topic's?): "
            f"{len(unknown_queues)} queues, e.g. {unknown_queues[0]}",
            unknown_queues[0],
        )
    if unknown_ids or unknown_queues:
        parts = []
        if unknown_ids:
            parts.append(f"consumers not in the group: {', '.join(map(repr, unknown_ids[:5]))}")
        if unknown_queues:
            parts.append(f"queues not in the list: {', '.join(map(str, unknown_queues[:5]))}")
        more = len(unknown_ids) + len(unknown_queues) > 10
        warnings.warn(
            f"previous assignment: ignored {'; '.join(parts)}{' …' if more else ''}",
            PreviousAssignmentWarning,
            stacklevel=3,
        )
    return out


class Sticky(AllocateStrategy):
    """``STICKY``: balanced (every consumer gets ``floor`` or ``ceil`` of queues / consumers) and
    moving the fewest queues possible from the previous assignment; the first run (``previous={}``)
    equals ``AVG``. Kafka's sticky assignor with identical subscriptions.

    For whoever computes the whole group and holds the previous assignment — a leader, a
    broker-side or what-if tool: :meth:`assign` and :func:`mqbalance.allocation.bulk.owners` take
    ``previous=``. A client computing only its own share cannot use it: :meth:`allocate` raises
    :class:`~mqbalance.exceptions.PreviousAssignmentRequiredError` (use CONSISTENT_HASH_BOUNDED).

    Rules (repeated client ids count once): the ``len(queues) % members`` larger quotas go to the
    members that held the most before (ties: list order); each member keeps its first previous
    queues (list order) up to its quota; the rest are dealt out in list order to the members below
    quota, in list order.

    >>> qs = [MessageQueue("T", "b", i) for i in range(6)]
    >>> first = Sticky().assign(qs, ["c1", "c2"], previous={})
    >>> {c: [q.queue_id for q in l] for c, l in first.items()}
    {'c1': [0, 1, 2], 'c2': [3, 4, 5]}
    >>> after = Sticky().assign(qs, ["c1", "c2", "c3"], previous=first)  # c3 joins: two queues move
    >>> {c: [q.queue_id for q in l] for c, l in after.items()}
    {'c1': [0, 1], 'c2': [3, 4], 'c3': [2, 5]}
    """

    def __init__(self) -> None:
        self._handle = _core.Strategy("STICKY")

    def allocate(
        self,
        consumer_group: str | None,
        current_id: str | None,
        queues: Sequence[MessageQueue] | None,
        consumers: Iterable[str] | None,
    ) -> list[MessageQueue] | None:
        """Refused: a client alone does not hold the group's previous assignment."""
        raise PreviousAssignmentRequiredError(
            "STICKY needs the group's previous assignment, which a per-client allocate does not have: compute "
            "the whole group with strategy('STICKY').assign(queues, consumers, previous=...) or "
            "bulk.owners(..., previous=...), or use CONSISTENT_HASH_BOUNDED, which every client computes for itself",
            "STICKY",
        )

    def assign(
        self,
        queues: Sequence[MessageQueue] | None,
        consumers: Iterable[str] | None,
        *,
        java_sort: bool = False,
        previous: Previous | None = None,
    ) -> dict[str, list[MessageQueue]]:
        """Every member's share given ``previous`` (client id → queues, e.g. the last result of this
        method; ``{}`` for a first run). ``previous=None`` raises
        :class:`~mqbalance.exceptions.PreviousAssignmentRequiredError`."""
        qs = list(queues) if queues is not None else []
        ids = id_list(consumers)
        if java_sort:
            qs, ids = sort_queues(qs), sort_client_ids(ids)
        prev = None if previous is None else previous_owners(previous, qs, ids)
        lists = _core.assign_positions(self._handle, *queue_columns(qs), ids, previous=prev)
        return _shares(ids, lists, qs)


class MachineRoom(AllocateStrategy):
    """``MACHINE_ROOM``: only queues of brokers named ``<idc>@<name>`` with ``idc`` in
    ``consumer_idcs`` are allocated (blocks, then a round-robin tail).

    ``consumer_idcs=None`` is Java's never-set state: any ``idc@name`` broker then raises
    :class:`~mqbalance.exceptions.ConsumerIdcsNotSetError` (Java's ``NullPointerException``).

    >>> qs = [MessageQueue("T", "hz@b", 0), MessageQueue("T", "sh@b", 0)]
    >>> MachineRoom(consumer_idcs={"hz"}).allocate("cg", "c", qs, ["c"]) == [qs[0]]
    True
    """

    def __init__(self, consumer_idcs: Iterable[str] | None = None) -> None:
        if consumer_idcs is not None:
            consumer_idcs = str_sequence(consumer_idcs, "consumer_idcs")
        self.consumer_idcs = None if consumer_idcs is None else frozenset(consumer_idcs)
        idcs = None if self.consumer_idcs is None else set(self.consumer_idcs)
        self._handle = _core.Strategy("MACHINE_ROOM", consumer_idcs=idcs)

    def __repr__(self) -> str:
        idcs = None if self.consumer_idcs is None else sorted(self.consumer_idcs)
        return f"MachineRoom(consumer_idcs={idcs!r})"


def _room(value: Any, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise MachineRoomError(f"the resolver must return a str room for {what}, got {value!r}", value)
    return value


class MachineRoomNearby(AllocateStrategy):
    """``MACHINE_ROOM_NEARBY-<inner>``: each room's queues go to that room's consumers through
    ``inner``; rooms with no consumer are shared by everybody (through ``inner`` too).

    ``inner`` is AVG, AVG_BY_CIRCLE, CONSISTENT_HASH or MACHINE_ROOM. ``resolver`` decides rooms;
    :class:`~mqbalance.allocation.rooms.PrefixRoomResolver` runs inside Rust, any other resolver is asked once
    per queue and per consumer.

    >>> qs = [MessageQueue("T", "hz@b1", 0), MessageQueue("T", "sh@b2", 0)]
    >>> s = MachineRoomNearby(Avg(), PrefixRoomResolver())
    >>> {c: [str(q.broker_name) for q in l] for c, l in s.assign(qs, ["hz@c1", "sh@c2"]).items()}
    {'hz@c1': ['hz@b1'], 'sh@c2': ['sh@b2']}
    """

    def __init__(self, inner: AllocateStrategy, resolver: RoomResolver | None = None) -> None:
        if inner is None:
            raise InvalidInputError("MACHINE_ROOM_NEARBY needs an inner strategy (Java: NullPointerException)", None)
        if not isinstance(inner, AllocateStrategy):
            raise InvalidInputError(f"inner must be a strategy, got {inner!r}", inner)
        if isinstance(inner, (Config, MachineRoomNearby, Sticky)):
            raise UnsupportedStrategyError(
                f"{inner.name} cannot be the inner strategy of MACHINE_ROOM_NEARBY", inner.name
            )
        if resolver is None:
            resolver = PrefixRoomResolver()
        if not (
            callable(getattr(resolver, "broker_room", None)) and callable(getattr(resolver, "consumer_room", None))
        ):
            raise InvalidInputError(
                f"resolver must have broker_room(queue) and consumer_room(client_id), got {resolver!r}", resolver
            )
        self.inner = inner
        self.resolver = resolver
        self._handle = _core.Strategy("MACHINE_ROOM_NEARBY", inner=inner._handle)

    def __repr__(self) -> str:
        return f"MachineRoomNearby({self.inner!r}, {self.resolver!r})"

    def _rooms(self, queues: Sequence[MessageQueue], consumers: list[Any]) -> dict[str, Any]:
        if type(self.resolver) is PrefixRoomResolver:
            return {"rooms": self.resolver.sep}
        return {
            "rooms": (
                [_room(self.resolver.broker_room(q), str(q)) for q in queues],
                [_room(self.resolver.consumer_room(c), f"consumer id {c!r}") for c in consumers],
            )
        }


class Config(AllocateStrategy):
    """``CONFIG``: every consumer gets the configured list, whatever the input (no input check).

    ``message_queues=None`` is Java's never-set state: ``allocate`` returns ``None``. A copy of
    the list is returned (Java hands out the configured list object itself).

    >>> fixed = [MessageQueue("T", "b", 7)]
    >>> Config(fixed).allocate("cg", "anyone", [], []) == fixed
    True
    """

    def __init__(self, message_queues: Iterable[MessageQueue] | None = None) -> None:
        if message_queues is None:
            self.message_queues: list[MessageQueue] | None = None
        else:
            self.message_queues = _queue_list(message_queues, "message_queues")
            queue_columns(self.message_queues)  # validates the elements

    @property
    def name(self) -> str:
        return "CONFIG"

    def __repr__(self) -> str:
        return f"Config(message_queues={self.message_queues!r})"

    def allocate(
        self,
        consumer_group: str | None,
        current_id: str | None,
        queues: Sequence[MessageQueue] | None,
        consumers: Iterable[str] | None,
    ) -> list[MessageQueue] | None:
        return None if self.message_queues is None else list(self.message_queues)

    def assign(
        self,
        queues: Sequence[MessageQueue] | None,
        consumers: Iterable[str] | None,
        *,
        java_sort: bool = False,
    ) -> dict[str, list[MessageQueue]]:
        """Every distinct id gets the configured list (``None`` entries when it was never set)."""
        ids = id_list(consumers)
        return {cid: self.allocate(None, cid, queues, ids) for cid in dict.fromkeys(ids)}  # type: ignore[misc]
