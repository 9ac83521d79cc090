"""Whole-group owners over columns, for fleets of millions of queues.

:func:`owners` returns, for every input row, the position in ``consumers`` of the id that consumes
it (its first occurrence), or ``-1`` when nobody does — the answer to "who owns every queue" that
no single Java client can give. Columns may be lists, numpy arrays or pyarrow arrays (dictionary
arrays are used as they are).

>>> import numpy as np
>>> result = owners("AVG", ["T"] * 5, ["broker-b"] * 2 + ["broker-a"] * 3, [0, 1, 0, 1, 2], ["c2", "c1"])
>>> result.tolist()  # sorted like RebalanceImpl: broker-a first, then c1 before c2
[0, 0, 1, 1, 1]
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from mqbalance import _core, _validate
from mqbalance.allocation.columns import check_lengths, column_len, id_list, str_column, string_buffers
from mqbalance.allocation.columns import queue_ids as queue_id_column
from mqbalance.allocation.models import MessageQueue
from mqbalance.allocation.registry import REGISTRY, lookup
from mqbalance.allocation.registry import strategy as make_strategy
from mqbalance.allocation.rooms import PrefixRoomResolver
from mqbalance.allocation.strategies import AllocateStrategy, MachineRoomNearby, _room
from mqbalance.exceptions import (
    InvalidInputError,
    InvalidPreviousAssignmentError,
    PreviousAssignmentWarning,
    UnsupportedStrategyError,
)

__all__ = ["owners", "owners_by_pair", "owners_by_pair_in_column"]


def _strategy(strategy: AllocateStrategy | str, *, batch: bool = False) -> AllocateStrategy:
    s = make_strategy(strategy) if isinstance(strategy, str) else strategy
    if not isinstance(s, AllocateStrategy):
        raise InvalidInputError(f"strategy must be a strategy name or an AllocateStrategy, got {strategy!r}", strategy)
    info = REGISTRY[lookup(s.name)[0]]
    if not info.has_owners:
        raise UnsupportedStrategyError(
            f"{s.name} gives every consumer the same fixed list; it has no owner per queue", s.name
        )
    if batch and not info.batchable:
        raise UnsupportedStrategyError(f"{s.name} is not supported by owners_by_pair; use bulk.owners per pair", s.name)
    return s


def owners(
    strategy: AllocateStrategy | str,
    topics: Any,
    brokers: Any,
    queue_ids: Any,
    consumers: Iterable[str],
    *,
    presorted: bool = False,
    previous: Any = None,
) -> np.ndarray:
    """Owner of every queue row as an ``int64`` array aligned with the input rows.

    Unless ``presorted``, queues are sorted in Java ``MessageQueue`` order and ids in Java string
    order first, as ``RebalanceImpl`` does; the result still refers to *input* rows and *input*
    positions. With ``presorted=True`` the order given is the order used (strategies that do not
    read names then never read the strings). Runs without the GIL, on all cores for CONSISTENT_HASH.

    CONFIG has no owners (every consumer gets the same fixed list):
    :class:`~mqbalance.exceptions.UnsupportedStrategyError`.

    ``previous`` (STICKY only, which needs it): the previous owner of every row — a column of
    client ids aligned with the rows, ``None`` (or ``""``) where nobody owned the row; all ``None``
    for a first run. Ids not in ``consumers`` are ignored with a
    :class:`~mqbalance.exceptions.PreviousAssignmentWarning`.

    >>> first = owners("STICKY", ["T"] * 4, ["b"] * 4, [0, 1, 2, 3], ["c1", "c2"], previous=[None] * 4)
    >>> first.tolist()
    [0, 0, 1, 1]
    >>> ids = ["c1", "c2", "c3"]
    >>> owners("STICKY", ["T"] * 4, ["b"] * 4, [0, 1, 2, 3], ids, previous=["c1", "c1", "c2", "c2"]).tolist()
    [0, 0, 1, 2]
    """
    s = _strategy(strategy)
    ids = id_list(consumers)
    qids = _queue_ids(topics, brokers, queue_ids)
    info = REGISTRY[lookup(s.name)[0]]
    prev: np.ndarray | None = None
    if previous is not None:
        if not info.needs_previous:
            raise InvalidInputError(f"{s.name} takes no previous assignment (only STICKY does)", s.name)
        prev = _previous_column(previous, ids, len(qids))
    needs_names = s._handle.reads_queue_names or not presorted
    tcol = str_column(topics, "topics") if needs_names else []
    bcol = str_column(brokers, "brokers") if needs_names else []
    rooms: dict[str, Any] = {}
    if isinstance(s, MachineRoomNearby):
        if type(s.resolver) is PrefixRoomResolver:
            rooms = {"rooms": s.resolver.sep}
        else:
            tl, bl = list(topics), list(brokers)
            rooms = {
                "rooms": (
                    [
                        _room(s.resolver.broker_room(MessageQueue(t, b, int(q))), f"{t}/{b}/{q}")
                        for t, b, q in zip(tl, bl, qids)
                    ],
                    [_room(s.resolver.consumer_room(c), f"consumer id {c!r}") for c in ids],
                )
            }
    return _core.owners(s._handle, tcol, bcol, qids, ids, presorted=presorted, previous=prev, **rooms)


def _previous_column(previous: Any, ids: list[Any], n: int) -> np.ndarray:
    """Client ids per row → positions in ``ids`` (first occurrence), ``-1`` for nobody / unknown."""
    if isinstance(previous, str) or not hasattr(previous, "__len__"):
        raise InvalidPreviousAssignmentError(
            f"previous must be a column of client ids aligned with the rows, got {previous!r}", previous
        )
    values = previous.to_pylist() if hasattr(previous, "to_pylist") else list(previous)
    check_lengths(queue_ids=n, previous=len(values))
    slot: dict[Any, int] = {}
    for j, cid in enumerate(ids):
        slot.setdefault(cid, j)
    out = np.full(n, -1, dtype=np.int64)
    unknown: dict[str, None] = {}
    for k, cid in enumerate(values):
        if cid is None or cid == "":
            continue
        if not isinstance(cid, str):
            raise InvalidPreviousAssignmentError(f"previous[{k}]: expected a client id (str) or None, got {cid!r}", cid)
        at = slot.get(cid)
        if at is None:
            unknown[cid] = None
        else:
            out[k] = at
    if unknown:
        names = ", ".join(map(repr, list(unknown)[:5]))
        warnings.warn(
            f"previous assignment: ignored consumers not in the group: {names}{' …' if len(unknown) > 5 else ''}",
            PreviousAssignmentWarning,
            stacklevel=3,
        )
    return out


def owners_by_pair(
    topics: Any,
    brokers: Any,
    queue_ids: Any,
    bounds: Any,
    strategies: Sequence[AllocateStrategy | str],
    consumers: Sequence[Sequence[str]],
) -> np.ndarray:
    """Many (group, topic) pairs in one call — what a fleet batch does.

    Rows ``bounds[s]:bounds[s+1]`` are the queues of pair ``s`` (any order: each pair is sorted the
    Java way), assigned with ``strategies[s]`` over ``consumers[s]``. The result holds, per row,
    the position in its pair's consumer list of the owning id (first occurrence), ``-1`` for
    nobody. Pairs run on all cores; strings are interned once for the whole call.
    Strategies that are not ``batchable`` in :data:`mqbalance.allocation.registry.REGISTRY`
    (MACHINE_ROOM_NEARBY, CONFIG) are refused (use :func:`owners` per pair).

    >>> owners_by_pair(["A", "A", "B"], ["b"] * 3, [1, 0, 0], [0, 2, 3], ["AVG", "AVG"], [["y", "x"], ["z"]]).tolist()
    [0, 1, 0]
    """
    distinct, which = _handles(strategies)
    if isinstance(consumers, (str, bytes)) or not hasattr(consumers, "__iter__"):
        raise InvalidInputError(
            f"consumers must be a sequence of client-id lists, one per pair, got {consumers!r}", consumers
        )
    consumers = list(consumers)
    qids = _queue_ids(topics, brokers, queue_ids)
    b = _validate.int_array(bounds, "bounds", minimum=0, maximum=2**63 - 1).astype(np.uint64)
    check_lengths(strategies=len(which), consumers=len(consumers))
    return _core.owners_by_pair(
        str_column(topics, "topics"),
        str_column(brokers, "brokers"),
        qids,
        b,
        distinct,
        which,
        [id_list(c) for c in consumers],
    )


def owners_by_pair_in_column(
    topics: Any,
    brokers: Any,
    queue_ids: Any,
    bounds: Any,
    strategies: Sequence[AllocateStrategy | str],
    client_ids: Any,
    id_starts: Any,
    id_stops: Any,
) -> np.ndarray:
    """:func:`owners_by_pair` with each pair's consumers a range of one column of client ids (a
    pyarrow string array, read in place: no Python string per id), ``client_ids[id_starts[s]:
    id_stops[s]]`` for pair ``s``. Each row's owner is the position *in* ``client_ids`` of the owning id (its
    first occurrence in the range), ``-1`` for nobody: ``client_ids.take`` gives the names.

    >>> import pyarrow as pa
    >>> ids = pa.array(["y", "x", "z"])
    >>> owners_by_pair_in_column(["A", "A", "B"], ["b"] * 3, [1, 0, 0], [0, 2, 3], ["AVG", "AVG"], ids,
    ...                          id_starts=[0, 2], id_stops=[2, 3]).tolist()
    [0, 1, 2]
    """
    handles, which = _handles(strategies)
    qids = _queue_ids(topics, brokers, queue_ids)
    b = _validate.int_array(bounds, "bounds", minimum=0, maximum=2**63 - 1).astype(np.uint64)
    starts = _validate.int_array(id_starts, "id_starts", minimum=0, maximum=2**63 - 1).astype(np.int64)
    stops = _validate.int_array(id_stops, "id_stops", minimum=0, maximum=2**63 - 1).astype(np.int64)
    check_lengths(strategies=len(which), id_starts=len(starts), id_stops=len(stops))
    offsets, data = string_buffers(client_ids, "client_ids")
    return _core.owners_by_pair_in_column(
        str_column(topics, "topics"),
        str_column(brokers, "brokers"),
        qids,
        b,
        handles,
        which,
        offsets,
        data,
        starts,
        stops,
    )


def _queue_ids(topics: Any, brokers: Any, queue_ids: Any) -> np.ndarray:
    """The queue ids as int64, checked, and the three queue columns checked to be one length."""
    qids = queue_id_column(queue_ids)
    check_lengths(topics=column_len(topics, "topics"), brokers=column_len(brokers, "brokers"), queue_ids=len(qids))
    return qids


def _handles(strategies: Sequence[AllocateStrategy | str]) -> tuple[list[Any], np.ndarray]:
    """The distinct core handles of ``strategies`` (one per pair) and each pair's index into them."""
    if isinstance(strategies, (str, bytes)) or not hasattr(strategies, "__iter__"):
        raise InvalidInputError(
            f"strategies must be a sequence of strategies, one per pair, got {strategies!r}", strategies
        )
    # Pairs of one fleet share a few strategy objects: each is checked and built once.
    once: dict[int, Any] = {}
    built = []
    for s in strategies:
        if id(s) not in once:
            once[id(s)] = _strategy(s, batch=True)
        built.append(once[id(s)])
    handles: dict[int, int] = {}
    distinct: list[Any] = []
    which = np.empty(len(built), dtype=np.uint32)
    for k, s in enumerate(built):
        key = id(s._handle)
        if key not in handles:
            handles[key] = len(distinct)
            distinct.append(s._handle)
        which[k] = handles[key]
    return distinct, which
