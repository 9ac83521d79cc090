"""``mqbalance history DIR``: the analysis of a history dataset, in this process with Arrow (small
histories: no JVM to start) or on Spark (local mode, a cluster with ``--master``, Spark Connect with
``--remote``). Both run the same per-group function: on Spark every group's events go to one
executor task (``groupBy("group").applyInArrow``), in process the groups are cut out of one sorted
Arrow table. :mod:`mqbalance.history.analysis` turns a group's events into episodes, flapping
members, duplicated client ids and queue health; the rows come back (:mod:`mqbalance.history.spans`),
and :mod:`mqbalance.history.report` writes Parquet, CSV, a Markdown and HTML report and plots.

The range (``start`` to ``end``, default: the whole history) is read :data:`SPAN` at a time, each
span from the last checkpoint before it (the state at its start) to its end, so memory follows the
span, not the range: an episode still going at a span's end goes on in the next span's rows and is
put together on the driver (:func:`mqbalance.history.spans.combine_spans`). Health reads the
offsets from the last checkpoint before its window of readings (from the ``ticks`` table) only.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from mqbalance.exceptions import HistoryError
from mqbalance.history.analysis import (
    DEFAULT_WINDOW_S,
    episodes_on_timeline,
    flapping,
    health,
    id_moves,
    integrate,
    ms,
    owner_timeline,
)
from mqbalance.history.causes import causes, changes, held_at, members_at
from mqbalance.history.kafka import STALL_S, analyse_kafka_group
from mqbalance.history.schema import TABLES, cluster_kind
from mqbalance.history.spans import HistoryResult, combine_spans
from mqbalance.history.writer import open_history, read_ticks

__all__ = ["analyse", "data_bytes"]


_COLUMNS = {
    "ts": pa.timestamp("ms", tz="UTC"),
    "table": pa.string(),
    "event": pa.string(),
    "group": pa.string(),
    "client_id": pa.string(),
    "client_addr": pa.string(),
    "topic": pa.string(),
    "broker_name": pa.string(),
    "queue_id": pa.int32(),
    "owner": pa.string(),
    "processes": pa.int16(),
    "subscriptions": pa.list_(pa.string()),
    "strategy": pa.string(),
    "committed": pa.int64(),
    "max_offset": pa.int64(),
    "oldest_store_ms": pa.int64(),
    "lag_time": pa.string(),
    # Kafka (schema version 3; null for RocketMQ): :mod:`mqbalance.history.kafka`
    "member_id": pa.string(),
    "instance_id": pa.string(),
    "group_type": pa.string(),
    "state": pa.string(),
    "generation": pa.int32(),
    "assignment_epoch": pa.int32(),
}


#: the offsets columns of lag seconds (:mod:`mqbalance.fleet.rocketmq.lag_time`)
LAG = ("oldest_store_ms", "lag_time")

#: offsets readings Burrow's rules look at, per queue (Burrow keeps the last 10 commits)
WINDOW_READINGS = 10


_OUT = pa.schema([("group", pa.string()), ("kind", pa.string()), ("row", pa.string())])


#: the analysis reads the history a span at a time (from the last checkpoint before the span's
#: start), so its memory follows the span, not the range
SPAN = dt.timedelta(hours=6)


def _json_default(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.isoformat()
    raise TypeError(type(value))


def _analyse_span(
    table: pa.Table,
    since: int,
    until: int,
    final: bool,
    readings: Sequence[int],
    window: float,
    kind: str = "rocketmq",
    offset_readings: Sequence[int] = (),
) -> pa.Table:
    """One group over ``[since, until)`` ms (``final``: the last span, also health). Rows before
    ``since`` (from the last checkpoint on) give the state there; the ``prefix`` row is what the
    previous span's last episode goes on with until this span's first one. ``kind``: the
    history's cluster kind (Kafka groups: :func:`mqbalance.history.kafka.analyse_kafka_group`)."""
    group = table.column("group")[0].as_py() if table.num_rows else ""
    if kind == "kafka":
        return _kafka_span(table, group, since, until, final, readings, offset_readings)
    members = _rows(table, "members", ("ts", "event", "client_id", "client_addr", "strategy"))
    ownership = _rows(table, "ownership", ("ts", "event", "topic", "broker_name", "queue_id", "processes"))
    group_rows = _rows(table, "groups", ("ts", "event", "subscriptions", "strategy"))
    timeline = owner_timeline(ownership)

    def explain(rows: Sequence[Mapping[str, Any]]) -> list[str]:
        last = ms(rows[-1]["ts"])
        return causes(rows, members_at(members, last), held_at(ownership, last))

    found = [
        {**e, "start": _time(e["start"], _tz(table)), "end": _time(e["end"], _tz(table))}
        for e in episodes_on_timeline(
            changes(members, group_rows, ownership, since=since), timeline, window=window, end=until, explain=explain
        )
    ]
    first = ms(found[0]["start"]) if found else until
    idle_s, dup_s, owned_at = integrate(timeline, since, first)
    out: list[tuple[str, dict[str, Any]]] = [
        (
            "prefix",
            {
                "unowned_queue_s": idle_s,
                "double_owned_queue_s": dup_s,
                "owned_at": owned_at,
                "queue_changes": sum(1 for t, _q, _n in timeline if since <= t < first),
                "has_episodes": bool(found),
            },
        )
    ]
    out += [("episode", e) for e in found]
    out += [("flapping", f) for f in flapping(members, min_cycles=0, since=since) if f["joins"] or f["leaves"]]
    for cid, (swaps, twice) in id_moves(members, end=until, since=since).items():
        out.append(("id_moves", {"client_id": cid, "swaps": swaps, "twice": twice}))
    if final:
        owners: dict[tuple[str, str, int], int] = {q: n for _t, q, n in timeline}
        offsets = _rows(table, "offsets", ("ts", "topic", "broker_name", "queue_id", "committed", "max_offset", *LAG))
        out += [("health", h) for h in health(offsets, readings, owners)]
    return pa.table(
        {
            "group": [group] * len(out),
            "kind": [k for k, _ in out],
            "row": [json.dumps(v, default=_json_default) for _, v in out],
        },
        schema=_OUT,
    )


