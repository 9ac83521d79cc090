"""The outputs of a history analysis: Parquet and CSV per table, a Markdown report, an HTML report
(from ``templates/report.html``, as the fleet audit's) and PNG plots.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from mqbalance.history.causes import member_name
from mqbalance.history.schema import TABLES
from mqbalance.history.spans import HistoryResult
from mqbalance.history.writer import read_ticks

__all__ = ["write_history_outputs"]


def write_history_outputs(result: HistoryResult, out: str | Path, *, root: str | Path | None = None) -> dict[str, Path]:
    """Parquet and CSV per table (episodes, flapping clients and groups, health, duplicate ids),
    ``report.md`` and ``episodes_per_hour.png``; with the history's ``root``, also ``ownership.png``
    (the group with the most episodes that has queues: one row per queue, a colour per process, gaps where nobody
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
        *((("groups", result.groups), ("fenced", result.fenced)) if result.cluster_kind == "kafka" else ()),
    ):
        flat = [{k: json.dumps(v) if isinstance(v, list) else v for k, v in r.items()} for r in rows]
        table = pa.Table.from_pylist(flat) if flat else pa.table({"group": pa.array([], pa.string())})
        pq.write_table(table, directory / f"{name}.parquet")
        pacsv.write_csv(table, directory / f"{name}.csv")
        paths[name] = directory / f"{name}.csv"
    statuses: dict[str, int] = {}
    for h in result.health:
        statuses[h["status"]] = statuses.get(h["status"], 0) + 1
    kafka = result.cluster_kind == "kafka"
    lines = [
        "# mqbalance history",
        "",
        f"- rebalance episodes: {len(result.episodes):,} in {len({e['group'] for e in result.episodes}):,} groups",
        (
            f"- flapping client ids: {len(result.flapping_clients):,}; groups with repeated episodes: "
            f"{len(result.flapping_groups):,}"
        ),
        "- queue health: " + (", ".join(f"{k} {v:,}" for k, v in sorted(statuses.items())) or "no offsets"),
        f"- {'shared instance ids' if kafka else 'duplicated client ids'}: {len(result.duplicate_ids):,} periods",
    ]
    if kafka:
        lines += ["", "## Rebalances per group (generation / group epoch increments)", ""]
        lines += _markdown(*_kafka_groups(result)) + ["", "## Static members replaced (the old member fenced)", ""]
        lines += _markdown(*_fenced(result))
    lines += ["", "## Worst episodes (queue-seconds owned by nobody)", ""]
    lines += _markdown(*_episodes(result))
    title = "Shared instance ids" if kafka else "Duplicated client ids"
    ids = "instance id | member ids" if kafka else "client id | addresses"
    lines += ["", f"## {title}", "", f"| group | {ids} | start | end | seconds | how |"]
    lines += ["|---|---|---|---|---|---|---|"]
    for d in result.duplicate_ids[:50]:
        lines.append(
            f"| {d['group']} | {d['client_id']} | {', '.join(d['addresses'])} | {d['start']} | {d['end']} "
            f"| {d['seconds']} | {d['how']} |"
        )
    lines += ["", f"## {'Partitions' if kafka else 'Queues'} not OK", ""]
    lines += _markdown(*_health(result))
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


def _who(members: Sequence[Sequence[str]]) -> str:
    """Connections ``[client id, address]`` as ``id (address), ...`` (the first 5, then how many
    more); Kafka members ``[client id, host, member id, instance id]`` as
    :func:`~mqbalance.history.causes.member_name` names them."""
    named = [
        f"{m[0]} ({m[1]})"
        if len(m) == 2
        else member_name({"client_id": m[0], "client_addr": m[1], "member_id": m[2], "instance_id": m[3]})
        for m in members[:5]
    ]
    return ", ".join(named + ([f"and {len(members) - 5} more"] if len(members) > 5 else [])) or "–"


def _markdown(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    return ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)] + [
        "| " + " | ".join(str(c) for c in row) + " |" for row in rows
    ]


