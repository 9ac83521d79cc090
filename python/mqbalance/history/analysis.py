"""What a group's history means: rebalance episodes, flapping members and consumer health, from
the events of one group (:mod:`mqbalance.history.schema`). Pure functions over plain rows, so the
same code runs in-process and inside Spark's executors (:mod:`mqbalance.history.job`).

**Episodes.** A membership change (a ``join`` or ``leave``) — or a change of the group's
subscriptions or of its queues (:mod:`mqbalance.history.causes`) — starts an episode; the next
change less than ``window`` seconds after the previous one belongs to the same episode. An episode has
who joined and left (client id and address), the queues whose owner changed from its start until
the next episode, the time from its start until every queue was owned again (``None`` when that
never happened before the next episode or the end of the data), and the queue-seconds over that
span with a queue owned by nobody (``processes == 0``) or by two processes or more.

**Duplicated client ids.** Two processes sharing a client id: over a period the id is connected
from two addresses at once (how a broker that lists every connection shows it), or it moves to a
new connection without ever leaving at least ``min_swaps`` times, each less than ``window`` after
the previous (how a broker that keeps one connection per id shows it: the two processes take the id
from each other in turn, each time on a new connection; a process that reconnects or restarts
moves once). Periods less than ``window`` apart are one.

**Flapping.** A client id that joined and left at least ``min_cycles`` times (the id, not one of its
addresses: joining is its first connection, leaving its last); a group with at least
``min_episodes`` episodes.

**Health** (LinkedIn Burrow's rules, ``core/internal/evaluator``), per queue over its last
``window_readings`` offsets readings (Burrow: the last commits): OK when the lag is zero at any
reading of the window; otherwise, first match: REWIND (the committed offset went backwards), STOP
(no committed offset change for longer than the span between the window's first and last
change, or nobody owns the queue), STALL (committed offset unchanged over the window while lag > 0
and a process owns it), WARN (lag never decreased), else OK. Where ours differ from Burrow's, and
why, is in the README.

>>> from datetime import datetime, timedelta, timezone
>>> t0 = datetime(2026, 11, 25, tzinfo=timezone.utc)
>>> rows = [{"ts": t0 + timedelta(seconds=s), "event": e, "client_id": c, "client_addr": "a"}
...         for s, e, c in [(0, "join", "c1"), (5, "join", "c2"), (100, "leave", "c2")]]
>>> [(e["start"].second, len(e["joined"]), len(e["left"])) for e in episodes(rows, [], window=30)]
[(0, 2, 0), (40, 0, 1)]
>>> burrow_status([(0, 10, 5), (60_000, 10, 7), (120_000, 10, 9)], now_ms=130_000, owned=True)
'STALL'
"""

from __future__ import annotations

import datetime as dt
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import groupby
from typing import Any

from mqbalance.history.drain import time_to_drain

__all__ = [
    "DEFAULT_WINDOW_S",
    "MIN_SWAPS",
    "OwnershipSweep",
    "burrow_status",
    "duplicate_ids",
    "duplicate_periods",
    "episodes",
    "episodes_on_timeline",
    "flapping",
    "health",
    "id_moves",
    "integrate",
    "ms",
    "owner_timeline",
]

#: membership changes closer than this belong to one episode (seconds)
DEFAULT_WINDOW_S = 60.0
#: the changes that start an episode (:mod:`mqbalance.history.causes`)
_STARTS = frozenset({"join", "leave", "subscription", "queue_added", "queue_removed"})
#: moves of one client id to a new connection, without leaving, that make it a duplicated id
MIN_SWAPS = 3


def ms(ts: Any) -> int:
    """Milliseconds since the epoch of a time or of a number of milliseconds."""
    if isinstance(ts, dt.datetime):
        return int(ts.timestamp() * 1000)
    return int(ts)


