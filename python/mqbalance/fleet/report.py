"""Audit outputs: findings as JSON and CSV, the per-(group, topic) table as CSV, a report in
Markdown and HTML (from ``templates/report.html``) and PNG plots.

>>> import tempfile
>>> from mqbalance.fleet.findings import AuditResult
>>> paths = write_outputs(AuditResult([], [], {"groups": 0}), tempfile.mkdtemp(), source="empty")
>>> sorted(paths)[:3]
['findings_csv', 'findings_json', 'groups_csv']
"""

from __future__ import annotations

import csv
import html
import json
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

from mqbalance.fleet.findings import AuditResult, Finding, PairRow

__all__ = ["write_outputs"]

FINDING_COLUMNS = ("kind", "group", "topic", "count", "detail")


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

    def trouble(r: PairRow) -> int:
        return r.unowned + r.double_owned + r.idle_processes

    # Broadcasting groups: everyone consumes everything, by design.
    clustering = [r for r in result.rows if r.message_model == "CLUSTERING"]
    worst = [r for r in sorted(clustering, key=lambda r: -trouble(r))[:15] if trouble(r)]
    if worst:
        fig, ax = plt.subplots(figsize=(8, 0.4 * len(worst) + 1.5))
        labels = [f"{r.group} / {r.topic}" for r in worst]
        left = [0] * len(worst)
        for key, color in (("unowned", "#d62728"), ("double_owned", "#ff7f0e"), ("idle_processes", "#7f7f7f")):
            vals = [getattr(r, key) for r in worst]
            ax.barh(labels, vals, left=left, color=color, label=key.replace("_", " "))
            left = [a + b for a, b in zip(left, vals)]
        ax.invert_yaxis()
        ax.legend()
        ax.set_title("Worst group/topic pairs")
        fig.tight_layout()
        fig.savefig(out / "worst_groups.png", dpi=100)
        plt.close(fig)
        made.append("worst_groups.png")
    churned = sorted((r for r in result.rows if r.churn), key=lambda r: -(r.churn or 0))[:15]
    if churned:
        fig, ax = plt.subplots(figsize=(8, 0.4 * len(churned) + 1.5))
        ax.barh([f"{r.group} / {r.topic}" for r in churned], [r.churn or 0 for r in churned], color="#9467bd")
        ax.invert_yaxis()
        ax.set_xlabel("queues that changed consumers")
        ax.set_title("Churn since the previous snapshot")
        fig.tight_layout()
        fig.savefig(out / "churn.png", dpi=100)
        plt.close(fig)
        made.append("churn.png")
    return made


def _markdown(result: AuditResult, source: str, images: list[str]) -> str:
    lines = [f"# mqbalance audit — {source}", "", "| total | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in result.totals.items()]
    lines += ["", "## Findings", "", "| kind | group | topic | count | detail |", "|---|---|---|---|---|"]
    lines += [
        f"| {f.kind.value} | {f.group} | {f.topic or ''} | {f.count} | {f.detail} |" for f in result.findings
    ] or ["| none | | | | |"]
    lines += [""] + [f"![{img}]({img})" for img in images]
    return "\n".join(lines) + "\n"


def _html_finding(f: Finding) -> str:
    cells = [f.kind.value, f.group, f.topic or ""]
    tds = "".join(f"<td>{html.escape(c)}</td>" for c in cells)
    return f'<tr>{tds}<td class="n">{f.count}</td><td>{html.escape(f.detail)}</td></tr>'


def _html(result: AuditResult, source: str, images: list[str]) -> str:
    template = Template(resources.files("mqbalance.fleet").joinpath("templates/report.html").read_text("utf-8"))
    return template.substitute(
        source=html.escape(source),
        totals="\n".join(f'<tr><th>{html.escape(k)}</th><td class="n">{v}</td></tr>' for k, v in result.totals.items()),
        findings="\n".join(_html_finding(f) for f in result.findings),
        images="\n".join(f'<p><img src="{html.escape(i)}" alt="{html.escape(i)}"></p>' for i in images),
    )


def _csv(path: Path, columns: list[str] | tuple[str, ...], rows: list[dict[str, Any]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        w.writerows(rows)
    return path


def write_outputs(
    result: AuditResult, out_dir: str | Path, *, assignments: Any = None, source: str = ""
) -> dict[str, Path]:
    """Write assignments (Parquet, when a Spark DataFrame or Arrow table is given), findings (JSON,
    CSV), the per-group table (CSV) and a report (Markdown and HTML) with plots (PNG). Returns the
    paths by name."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    if assignments is not None:
        paths["assignments"] = out / "assignments"
        if hasattr(assignments, "write"):  # a Spark DataFrame
            assignments.write.mode("overwrite").parquet(str(paths["assignments"]))
        else:
            import pyarrow.parquet as pq

            paths["assignments"].mkdir(exist_ok=True)
            pq.write_table(assignments, paths["assignments"] / "part-0.parquet")
    findings = [f.to_dict() for f in result.findings]
    paths["findings_json"] = out / "findings.json"
    paths["findings_json"].write_text(
        json.dumps({"source": source, "totals": result.totals, "findings": findings}, indent=2, ensure_ascii=False),
        encoding="utf-8",
    )
    paths["findings_csv"] = _csv(out / "findings.csv", FINDING_COLUMNS, findings)
    rows = [r.to_dict() for r in result.rows]
    paths["groups_csv"] = _csv(out / "group_topics.csv", list(rows[0]) if rows else ["group"], rows)
    images = _plots(result, out)
    paths["report_md"] = out / "report.md"
    paths["report_md"].write_text(_markdown(result, source, images), encoding="utf-8")
    paths["report_html"] = out / "report.html"
    paths["report_html"].write_text(_html(result, source, images), encoding="utf-8")
    for img in images:
        paths[img] = out / img
    return paths