def _kafka_span(
    table: pa.Table,
    group: str,
    since: int,
    until: int,
    final: bool,
    readings: Sequence[int],
    offset_readings: Sequence[int],
) -> pa.Table:
    """:func:`_analyse_span` of a Kafka group."""
    tz = _tz(table)
    queue = ("topic", "broker_name", "queue_id")
    found = analyse_kafka_group(
        _rows(
            table,
            "groups",
            ("ts", "event", "group_type", "state", "generation", "assignment_epoch", "subscriptions", "strategy"),
        ),  # fmt: skip
        _rows(table, "members", ("ts", "event", "member_id", "client_id", "client_addr", "instance_id")),
        _rows(table, "ownership", ("ts", "event", *queue, "owner", "processes")),
        _rows(table, "offsets", ("ts", *queue, "committed", "max_offset", *LAG)),
        since=since,
        until=until,
        final=final,
        readings=readings,
        offset_readings=offset_readings,
    )
    for kind, row in found:
        if kind == "episode":
            row["start"], row["end"] = _time(row["start"], tz), _time(row["end"], tz)
            del row["last"]
        elif kind == "fenced":
            row["at"] = _time(row["at"], tz)
    return pa.table(
        {
            "group": [group] * len(found),
            "kind": [k for k, _ in found],
            "row": [json.dumps(v, default=_json_default) for _, v in found],
        },
        schema=_OUT,
    )


def _rows(table: pa.Table, name: str, columns: Sequence[str]) -> list[dict[str, Any]]:
    """The rows of table ``name`` among a group's events, in their order, with only ``columns``
    (``ts`` as ms since the epoch): Python objects only for what the analysis reads."""
    part = table.filter(pc.equal(table.column("table"), name)).select(list(columns))
    if "ts" in columns:
        ts = part.column("ts").cast(pa.timestamp("ms", tz=_tz(table))).cast(pa.int64())
        part = part.set_column(part.schema.get_field_index("ts"), "ts", ts)
    rows: list[dict[str, Any]] = part.to_pylist()
    return rows


def _tz(table: pa.Table) -> str | None:
    """The time zone of the events' ``ts`` (Spark's session time zone)."""
    kind = table.schema.field("ts").type
    return kind.tz if pa.types.is_timestamp(kind) else None


