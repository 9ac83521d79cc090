"""The record files members append to (``mqbalance zk-consume`` on ZooKeeper, ``mqbalance rocketmq-consume``
on RocketMQ): one JSON object per line, written by a :class:`RecordWriter` (each worker,
:mod:`mqbalance.coordination.worker` and :mod:`mqbalance.rocketmq.worker`, documents its kinds of
record), read back by :func:`load_records` for the checks of :mod:`mqbalance.coordination.records`
and :mod:`mqbalance.rocketmq.records`.

Both formats share the ownership records, ``a`` (assigned: the queues ``q`` newly taken) and ``r``
(revoked), which :func:`held_queues` replays, and the ``p`` (processed) record: queue ``q``,
offsets ``[a, b)``, interval ``[t0, t1]`` in ``time.monotonic()``. :func:`processed_range` reads
one; :func:`union_ranges` and :func:`gaps` do the offset arithmetic of a "nothing lost" check on
ranges, so its cost follows the number of records, not of offsets.

``__all__`` names the user-facing API (:func:`load_records`, :func:`held_queues`); the writer and
the range helpers are shared by the two packages' workers and checks.

>>> import tempfile, pathlib
>>> f = pathlib.Path(tempfile.mkdtemp()) / "m1.jsonl"
>>> _ = f.write_text('{"e": "p", "q": "b/T/0", "a": 0, "b": 5}' + chr(10) + '{"e": "p", "q"')  # torn by a kill -9
>>> load_records([f])
{'m1': [{'e': 'p', 'q': 'b/T/0', 'a': 0, 'b': 5}]}
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mqbalance import _validate
from mqbalance.exceptions import InvalidInputError

__all__ = ["load_records", "held_queues"]


class RecordWriter:
    """An append-only JSON-lines file; one ``os.write`` per line (whole lines survive ``kill -9``).
    A record written without ``t`` is stamped with ``time.monotonic()``. Thread-safe.

    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "sub" / "m1.jsonl"
    >>> w = RecordWriter(f)
    >>> w.write(e="p", q="b/T/0", a=0, b=5, t=1.5); w.close()
    >>> print(f.read_text(), end="")
    {"e":"p","q":"b/T/0","a":0,"b":5,"t":1.5}
    """

    def __init__(self, path: Path) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        except ValueError as e:  # a NUL in the path; OSError (not writable, ...) goes to the caller as is
            raise InvalidInputError(f"record file {str(path)!r}: {e}", str(path)) from None
        self._lock = threading.Lock()

    def write(self, **fields: Any) -> None:
        fields.setdefault("t", time.monotonic())
        line = (json.dumps(fields, separators=(",", ":")) + "\n").encode()
        with self._lock:
            os.write(self.fd, line)

    def close(self) -> None:
        os.close(self.fd)


def load_records(paths: Iterable[Path | str]) -> dict[str, list[dict[str, Any]]]:
    """``{file stem: [record, ...]}``; a torn last line (``kill -9`` mid-write) is ignored. A file
    that cannot be read, is not UTF-8, or holds a line that is not a JSON object (other than a torn
    last one) is an :class:`~mqbalance.exceptions.InvalidInputError` naming the file and the line."""
    if isinstance(paths, (str, bytes, os.PathLike)) or not isinstance(paths, Iterable):
        raise InvalidInputError(
            f"paths must be a sequence of record file paths, not a single {type(paths).__name__} {paths!r:.80}", paths
        )
    out: dict[str, list[dict[str, Any]]] = {}
    for i, p in enumerate(list(paths)):
        fs = os.fspath(p) if isinstance(p, (str, os.PathLike)) else None
        if not isinstance(fs, str):
            raise InvalidInputError(f"paths[{i}] must be a str or a path, got {type(p).__name__} {p!r:.80}", p)
        name = _validate.text(fs, f"paths[{i}]")
        try:
            lines = Path(name).read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError as e:
            raise InvalidInputError(f"record file {name!r}: not UTF-8 text (byte {e.start})", str(p)) from None
        except (OSError, ValueError) as e:  # missing, a directory, a NUL in the name
            reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            raise InvalidInputError(f"record file {name!r}: cannot read: {reason}", str(p)) from None
        rows = []
        for n, line in enumerate(lines, 1):
            try:
                row = json.loads(line)
            except (ValueError, RecursionError):
                if n == len(lines):  # torn by a kill -9 mid-write
                    continue
                raise InvalidInputError(f"record file {name!r}: line {n} is not JSON: {line[:60]!r}", str(p)) from None
            if not isinstance(row, dict):
                raise InvalidInputError(f"record file {name!r}: line {n} is not a JSON object: {line[:60]!r}", str(p))
            rows.append(row)
        out[Path(name).stem] = rows
    return out


def held_queues(rows: Iterable[Mapping[str, Any]]) -> set[str]:
    """The queues one member holds at the end of its records: an ``a`` record adds the queues it
    names (only those newly assigned, not the whole share), an ``r`` record takes its queues away,
    ``stop`` and ``refused`` leave nothing. A row that is not a record, or an ``a`` / ``r`` record
    whose ``q`` is not a list of queue names: an :class:`~mqbalance.exceptions.InvalidInputError`
    naming ``rows[i]``.

    >>> held_queues([{"e": "a", "q": ["b/T/0", "b/T/1", "b/T/2"]}, {"e": "r", "q": ["b/T/2"]},
    ...              {"e": "a", "q": ["b/T/3"]}]) == {"b/T/0", "b/T/1", "b/T/3"}
    True
    >>> held_queues([{"e": "a", "q": "b/T/0"}])
    Traceback (most recent call last):
    ...
    mqbalance.exceptions.InvalidInputError: rows[0].q must be a sequence of str, not a single str 'b/T/0'
    """
    held: set[str] = set()
    for i, r in enumerate(rows):
        if not isinstance(r, Mapping):
            raise InvalidInputError(f"rows[{i}] must be a record (a mapping), got {r!r:.80}", r)
        kind = r.get("e")
        if kind == "a":
            held.update(_validate.str_sequence(r.get("q"), f"rows[{i}].q"))
        elif kind == "r":
            held.difference_update(_validate.str_sequence(r.get("q"), f"rows[{i}].q"))
        elif kind in ("stop", "refused"):
            held.clear()
    return held


def processed_range(member: Any, i: int, r: Any) -> tuple[str, int, int] | None:
    """A ``p`` record's ``(queue, a, b)``; ``None`` for another kind; an
    :class:`~mqbalance.exceptions.InvalidInputError` naming ``records[member][i]`` when malformed.

    >>> processed_range("m1", 0, {"e": "p", "q": "b/T/0", "a": 3, "b": 8}), processed_range("m1", 1, {"e": "c"})
    (('b/T/0', 3, 8), None)
    """
    if not isinstance(r, Mapping):
        raise InvalidInputError(f"records[{member!r}][{i}] must be a record (a mapping), got {r!r:.80}", r)
    if r.get("e") != "p":
        return None
    q, a, b = r.get("q"), r.get("a"), r.get("b")
    if not isinstance(q, str):
        raise InvalidInputError(f"records[{member!r}][{i}]: 'q' must be a queue name, got {q!r:.80}", q)
    a = _validate.java_long(a, f"records[{member!r}][{i}].a", minimum=0)
    b = _validate.java_long(b, f"records[{member!r}][{i}].b", minimum=0)
    if b < a:
        raise InvalidInputError(f"records[{member!r}][{i}]: offsets [a, b) = [{a}, {b}) run backwards", r)
    return q, a, b


def union_ranges(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, disjoint, non-adjacent ``[a, b)`` ranges covering the same offsets.

    >>> union_ranges([(3, 8), (0, 5), (8, 9), (12, 14)])
    [(0, 9), (12, 14)]
    """
    out: list[tuple[int, int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def gaps(covered: Iterable[tuple[int, int]], end: int) -> list[tuple[int, int]]:
    """The ``[a, b)`` ranges below ``end`` that ``covered`` (sorted, disjoint: :func:`union_ranges`)
    leaves out.

    >>> gaps([(0, 9), (12, 14)], 20), gaps([(0, 9)], 9), gaps([], 2)
    ([(9, 12), (14, 20)], [], [(0, 2)])
    """
    out: list[tuple[int, int]] = []
    k = 0
    for a, b in covered:
        if a >= end:
            break
        if a > k:
            out.append((k, a))
        k = max(k, b)
    if k < end:
        out.append((k, end))
    return out
