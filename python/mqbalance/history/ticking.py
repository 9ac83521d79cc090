"""What every watcher of ``mqbalance watch`` shares, whatever the cluster kind: the tick schedule,
checkpoints, gaps, the history writer, retention, metrics and the restart from the dataset.

A watcher (:class:`TickLoop`) implements three things: :meth:`~TickLoop.observe` (read the cluster
once: the new state, the gaps, and whether offsets were read), :meth:`~TickLoop.changes` (the
events from the last state to the new one) and :meth:`~TickLoop.whole` (the state as
``checkpoint`` events). The loop does the rest: a checkpoint on the first tick and every
``checkpoint_every``, offsets every ``offsets_interval`` (``0``: on every tick), the events written
then the tick's row (:class:`~mqbalance.history.writer.HistoryWriter`), old hours pruned, the
metrics updated. Ticks run on a fixed schedule: a tick that takes longer than the interval makes
the next start at the next slot, and the slots missed are counted (``skipped_before``). Durations
are on the monotonic clock; how far the wall clock moved against it since the last tick is
recorded (``clock_jump_ms``).

:func:`replay` rebuilds a state from a history (its last checkpoint, then the changes), so a
restarted watcher's first tick writes only what changed while it was away.

>>> class Quiet(TickLoop):
...     def observe(self, due_offsets): return Observation(state={}, gaps=[], offsets_read=False, requests=0)
...     def changes(self, old, observation): return {}
...     def whole(self, state): return {}
>>> import tempfile
>>> loop = Quiet(tempfile.mkdtemp(), kind="kafka")
>>> first = loop.tick()  # a checkpoint: the tick rows folded into Parquet
>>> r = loop.tick(); r.tick_id, r.events, r.bytes_written < 1024  # an unchanged tick: one journal line
(2, 0, True)
>>> loop.close()
"""

from __future__ import annotations

import datetime as dt
import threading
import time
import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from mqbalance.exceptions import InvalidInputError
from mqbalance.history.metrics import WatchMetrics
from mqbalance.history.schema import TABLES
from mqbalance.history.writer import HistoryWriter, open_history, read_ticks

__all__ = ["Observation", "ReadAbandoned", "TickLoop", "TickResult", "replay", "seconds"]

#: the event tables a watcher's state is rebuilt from
STATE_TABLES = ("groups", "members", "ownership", "offsets")


class ReadAbandoned(Exception):  # noqa: N818 - what happened, not an error
    """Raised by a stop signal's handler while a tick reads the cluster (:attr:`TickLoop.reading`):
    the read is given up — nothing of that tick is written yet — and :meth:`TickLoop.run` returns,
    instead of waiting for a request to an unreachable cluster to time out."""