def owner_timeline(ownership: Iterable[Mapping[str, Any]]) -> list[tuple[int, tuple[str, str, int], int]]:
    """``(ms, queue, processes)`` in time order; ``processes`` is -1 from a ``remove`` on (the queue
    no longer the group's: counted neither as owned by nobody nor as owned twice)."""
    out = [
        (
            ms(r["ts"]),
            (r["topic"], r["broker_name"], int(r["queue_id"])),
            -1 if r.get("event") == "remove" else int(r["processes"]),
        )
        for r in ownership
    ]
    return sorted(out, key=lambda x: x[0])


class OwnershipSweep:
    """One pass over an ownership timeline (:func:`owner_timeline`): :meth:`integrate` over
    intervals in time order carries the state forward instead of replaying it from the start."""

    def __init__(self, timeline: Sequence[tuple[int, tuple[str, str, int], int]]) -> None:
        self.timeline = timeline
        self.state: dict[tuple[str, str, int], int] = {}
        self.nobody = self.twice = self.i = 0

    def _apply(self) -> int:
        at, q, n = self.timeline[self.i]
        old = self.state.get(q)
        if old is not None:
            self.nobody -= old == 0
            self.twice -= old >= 2
        self.state[q] = n
        self.nobody += n == 0
        self.twice += n >= 2
        self.i += 1
        return at

    def integrate(self, start: int, end: int) -> tuple[float, float, int | None]:
        """Queue-seconds with nobody and with two or more processes over ``[start, end)``, and the
        first time ``>= start`` at which no queue is owned by nobody (``None``: not before ``end``).
        ``start`` must not be before the previous call's ``end``."""
        timeline = self.timeline
        while self.i < len(timeline) and timeline[self.i][0] <= start:
            self._apply()
        t = start
        idle_s = dup_s = 0.0
        owned_at = start if self.nobody == 0 else None
        while self.i < len(timeline) and timeline[self.i][0] < end:
            at = timeline[self.i][0]
            idle_s += self.nobody * (at - t) / 1000
            dup_s += self.twice * (at - t) / 1000
            t = self._apply()
            if self.nobody == 0 and owned_at is None:
                owned_at = at
        idle_s += self.nobody * max(0, end - t) / 1000
        dup_s += self.twice * max(0, end - t) / 1000
        return idle_s, dup_s, owned_at


def integrate(
    timeline: Sequence[tuple[int, tuple[str, str, int], int]], start: int, end: int
) -> tuple[float, float, int | None]:
    """:meth:`OwnershipSweep.integrate` over one interval."""
    return OwnershipSweep(timeline).integrate(start, end)


def episodes(
    members: Iterable[Mapping[str, Any]],
    ownership: Iterable[Mapping[str, Any]],
    *,
    window: float = DEFAULT_WINDOW_S,
    end: Any = None,
) -> list[dict[str, Any]]:
    """The rebalance episodes of one group (see the module docs). ``members`` and ``ownership``
    are the group's rows of those tables (checkpoints included); ``end`` the end of the data
    (default: the last row's time)."""
    return episodes_on_timeline(members, owner_timeline(ownership), window=window, end=end)


def episodes_on_timeline(
    members: Iterable[Mapping[str, Any]],
    timeline: Sequence[tuple[int, tuple[str, str, int], int]],
    *,
    window: float = DEFAULT_WINDOW_S,
    end: Any = None,
    explain: Callable[[Sequence[Mapping[str, Any]]], list[str]] | None = None,
) -> list[dict[str, Any]]:
    """:func:`episodes` over the group's ownership as an :func:`owner_timeline` already built.
    ``members`` may also hold the other changes that start an episode
    (:func:`mqbalance.history.causes.changes`); ``explain`` gives an episode's ``causes`` from its
    changes."""
    changes = sorted((r for r in members if r["event"] in _STARTS), key=lambda r: ms(r["ts"]))
    times = [t for t, _q, _n in timeline]
    sweep = OwnershipSweep(timeline)
    last = max([ms(r["ts"]) for r in changes] + [t for t, _, _ in timeline], default=0)
    stop = ms(end) if end is not None else last
    groups: list[list[Mapping[str, Any]]] = []
    for r in changes:
        if groups and ms(r["ts"]) - ms(groups[-1][-1]["ts"]) < window * 1000:
            groups[-1].append(r)
        else:
            groups.append([r])
    out = []
    for k, rows in enumerate(groups):
        start = ms(rows[0]["ts"])
        until = ms(groups[k + 1][0]["ts"]) if k + 1 < len(groups) else max(stop, ms(rows[-1]["ts"]))
        moved = bisect_left(times, until) - bisect_left(times, start)
        idle_s, dup_s, owned_at = sweep.integrate(start, until)
        out.append(
            {
                "episode": k,
                "start": rows[0]["ts"],
                "end": rows[-1]["ts"],
                "joined": [(r["client_id"], r["client_addr"]) for r in rows if r["event"] == "join"],
                "left": [(r["client_id"], r["client_addr"]) for r in rows if r["event"] == "leave"],
                "queue_changes": moved,
                "owned_again_s": None if owned_at is None else (owned_at - start) / 1000,
                "unowned_queue_s": round(idle_s, 3),
                "double_owned_queue_s": round(dup_s, 3),
            }
        )
        if explain is not None:
            out[-1]["causes"] = explain(rows)
    return out


