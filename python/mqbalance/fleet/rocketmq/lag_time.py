"""Lag in seconds, exact: per queue, the age of the oldest message a group has not consumed — now
minus the broker's store timestamp of the message at the group's committed offset.

RocketMQ's brokers keep no such figure: ``GET_CONSUME_STATS`` (``mqadmin consumerProgress``) gives
each queue's ``lastTimestamp``, the store time of the message *before* the committed offset (the
last one consumed), which says how long ago the group last consumed there, not how old what it has
not consumed is. So we read that message: one ``PULL_MESSAGE`` of one message at the committed
offset, in the tools group ``TOOLS_CONSUMER`` (predefined on every Java broker, as ``mqadmin`` uses
it) and without the commit flag, so the group's offsets are never touched. A committed offset
below the broker's oldest message (deleted by retention) reads the oldest message still there:
that is what the group will consume next.

Bounded: a message's store time never changes, so a queue whose committed offset has not moved
since its last reading needs no request (an idle topic or a stopped group costs one read, then its
age keeps growing with the clock, uncapped). The others are read most-lagging first, at most
``budget`` a call; the rest carry their last reading forward, marked ``carried`` (its message is
older than the one at the committed offset now: the age is an upper bound), or ``unread``.

>>> m = Oldest(offset=7, store_ms=1_000, state=EXACT)
>>> m.lag_seconds(31_000), Oldest(offset=9, store_ms=None, state=NO_LAG).lag_seconds(31_000)
(30.0, 0.0)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from mqbalance.exceptions import InvalidInputError, MQBalanceError, RemotingError
from mqbalance.remoting import BrokerClient, RequestCode, ResponseCode
from mqbalance.remoting.api import PullStatus, parse_consume_stats

__all__ = [
    "read_consume_stats",
    "read_lag_times",
    "offsets_from_answer",
    "CARRIED",
    "EXACT",
    "NO_LAG",
    "TOOLS_GROUP",
    "UNREAD",
    "LagClock",
    "Oldest",
    "offset_readings",
    "pair_lag",
    "read_store_time",
]

#: the group the reads pull in (Java's ``MixAll.TOOLS_CONSUMER_GROUP``: predefined on the broker)
TOOLS_GROUP = "TOOLS_CONSUMER"
#: read at the committed offset (this tick, or an earlier one at the same offset)
EXACT = "exact"
#: an earlier reading at a lower offset, not yet read again (the age is an upper bound)
CARRIED = "carried"
#: lagging, never read yet (no age)
UNREAD = "unread"
#: nothing to consume (age 0)
NO_LAG = "none"

Queue = tuple[str, str, str, int]  # group, topic, broker name, queue id


@dataclass(frozen=True, slots=True)
class Oldest:
    """The oldest unconsumed message of one queue as known: the ``offset`` read (the committed
    offset, or the broker's oldest one when retention deleted it), its ``store_ms`` (``None``:
    no lag, or never read) and how it was known (``state``: :data:`EXACT`, :data:`CARRIED`,
    :data:`UNREAD` or :data:`NO_LAG`)."""

    offset: int
    store_ms: int | None
    state: str
    committed: int | None = None  # the committed offset it stands for (default: ``offset``)

    def lag_seconds(self, now_ms: int) -> float | None:
        """Age of the oldest unconsumed message at ``now_ms`` (0 with no lag, ``None`` unread)."""
        if self.state == NO_LAG:
            return 0.0
        if self.store_ms is None:
            return None
        return max(0.0, (now_ms - self.store_ms) / 1000)


def read_store_time(client: BrokerClient, topic: str, queue_id: int, offset: int) -> tuple[int, int | None]:
    """``(offset read, store timestamp ms)`` of the message at ``offset``: one pull of one message
    in :data:`TOOLS_GROUP`, no commit. Below the queue's oldest message (deleted), the oldest one
    (a second pull); at or past the end, ``(offset, None)``."""
    result = client.pull(TOOLS_GROUP, topic, queue_id, offset, 1)
    for _ in range(2):  # PULL_RETRY_IMMEDIATELY: the broker asks for the same pull again
        if result.status is not PullStatus.NO_MATCHED_MSG:
            break
        result = client.pull(TOOLS_GROUP, topic, queue_id, offset, 1)
    if result.status is PullStatus.OFFSET_ILLEGAL and offset < result.min_offset < result.max_offset:
        offset = result.min_offset
        result = client.pull(TOOLS_GROUP, topic, queue_id, offset, 1)
    if result.status is PullStatus.FOUND and result.messages:
        first = result.messages[0]
        return first.queue_offset, first.store_timestamp
    return offset, None


class LagClock:
    """The oldest unconsumed message of every lagging queue, read bounded (see the module docs)
    and remembered between calls. ``budget``: reads per :meth:`update`."""

    def __init__(self, *, budget: int = 256, timeout: float = 3.0) -> None:
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
            raise InvalidInputError(f"lag-time budget must be an integer >= 0, got {budget!r}", budget)
        self.budget, self.timeout = budget, timeout
        self.known: dict[Queue, Oldest] = {}
        self.reads = 0  # pulls sent by the last update

    def update(
        self, offsets: Mapping[Queue, tuple[int | None, int | None]], addresses: Mapping[str, str]
    ) -> tuple[dict[Queue, Oldest], list[dict[str, Any]]]:
        """Per queue of ``offsets`` (``(committed, broker max)``) with both known, its
        :class:`Oldest`; ``addresses``: broker name → master address. The reads that failed, as
        gaps (their queues carried forward)."""
        out: dict[Queue, Oldest] = {}
        due: list[tuple[int, Queue, int]] = []
        for q, (committed, top) in offsets.items():
            if committed is None or top is None:
                continue
            if top <= committed:
                out[q] = Oldest(committed, None, NO_LAG, committed)
                continue
            last = self.known.get(q)
            if last is not None and last.state == EXACT and last.committed == committed:
                out[q] = last  # the same message: its store time has not changed
            else:
                due.append((top - committed, q, committed))
        due.sort(key=lambda d: (-d[0], d[1]))
        chosen = [d for d in due if d[1][2] in addresses][: self.budget]
        read: dict[Queue, Oldest] = {}
        failed: list[dict[str, Any]] = []
        lock = threading.Lock()

        def per_broker(broker: str) -> None:
            addr = addresses[broker]
            try:
                with BrokerClient(addr, timeout=self.timeout) as client:
                    for _lag, q, committed in chosen:
                        if q[2] == broker:
                            offset, store = read_store_time(client, q[1], q[3], committed)
                            with lock:
                                read[q] = Oldest(offset, store, EXACT if store is not None else UNREAD, committed)
            except (RemotingError, MQBalanceError, OSError) as e:
                with lock:
                    failed.append({"broker_name": broker, "address": addr, "request": "PULL_MESSAGE", "error": str(e)})

        brokers = sorted({q[2] for _lag, q, _c in chosen})
        if brokers:
            with ThreadPoolExecutor(max_workers=min(16, len(brokers))) as pool:
                list(pool.map(per_broker, brokers))
        self.reads = len(read)
        for _lag, q, committed in due:
            got = read.get(q)
            if got is not None and got.state == EXACT:
                out[q] = got
                continue
            last = self.known.get(q)
            if last is not None and last.store_ms is not None:
                out[q] = Oldest(last.offset, last.store_ms, CARRIED, committed)
            else:
                out[q] = Oldest(committed, None, UNREAD, committed)
        self.known = {q: o for q, o in out.items() if o.store_ms is not None}
        return out, failed


#: ``(topic, broker name, queue id) -> (broker max offset, consumer offset)``: one ``GET_CONSUME_STATS`` answer
ConsumeStats = dict[tuple[str, str, int], tuple[int, int]]


def read_consume_stats(
    asks: Iterable[tuple[str, str]],
    addresses: Mapping[str, str],
    *,
    timeout: float = 3.0,
    chunk: int | None = 64,
) -> tuple[dict[tuple[str, str], tuple[ConsumeStats, int]], list[dict[str, Any]]]:
    """One ``GET_CONSUME_STATS`` per ``(group, broker name)`` of ``asks``: per pair, the answer and
    when it was read (ms since the epoch, the middle of its round trip); the failures, each
    ``{"broker_name", "address", "request", "error"}``. One connection per broker (brokers side by
    side), the requests pipelined ``chunk`` at a time: a chunk's answers are stamped with the middle
    of its round trip, so the stamp is off by at most one chunk's round trip (milliseconds).
    ``chunk=None``: all of a broker's requests in one pipelined read (64 in flight, no pause between
    chunks), all stamped with its middle. A group the broker refuses is that group's failure; a
    connection that fails ends its broker's.

    >>> read_consume_stats([("g", "broker-a")], {"broker-a": addr})  # doctest: +SKIP
    ({('g', 'broker-a'): ({('T', 'broker-a', 0): (7, 5)}, 1764433200123)}, [])
    """
    if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1):
        raise InvalidInputError(f"chunk must be an integer >= 1 or None, got {chunk!r}", chunk)
    pending: dict[str, list[str]] = {}
    for group, broker in sorted(set(asks)):
        if broker in addresses:
            pending.setdefault(broker, []).append(group)
    answers: dict[tuple[str, str], tuple[ConsumeStats, int]] = {}
    failed: list[dict[str, Any]] = []
    lock = threading.Lock()

    def per_broker(broker: str) -> None:
        addr, groups = addresses[broker], pending[broker]

        def fail(e: Exception) -> None:
            with lock:
                failed.append({"broker_name": broker, "address": addr, "request": "GET_CONSUME_STATS", "error": str(e)})

        try:
            with BrokerClient(addr, timeout=timeout) as client:
                step = len(groups) if chunk is None else chunk
                for start in range(0, len(groups), step):
                    part = groups[start : start + step]
                    sent = time.time()
                    got = client.client.invoke_many(
                        [(int(RequestCode.GET_CONSUME_STATS), {"consumerGroup": g}) for g in part], window=64
                    )
                    at = int((sent + time.time()) * 500)  # the middle of the chunk's round trip, in ms
                    for group, answer in zip(part, got, strict=True):
                        if isinstance(answer, RemotingError):
                            raise answer
                        if answer.code != ResponseCode.SUCCESS:
                            fail(client.client.response_error(RequestCode.GET_CONSUME_STATS, answer))
                            continue
                        stats = parse_consume_stats(answer.body, addr=addr)
                        with lock:
                            answers[(group, broker)] = (stats, at)
        except (RemotingError, MQBalanceError, OSError) as e:
            fail(e)

    if pending:
        with ThreadPoolExecutor(max_workers=min(16, len(pending))) as pool:
            list(pool.map(per_broker, sorted(pending)))
    return answers, failed


def offsets_from_answer(committed: int | None, answered: tuple[int, int] | None) -> tuple[int | None, int | None]:
    """A queue's ``(committed, max offset)`` from its group's ``GET_CONSUME_STATS`` entry
    ``answered`` (``(max offset, consumer offset)``), both read at one moment: lag is their
    difference, and offsets read seconds apart count the messages sent in between. ``committed``
    (the broker's offset table) says whether the queue has a committed offset at all: a broker
    answers 0 for a queue without one, and a negative answer keeps the table's offset.

    >>> offsets_from_answer(3, (9, 5)), offsets_from_answer(None, (9, 0)), offsets_from_answer(3, (9, -1))
    ((5, 9), (None, 9), (3, 9))
    """
    if answered is None:
        return committed, None
    top, now = answered
    return (now if committed is not None and now >= 0 else committed), top


def read_lag_times(data: Mapping[str, Any], *, timeout: float = 3.0, budget: int = 1000) -> list[dict[str, Any]]:
    """Lag seconds for a live snapshot (``data`` as :func:`~mqbalance.fleet.rocketmq.live.read_cluster`
    returns it, whose ``errors`` get the reads that failed): per queue with committed offsets, the
    broker's max offset (:func:`read_consume_stats`) and, where it lags, the
    store time of the message at the committed offset (at most ``budget`` reads, most-lagging first),
    as the snapshot's ``lagTimes`` rows. A row's committed and max offsets come from one
    ``GET_CONSUME_STATS`` answer and its ``readAt`` is when (within milliseconds): time to
    drain divides offsets moved by time passed, so the time must be the offsets' own, not that of
    the store-time reads after them (seconds later on a loaded machine). A queue without lag has
    its row too (state ``none``, no store time): the snapshot then says when it found nothing
    lagging, so an audit against a later or earlier snapshot calls the pair ``idle``
    (:mod:`mqbalance.fleet.drain`)."""
    addresses = dict(data.get("meta", {}).get("brokers", {}))
    committed = {
        (o["group"], o["topic"], o["brokerName"], int(o["queueId"])): int(o["offset"]) for o in data.get("offsets", [])
    }
    answers, failed = read_consume_stats({(q[0], q[2]) for q in committed}, addresses, timeout=timeout)
    offsets, read_at = {}, {}
    for q, c in committed.items():
        stats, at = answers.get((q[0], q[2]), ({}, None))
        offsets[q] = offsets_from_answer(c, stats.get((q[1], q[2], q[3])))
        if at is not None:
            read_at[q] = at
    found, failed_reads = LagClock(budget=budget, timeout=timeout).update(offsets, addresses)
    errors = data.get("errors")
    if isinstance(errors, list):
        errors += [
            {"broker": f["broker_name"], "address": f["address"], "request": f["request"], "error": f["error"]}
            for f in failed + failed_reads
        ]
    done = int(time.time() * 1000)  # a queue whose broker did not answer GET_CONSUME_STATS
    return [
        {"group": q[0], "topic": q[1], "brokerName": q[2], "queueId": q[3], "committed": offsets[q][0],
         "maxOffset": offsets[q][1], "storeTimestamp": o.store_ms, "state": o.state,
         "readAt": read_at.get(q, done)}
        for q, o in sorted(found.items())
    ]  # fmt: skip


def pair_lag(table: Any) -> dict[tuple[str, str], tuple[int, float | None, bool]]:
    """Per (group, topic) of a snapshot's ``lag_times`` table: the lag in messages, the worst
    queue's lag in seconds at the read (``None``: none read) and whether that figure is an upper
    bound (carried forward)."""
    out: dict[tuple[str, str], tuple[int, float | None, bool]] = {}
    columns = ("group", "topic", "committed", "max_offset", "store_ms", "state", "read_at_ms")
    for g, t, c, m, store, state, at in zip(*(table.column(n).to_pylist() for n in columns)):
        lag, worst, carried = out.get((g, t), (0, None, False))
        lag += max(0, m - c)
        if store is not None and m > c:
            age = max(0.0, (at - store) / 1000)
            if worst is None or age > worst:
                worst, carried = age, state == CARRIED
        out[(g, t)] = (lag, worst, carried)
    return out


def offset_readings(
    lag_times: Any, offsets: Any, errors: Any
) -> dict[tuple[str, str, tuple[str, int]], tuple[int, int, int]]:
    """Per queue of a live snapshot, ``(ms, committed, max offset)`` at its lag-seconds read, for
    time to drain (:mod:`mqbalance.fleet.drain`): a ``lag_times`` row is a queue whose offsets were
    read (lagging, or state ``none``: caught up); a committed offset without one (a file written
    when only lagging queues had rows) was caught up at that read (its max offset is taken as the
    committed one), unless its broker failed ``GET_CONSUME_STATS`` (the snapshot's ``errors``).
    Nothing without lag seconds read (no read time)."""
    columns = ("group", "topic", "broker_name", "queue_id", "committed", "max_offset", "read_at_ms")
    rows = list(zip(*(lag_times.column(n).to_pylist() for n in columns)))
    if not rows:
        return {}
    read_at = max(r[6] for r in rows)
    out = {(g, t, (b, q)): (at, c, m) for g, t, b, q, c, m, at in rows}
    failed = {
        b
        for b, r in zip(*(errors.column(n).to_pylist() for n in ("broker_name", "request")))
        if r == "GET_CONSUME_STATS"
    }
    keys = ("group", "topic", "broker_name", "queue_id", "offset")
    for g, t, b, q, c in zip(*(offsets.column(n).to_pylist() for n in keys)):
        if b not in failed:
            out.setdefault((g, t, (b, q)), (read_at, c, c))
    return out