def _episodes(result: HistoryResult) -> tuple[list[str], list[list[Any]]]:
    """The worst 20 episodes (most queue-seconds owned by nobody): headers and rows."""
    worst = sorted(result.episodes, key=lambda e: -e["unowned_queue_s"])[:20]
    if result.cluster_kind != "kafka":
        headers = ["group", "start", "joined", "left", "causes", "queue changes", "owned again after (s)",
                   "nobody (queue-s)", "twice (queue-s)"]  # fmt: skip
        return headers, [
            [
                e["group"],
                e["start"],
                _who(e["joined"]),
                _who(e["left"]),
                "; ".join(_causes(e)),
                e["queue_changes"],
                e["owned_again_s"],
                e["unowned_queue_s"],
                e["double_owned_queue_s"],
            ]  # fmt: skip
            for e in worst
        ]
    headers = ["group", "start", "protocol", "generation", "rebalances", "states", "joined", "left", "causes",
               "rebalancing (s)", "partition owner changes", "owned again after (s)", "nobody (partition-s)",
               "twice (partition-s)"]  # fmt: skip
    return headers, [
        [
            e["group"],
            e["start"],
            e["group_type"],
            f"{e['generation_from']} → {e['generation_to']}",
            e["rebalances"],
            " → ".join(e["states"]),
            _who(e["joined"]),
            _who(e["left"]),
            "; ".join(_causes(e)),
            e["rebalancing_s"],
            e["queue_changes"],
            e["owned_again_s"],
            e["unowned_queue_s"],
            e["double_owned_queue_s"],
        ]  # fmt: skip
        for e in worst
    ]


def _kafka_groups(result: HistoryResult) -> tuple[list[str], list[list[Any]]]:
    """A Kafka history's groups: protocol, last state as the broker names it, generation (group
    epoch), rebalances counted and episodes."""
    headers = ["group", "protocol", "state", "generation", "rebalances", "episodes"]
    rows = [[g["group"], g["group_type"], g["state"], g["generation"], g["rebalances"], g["episodes"]]
            for g in result.groups]  # fmt: skip
    return headers, rows


def _fenced(result: HistoryResult) -> tuple[list[str], list[list[Any]]]:
    """Static members whose member id a new one took: a restart within the session timeout
    (no rebalance) or another process with the same instance id."""
    headers = ["group", "instance id", "fenced member", "by member", "at", "rebalances"]
    rows = [[f["group"], f["instance_id"], f"{f['member_id']} ({f['client_id']})",
             f"{f['by_member_id']} ({f['by_client_id']})", f["at"], f["rebalances"]]
            for f in result.fenced[:50]]  # fmt: skip
    return headers, rows


def _health(result: HistoryResult) -> tuple[list[str], list[list[Any]]]:
    """The queues (Kafka: partitions) not OK: headers and rows."""
    sick = [h for h in result.health if h["status"] != "OK"][:50]
    if result.cluster_kind == "kafka":
        return ["group", "topic", "partition", "status", "lag", "lag (s)", "drain"], [
            [h["group"], h["topic"], h["queue_id"], h["status"], h["lag"], _lag_s(h), _drain(h)] for h in sick
        ]
    return ["group", "topic", "broker", "queue", "status", "lag", "lag (s)", "drain"], [
        [h["group"], h["topic"], h["broker_name"], h["queue_id"], h["status"], h["lag"], _lag_s(h), _drain(h)]
        for h in sick
    ]


def _causes(e: Mapping[str, Any]) -> list[str]:
    """An episode's causes but those its joined and left columns already say (a Kafka episode
    keeps their kinds: ``joined``, ``left``)."""
    causes = e.get("causes", ["unknown"])
    kept = [c for c in causes if not c.startswith(("joined:", "left:"))]
    if "generation_from" in e:
        kinds = [k for k in ("joined", "left") if any(c.startswith(k + ":") for c in causes)]
        return kinds + kept
    return kept or ["membership"]


def _lag_s(h: Mapping[str, Any]) -> str:
    """A health row's lag in seconds as read (``≤`` when carried forward: an upper bound)."""
    if h.get("time_lag_s") is None:
        return ""
    return ("≤ " if h.get("lag_time") == "carried" else "") + f"{h['time_lag_s']:g}"


def _drain(h: Mapping[str, Any]) -> str:
    """A health row's time to drain: seconds, ``never``, ``idle`` or empty (unknown)."""
    if h.get("drain") == "draining":
        return f"{h['drain_s']:g} s"
    return h.get("drain") if h.get("drain") in ("never", "idle") else ""  # type: ignore[return-value]


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "\n".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table>\n<tr>{head}</tr>\n{body}\n</table>"