def id_moves(
    members: Iterable[Mapping[str, Any]], *, end: Any = None, since: Any = None
) -> dict[str, tuple[list[tuple[int, list[str]]], list[tuple[int, int, list[str]]]]]:
    """Per client id of one group, what :func:`duplicate_periods` reads: the times (ms) it moved to
    another connection without leaving, with the addresses involved, and the spans ``(start, end,
    addresses)`` it was connected from two addresses or more (``end``: the data's end when still
    so there). Rows before ``since`` (ms or a time) only give the state at ``since``."""
    by_id: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in members:
        by_id[r["client_id"]].append(r)
    stop = ms(end) if end is not None else max((ms(r["ts"]) for r in members), default=0)
    first = ms(since) if since is not None else None
    out = {}
    for cid in sorted(by_id):
        twice: list[tuple[int, int, list[str]]] = []
        swaps: list[tuple[int, list[str]]] = []
        present: set[str] = set()
        twice_since: int | None = None
        twice_addrs: set[str] = set()
        for t, rows in groupby(sorted(by_id[cid], key=lambda r: ms(r["ts"])), key=lambda r: ms(r["ts"])):
            before = set(present)
            for r in rows:
                (present.discard if r["event"] == "leave" else present.add)(r["client_addr"])
            if first is not None and t < first:  # the state at ``since``
                twice_since, twice_addrs = (first, set(present)) if len(present) >= 2 else (None, set())
                continue
            if before and present and before - present and present - before:
                swaps.append((t, sorted(before ^ present)))
            if len(present) >= 2:
                twice_since = t if twice_since is None else twice_since
                twice_addrs |= present
            elif twice_since is not None:
                twice.append((twice_since, t, sorted(twice_addrs)))
                twice_since, twice_addrs = None, set()
        if twice_since is not None:
            twice.append((twice_since, max(stop, twice_since), sorted(twice_addrs)))
        if swaps or twice:
            out[cid] = (swaps, twice)
    return out


def duplicate_periods(
    swaps: Sequence[tuple[int, Sequence[str]]],
    twice: Sequence[tuple[int, int, Sequence[str]]],
    *,
    window: float = DEFAULT_WINDOW_S,
    min_swaps: int = MIN_SWAPS,
) -> list[dict[str, Any]]:
    """One client id's duplicated periods from its :func:`id_moves` (in time order; those of
    consecutive spans of data may be concatenated): ``start``, ``end`` (ms), ``addresses``, ``how``."""
    spans: list[tuple[int, int, set[str], str]] = [(a, b, set(addrs), "listed twice") for a, b, addrs in twice]
    runs: list[list[tuple[int, Sequence[str]]]] = []
    for swap in swaps:
        if runs and swap[0] - runs[-1][-1][0] < window * 1000:
            runs[-1].append(swap)
        else:
            runs.append([swap])
    for run in runs:
        if len(run) >= min_swaps:
            spans.append((run[0][0], run[-1][0], {a for _t, addrs in run for a in addrs}, "alternating"))
    merged: list[list[Any]] = []
    for a, b, addrs, how in sorted(spans, key=lambda x: x[0]):
        if merged and a - merged[-1][1] < window * 1000:
            m = merged[-1]
            m[1], m[2] = max(m[1], b), m[2] | addrs
            m[3] = m[3] if m[3] == how else "listed twice"
        else:
            merged.append([a, b, set(addrs), how])
    return [{"addresses": sorted(addrs), "start": a, "end": b, "how": how} for a, b, addrs, how in merged]


