"""``mqbalance history DIR``: the analysis of a history dataset on Spark (local mode by default, a
cluster with ``--master``, Spark Connect with ``--remote``; the same code). Every group's events go
to one executor task (``groupBy("group").applyInArrow``) where :mod:`mqbalance.history.analysis`
turns them into episodes, flapping members, duplicated client ids and queue health; the driver
gets those rows back and writes Parquet, CSV, a Markdown report and plots.

The range (``start`` to ``end``, default: the whole history) is read :data:`SPAN` at a time, each
span from the last checkpoint before it (the state at its start) to its end, so memory follows the
span, not the range: an episode still going at a span's end goes on in the next span's rows and is
put together on the driver (:func:`_combine`). Health reads the offsets from the last checkpoint
before its window of readings (from the ``ticks`` table) only.
"""

from __future__ import annotations

import datetime as dt
import functools
import html
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from mqbalance.exceptions import HistoryError
from mqbalance.history.analysis import (
    DEFAULT_WINDOW_S,
    duplicate_periods,
    episodes,
    flapping,
    health,
    id_moves,
    integrate,
    ms,
    owner_timeline,
)
from mqbalance.history.schema import TABLES
from mqbalance.history.writer import open_history, read_ticks

__all__ = ["HistoryResult", "analyse", "write_history_outputs"]

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
    "committed": pa.int64(),
    "max_offset": pa.int64(),
}
#: offsets readings Burrow's rules look at, per queue (Burrow keeps the last 10 commits)
WINDOW_READINGS = 10
_OUT = pa.schema([("group", pa.string()), ("kind", pa.string()), ("row", pa.string())])


@dataclass
class HistoryResult:
    """Per group: episodes, flapping client ids, queue health, duplicated-client-id periods; and
    the groups ranked by episodes."""

    episodes: list[dict[str, Any]]
    flapping_clients: list[dict[str, Any]]
    flapping_groups: list[dict[str, Any]]
    health: list[dict[str, Any]]
    duplicate_ids: list[dict[str, Any]]