def _time(t: int, tz: str | None) -> Any:
    """The time ``t`` (ms since the epoch) as Arrow gives a ``ts`` of the events."""
    return pa.scalar(t, pa.timestamp("ms", tz=tz)).as_py()


def _one_arg(f: Callable[[pa.Table], pa.Table]) -> Callable[[pa.Table], pa.Table]:
    """``f`` as a function of one named argument (``applyInArrow`` counts a function's arguments)."""

    def run(table: pa.Table) -> pa.Table:
        return f(table)

    return run


def _files(listed: Sequence[tuple[int, str]], first: int, last: int) -> list[str]:
    """Of a table's data files ``(tick id, path)``, those written by ticks ``first`` to ``last``."""
    return [f for tick, f in listed if first <= tick <= last]


def _frame(spark: Any, files: list[str], name: str, F: Any, *, readings_from: int | None = None) -> Any:
    """Table ``name`` from ``files`` in the analysis' columns (offsets: only the rows health needs
    for readings from ``readings_from`` ms on, see :func:`_offsets_for_window`)."""
    df = spark.read.schema(_spark_schema(TABLES[name])).parquet(*files)
    if readings_from is not None:
        df = _offsets_for_window(df, readings_from, F)
    df = df.withColumn("table", F.lit(name))
    for column, kind in _COLUMNS.items():
        if column not in df.columns:
            df = df.withColumn(column, F.lit(None).cast(_spark_type(kind)))
    return df.select(*_COLUMNS)