def duplicate_ids(
    members: Iterable[Mapping[str, Any]],
    *,
    window: float = DEFAULT_WINDOW_S,
    min_swaps: int = MIN_SWAPS,
    end: Any = None,
) -> list[dict[str, Any]]:
    """The duplicated-client-id periods of one group (see the module docs), each with the client id,
    the addresses seen carrying it, ``start`` and ``end`` (ms; ``end`` is the data's end when the id
    is still listed twice there) and how it showed (``"listed twice"``, ``"alternating"``).

    >>> rows = [{"ts": t, "event": e, "client_id": "c", "client_addr": a}
    ...         for t, e, a in [(0, "join", "A"), (1000, "leave", "A"), (1000, "join", "B"),
    ...                         (2000, "leave", "B"), (2000, "join", "C"), (3000, "leave", "C"), (3000, "join", "D")]]
    >>> [(d["start"], d["end"], d["addresses"], d["how"]) for d in duplicate_ids(rows, window=5)]
    [(1000, 3000, ['A', 'B', 'C', 'D'], 'alternating')]
    >>> both = [{"ts": t, "event": e, "client_id": "c", "client_addr": a}
    ...         for t, e, a in [(0, "join", "A"), (3000, "join", "B"), (9000, "leave", "B")]]
    >>> [(d["start"], d["end"], d["how"]) for d in duplicate_ids(both, end=10_000)]
    [(3000, 9000, 'listed twice')]
    """
    return [
        {"client_id": cid, **period}
        for cid, (swaps, twice) in id_moves(members, end=end).items()
        for period in duplicate_periods(swaps, twice, window=window, min_swaps=min_swaps)
    ]


def flapping(members: Iterable[Mapping[str, Any]], *, min_cycles: int = 3, since: Any = None) -> list[dict[str, Any]]:
    """Client ids that joined and left at least ``min_cycles`` times, most cycles first. An id
    joins when it goes from no connection to one and leaves when its last connection goes: an id
    moving between addresses within one tick (a duplicated id, :func:`duplicate_ids`) never left.
    Rows before ``since`` (ms or a time) only give who was connected at ``since``.

    >>> rows = [{"ts": t, "event": e, "client_id": "c", "client_addr": a}
    ...         for t, e, a in [(0, "join", "A"), (5, "leave", "A"), (5, "join", "B"), (9, "leave", "B")]]
    >>> flapping(rows, min_cycles=1)
    [{'client_id': 'c', 'joins': 1, 'leaves': 1, 'cycles': 1}]
    """
    joins: dict[str, int] = defaultdict(int)
    leaves: dict[str, int] = defaultdict(int)
    present: dict[str, set[str]] = defaultdict(set)
    first = ms(since) if since is not None else None
    for r in sorted(members, key=lambda r: (ms(r["ts"]), r["event"] == "leave")):  # a tick's joins first
        here = present[r["client_id"]]
        counted = first is None or ms(r["ts"]) >= first
        if r["event"] == "leave":
            here.discard(r["client_addr"])
            leaves[r["client_id"]] += counted and not here
        else:
            joins[r["client_id"]] += counted and r["event"] == "join" and not here
            here.add(r["client_addr"])
    cycles = {c: min(joins[c], leaves[c]) for c in joins.keys() | leaves.keys()}
    ranked = sorted((c for c, n in cycles.items() if n >= min_cycles), key=lambda c: (-cycles[c], c))
    return [{"client_id": c, "joins": joins[c], "leaves": leaves[c], "cycles": cycles[c]} for c in ranked]