def _html(result: HistoryResult, statuses: Mapping[str, int], images: Sequence[str]) -> str:
    """The report as one HTML page (the Markdown report's content, with the plots inline), from
    ``templates/report.html``."""
    kafka = result.cluster_kind == "kafka"
    template = Template(resources.files("mqbalance.history").joinpath("templates/report.html").read_text("utf-8"))
    extra = ""
    if kafka:
        extra = (
            "<h2 id='groups'>Rebalances per group (generation / group epoch increments)</h2>\n"
            + _table(*_kafka_groups(result))
            + "\n<h2 id='fenced'>Static members replaced (the old member fenced)</h2>\n"
            + _table(*_fenced(result))
        )
    return template.substitute(
        summary=_table(
            [
                "rebalance episodes",
                "flapping client ids",
                "flapping groups",
                "shared instance ids" if kafka else "duplicated ids",
                "queue health",
            ],  # fmt: skip
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
        kafka=extra,
        duplicates_title="Shared instance ids" if kafka else "Duplicated client ids",
        health_title="Partitions not OK" if kafka else "Queues not OK",
        episodes=_table(*_episodes(result)),
        flapping_clients=_table(
            ["group", "client id", "joins", "leaves", "cycles"],
            [[f["group"], f["client_id"], f["joins"], f["leaves"], f["cycles"]] for f in result.flapping_clients],
        ),  # fmt: skip
        flapping_groups=_table(["group", "episodes"], [[g["group"], g["episodes"]] for g in result.flapping_groups]),
        duplicates=_table(
            ["group", "client id", "addresses", "start", "end", "seconds", "how"],
            [
                [d["group"], d["client_id"], ", ".join(d["addresses"]), d["start"], d["end"], d["seconds"], d["how"]]
                for d in result.duplicate_ids[:50]
            ],
        ),  # fmt: skip
        health=_table(*_health(result)),
        images="".join(f"<p><img src='{html.escape(i)}' alt='{html.escape(i)}'></p>\n" for i in images),
    )


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


#: the ownership plot's legend names this many processes at most
LEGEND_OWNERS = 20


def _ownership_plot(result: HistoryResult, root: Path, directory: Path) -> str | None:
    counts: dict[str, int] = {}
    for e in result.episodes:
        counts[e["group"]] = counts.get(e["group"], 0) + 1
    if not counts:
        return None
    rows: list[dict[str, Any]] = []
    for group in sorted(counts, key=lambda g: (-counts[g], g))[:5]:  # the first of them with owners
        if rows := _group_rows(root, "ownership", {group}):
            break
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
    fig, ax = plt.subplots(figsize=(12, max(0.25 * len(queues), 0.2 * min(len(owners), LEGEND_OWNERS) + 0.6) + 1.8))
    for y, start, stop, r in segments:
        if r["processes"] == 0 or stop <= start:
            continue  # owned by nobody: a gap
        width = stop - start
        hatch = "////" if r["processes"] >= 2 else None
        edge = "#d62728" if r["processes"] >= 2 else "none"
        ax.barh(y, width, left=start, height=0.8, color=colour.get(r["owner"], "#999999"), hatch=hatch, edgecolor=edge)
    ax.set_yticks(range(len(queues)), [f"{t}/{b}/{i}" for t, b, i in queues], fontsize=6)
    from matplotlib.patches import Patch

    what = ("Partition", "member") if result.cluster_kind == "kafka" else ("Queue", "process")
    shown = owners[:LEGEND_OWNERS]
    label = {o: o for o in owners}
    if result.cluster_kind == "kafka":  # owners are member ids: named with their client ids
        clients = {r["member_id"]: r["client_id"] for r in _group_rows(root, "members", {group}) if r["member_id"]}
        label = {o: f"{clients.get(o, '?')} (member {o if len(o) <= 14 else o[:6] + '…' + o[-6:]})" for o in owners}
    handles = [Patch(color=colour[o], label=label[o]) for o in shown]
    if len(owners) > len(shown):
        handles.append(Patch(color="#ffffff", label=f"and {len(owners) - len(shown)} more {what[1]}s"))
    handles.append(Patch(facecolor="#ffffff", hatch="////", edgecolor="#d62728", label="owned by two or more"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, title="owner", frameon=False)
    ax.set_title(f"{what[0]} ownership over time: {group} (colour per {what[1]}; gaps: nobody; hatched red: two)")
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