def analyse(
    spark: Any | None,
    root: str | Path,
    *,
    groups: Sequence[str] = (),
    start: dt.datetime | None = None,
    end: dt.datetime | None = None,
    window: float = DEFAULT_WINDOW_S,
    min_cycles: int = 3,
    min_episodes: int = 5,
    span: dt.timedelta = SPAN,
    progress: Callable[[str], None] | None = None,
) -> HistoryResult:
    """The analysis of the history at ``root`` (see the module docs), ``span`` at a time, on Spark
    session ``spark`` or, with ``spark=None``, in this process (the same results)."""
    path = open_history(root, create=False)
    if not (isinstance(window, (int, float)) and not isinstance(window, bool) and 0 < window < 10**7):
        raise HistoryError(f"window must be a positive number of seconds, got {window!r}", window)
    for name, value in (("min_cycles", min_cycles), ("min_episodes", min_episodes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise HistoryError(f"{name} must be an integer >= 1, got {value!r}", value)
    if not isinstance(span, dt.timedelta) or span <= dt.timedelta(0):
        raise HistoryError(f"span must be a positive timedelta, got {span!r}", span)
    kind = cluster_kind(path)
    ticks = read_ticks(path)
    ids, times, kinds, checkpoints = (ticks.column(n).to_pylist() for n in ("tick_id", "ts", "kind", "checkpoint"))
    result = HistoryResult([], [], [], [], [], cluster_kind=kind)
    lo = max([times[0], start] if start else times[:1], default=None)
    hi = min([times[-1], end] if end else times[-1:], default=None)
    if lo is None or hi is None or hi < lo:
        return result
    readings = [
        int(t.timestamp() * 1000)
        for t, kind in zip(times, kinds, strict=True)
        if kind in ("offsets", "both") and t <= hi
    ][-WINDOW_READINGS:]  # health looks at the last readings only
    bounds = [lo]
    while bounds[-1] + span < hi:
        bounds.append(bounds[-1] + span)
    bounds.append(hi)

    def checkpoint_at(t: dt.datetime) -> int:
        """The last checkpoint tick at or before ``t`` (0: the beginning)."""
        return max((i for i, ts, c in zip(ids, times, checkpoints, strict=True) if c and ts <= t), default=0)

    listed = {  # each table's files, listed once for every span
        name: [(int(f.name[5:17]), str(f)) for f in sorted((path / name).glob("date=*/hour=*/part-*.parquet"))]
        for name in ("groups", "members", "ownership", "offsets")
    }
    parts: list[tuple[str, str, dict[str, Any]]] = []
    per_group = _local_per_group if spark is None else functools.partial(_spark_per_group, spark)
    with contextlib.nullcontext() if spark is None else _listing_on_the_driver(spark):
        for k in range(len(bounds) - 1):
            since, until, final = bounds[k], bounds[k + 1], k == len(bounds) - 2
            last = max(
                (i for i, ts in zip(ids, times, strict=True) if ts < until or (final and ts <= until)), default=0
            )
            inputs: list[tuple[str, list[str], int | None]] = [
                (name, files, None)
                for name in ("groups", "members", "ownership")
                if (files := _files(listed[name], checkpoint_at(since), last))
            ]
            if kind == "kafka":
                # every span: a member removed while its partitions stopped committing vanished
                if files := _files(listed["offsets"], checkpoint_at(since), last):
                    inputs.append(("offsets", files, None))
            elif final and readings:
                # the offsets at the window's start: the last checkpoint before it and the changes after
                start_ts = dt.datetime.fromtimestamp(readings[0] / 1000, dt.UTC)
                if files := _files(listed["offsets"], checkpoint_at(start_ts), last):
                    inputs.append(("offsets", files, readings[0]))
            if progress is not None:
                progress(f"span {k + 1} of {len(bounds) - 1}: {since:%Y-%m-%d %H:%M} to {until:%Y-%m-%d %H:%M}")
            if not inputs:
                continue
            run = functools.partial(
                _analyse_span,
                since=int(since.timestamp() * 1000),
                until=int(until.timestamp() * 1000),
                final=final,
                readings=readings,
                window=window,
                kind=kind,
                offset_readings=[
                    int(t.timestamp() * 1000)
                    for t, k in zip(times, kinds, strict=True)
                    if k in ("offsets", "both") and since - dt.timedelta(seconds=STALL_S) <= t <= until
                ],
            )
            got = per_group(inputs, groups, until, run)
            parts += [
                (g, kind, json.loads(row))
                for g, kind, row in zip(*(got.column(c).to_pylist() for c in ("group", "kind", "row")), strict=True)
            ]
    return combine_spans(parts, window, min_cycles, min_episodes, cluster_kind=kind)


def data_bytes(root: str | Path) -> int:
    """The bytes of the history's group, membership and ownership event files at ``root``: what an
    analysis of all of it reads span after span (offsets are read only for the last readings'
    window). The CLI analyses in process up to a bound, on Spark above it."""
    path = open_history(root, create=False)
    return sum(
        f.stat().st_size for name in ("groups", "members", "ownership") for f in (path / name).glob("date=*/hour=*/*")
    )


#: a span's tables to read: ``(name, files, readings_from)`` (see :func:`_frame`)
Inputs = Sequence[tuple[str, list[str], int | None]]


def _spark_per_group(
    spark: Any, inputs: Inputs, groups: Sequence[str], until: dt.datetime, run: Callable[[pa.Table], pa.Table]
) -> pa.Table:
    """``run`` over each group's events — the rows of ``inputs`` with ``ts <= until``, only
    ``groups`` if given — in one Spark task per group; the results concatenated."""
    from pyspark.sql import functions as F

    frames = [_frame(spark, files, name, F, readings_from=since) for name, files, since in inputs]
    events = frames[0]
    for f in frames[1:]:
        events = events.unionByName(f)
    if groups:
        events = events.where(F.col("group").isin(list(groups)))
    events = events.where(F.col("ts") <= F.lit(until))
    return events.groupBy("group").applyInArrow(_one_arg(run), "group string, kind string, row string").toArrow()


def _local_per_group(
    inputs: Inputs, groups: Sequence[str], until: dt.datetime, run: Callable[[pa.Table], pa.Table]
) -> pa.Table:
    """:func:`_spark_per_group` in this process: each table read with Arrow into the analysis'
    columns, the groups cut out of the events sorted by group (a stable sort: each group's rows
    keep the order they were read in)."""
    events = pa.concat_tables([_arrow_frame(files, name, since) for name, files, since in inputs])
    keep = pc.less_equal(events.column("ts"), pa.scalar(until, _COLUMNS["ts"]))
    if groups:
        keep = pc.and_(keep, pc.is_in(events.column("group"), pa.array(list(groups), pa.string())))
    events = events.filter(keep)
    events = events.take(pc.sort_indices(events, [("group", "ascending")]))
    names = events.column("group").to_pylist()
    out, start = [], 0
    for i in range(1, len(names) + 1):
        if i == len(names) or names[i] != names[start]:
            out.append(run(events.slice(start, i - start)))
            start = i
    return pa.concat_tables(out) if out else _OUT.empty_table()


def _arrow_frame(files: list[str], name: str, readings_from: int | None) -> pa.Table:
    """:func:`_frame` in Arrow: table ``name`` from ``files`` in the analysis' columns."""
    schema = TABLES[name]
    table = pads.dataset(files, schema=schema, format="parquet").to_table()
    if readings_from is not None:
        table = _arrow_offsets_for_window(table, readings_from)
    columns = []
    for column, kind in _COLUMNS.items():
        if column == "table":
            columns.append(pa.array([name] * table.num_rows, pa.string()))
        elif column in schema.names:
            columns.append(table.column(column).cast(kind))
        else:
            columns.append(pa.nulls(table.num_rows, kind))
    return pa.table(columns, schema=pa.schema(list(_COLUMNS.items())))


def _arrow_offsets_for_window(table: pa.Table, start_ms: int) -> pa.Table:
    """:func:`_offsets_for_window` in Arrow: the rows from ``start_ms`` on, and of the rows before
    it each queue's latest (by ``ts``, then ``tick_id``)."""
    start = pa.scalar(start_ms, pa.timestamp("ms", tz="UTC"))
    ts = table.column("ts").cast(pa.timestamp("ms", tz="UTC"))
    before = table.filter(pc.less(ts, start))
    keys = ["group", "topic", "broker_name", "queue_id"]
    before = before.take(
        pc.sort_indices(before, [*((k, "ascending") for k in keys), ("ts", "descending"), ("tick_id", "descending")])
    )
    first = [True] * before.num_rows
    if before.num_rows > 1:
        same = None
        for k in keys:
            col = before.column(k)
            eq = pc.equal(col.slice(1), col.slice(0, before.num_rows - 1))
            same = eq if same is None else pc.and_(same, eq)
        first = [True, *pc.invert(same).to_pylist()]
    latest = before.filter(pa.array(first, pa.bool_()))
    return pa.concat_tables([table.filter(pc.greater_equal(ts, start)), latest])


#: Spark lists more paths than this with a job of one task per path: thousands of tiny tasks for a
#: span's event files (one per tick that changed something), most of a span's time on 2 cores
_LISTING = "spark.sql.sources.parallelPartitionDiscovery.threshold"


@contextlib.contextmanager
def _listing_on_the_driver(spark: Any) -> Iterator[None]:
    """Spark lists the given data files on the driver (it only checks each file: no directory is
    walked) instead of in a job; the setting is put back after."""
    before = spark.conf.get(_LISTING)
    spark.conf.set(_LISTING, str(2**31 - 1))
    try:
        yield
    finally:
        spark.conf.set(_LISTING, before)


def _offsets_for_window(df: Any, start_ms: int, F: Any) -> Any:
    """The offsets rows health needs: those from the window's first reading on, and before it
    only each queue's latest row (the values it carried into the window). A day of readings of
    every queue is mostly rows the window never looks at; this keeps them in the JVM."""
    start = F.lit(dt.datetime.fromtimestamp(start_ms / 1000, dt.UTC))
    keys = ["group", "topic", "broker_name", "queue_id"]
    latest = (
        df.where(F.col("ts") < start)
        .groupBy(*keys)
        .agg(F.max_by(F.struct(*df.columns), F.struct("ts", "tick_id")).alias("r"))
        .select("r.*")
    )
    return df.where(F.col("ts") >= start).unionByName(latest)


#: Spark SQL's name of each Arrow type the history schema uses
_SPARK_TYPES = (
    (pa.types.is_timestamp, "timestamp"),
    (pa.types.is_string, "string"),
    (pa.types.is_int16, "smallint"),
    (pa.types.is_int32, "int"),
    (pa.types.is_int64, "bigint"),
    (pa.types.is_boolean, "boolean"),
    (pa.types.is_list, "array<string>"),
)


def _spark_type(kind: pa.DataType) -> str:
    return next(name for test, name in _SPARK_TYPES if test(kind))


def _spark_schema(schema: pa.Schema) -> str:
    return ", ".join(f"`{f.name}` {_spark_type(f.type)}" for f in schema)