def burrow_status(window: Sequence[tuple[int, int, int]], *, now_ms: int, owned: bool) -> str:
    """Burrow's status of one queue from its window of readings ``(ms, committed, lag)``, oldest
    first (see the module docs)."""
    if not window or any(lag == 0 for _t, _c, lag in window):
        return "OK"
    offsets = [c for _t, c, _l in window]
    if any(b < a for a, b in zip(offsets, offsets[1:], strict=False)):
        return "REWIND"
    changes = [window[0][0]] + [window[i][0] for i in range(1, len(window)) if offsets[i] != offsets[i - 1]]
    first, last = changes[0], changes[-1]
    if not owned or (len(changes) > 1 and now_ms - last > last - first):
        return "STOP"
    if all(c == offsets[0] for c in offsets):
        return "STALL"
    lags = [lag for _t, _c, lag in window]
    if all(b >= a for a, b in zip(lags, lags[1:], strict=False)):
        return "WARN"
    return "OK"


def health(
    offsets: Iterable[Mapping[str, Any]],
    readings: Sequence[Any],
    owners: Mapping[tuple[str, str, int], int],
    *,
    window_readings: int = 10,
) -> list[dict[str, Any]]:
    """Per queue of one group: Burrow's status over the last ``window_readings`` offsets readings
    (``readings``: the times the offsets were read, from ``ticks``; a queue without a row at a
    reading kept its values), the lag at the last reading and the lag in seconds then
    (``time_lag_s``: the age of the oldest unconsumed message, exact, from the rows'
    ``oldest_store_ms`` — :mod:`mqbalance.fleet.rocketmq.lag_time`; 0 without lag; ``None`` where
    it was not read, or in a history written before it was recorded) and how it was known
    (``lag_time``: ``exact``, ``carried`` — an upper bound — or ``unread``), and the time to drain
    at the window's rates (``drain``: ``idle``, ``draining``, ``never`` or ``unknown``, and
    ``drain_s``; :mod:`mqbalance.history.drain`). ``owners``: processes per queue at the end.

    >>> rows = [{"ts": 0, "topic": "T", "broker_name": "b", "queue_id": 0, "committed": 5,
    ...          "max_offset": 9, "oldest_store_ms": -40_000, "lag_time": "exact"}]
    >>> [(h["lag"], h["time_lag_s"], h["lag_time"]) for h in health(rows, [0], {("T", "b", 0): 1})]
    [(4, 40.0, 'exact')]
    """
    times = sorted({ms(t) for t in readings})
    series: dict[tuple[str, str, int], list[tuple[int, int | None, int | None, int | None, str | None]]]
    series = defaultdict(list)
    for r in sorted(offsets, key=lambda r: ms(r["ts"])):
        series[(r["topic"], r["broker_name"], int(r["queue_id"]))].append(
            (ms(r["ts"]), r["committed"], r["max_offset"], r.get("oldest_store_ms"), r.get("lag_time"))
        )
    out = []
    for q, points in sorted(series.items()):
        filled: list[tuple[int, int, int]] = []
        j, cur = 0, None
        for t in times:
            while j < len(points) and points[j][0] <= t:
                cur = points[j]
                j += 1
            if cur is not None and cur[1] is not None and cur[2] is not None:
                filled.append((t, cur[1], max(0, cur[2] - cur[1])))
        window = filled[-window_readings:]
        if not window or cur is None:
            continue
        now = window[-1][0]
        status = burrow_status(window, now_ms=now, owned=owners.get(q, 0) > 0)
        oldest, how = cur[3], cur[4]
        drain_state, drain_s = time_to_drain([(t, c, c + lag) for t, c, lag in window])
        if window[-1][2] == 0:
            lag_s: float | None = 0.0
        else:
            lag_s = None if oldest is None else round(max(0.0, (now - oldest) / 1000), 3)
        out.append(
            {
                "topic": q[0],
                "broker_name": q[1],
                "queue_id": q[2],
                "status": status,
                "lag": window[-1][2],
                "time_lag_s": lag_s,
                "lag_time": None if window[-1][2] == 0 else how,
                "drain": drain_state,
                "drain_s": drain_s,
                "committed": window[-1][1],
            }
        )
    return out
