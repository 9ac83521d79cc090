"""Whole-group assignment over columns, for fleets of millions of queues.

``assign`` returns, for every input row, the position in ``consumers`` of the id that consumes it
(its first occurrence), or ``-1`` when nobody does — the answer to "who owns every queue" that no
single Java client can give. Columns may be lists, numpy arrays or pyarrow arrays (dictionary
arrays are used as they are).

>>> import numpy as np
>>> owners = assign("AVG", ["T"] * 5, ["broker-b"] * 2 + ["broker-a"] * 3, [0, 1, 0, 1, 2], ["c2", "c1"])
>>> owners.tolist()  # sorted like RebalanceImpl: broker-a first, then c1 before c2
[0, 0, 1, 1, 1]
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from . import _core
from ._columns import check_lengths, id_list, queue_ids, str_column
from .exceptions import UnsupportedStrategyError
from .models import MessageQueue
from .rooms import PrefixRoomResolver
from .strategies import AllocateStrategy, Config, MachineRoomNearby, _room
from .strategies import strategy as make_strategy

__all__ = ["assign", "assign_groups"]


def assign(
    strategy: AllocateStrategy | str,
    topics: Any,
    brokers: Any,
    queue_ids_: Any,
    consumers: Iterable[str],
    *,
    presorted: bool = False,
) -> np.ndarray:
    """Owner of every queue row as an ``int64`` array aligned with the input rows.

    Unless ``presorted``, queues are sorted in Java ``MessageQueue`` order and ids in Java string
    order first, as ``RebalanceImpl`` does; the result still refers to *input* rows and *input*
    positions. With ``presorted=True`` the order given is the order used (AVG and AVG_BY_CIRCLE
    then never read the strings). Runs without the GIL, on all cores for CONSISTENT_HASH.

    CONFIG has no owners (every consumer gets the same fixed list):
    :class:`~mqbalance.exceptions.UnsupportedStrategyError`.
    """
    s = make_strategy(strategy) if isinstance(strategy, str) else strategy
    if isinstance(s, Config):
        raise UnsupportedStrategyError(
            "CONFIG gives every consumer the same fixed list; it has no owner per queue", "CONFIG"
        )
    ids = id_list(consumers)
    qids = queue_ids(queue_ids_)
    check_lengths(topics=len(topics), brokers=len(brokers), queue_ids=len(qids))
    needs_names = s._handle.name not in ("AVG", "AVG_BY_CIRCLE") or not presorted
    tcol = str_column(topics, "topics") if needs_names else []
    bcol = str_column(brokers, "brokers") if needs_names else []
    rooms: dict[str, Any] = {}
    if isinstance(s, MachineRoomNearby):
        if type(s.resolver) is PrefixRoomResolver:
            rooms = {"room_sep": s.resolver.sep}
        else:
            tl, bl = list(topics), list(brokers)
            rooms = {
                "queue_rooms": [
                    _room(s.resolver.broker_room(MessageQueue(t, b, int(q))), f"{t}/{b}/{q}")
                    for t, b, q in zip(tl, bl, qids)
                ],
                "consumer_rooms": [_room(s.resolver.consumer_room(c), f"consumer id {c!r}") for c in ids],
            }
    return _core.owners(s._handle, tcol, bcol, qids, ids, presorted=presorted, **rooms)


def assign_groups(
    topics: Any,
    brokers: Any,
    queue_ids_: Any,
    bounds: Any,
    strategies: list[AllocateStrategy | str],
    consumers: list[list[str]],
) -> np.ndarray:
    """Many (group, topic) pairs in one call — what a Spark executor does for a bucket of groups.

    Rows ``bounds[s]:bounds[s+1]`` are the queues of pair ``s`` (any order: each pair is sorted the
    Java way), assigned with ``strategies[s]`` over ``consumers[s]``. The result holds, per row,
    the position in its pair's consumer list of the owning id (first occurrence), ``-1`` for
    nobody. Pairs run on all cores; strings are interned once for the whole call.
    MACHINE_ROOM_NEARBY and CONFIG are not accepted here (use :func:`assign` per pair).

    >>> assign_groups(["A", "A", "B"], ["b"] * 3, [1, 0, 0], [0, 2, 3], ["AVG", "AVG"], [["y", "x"], ["z"]]).tolist()
    [0, 1, 0]
    """
    built = [make_strategy(s) if isinstance(s, str) else s for s in strategies]
    for s in built:
        if isinstance(s, (Config, MachineRoomNearby)):
            raise UnsupportedStrategyError(
                f"{s.name} is not supported by assign_groups; use bulk.assign per pair", s.name
            )
    handles: dict[int, int] = {}
    distinct = []
    which = np.empty(len(built), dtype=np.uint32)
    for k, s in enumerate(built):
        key = id(s._handle)
        if key not in handles:
            handles[key] = len(distinct)
            distinct.append(s._handle)
        which[k] = handles[key]
    qids = queue_ids(queue_ids_)
    check_lengths(topics=len(topics), brokers=len(brokers), queue_ids=len(qids))
    b = np.asarray(bounds, dtype=np.uint64)
    return _core.owners_segments(
        str_column(topics, "topics"),
        str_column(brokers, "brokers"),
        qids,
        b,
        distinct,
        which,
        [id_list(c) for c in consumers],
    )