def _json_default(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.isoformat()
    raise TypeError(type(value))


#: the analysis reads the history a span at a time (from the last checkpoint before the span's
#: start), so its memory follows the span, not the range
SPAN = dt.timedelta(hours=6)


def _analyse_span(
    table: pa.Table, since: int, until: int, final: bool, readings: Sequence[int], window: float
) -> pa.Table:
    """One group over ``[since, until)`` ms (``final``: the last span, also health). Rows before
    ``since`` (from the last checkpoint on) give the state there; the ``prefix`` row is what the
    previous span's last episode goes on with until this span's first one."""
    rows = table.to_pylist()
    group = rows[0]["group"] if rows else ""
    members = [r for r in rows if r["table"] == "members"]
    ownership = [r for r in rows if r["table"] == "ownership"]
    offsets = [r for r in rows if r["table"] == "offsets"]
    changes = [r for r in members if ms(r["ts"]) >= since]
    found = episodes(changes, ownership, window=window, end=until)
    timeline = owner_timeline(ownership)
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
        out += [("health", h) for h in health(offsets, readings, owners)]
    return pa.table(
        {
            "group": [group] * len(out),
            "kind": [k for k, _ in out],
            "row": [json.dumps(v, default=_json_default) for _, v in out],
        },
        schema=_OUT,
    )


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
    spark: Any,
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
    """The analysis of the history at ``root`` (see the module docs), ``span`` at a time."""
    path = open_history(root, create=False)
    if not (isinstance(window, (int, float)) and not isinstance(window, bool) and 0 < window < 10**7):
        raise HistoryError(f"window must be a positive number of seconds, got {window!r}", window)
    for name, value in (("min_cycles", min_cycles), ("min_episodes", min_episodes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise HistoryError(f"{name} must be an integer >= 1, got {value!r}", value)
    if not isinstance(span, dt.timedelta) or span <= dt.timedelta(0):
        raise HistoryError(f"span must be a positive timedelta, got {span!r}", span)
    ticks = read_ticks(path)
    ids, times, kinds, checkpoints = (ticks.column(n).to_pylist() for n in ("tick_id", "ts", "kind", "checkpoint"))
    result = HistoryResult([], [], [], [], [])
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
    from pyspark.sql import functions as F

    def checkpoint_at(t: dt.datetime) -> int:
        """The last checkpoint tick at or before ``t`` (0: the beginning)."""
        return max((i for i, ts, c in zip(ids, times, checkpoints, strict=True) if c and ts <= t), default=0)

    listed = {  # each table's files, listed once for every span
        name: [(int(f.name[5:17]), str(f)) for f in sorted((path / name).glob("date=*/hour=*/part-*.parquet"))]
        for name in ("members", "ownership", "offsets")
    }
    parts: list[tuple[str, str, dict[str, Any]]] = []
    for k in range(len(bounds) - 1):
        since, until, final = bounds[k], bounds[k + 1], k == len(bounds) - 2
        last = max((i for i, ts in zip(ids, times, strict=True) if ts < until or (final and ts <= until)), default=0)
        frames = [
            _frame(spark, files, name, F)
            for name in ("members", "ownership")
            if (files := _files(listed[name], checkpoint_at(since), last))
        ]
        if final and readings:
            # the offsets at the window's start: the last checkpoint before it and the changes after
            start_ts = dt.datetime.fromtimestamp(readings[0] / 1000, dt.UTC)
            if files := _files(listed["offsets"], checkpoint_at(start_ts), last):
                frames.append(_frame(spark, files, "offsets", F, readings_from=readings[0]))
        if progress is not None:
            progress(f"span {k + 1} of {len(bounds) - 1}: {since:%Y-%m-%d %H:%M} to {until:%Y-%m-%d %H:%M}")
        if not frames:
            continue
        events = frames[0]
        for f in frames[1:]:
            events = events.unionByName(f)
        if groups:
            events = events.where(F.col("group").isin(list(groups)))
        events = events.where(F.col("ts") <= F.lit(until))
        s_ms, u_ms = int(since.timestamp() * 1000), int(until.timestamp() * 1000)

        run = functools.partial(_analyse_span, since=s_ms, until=u_ms, final=final, readings=readings, window=window)
        got = events.groupBy("group").applyInArrow(_one_arg(run), "group string, kind string, row string").toArrow()
        parts += [
            (g, kind, json.loads(row))
            for g, kind, row in zip(*(got.column(c).to_pylist() for c in ("group", "kind", "row")), strict=True)
        ]
    return _combine(parts, window, min_cycles, min_episodes)


def _combine(
    parts: Sequence[tuple[str, str, dict[str, Any]]], window: float, min_cycles: int, min_episodes: int
) -> HistoryResult:
    """The spans' rows, in span order, as one result: an episode still open at a span's end goes
    on with the next span's prefix (and its first episode, when that starts less than ``window``
    after the open one's last change); flapping counts add up; each client id's moves are read
    across the spans as one."""
    result = HistoryResult([], [], [], [], [])
    open_episode: dict[str, dict[str, Any]] = {}  # per group: the episode its next prefix goes on with
    latest: dict[str, dict[str, Any]] = {}  # per group: its last episode so far
    joins: dict[tuple[str, str], list[int]] = {}
    moves: dict[tuple[str, str], tuple[list[Any], list[Any]]] = {}
    for group, kind, row in parts:
        if kind == "prefix":
            e = open_episode.get(group)
            if e is not None:
                e["unowned_queue_s"] += row["unowned_queue_s"]
                e["double_owned_queue_s"] += row["double_owned_queue_s"]
                e["queue_changes"] += row["queue_changes"]
                if e["owned_at"] is None:
                    e["owned_at"] = row["owned_at"]
                if row["has_episodes"]:
                    del open_episode[group]
                    e["_join_next"] = True  # the next episode may coalesce with it
        elif kind == "episode":
            row["owned_at"] = _owned_at(row)
            prev = latest.get(group)
            start = dt.datetime.fromisoformat(row["start"])
            if (
                prev is not None
                and prev.pop("_join_next", False)
                and (start - dt.datetime.fromisoformat(prev["end"])) < dt.timedelta(seconds=window)
            ):
                for key in ("joined", "left"):
                    prev[key] += row[key]
                for key in ("queue_changes", "unowned_queue_s", "double_owned_queue_s"):
                    prev[key] += row[key]
                prev["end"] = row["end"]
                if prev["owned_at"] is None:
                    prev["owned_at"] = row["owned_at"]
                e = prev
            else:
                if prev is not None:
                    prev.pop("_join_next", None)
                e = {"group": group, **row}
                result.episodes.append(e)
            open_episode[group] = latest[group] = e
        elif kind == "flapping":
            cycle = joins.setdefault((group, row["client_id"]), [0, 0])
            cycle[0] += row["joins"]
            cycle[1] += row["leaves"]
        elif kind == "id_moves":
            swaps, twice = moves.setdefault((group, row["client_id"]), ([], []))
            swaps += row["swaps"]
            twice += row["twice"]
        else:
            result.health.append({"group": group, **row})
    for e in result.episodes:
        e.pop("_join_next", None)
        owned_at = e.pop("owned_at")
        start_ms = ms(dt.datetime.fromisoformat(e["start"]))
        e["owned_again_s"] = None if owned_at is None else (owned_at - start_ms) / 1000
        e["unowned_queue_s"] = round(e["unowned_queue_s"], 3)
        e["double_owned_queue_s"] = round(e["double_owned_queue_s"], 3)
    result.episodes.sort(key=lambda e: (e["group"], e["start"]))
    numbers: dict[str, int] = {}
    for e in result.episodes:
        e["episode"] = numbers[e["group"]] = numbers.get(e["group"], -1) + 1
    result.flapping_clients = sorted(
        (
            {"group": g, "client_id": c, "joins": j, "leaves": lv, "cycles": min(j, lv)}
            for (g, c), (j, lv) in joins.items()
            if min(j, lv) >= min_cycles
        ),
        key=lambda f: (-f["cycles"], f["group"], f["client_id"]),
    )
    for (g, cid), (swaps, twice) in sorted(moves.items()):
        for d in duplicate_periods(swaps, twice, window=window):
            when = {k: dt.datetime.fromtimestamp(d[k] / 1000, dt.UTC).isoformat() for k in ("start", "end")}
            item = {"group": g, "client_id": cid, **d, **when, "seconds": (d["end"] - d["start"]) / 1000}
            result.duplicate_ids.append(item)
    when_dup: dict[str, list[tuple[dt.datetime, dt.datetime, str]]] = {}
    for d in result.duplicate_ids:
        span = (dt.datetime.fromisoformat(d["start"]), dt.datetime.fromisoformat(d["end"]), d["client_id"])
        when_dup.setdefault(d["group"], []).append(span)
    for e in result.episodes:  # the duplicated-id periods an episode's changes fall in
        first, last = dt.datetime.fromisoformat(e["start"]), dt.datetime.fromisoformat(e["end"])
        e["duplicated_ids"] = sorted({c for a, b, c in when_dup.get(e["group"], []) if a <= last and b >= first})
    result.health.sort(key=lambda h: (h["group"], h["topic"], h["broker_name"], h["queue_id"]))
    result.duplicate_ids.sort(key=lambda d: (d["group"], d["start"], d["client_id"]))
    counts: dict[str, int] = {}
    for e in result.episodes:
        counts[e["group"]] = counts.get(e["group"], 0) + 1
    result.flapping_groups = sorted(
        ({"group": g, "episodes": n} for g, n in counts.items() if n >= min_episodes),
        key=lambda r: (-r["episodes"], r["group"]),
    )
    return result


def _owned_at(e: Mapping[str, Any]) -> int | None:
    """An episode's time (ms) when every queue was owned again."""
    if e["owned_again_s"] is None:
        return None
    return ms(dt.datetime.fromisoformat(e["start"])) + round(float(e["owned_again_s"]) * 1000)


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


def write_history_outputs(result: HistoryResult, out: str | Path, *, root: str | Path | None = None) -> dict[str, Path]:
    """Parquet and CSV per table (episodes, flapping clients and groups, health, duplicate ids),
    ``report.md`` and ``episodes_per_hour.png``; with the history's ``root``, also ``ownership.png``
    (the group with the most episodes: one row per queue, a colour per process, gaps where nobody
    owns a queue, red where two do) and ``lag.png`` (total lag over time of the five groups with
    the most lag at the end). The paths by name."""
    directory = Path(out)
    directory.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    for name, rows in (
        ("episodes", result.episodes),
        ("flapping_clients", result.flapping_clients),
        ("flapping_groups", result.flapping_groups),
        ("health", result.health),
        ("duplicate_ids", result.duplicate_ids),
    ):
        flat = [{k: json.dumps(v) if isinstance(v, list) else v for k, v in r.items()} for r in rows]
        table = pa.Table.from_pylist(flat) if flat else pa.table({"group": pa.array([], pa.string())})
        pq.write_table(table, directory / f"{name}.parquet")
        pacsv.write_csv(table, directory / f"{name}.csv")
        paths[name] = directory / f"{name}.csv"
    statuses: dict[str, int] = {}
    for h in result.health:
        statuses[h["status"]] = statuses.get(h["status"], 0) + 1
    lines = [
        "# mqbalance history",
        "",
        f"- rebalance episodes: {len(result.episodes):,} in {len({e['group'] for e in result.episodes}):,} groups",
        (
            f"- flapping client ids: {len(result.flapping_clients):,}; groups with repeated episodes: "
            f"{len(result.flapping_groups):,}"
        ),
        "- queue health: " + (", ".join(f"{k} {v:,}" for k, v in sorted(statuses.items())) or "no offsets"),
        f"- duplicated client ids: {len(result.duplicate_ids):,} periods",
        "",
        "## Worst episodes (queue-seconds owned by nobody)",
        "",
        (
            "| group | start | joined | left | queue changes | owned again after (s) | nobody (queue-s) "
            "| twice (queue-s) |"
        ),
        "|---|---|---|---|---|---|---|---|",
    ]
    for e in sorted(result.episodes, key=lambda e: -e["unowned_queue_s"])[:20]:
        lines.append(
            f"| {e['group']} | {e['start']} | {len(e['joined'])} | {len(e['left'])} | {e['queue_changes']} "
            f"| {e['owned_again_s']} | {e['unowned_queue_s']} | {e['double_owned_queue_s']} |"
        )
    lines += ["", "## Duplicated client ids", "", "| group | client id | addresses | start | end | seconds | how |"]
    lines += ["|---|---|---|---|---|---|---|"]
    for d in result.duplicate_ids[:50]:
        lines.append(
            f"| {d['group']} | {d['client_id']} | {', '.join(d['addresses'])} | {d['start']} | {d['end']} "
            f"| {d['seconds']} | {d['how']} |"
        )
    lines += ["", "## Queues not OK", "", "| group | topic | broker | queue | status | lag | time lag (s) |"]
    lines += ["|---|---|---|---|---|---|---|"]
    for h in [h for h in result.health if h["status"] != "OK"][:50]:
        lines.append(
            f"| {h['group']} | {h['topic']} | {h['broker_name']} | {h['queue_id']} | {h['status']} | {h['lag']} "
            f"| {h['time_lag_s']} |"
        )
    images = [_plot(result, directory)]
    if root is not None:
        images += [_ownership_plot(result, Path(root), directory), _lag_plot(result, Path(root), directory)]
    for image in images:
        if image:
            lines += ["", f"![{image}]({image})"]
            paths[image] = directory / image
    paths["report_md"] = directory / "report.md"
    paths["report_md"].write_text("\n".join(lines) + "\n", encoding="utf-8")
    paths["report_html"] = directory / "report.html"
    paths["report_html"].write_text(_html(result, statuses, [i for i in images if i]), encoding="utf-8")
    return paths


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "\n".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table>\n<tr>{head}</tr>\n{body}\n</table>"


def _html(result: HistoryResult, statuses: Mapping[str, int], images: Sequence[str]) -> str:
    """The report as one HTML page (the Markdown report's content, with the plots inline)."""
    worst = sorted(result.episodes, key=lambda e: -e["unowned_queue_s"])[:20]
    sick = [h for h in result.health if h["status"] != "OK"][:50]
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>mqbalance history</title>",
        (
            "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
            "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}th{background:#eef}</style></head><body>"
        ),
        "<h1>mqbalance history</h1>",
        _table(
            ["rebalance episodes", "flapping client ids", "flapping groups", "duplicated ids", "queue health"],
            [
                [
                    len(result.episodes),
                    len(result.flapping_clients),
                    len(result.flapping_groups),
                    len(result.duplicate_ids),
                    ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())) or "no offsets",
                ]
            ],
        ),
        "<h2 id='episodes'>Rebalance episodes (most queue-seconds owned by nobody first)</h2>",
        _table(
            [
                "group",
                "start",
                "joined",
                "left",
                "queue changes",
                "owned again after (s)",
                "nobody (queue-s)",
                "twice (queue-s)",
            ],  # fmt: skip
            [
                [
                    e["group"],
                    e["start"],
                    len(e["joined"]),
                    len(e["left"]),
                    e["queue_changes"],
                    e["owned_again_s"],
                    e["unowned_queue_s"],
                    e["double_owned_queue_s"],
                ]  # fmt: skip
                for e in worst
            ],
        ),
        "<h2 id='flapping'>Flapping</h2>",
        _table(
            ["group", "client id", "joins", "leaves", "cycles"],
            [[f["group"], f["client_id"], f["joins"], f["leaves"], f["cycles"]] for f in result.flapping_clients],
        ),  # fmt: skip
        _table(["group", "episodes"], [[g["group"], g["episodes"]] for g in result.flapping_groups]),
        "<h2 id='duplicates'>Duplicated client ids</h2>",
        _table(
            ["group", "client id", "addresses", "start", "end", "seconds", "how"],
            [
                [d["group"], d["client_id"], ", ".join(d["addresses"]), d["start"], d["end"], d["seconds"], d["how"]]
                for d in result.duplicate_ids[:50]
            ],
        ),  # fmt: skip
        "<h2 id='health'>Queues not OK</h2>",
        _table(
            ["group", "topic", "broker", "queue", "status", "lag", "time lag (s)"],
            [
                [h["group"], h["topic"], h["broker_name"], h["queue_id"], h["status"], h["lag"], h["time_lag_s"]]
                for h in sick
            ],
        ),  # fmt: skip
        *[f"<p><img src='{html.escape(i)}' alt='{html.escape(i)}'></p>" for i in images],
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _plot(result: HistoryResult, directory: Path) -> str | None:
    if not result.episodes:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    hours: dict[str, int] = {}
    for e in result.episodes:
        hour = e["start"][:13]
        hours[hour] = hours.get(hour, 0) + 1
    keys = sorted(hours)
    fig, ax = plt.subplots(figsize=(8, 3.5))
    ax.bar(range(len(keys)), [hours[k] for k in keys], color="#3b7dd8")
    ax.set_xticks(range(len(keys)), [k[5:].replace("T", " ") + "h" for k in keys], rotation=45, ha="right")
    ax.set_ylabel("rebalance episodes")
    ax.set_title("Rebalance episodes per hour across the fleet")
    fig.tight_layout()
    fig.savefig(directory / "episodes_per_hour.png", dpi=100)
    plt.close(fig)
    return "episodes_per_hour.png"


def _group_rows(root: Path, table: str, groups: set[str]) -> list[dict[str, Any]]:
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    files = [str(f) for f in sorted((root / table).glob("date=*/hour=*/part-*.parquet"))]
    if not files:
        return []
    data = ds.dataset(files, schema=TABLES[table], format="parquet")
    rows: list[dict[str, Any]] = data.to_table(filter=pc.field("group").isin(sorted(groups))).to_pylist()
    return sorted(rows, key=lambda r: (r["tick_id"], r["ts"]))


def _ownership_plot(result: HistoryResult, root: Path, directory: Path) -> str | None:
    counts: dict[str, int] = {}
    for e in result.episodes:
        counts[e["group"]] = counts.get(e["group"], 0) + 1
    if not counts:
        return None
    group = min(counts, key=lambda g: (-counts[g], g))
    rows = _group_rows(root, "ownership", {group})
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    last_tick = read_ticks(root).column("ts").to_pylist()
    end = max([r["ts"] for r in rows] + last_tick[-1:])
    queues = sorted({(r["topic"], r["broker_name"], r["queue_id"]) for r in rows})
    index = {q: i for i, q in enumerate(queues)}
    owners = sorted({r["owner"] for r in rows if r["owner"]})
    palette = plt.get_cmap("tab20")
    colour = {o: palette(i % 20) for i, o in enumerate(owners)}
    current: dict[tuple[str, str, int], dict[str, Any]] = {}
    segments: list[tuple[int, Any, Any, dict[str, Any]]] = []
    for r in rows:
        q = (r["topic"], r["broker_name"], r["queue_id"])
        if q in current:
            segments.append((index[q], current[q]["ts"], r["ts"], current[q]))
        current[q] = r
    for q, r in current.items():
        segments.append((index[q], r["ts"], end, r))
    fig, ax = plt.subplots(figsize=(10, 0.25 * len(queues) + 1.8))
    for y, start, stop, r in segments:
        if r["processes"] == 0 or stop <= start:
            continue  # owned by nobody: a gap
        width = stop - start
        hatch = "////" if r["processes"] >= 2 else None
        edge = "#d62728" if r["processes"] >= 2 else "none"
        ax.barh(y, width, left=start, height=0.8, color=colour.get(r["owner"], "#999999"), hatch=hatch, edgecolor=edge)
    ax.set_yticks(range(len(queues)), [f"{t}/{b}/{i}" for t, b, i in queues], fontsize=6)
    ax.set_title(f"Queue ownership over time: {group} (colour per process; gaps: nobody; hatched red: two)")
    fig.autofmt_xdate()
    fig.tight_layout()
    fig.savefig(directory / "ownership.png", dpi=100)
    plt.close(fig)
    return "ownership.png"


def _lag_plot(result: HistoryResult, root: Path, directory: Path) -> str | None:
    lag: dict[str, int] = {}
    for h in result.health:
        lag[h["group"]] = lag.get(h["group"], 0) + int(h["lag"])
    worst = {g for g, _n in sorted(lag.items(), key=lambda x: (-x[1], x[0]))[:5] if lag[g] > 0}
    if not worst:
        return None
    rows = _group_rows(root, "offsets", worst)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 3.8))
    for g in sorted(worst):
        state: dict[tuple[str, str, int], int] = {}
        xs: list[Any] = []
        ys: list[int] = []
        for r in (r for r in rows if r["group"] == g):
            if r["committed"] is not None and r["max_offset"] is not None:
                state[(r["topic"], r["broker_name"], r["queue_id"])] = max(0, r["max_offset"] - r["committed"])
            if xs and xs[-1] == r["ts"]:
                ys[-1] = sum(state.values())
            else:
                xs.append(r["ts"])
                ys.append(sum(state.values()))
        ax.step(xs, ys, where="post", label=g)
    ax.set_ylabel("messages behind")
    ax.set_title("Lag over time: the groups with the most lag at the end")
    ax.legend(loc="upper left", fontsize=8)
    fig.autofmt_xdate()
    fig.tight_layout()
    fig.savefig(directory / "lag.png", dpi=100)
    plt.close(fig)
    return "lag.png"
