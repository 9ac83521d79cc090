"""The crash-safe writer of a history dataset (:mod:`mqbalance.history.schema`).

* Opening a directory: an empty or absent one becomes a history (the marker is written); one
  without the marker, or with another format or a newer schema version, is refused with one line
  (:class:`~mqbalance.exceptions.HistoryError`); leftovers of a crash are cleaned: half-written
  files (names starting with ``.``) and event files of a tick whose ``ticks`` row never landed.
* Each file is written under a ``.`` name, flushed to disk, then renamed into place, so a reader
  never sees half a file. A tick's events are written first and its ``ticks`` row last: the row is
  the tick's commit.
* Tick rows are small and frequent, so an unchanged tick costs one line appended (and flushed) to
  ``ticks/_journal.jsonl`` (about 200 bytes); the journal is folded into one Parquet file of
  ``ticks`` every :data:`FOLD_EVERY` ticks, at a checkpoint and when the writer closes. Readers
  take both (:func:`read_ticks`); Spark and Arrow skip names starting with ``_``.
* :meth:`HistoryWriter.prune` deletes whole ``hour=`` directories older than the retention.

>>> import tempfile, datetime as dt
>>> root = tempfile.mkdtemp()
>>> w = HistoryWriter(root, run_id="r1")
>>> t = dt.datetime(2026, 11, 25, 3, 0, tzinfo=dt.timezone.utc)
>>> size = w.commit_tick(1, t, {"members": [{"event": "join", "group": "g", "client_id": "c", "client_addr": "a"}]},
...               {"kind": "membership", "duration_ms": 5, "skipped_before": 0, "clock_jump_ms": 0, "groups": 1,
...                "changed_groups": 1, "requests": 3, "errors": 0, "checkpoint": False})
>>> w.close(); HistoryWriter(root, run_id="r2").last_tick
1
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from mqbalance.exceptions import HistoryError
from mqbalance.history.schema import CLUSTER_KINDS, FORMAT, MARKER_FILE, SCHEMA_VERSION, TABLES

__all__ = ["FOLD_EVERY", "JOURNAL", "HistoryWriter", "open_history", "read_ticks"]

#: the tick journal, inside ``ticks/``
JOURNAL = "_journal.jsonl"
#: tick rows are folded from the journal into Parquet at least this often (in ticks)
FOLD_EVERY = 360


def _partition(ts: dt.datetime) -> str:
    return f"date={ts:%Y-%m-%d}/hour={ts:%H}"


_KIND_NAMES = {"rocketmq": "RocketMQ", "kafka": "Kafka"}


def open_history(root: str | Path, *, create: bool, kind: str | None = None) -> Path:
    """The history directory ``root``, checked (marker, format, version); created when ``create``
    and it is absent or empty. ``kind`` (``"rocketmq"`` or ``"kafka"``): the cluster kind it must
    hold (a new history is marked with it; ``None``: any, a new one is RocketMQ's). A
    :class:`~mqbalance.exceptions.HistoryError` otherwise."""
    if kind is not None and kind not in CLUSTER_KINDS:
        raise HistoryError(f"cluster kind must be one of {', '.join(CLUSTER_KINDS)}, got {kind!r}", kind)
    if not isinstance(root, (str, Path)) or not str(root) or "\0" in str(root):
        raise HistoryError(f"a history directory must be a non-empty path, got {root!r}", root)
    path = Path(root)
    marker = path / MARKER_FILE
    if path.exists() and not path.is_dir():
        raise HistoryError(f"{path}: is a file, not a history directory", str(path))
    if not marker.exists():
        if path.exists() and any(path.iterdir()):
            raise HistoryError(f"{path}: not a mqbalance history (no {MARKER_FILE}) and not empty", str(path))
        if not create:
            raise HistoryError(f"{path}: not a mqbalance history (no {MARKER_FILE})", str(path))
        path.mkdir(parents=True, exist_ok=True)
        meta = {"format": FORMAT, "schema_version": SCHEMA_VERSION, "cluster_kind": kind or "rocketmq"}
        _atomic_text(marker, json.dumps(meta) + "\n")
        return path
    try:
        meta = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise HistoryError(f"{marker}: unreadable marker ({e})", str(marker)) from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise HistoryError(f"{path}: not a mqbalance history ({MARKER_FILE} says {meta!r:.80})", str(path))
    version = meta.get("schema_version")
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise HistoryError(
            f"{path}: schema version {version!r} is newer than this mqbalance reads ({SCHEMA_VERSION}); "
            "upgrade mqbalance",
            version,
        )
    held = meta.get("cluster_kind", "rocketmq")
    if kind is not None and held != kind:
        raise HistoryError(
            f"{path} holds a {_KIND_NAMES.get(str(held), repr(held))} history; "
            f"a {_KIND_NAMES[kind]} watcher needs its own directory",
            str(path),
        )
    if create and version < SCHEMA_VERSION:
        # what this writer adds may use the newer events: an older reader must refuse the directory
        _atomic_text(marker, json.dumps({**meta, "schema_version": SCHEMA_VERSION}) + "\n")
    return path


def _atomic_text(path: Path, text: str) -> None:
    tmp = path.with_name("." + path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _tick_of(name: str) -> int | None:
    """The tick id in a data file's name ``part-<tick, 12 digits>-…``."""
    if not name.startswith("part-"):
        return None
    digits = name[5:17]
    return int(digits) if digits.isdigit() else None


def _journal_rows(path: Path) -> list[dict[str, Any]]:
    """The journal's complete lines (a line cut short by a crash is dropped)."""
    rows = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rows.append(json.loads(line))
            except ValueError:
                break
    return rows


def read_ticks(root: str | Path) -> pa.Table:
    """Every ``ticks`` row of a history: its Parquet files and the journal not yet folded."""
    path = open_history(root, create=False)
    tables = [
        pq.read_table(f, schema=TABLES["ticks"]) for f in sorted((path / "ticks").glob("date=*/hour=*/part-*.parquet"))
    ]
    journal = _journal_rows(path / "ticks" / JOURNAL)
    if journal:
        tables.append(_table("ticks", journal))
    if not tables:
        return TABLES["ticks"].empty_table()
    ticks = pa.concat_tables(tables).sort_by("tick_id")
    ids = ticks.column("tick_id").to_pylist()
    keep = [i for i in range(len(ids)) if i == 0 or ids[i] != ids[i - 1]]  # folded twice by a crash
    return ticks.take(keep)


def _table(name: str, rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    schema = TABLES[name]
    columns = {}
    for field in schema:
        values = [r.get(field.name) for r in rows]
        if field.type == pa.timestamp("ms", tz="UTC"):
            values = [
                v if isinstance(v, dt.datetime) or v is None else dt.datetime.fromtimestamp(v / 1000, dt.UTC)
                for v in values
            ]
        columns[field.name] = pa.array(values, field.type)
    return pa.table(columns, schema=schema)


class HistoryWriter:
    """Appends ticks to a history directory (see the module docs)."""

    def __init__(self, root: str | Path, *, run_id: str, kind: str = "rocketmq") -> None:
        self.root = open_history(root, create=True, kind=kind)
        self.run_id = run_id
        for name in TABLES:
            (self.root / name).mkdir(exist_ok=True)
        self.journal = self.root / "ticks" / JOURNAL
        self.last_tick = self._recover()
        self.pending = len(_journal_rows(self.journal))
        self.seq = 0

    def _recover(self) -> int:
        """Clean a crash's leftovers; the last committed tick id (0 for none)."""
        for leftover in self.root.glob("*/date=*/hour=*/.*"):
            leftover.unlink(missing_ok=True)
        # each fold writes consecutive ticks named by the first: the newest file holds the highest
        # ids, and only it can overlap the journal (a crash between a fold and the truncation)
        files = sorted((self.root / "ticks").glob("date=*/hour=*/part-*.parquet"), key=lambda f: f.name)
        folded: set[int] = set()
        if files:
            folded.update(pq.read_table(files[-1], columns=["tick_id"]).column("tick_id").to_pylist())
        # a cut last line is dropped; rows already folded too
        rows = [r for r in _journal_rows(self.journal) if int(r["tick_id"]) not in folded]
        _atomic_text(self.journal, "".join(json.dumps(r) + "\n" for r in rows))
        last = max([*folded, *(int(r["tick_id"]) for r in rows)], default=0)
        for name in TABLES:
            if name == "ticks":
                continue
            for f in (self.root / name).glob("date=*/hour=*/part-*.parquet"):
                tick = _tick_of(f.name)
                if tick is not None and tick > last:  # events whose tick never committed
                    f.unlink()
        return last

    def _write(self, name: str, ts: dt.datetime, tick_id: int, rows: Sequence[Mapping[str, Any]]) -> int:
        return self._write_table(name, ts, tick_id, _table(name, rows))

    def _write_table(self, name: str, ts: dt.datetime, tick_id: int, table: pa.Table) -> int:
        directory = self.root / name / _partition(ts)
        directory.mkdir(parents=True, exist_ok=True)
        self.seq += 1
        final = directory / f"part-{tick_id:012d}-{self.run_id}-{self.seq}.parquet"
        tmp = directory / f".{final.name}.tmp"
        pq.write_table(table, tmp, compression="zstd")
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, final)
        return final.stat().st_size

    def commit_tick(self, tick_id: int, ts: dt.datetime, events: Mapping[str, Any], tick: Mapping[str, Any]) -> int:
        """Write a tick: its events per table (rows as dicts, or an Arrow table of the columns
        other than ``ts`` and ``tick_id``, which are added), then its row. Returns the bytes
        written."""
        written = 0
        for name, rows in events.items():
            if isinstance(rows, pa.Table):  # columns already built (bulk writers): add ts and tick_id
                if rows.num_rows:
                    n = rows.num_rows
                    rows = rows.append_column("ts", pa.array([ts] * n, TABLES[name].field("ts").type))
                    rows = rows.append_column("tick_id", pa.array([tick_id] * n, pa.int64()))
                    written += self._write_table(name, ts, tick_id, rows.select(TABLES[name].names).cast(TABLES[name]))
            elif rows:
                written += self._write(name, ts, tick_id, [{**r, "ts": ts, "tick_id": tick_id} for r in rows])
        row = {**tick, "ts": int(ts.timestamp() * 1000), "tick_id": tick_id, "run_id": self.run_id}
        line = json.dumps(row) + "\n"
        with open(self.journal, "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
        written += len(line)
        self.last_tick = tick_id
        self.pending += 1
        if tick.get("checkpoint") or self.pending >= FOLD_EVERY:
            written += self.fold()
        return written

    def fold(self) -> int:
        """Move the journal's rows into a Parquet file of ``ticks``; the bytes written."""
        rows = _journal_rows(self.journal)
        if not rows:
            return 0
        first = rows[0]
        ts = dt.datetime.fromtimestamp(first["ts"] / 1000, dt.UTC)
        size = self._write("ticks", ts, int(first["tick_id"]), rows)
        _atomic_text(self.journal, "")
        self.pending = 0
        return size

    def prune(self, now: dt.datetime, retain: dt.timedelta) -> int:
        """Delete the ``hour=`` directories wholly older than ``now - retain``; how many."""
        cutoff = now - retain
        removed = 0
        for hour in self.root.glob("*/date=*/hour=*"):
            try:
                start = dt.datetime.strptime(f"{hour.parent.name[5:]} {hour.name[5:]}", "%Y-%m-%d %H").replace(
                    tzinfo=dt.UTC
                )
            except ValueError:
                continue
            if start + dt.timedelta(hours=1) <= cutoff:
                shutil.rmtree(hour)
                removed += 1
        for day in self.root.glob("*/date=*"):
            if day.is_dir() and not any(day.iterdir()):
                day.rmdir()
        return removed

    def close(self) -> None:
        self.fold()
