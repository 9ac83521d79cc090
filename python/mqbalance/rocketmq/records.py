"""Check the record files of ``mqbalance rocketmq-consume`` processes (format in :mod:`.worker`) against
what the brokers hold, as :mod:`mqbalance.coordination.records` does for ``mqbalance zk-consume``
(:func:`load_records` reads the files, :func:`check_records` checks them, a :class:`RecordCheck`
says what it found):

* **nothing lost** — every offset below a queue's max offset was processed by some member;
* **duplicates** — messages processed more than once (at-least-once delivery after a crash, a
  rebalance or a duplicated client id) are counted per queue, not errors.

>>> recs = {"m1": [{"e": "p", "q": "b/T/0", "a": 0, "b": 5, "n": 5}],
...         "m2": [{"e": "p", "q": "b/T/0", "a": 3, "b": 8, "n": 5}]}
>>> c = check_records(recs, {"b/T/0": 8, "b/T/1": 2})
>>> c.ok, c.duplicates, c.lost
(False, 2, {'b/T/1': [(0, 2)]})

:func:`ownership_intervals`, :func:`window_figures` and :func:`duplicates_between` analyse records
already checked (the fidelity benchmark's figures).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mqbalance import _validate
from mqbalance.exceptions import InvalidInputError
from mqbalance.record_files import gaps, load_records, processed_range, union_ranges

__all__ = [
    "RecordCheck",
    "check_records",
    "load_records",
    "duplicates_between",
    "ownership_intervals",
    "window_figures",
]


@dataclass
class RecordCheck:
    members: int = 0
    processed: int = 0
    unique: int = 0
    duplicates: int = 0
    duplicates_by_queue: dict[str, int] = field(default_factory=dict)
    lost: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.lost

    def summary(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "members": self.members,
            "processed": self.processed,
            "unique": self.unique,
            "duplicates": self.duplicates,
            "lost": {q: found[:5] for q, found in list(self.lost.items())[:10]},
        }


def check_records(records: Mapping[str, list[dict[str, Any]]], max_offsets: Mapping[str, int]) -> RecordCheck:
    """``max_offsets``: ``{"broker/topic/queue": the queue's max offset}`` read from the brokers.
    Works on offset ranges, so its cost follows the number of records, not of offsets."""
    _validate.mapping(records, "records")
    _validate.mapping(max_offsets, "max_offsets")
    ends: dict[str, int] = {}
    for q, end in max_offsets.items():
        _validate.text(q, "max_offsets key")
        ends[q] = _validate.java_long(end, f"max_offsets[{q!r}]", minimum=0)
    spans: dict[str, list[tuple[int, int]]] = {}
    for member, rows in records.items():
        if _validate.not_a_collection(rows) or isinstance(rows, Mapping):
            raise InvalidInputError(f"records[{member!r}] must be a list of records, got {rows!r:.80}", rows)
        for i, r in enumerate(rows):
            found = processed_range(member, i, r)
            if found is not None and found[1] < found[2]:
                spans.setdefault(found[0], []).append(found[1:])
    res = RecordCheck(members=len(records))
    covered: dict[str, list[tuple[int, int]]] = {}
    for q, ranges in spans.items():
        total = sum(b - a for a, b in ranges)
        union = union_ranges(ranges)
        unique = sum(b - a for a, b in union)
        covered[q] = union
        res.processed += total
        res.unique += unique
        if total > unique:  # each offset processed n times counts n - 1
            res.duplicates_by_queue[q] = total - unique
            res.duplicates += total - unique
    for q, end in sorted(ends.items()):
        missing = gaps(covered.get(q, ()), end)
        if missing:
            res.lost[q] = missing
    return res


def ownership_intervals(
    records: Mapping[str, list[dict[str, Any]]], *, end: float, died: Mapping[str, float] | None = None
) -> dict[str, list[tuple[float, float, str]]]:
    """Queue → ``(from, to, member)`` intervals of ownership (an ``a`` record to the ``r`` record,
    the member's ``stop``, its death time in ``died`` — a ``kill -9`` writes nothing — or ``end``)."""
    out: dict[str, list[tuple[float, float, str]]] = {}
    for member, rows in records.items():
        held: dict[str, float] = {}
        last = (died or {}).get(member, end)
        for r in rows:
            if r["t"] > last:
                break
            if r.get("e") == "a":
                for q in r["q"]:
                    held.setdefault(q, r["t"])
            elif r.get("e") == "r":
                for q in r["q"]:
                    if q in held:
                        out.setdefault(q, []).append((held.pop(q), r["t"], member))
            elif r.get("e") in ("stop", "refused"):
                last = min(last, r["t"])
        for q, t0 in held.items():
            out.setdefault(q, []).append((t0, last, member))
    return out


def window_figures(
    intervals: Mapping[str, list[tuple[float, float, str]]], queues: Iterable[str], t0: float, t1: float
) -> dict[str, float]:
    """Over ``[t0, t1)``: queue-seconds owned by nobody (``pause_queue_s``) and by two or more
    (``owned_twice_queue_s``), and the time from ``t0`` to the first and the last ownership change
    in the window (``first_change_s``, ``last_change_s``; 0 when nothing changed).

    >>> iv = {"q0": [(0.0, 5.0, "m1"), (6.0, 10.0, "m2")], "q1": [(0.0, 10.0, "m2"), (2.0, 3.0, "m1")]}
    >>> window_figures(iv, ["q0", "q1"], 0.0, 10.0)
    {'pause_queue_s': 1.0, 'owned_twice_queue_s': 1.0, 'first_change_s': 2.0, 'last_change_s': 6.0}
    """
    pause = twice = 0.0
    last, first = t0, t1
    for q in queues:
        points: list[tuple[float, int]] = []
        for a, b, _ in intervals.get(q, ()):
            a, b = max(a, t0), min(b, t1)
            if a < b:
                points += [(a, 1), (b, -1)]
        for a, b, _ in intervals.get(q, ()):
            for t in (a, b):
                if t0 < t < t1:
                    last, first = max(last, t), min(first, t)
        points.sort()
        owners, prev = 0, t0
        for t, d in points:
            if owners == 0:
                pause += t - prev
            elif owners > 1:
                twice += t - prev
            owners += d
            prev = t
        if owners == 0:
            pause += t1 - prev
        elif owners > 1:
            twice += t1 - prev
    return {
        "pause_queue_s": pause,
        "owned_twice_queue_s": twice,
        "first_change_s": (first - t0) if first < t1 else 0.0,
        "last_change_s": last - t0,
    }


def duplicates_between(records: Mapping[str, list[dict[str, Any]]], t0: float, t1: float) -> int:
    """Messages processed in ``[t0, t1)`` (by a ``p`` record's start) that some member had
    processed before."""
    rows = sorted((r["t0"], r["q"], r["a"], r["b"]) for rs in records.values() for r in rs if r.get("e") == "p")
    seen: dict[str, set[int]] = {}
    dup = 0
    for t, q, a, b in rows:
        s = seen.setdefault(q, set())
        if t0 <= t < t1:
            dup += sum(1 for k in range(a, b) if k in s)
        s.update(range(a, b))
    return dup
