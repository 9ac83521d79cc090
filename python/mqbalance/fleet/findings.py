"""The fleet audit: what the clients' own assignment means for every (group, topic).

Findings (``kind``):

* ``unowned`` — readable queues no process consumes (their backlog only grows);
* ``double-owned`` — queues consumed by more than one process (duplicate consumption);
* ``duplicate-client-id`` — one client id on several connections (the seeds' hazard: those
  processes take the same queues while the queues of the duplicate's slot are stranded);
* ``idle-consumer`` — processes that consume nothing of a topic they subscribe to;
* ``strategy-mismatch`` — clients of one group configured with different strategies;
* ``missing-route`` — a subscribed topic with no readable queue in the snapshot;
* ``churn`` — queues whose consumers differ from the previous snapshot's (with ``previous``).

Per (group, topic) the table also has queues, processes, distinct ids, max/mean queues per process
and skew (max / mean).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .snapshot import Snapshot

__all__ = ["AuditResult", "audit", "write_outputs", "FINDING_KINDS"]

FINDING_KINDS = (
    "unowned",
    "double-owned",
    "duplicate-client-id",
    "idle-consumer",
    "strategy-mismatch",
    "missing-route",
    "churn",
)


@dataclass
class AuditResult:
    """Per (group, topic) rows, findings and fleet totals."""

    rows: list[dict[str, Any]]
    findings: list[dict[str, Any]]
    totals: dict[str, Any]
    per_process: list[int] = field(default_factory=list)

    def count(self, kind: str) -> int:
        return sum(1 for f in self.findings if f["kind"] == kind)


def audit(spark: Any, snapshot: Snapshot, assignments: Any, *, previous: Any = None) -> AuditResult:
    """Audit an assignment DataFrame (:func:`mqbalance.spark.assign_fleet`); ``previous`` is the
    assignment DataFrame of an earlier snapshot (for churn)."""
    from pyspark.sql import functions as F

    per_queue = assignments.groupBy("group", "topic", "broker_name", "queue_id").agg(F.count("consumer").alias("n"))
    gt = (
        per_queue.groupBy("group", "topic")
        .agg(
            F.count("*").alias("queues"),
            F.sum((F.col("n") == 0).cast("int")).alias("unowned"),
            F.sum((F.col("n") > 1).cast("int")).alias("double_owned"),
        )
        .collect()
    )
    per_id = assignments.where(F.col("consumer").isNotNull()).groupBy("group", "topic", "consumer").count().collect()
    churn: dict[tuple[str, str], int] = {}
    if previous is not None:
        cur = assignments.groupBy("group", "topic", "broker_name", "queue_id").agg(
            F.sort_array(F.collect_list("consumer")).alias("now")
        )
        old = previous.groupBy("group", "topic", "broker_name", "queue_id").agg(
            F.sort_array(F.collect_list("consumer")).alias("before")
        )
        moved = (
            cur.join(old, ["group", "topic", "broker_name", "queue_id"])
            .where(F.col("now") != F.col("before"))
            .groupBy("group", "topic")
            .count()
            .collect()
        )
        churn = {(r["group"], r["topic"]): r["count"] for r in moved}
    return _summarise(snapshot, gt, per_id, churn, previous is not None)


def _summarise(
    snapshot: Snapshot, gt: list[Any], per_id: list[Any], churn: dict[tuple[str, str], int], with_churn: bool
) -> AuditResult:
    conns: dict[str, list[tuple[str, tuple[Any, ...]]]] = defaultdict(list)
    c = snapshot.connections
    models = {}
    for i, g in enumerate(c["group"]):
        conns[g].append((c["client_id"][i], (c["strategy"][i], c["virtual_node_cnt"][i], c["consumer_idcs"][i])))
        models[g] = c["message_model"][i]
    owned_by_id: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    for r in per_id:
        owned_by_id[(r["group"], r["topic"])][r["consumer"]] = r["count"]
    readable = snapshot.readable_routes()
    findings: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    per_process: list[int] = []

    for g, cs in sorted(conns.items()):
        id_counts = Counter(cid for cid, _ in cs)
        for cid, k in sorted(id_counts.items()):
            if k > 1:
                findings.append(
                    {
                        "kind": "duplicate-client-id",
                        "group": g,
                        "topic": None,
                        "count": k,
                        "detail": f"client id {cid} is used by {k} connections",
                    }
                )
        variants = Counter(v for _, v in cs)
        if len(variants) > 1:
            names = ", ".join(f"{v[0]}×{n}" for v, n in variants.most_common())
            findings.append(
                {
                    "kind": "strategy-mismatch",
                    "group": g,
                    "topic": None,
                    "count": len(variants),
                    "detail": f"clients disagree on the strategy: {names}",
                }
            )
    for g, t in sorted(zip(snapshot.subscriptions["group"], snapshot.subscriptions["topic"])):
        if t not in readable:
            findings.append(
                {
                    "kind": "missing-route",
                    "group": g,
                    "topic": t,
                    "count": 1,
                    "detail": f"no readable queue of {t} in the snapshot: the group consumes nothing of it",
                }
            )
    for r in sorted(gt, key=lambda r: (r["group"], r["topic"])):
        g, t = r["group"], r["topic"]
        cs = conns.get(g, [])
        id_counts = Counter(cid for cid, _ in cs)
        owned = owned_by_id.get((g, t), {})
        loads = [owned.get(cid, 0) // id_counts[cid] for cid, _ in cs]
        per_process.extend(loads)
        idle = sum(1 for x in loads if x == 0)
        mean = (sum(loads) / len(loads)) if loads else 0.0
        row = {
            "group": g,
            "topic": t,
            "message_model": models.get(g, "CLUSTERING"),
            "strategies": ",".join(sorted({v[0] for _, v in cs})),
            "queues": r["queues"],
            "processes": len(cs),
            "client_ids": len(id_counts),
            "unowned": r["unowned"],
            "double_owned": r["double_owned"],
            "idle_processes": idle,
            "max_per_process": max(loads, default=0),
            "mean_per_process": round(mean, 3),
            "skew": round(max(loads, default=0) / mean, 3) if mean else None,
            "churn": churn.get((g, t), 0) if with_churn else None,
        }
        rows.append(row)
        if r["unowned"]:
            findings.append(
                {
                    "kind": "unowned",
                    "group": g,
                    "topic": t,
                    "count": r["unowned"],
                    "detail": f"{r['unowned']} of {r['queues']} queues are consumed by nobody",
                }
            )
        if r["double_owned"] and row["message_model"] != "BROADCASTING":
            findings.append(
                {
                    "kind": "double-owned",
                    "group": g,
                    "topic": t,
                    "count": r["double_owned"],
                    "detail": f"{r['double_owned']} queues are consumed by more than one process",
                }
            )
        if idle and row["message_model"] != "BROADCASTING":
            findings.append(
                {
                    "kind": "idle-consumer",
                    "group": g,
                    "topic": t,
                    "count": idle,
                    "detail": f"{idle} of {len(cs)} processes consume nothing ({r['queues']} queues)",
                }
            )
        if with_churn and churn.get((g, t)):
            findings.append(
                {
                    "kind": "churn",
                    "group": g,
                    "topic": t,
                    "count": churn[(g, t)],
                    "detail": f"{churn[(g, t)]} queues changed consumers since the previous snapshot",
                }
            )
    stranded: Counter[str] = Counter()
    for r in rows:
        stranded[r["group"]] += r["unowned"]
    for f in findings:
        if f["kind"] == "duplicate-client-id" and stranded[f["group"]]:
            f["detail"] += f"; the group has {stranded[f['group']]} queues consumed by nobody"

    def total(kind: str) -> int:
        return sum(f["count"] for f in findings if f["kind"] == kind)

    def number(kind: str) -> int:
        return sum(1 for f in findings if f["kind"] == kind)

    totals = {
        "groups": len(conns),
        "group_topics": len(rows),
        "queues_assigned": sum(r["queues"] for r in rows),
        "processes": sum(len(v) for v in conns.values()),
        "unowned_queues": total("unowned"),
        "double_owned_queues": total("double-owned"),
        "duplicated_client_ids": number("duplicate-client-id"),
        "idle_processes": total("idle-consumer"),
        "strategy_mismatched_groups": number("strategy-mismatch"),
        "missing_routes": number("missing-route"),
    }
    if with_churn:
        totals["churned_queues"] = total("churn")
    return AuditResult(rows, findings, totals, per_process)


def _plots(result: AuditResult, out: Path) -> list[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - matplotlib is in the spark extra
        return []
    made = []
    fig, ax = plt.subplots(figsize=(7, 3.5))
    data = result.per_process or [0]
    ax.hist(data, bins=min(40, max(data) + 1), color="#3b7dd8")
    ax.set_xlabel("queues per consumer process (per subscribed topic)")
    ax.set_ylabel("processes")
    ax.set_title("Load distribution")
    fig.tight_layout()
    fig.savefig(out / "queues_per_consumer.png", dpi=100)
    plt.close(fig)
    made.append("queues_per_consumer.png")

    clustering = [
        r for r in result.rows if r["message_model"] == "CLUSTERING"
    ]  # broadcasting: everyone consumes all, by design
    worst = sorted(clustering, key=lambda r: -(r["unowned"] + r["double_owned"] + r["idle_processes"]))[:15]
    worst = [r for r in worst if r["unowned"] + r["double_owned"] + r["idle_processes"]]
    if worst:
        fig, ax = plt.subplots(figsize=(8, 0.4 * len(worst) + 1.5))
        labels = [f"{r['group']} / {r['topic']}" for r in worst]
        left = [0] * len(worst)
        for key, color in (("unowned", "#d62728"), ("double_owned", "#ff7f0e"), ("idle_processes", "#7f7f7f")):
            vals = [r[key] for r in worst]
            ax.barh(labels, vals, left=left, color=color, label=key.replace("_", " "))
            left = [a + b for a, b in zip(left, vals)]
        ax.invert_yaxis()
        ax.legend()
        ax.set_title("Worst group/topic pairs")
        fig.tight_layout()
        fig.savefig(out / "worst_groups.png", dpi=100)
        plt.close(fig)
        made.append("worst_groups.png")
    churned = sorted((r for r in result.rows if r.get("churn")), key=lambda r: -r["churn"])[:15]
    if churned:
        fig, ax = plt.subplots(figsize=(8, 0.4 * len(churned) + 1.5))
        ax.barh([f"{r['group']} / {r['topic']}" for r in churned], [r["churn"] for r in churned], color="#9467bd")
        ax.invert_yaxis()
        ax.set_xlabel("queues that changed consumers")
        ax.set_title("Churn since the previous snapshot")
        fig.tight_layout()
        fig.savefig(out / "churn.png", dpi=100)
        plt.close(fig)
        made.append("churn.png")
    return made


def write_outputs(
    result: AuditResult, out_dir: str | Path, *, assignments: Any = None, source: str = ""
) -> dict[str, Path]:
    """Write assignments (Parquet), findings (JSON, CSV), the per-group table (CSV) and a report
    (Markdown and HTML) with plots (PNG). Returns the paths."""
    import csv
    import html

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    if assignments is not None:
        paths["assignments"] = out / "assignments"
        assignments.write.mode("overwrite").parquet(str(paths["assignments"]))
    paths["findings_json"] = out / "findings.json"
    paths["findings_json"].write_text(
        json.dumps(
            {"source": source, "totals": result.totals, "findings": result.findings}, indent=2, ensure_ascii=False
        ),
        encoding="utf-8",
    )
    for name, rows, cols in (
        ("findings_csv", result.findings, ["kind", "group", "topic", "count", "detail"]),
        ("groups_csv", result.rows, list(result.rows[0]) if result.rows else ["group"]),
    ):
        path = out / ("findings.csv" if name == "findings_csv" else "group_topics.csv")
        with path.open("w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=cols)
            w.writeheader()
            w.writerows(rows)
        paths[name] = path
    images = _plots(result, out)
    lines = [f"# mqbalance audit — {source}", "", "| total | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in result.totals.items()]
    lines += ["", "## Findings", "", "| kind | group | topic | count | detail |", "|---|---|---|---|---|"]
    lines += [
        f"| {f['kind']} | {f['group']} | {f['topic'] or ''} | {f['count']} | {f['detail']} |" for f in result.findings
    ] or ["| none | | | | |"]
    lines += [""] + [f"![{img}]({img})" for img in images]
    paths["report_md"] = out / "report.md"
    paths["report_md"].write_text("\n".join(lines) + "\n", encoding="utf-8")
    body = (
        [f"<h1>mqbalance audit — {html.escape(source)}</h1>", "<table>"]
        + [f"<tr><th>{html.escape(str(k))}</th><td>{v}</td></tr>" for k, v in result.totals.items()]
        + [
            "</table>",
            "<h2>Findings</h2>",
            "<table><tr><th>kind</th><th>group</th><th>topic</th><th>count</th><th>detail</th></tr>",
        ]
    )
    body += [
        f"<tr><td>{html.escape(f['kind'])}</td><td>{html.escape(f['group'])}</td>"
        f"<td>{html.escape(f['topic'] or '')}</td><td>{f['count']}</td><td>{html.escape(f['detail'])}</td></tr>"
        for f in result.findings
    ]
    body += ["</table>"] + [f'<p><img src="{img}" alt="{img}"></p>' for img in images]
    paths["report_html"] = out / "report.html"
    paths["report_html"].write_text(
        "<!doctype html><meta charset=utf-8><title>mqbalance "
        "audit</title><style>body{font-family:sans-serif}td,th{padding:2px 8px;border-bottom:1px solid #ddd}</style>"
        + "\n".join(body),
        encoding="utf-8",
    )
    for img in images:
        paths[img] = out / img
    return paths