def seconds(value: Any, name: str, *, minimum: float = 0.01) -> float:
    """``value`` as a number of seconds in [``minimum``, 10^7]; an InvalidInputError otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not minimum <= value <= 10**7:
        raise InvalidInputError(
            f"{name} must be a number of seconds between {minimum:g} and 10^7, got {value!r}", value
        )
    return float(value)


@dataclass
class Observation:
    """One reading of the cluster: the new state, what could not be read (``gaps`` rows), whether
    offsets were read, the requests sent, and anything the watcher's :meth:`TickLoop.changes`
    needs (``hint``)."""

    state: Any
    gaps: list[dict[str, Any]]
    offsets_read: bool
    requests: int
    hint: Any = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: the queues whose owners may have changed (the metrics' per-group counts follow them); None: any
    changed_queues: Collection[tuple[str, str, str, int]] | None = None


@dataclass
class TickResult:
    """What one tick did."""

    tick_id: int
    kind: str
    events: int
    bytes_written: int
    duration_s: float
    errors: int
    skipped_before: int
    state: Any


def replay(root: str | Path, state: Any, apply: Callable[[Any, str, Mapping[str, Any]], None]) -> Any:
    """``state`` brought to the last committed tick of the history at ``root``: its last
    checkpoint, then the changes, each row given to ``apply(state, table, row)``."""
    path = open_history(root, create=False)
    ticks = read_ticks(path)
    if ticks.num_rows == 0:
        return state
    ids = ticks.column("tick_id").to_pylist()
    flags = ticks.column("checkpoint").to_pylist()
    points = [i for i, f in zip(ids, flags, strict=True) if f]
    if not points:
        return state
    start, last = max(points), max(ids)
    for name in STATE_TABLES:
        files = []
        for f in (path / name).glob("date=*/hour=*/part-*.parquet"):
            tick = int(f.name[5:17])
            if start <= tick <= last:
                files.append((tick, f))
        for _tick, f in sorted(files):
            for r in pq.read_table(f, schema=TABLES[name]).to_pylist():
                apply(state, name, r)
    return state


class TickLoop:
    """The tick loop of a watcher writing into the history at ``out`` (see the module docs)."""

    def __init__(
        self,
        out: str | Path,
        *,
        kind: str,
        interval: float = 10.0,
        offsets_interval: float = 60.0,
        checkpoint_every: float = 3600.0,
        retain: float | None = 7 * 86400.0,
        wall: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        say: Callable[[str], None] = lambda _m: None,
        metrics: WatchMetrics | None = None,
    ) -> None:
        self.interval = seconds(interval, "interval")
        self.offsets_interval = seconds(offsets_interval, "offsets interval", minimum=0.0)
        self.checkpoint_every = seconds(checkpoint_every, "checkpoint interval")
        self.retain = None if retain is None else seconds(retain, "retain", minimum=1.0)
        self.wall, self.monotonic, self.say = wall, monotonic, say
        self.metrics = metrics
        self.writer = HistoryWriter(out, run_id=uuid.uuid4().hex[:12], kind=kind)
        self.state: Any = None
        self.last_checkpoint: float | None = None
        self.last_offsets: float | None = None
        self.last_seen: tuple[float, float] | None = None  # (wall, monotonic) at the last tick
        self.skipped = 0
        self.ticks = 0
        self.tick_started = 0.0  # monotonic, of the tick under way
        self.reading = False  # the tick under way is reading the cluster: nothing of it written yet

    # --- what a watcher implements ---------------------------------------------------------------

    def observe(self, due_offsets: bool) -> Observation:
        """Read the cluster once (offsets too when ``due_offsets``)."""
        raise NotImplementedError

    def changes(self, old: Any, observation: Observation) -> dict[str, list[dict[str, Any]]]:
        """The events that turn ``old`` into ``observation.state``."""
        raise NotImplementedError

    def whole(self, state: Any) -> dict[str, list[dict[str, Any]]]:
        """The whole ``state`` as ``checkpoint`` events."""
        raise NotImplementedError

    def observed(self, old: Any, observation: Observation, events: Mapping[str, Any]) -> None:
        """After a tick is written (metrics beyond the common ones): nothing by default."""

    def close_reader(self) -> None:
        """Close the watcher's connections."""

    # --- the loop ---------------------------------------------------------------------------------

    def tick(self) -> TickResult:
        """Read the cluster once and write what changed."""
        start_mono, start_wall = self.monotonic(), self.wall()
        self.tick_started = start_mono
        jump = 0
        if self.last_seen is not None:
            jump = round(((start_wall - self.last_seen[0]) - (start_mono - self.last_seen[1])) * 1000)
        self.last_seen = (start_wall, start_mono)
        due_offsets = self.last_offsets is None or start_mono - self.last_offsets >= self.offsets_interval - 1e-6
        due_checkpoint = self.last_checkpoint is None or start_mono - self.last_checkpoint >= self.checkpoint_every
        self.reading = True
        try:
            seen = self.observe(due_offsets)
        finally:
            self.reading = False
        new, gaps = seen.state, seen.gaps
        events = self.whole(new) if due_checkpoint else self.changes(self.state, seen)
        if gaps:
            events["gaps"] = gaps
        changed = len(
            {r["group"] for name in ("groups", "members", "ownership") for r in events.get(name, ()) if "group" in r}
        )
        tick_id = self.writer.last_tick + 1
        kind = "both" if seen.offsets_read else "membership"
        duration = self.monotonic() - start_mono
        written = self.writer.commit_tick(
            tick_id,
            dt.datetime.fromtimestamp(start_wall, dt.UTC),
            events,
            {
                "kind": kind,
                "checkpoint": due_checkpoint,
                "duration_ms": max(0, round(duration * 1000)),
                "skipped_before": self.skipped,
                "clock_jump_ms": jump,
                "groups": len(new.groups) if hasattr(new, "groups") else 0,
                "changed_groups": changed if not due_checkpoint else 0,
                "requests": seen.requests,
                "errors": len(gaps),
            },
        )
        skipped, self.skipped = self.skipped, 0
        if due_checkpoint:
            self.last_checkpoint = start_mono
        if seen.offsets_read:
            self.last_offsets = start_mono
        if self.retain is not None:
            self.writer.prune(dt.datetime.fromtimestamp(start_wall, dt.UTC), dt.timedelta(seconds=self.retain))
        old = self.state
        if self.metrics is not None:
            self.metrics.observe(
                new,
                old.offsets if old is not None else {},
                events,
                duration_s=duration,
                skipped=skipped,
                errors=len(gaps),
                offsets_read=seen.offsets_read,
                now_ms=round(start_wall * 1000),
                previous=old,
                changed_queues=seen.changed_queues,
            )
        self.observed(old, seen, events)
        self.state = new
        self.ticks += 1
        n = sum(len(v) for k, v in events.items() if k != "gaps")
        return TickResult(tick_id, kind, n, written, duration, len(gaps), skipped, new)

    def run(self, stop: threading.Event) -> int:
        """Tick on schedule until ``stop`` is set (or a read is abandoned, :class:`ReadAbandoned`);
        the ticks run."""
        next_at = self.monotonic()
        while not stop.is_set():
            try:
                result = self.tick()
            except ReadAbandoned:
                self.say(f"stopped while reading tick {self.writer.last_tick + 1}: nothing written for it")
                break
            self.say(
                f"tick {result.tick_id}: {result.events} change(s), {result.bytes_written:,} bytes, "
                f"{result.duration_s * 1000:.0f} ms" + (f", {result.errors} gap(s)" if result.errors else "")
            )
            next_at += self.interval
            now = self.monotonic()
            if now > next_at:  # the tick overran: start at the next slot, count the ones missed
                missed = int((now - next_at) // self.interval) + 1
                self.skipped += missed
                next_at += missed * self.interval
            stop.wait(max(0.0, next_at - self.monotonic()))
        self.close()
        return self.ticks

    def close(self) -> None:
        self.close_reader()
        self.writer.close()
