"""Audit outputs: findings as JSON and CSV, the per-(group, topic) table as CSV, a report in
Markdown and HTML (from ``templates/report.html``) and PNG plots; with candidate strategies
tried, a "what if groups switched strategy" section and ``what_if.csv``; with offsets read, a
"time to drain" section (and ``drain`` in findings.json) for the lagging pairs.

>>> import tempfile
>>> from mqbalance.fleet.findings import AuditResult, Totals
>>> paths = write_outputs(AuditResult([], [], Totals()), tempfile.mkdtemp(), source="empty")
>>> sorted(paths)[:3]
['findings_csv', 'findings_json', 'groups_csv']
"""

from __future__ import annotations

import csv
import html
import json
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from mqbalance.fleet.findings import AuditResult, Finding, FindingKind, PairRow, WhatIfRow

__all__ = ["CandidateSummary", "what_if_summary", "write_outputs"]

FINDING_COLUMNS = ("kind", "group", "topic", "count", "detail")


def _plots(result: AuditResult, out: Path) -> list[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - matplotlib is in the spark extra
        return []
    made = []
    if int(result.fair_share_processes.sum()):
        # A quantile curve of the (share, processes) pairs: at most 4,096 points, whatever the fleet.
        order = np.argsort(result.fair_share, kind="stable")
        values, upto = result.fair_share[order], np.cumsum(result.fair_share_processes[order])
        everyone = int(upto[-1])
        frac = (np.unique(np.linspace(0, everyone - 1, min(everyone, 4096)).astype(np.int64)) + 0.5) / everyone
        share = values[np.searchsorted(upto, frac * everyone)]
        fig, ax = plt.subplots(figsize=(7, 3.8))
        floor = 1 / 64  # idle processes (share 0) drawn on the bottom edge of the log scale
        ax.plot(frac, np.maximum(share, floor), color="#3b7dd8", drawstyle="steps-mid")
        ax.axhline(1.0, color="#555555", linestyle="--", linewidth=1, label="fair share")
        ax.set_yscale("log", base=2)
        ax.set_ylim(floor / 1.2, max(4.0, float(share[-1]) * 1.2))
        ax.set_xlabel("fraction of consumer processes (per subscribed topic), least loaded first")
        ax.set_ylabel("queues / fair share")
        idle = float(result.fair_share_processes[result.fair_share == 0].sum() / everyone)
        ax.set_title(f"Load against fair share ({everyone:,} process × topic; {idle:.1%} idle, drawn at 1/64)")
        ax.legend(loc="upper left")
        fig.tight_layout()
        fig.savefig(out / "load_vs_fair_share.png", dpi=100)
        plt.close(fig)
        made.append("load_vs_fair_share.png")

    # Broadcasting groups: everyone consumes everything, by design.
    clustering = [r for r in result.rows if r.message_model == "CLUSTERING"]
    at_risk = sorted((r for r in clustering if r.unowned + r.double_owned), key=lambda r: -(r.unowned + r.double_owned))
    idle_rows = sorted((r for r in clustering if r.idle_consumers), key=lambda r: -r.idle_consumers)
    if at_risk or idle_rows:
        worst, idle_top = at_risk[:15], idle_rows[:15]
        height = 0.4 * max(len(worst), len(idle_top), 1) + 1.5
        fig, (left, right) = plt.subplots(1, 2, figsize=(13, height))
        if worst:
            labels = [f"{r.group} / {r.topic}" for r in worst]
            unowned = [r.unowned for r in worst]
            left.barh(labels, unowned, color="#d62728", label="consumed by nobody")
            left.barh(labels, [r.double_owned for r in worst], left=unowned, color="#ff7f0e", label="consumed twice")
            left.invert_yaxis()
            left.legend()
        left.set_xlabel("queues at risk")
        left.set_title(f"Worst group/topic pairs by queues at risk ({len(at_risk):,} in all)")
        if idle_top:
            right.barh(
                [f"{r.group} / {r.topic}" for r in idle_top], [r.idle_consumers for r in idle_top], color="#7f7f7f"
            )
            right.invert_yaxis()
        right.set_xlabel("idle processes")
        right.set_title(f"Idle consumers ({len(idle_rows):,} pairs with any)")
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


TOP_PER_KIND = 10


def _by_kind(result: AuditResult) -> list[tuple[FindingKind, list[Finding]]]:
    """Findings grouped by kind in order of urgency, each kind's largest first."""
    out = []
    for kind in FindingKind:
        found = sorted((f for f in result.findings if f.kind is kind), key=lambda f: (-f.count, f.group, f.topic or ""))
        if found:
            out.append((kind, found))
    return out


@dataclass(frozen=True, slots=True)
class CandidateSummary:
    """One candidate strategy over the clustering pairs of the fleet (or today's assignment,
    ``name="now"``): pairs, queues, queues moved by a switch, pairs with a process above
    ⌈1.25 × fair share⌉, the most queues one process holds above ⌈queues / processes⌉, idle processes."""

    name: str
    pairs: int
    queues: int
    moved: int
    over: int  # pairs with a process above 1.25x its fair share
    worst: int  # the most queues one process holds above a balanced share, ⌈queues / processes⌉
    idle: int


def _over(max_load: int, queues: int, processes: int) -> bool:
    return processes > 0 and max_load > math.ceil(1.25 * queues / processes)


def what_if_summary(result: AuditResult) -> list[CandidateSummary]:
    """Today's assignment, then every candidate, over the clustering pairs the what-if covered."""
    by_name: dict[str, list[WhatIfRow]] = defaultdict(list)
    for w in result.what_if:
        by_name[w.strategy].append(w)
    if not by_name:
        return []
    covered = {(w.group, w.topic) for w in result.what_if}
    now_rows = [r for r in result.rows if (r.group, r.topic) in covered]

    def excess(max_load: int, queues: int, processes: int) -> int:
        return max_load - -(-queues // processes) if processes else 0

    out = [
        CandidateSummary(
            "now",
            len(now_rows),
            sum(r.units for r in now_rows),
            0,
            sum(_over(r.max_load, r.units, r.consumers) for r in now_rows),
            max((excess(r.max_load, r.units, r.consumers) for r in now_rows), default=0),
            sum(r.idle_consumers for r in now_rows),
        )
    ]
    for name, ws in by_name.items():
        out.append(
            CandidateSummary(
                name,
                len(ws),
                sum(w.units for w in ws),
                sum(w.moved for w in ws),
                sum(_over(w.max_load, w.units, w.consumers) for w in ws),
                max((excess(w.max_load, w.units, w.consumers) for w in ws), default=0),
                sum(w.idle for w in ws),
            )
        )
    return out


def _what_if_groups(result: AuditResult, n: int) -> tuple[list[str], list[tuple[str, int, int, list[tuple[int, int]]]]]:
    """Candidate names and the ``n`` groups whose busiest process holds the most queues above a
    balanced share (⌈queues / processes⌉) today: ``(group, queues, max load now, [(moved, max load)
    per candidate])``, summed (moved, queues) or maximised (loads) over the group's topics; balanced
    groups are left out."""
    names = list(dict.fromkeys(w.strategy for w in result.what_if))
    per_group: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    now: dict[str, list[int]] = {}
    for w in result.what_if:
        cell = per_group[w.group][w.strategy]
        cell[0] += w.moved
        cell[1] = max(cell[1], w.max_load)
        if w.strategy == names[0]:
            q, m, excess = now.get(w.group, [0, 0, 0])
            balanced = -(-w.units // w.consumers) if w.consumers else 0
            now[w.group] = [q + w.units, max(m, w.now_max), max(excess, w.now_max - balanced)]
    ranked = sorted((g for g in now if now[g][2] > 0), key=lambda g: (-now[g][2], -now[g][1], g))[:n]
    rows = [(g, now[g][0], now[g][1], [(per_group[g][c][0], per_group[g][c][1]) for c in names]) for g in ranked]
    return names, rows


_WHAT_IF_INTRO = (
    "If every clustering group switched to a candidate strategy now: the queues whose consumer would change "
    "(each a pause and a burst of duplicates at the switch), group/topic pairs where a process would hold more "
    "than ⌈1.25 × its fair share⌉ (queues / processes), the most queues one process would hold above a balanced "
    "share ⌈queues / processes⌉, and idle processes. STICKY starts from today's assignment (a leader taking over)."
)


def _what_if_markdown(result: AuditResult) -> list[str]:
    summary = what_if_summary(result)
    if not summary:
        return []
    lines = ["", "## What if groups switched strategy", "", _WHAT_IF_INTRO, ""]
    lines += [
        "| strategy | pairs | queues moved | pairs above 1.25× fair share | most above balanced | idle processes |"
    ]
    lines += ["|---|---:|---:|---:|---:|---:|"]
    for c in summary:
        share = f" ({c.moved / c.queues:.1%})" if c.queues else ""
        lines.append(f"| {c.name} | {c.pairs:,} | {c.moved:,}{share} | {c.over:,} | {c.worst:,} | {c.idle:,} |")
    names, groups = _what_if_groups(result, TOP_PER_KIND)
    lines += ["", "Groups whose busiest process is furthest above a balanced share today (moved / max load):", ""]
    lines += ["| group | queues | max load now | " + " | ".join(names) + " |", "|---|---:|---:|" + "---:|" * len(names)]
    for g, q, m, cells in groups:
        lines.append(f"| {g} | {q:,} | {m:,} | " + " | ".join(f"{mv:,} / {ml:,}" for mv, ml in cells) + " |")
    lines.append("")
    lines.append("Every group/topic under every candidate: what_if.csv.")
    return lines


def _what_if_html(result: AuditResult) -> str:
    summary = what_if_summary(result)
    if not summary:
        return ""
    head = (
        "<tr><th>strategy</th><th>pairs</th><th>queues moved</th><th>pairs above 1.25× fair share</th>"
        "<th>most above balanced</th><th>idle processes</th></tr>"
    )
    body = "\n".join(
        f'<tr><td>{html.escape(c.name)}</td><td class="n">{c.pairs:,}</td>'
        f'<td class="n">{c.moved:,}{f" ({c.moved / c.queues:.1%})" if c.queues else ""}</td>'
        f'<td class="n">{c.over:,}</td><td class="n">{c.worst:,}</td><td class="n">{c.idle:,}</td></tr>'
        for c in summary
    )
    names, groups = _what_if_groups(result, TOP_PER_KIND)
    ghead = "<tr><th>group</th><th>queues</th><th>max load now</th>" + "".join(
        f"<th>{html.escape(n)}<br><small>moved / max load</small></th>" for n in names
    )
    grows = "\n".join(
        f'<tr><td>{html.escape(g)}</td><td class="n">{q:,}</td><td class="n">{m:,}</td>'
        + "".join(f'<td class="n">{mv:,} / {ml:,}</td>' for mv, ml in cells)
        + "</tr>"
        for g, q, m, cells in groups
    )
    return (
        f'<section id="what-if">\n<h2>What if groups switched strategy</h2>\n<p>{html.escape(_WHAT_IF_INTRO)}</p>\n'
        f"<table>\n{head}\n{body}\n</table>\n"
        "<p>Groups whose busiest process is furthest above a balanced share today:</p>\n"
        f"<table>\n{ghead}</tr>\n{grows}\n</table>\n"
        '<p class="more">Every group/topic under every candidate: what_if.csv.</p>\n</section>'
    )


#: the order the drain section lists lagging pairs in: those that never drain first
_DRAIN_ORDER = {"never": 0, "unknown": 1, "draining": 2}


def _draining(result: AuditResult) -> list[PairRow]:
    """The lagging pairs with a time to drain: never first, then unknown, then the longest."""
    rows = [r for r in result.rows if r.drain is not None and r.drain != "idle"]
    return sorted(rows, key=lambda r: (_DRAIN_ORDER.get(r.drain or "", 3), -(r.drain_s or 0), r.group, r.topic))


def _drain_said(r: PairRow) -> str:
    if r.drain == "draining" and r.drain_s is not None:
        return f"{r.drain_s:,.1f} s"
    return f"unknown ({r.drain_basis})" if r.drain == "unknown" else r.drain or ""


def _drain_json(result: AuditResult) -> list[dict[str, Any]]:
    return [
        {"group": r.group, "topic": r.topic, "lag": r.lag, "lag_seconds": r.lag_s, "drain": r.drain,
         "drain_seconds": r.drain_s, "basis": r.drain_basis}
        for r in _draining(result)
    ]  # fmt: skip


_DRAIN_INTRO = (
    "Seconds until the lag reaches zero at the rates between this snapshot and the previous one "
    "(per queue; a topic drains when its last queue does): never when production keeps up with "
    "consumption; unknown without an earlier reading (one snapshot has no rates: give --previous)."
)


def _drain_cells(r: PairRow) -> list[str]:
    lag_s = "" if r.lag_s is None else f"{r.lag_s:,.1f}"
    return [r.group, r.topic, f"{r.lag or 0:,}", lag_s, _drain_said(r), r.drain_basis or ""]


def _drain_markdown(result: AuditResult) -> list[str]:
    rows = _draining(result)
    if not rows:
        return []
    lines = ["", "## Time to drain", "", _DRAIN_INTRO, ""]
    lines += ["| group | topic | lag | lag (s) | time to drain | basis |", "|---|---|---|---|---|---|"]
    lines += ["| " + " | ".join(_drain_cells(r)) + " |" for r in rows[:TOP_PER_KIND]]
    if len(rows) > TOP_PER_KIND:
        lines.append(f"| … {len(rows) - TOP_PER_KIND:,} more in findings.json | | | | | |")
    return lines


def _drain_html(result: AuditResult) -> str:
    rows = _draining(result)
    if not rows:
        return ""
    body = "\n".join(
        "<tr>" + "".join(
            f'<td class="n">{html.escape(c)}</td>' if i in (2, 3, 4) else f"<td>{html.escape(c)}</td>"
            for i, c in enumerate(_drain_cells(r))
        ) + "</tr>"
        for r in rows[:TOP_PER_KIND]
    )  # fmt: skip
    more = len(rows) - TOP_PER_KIND
    tail = f'<p class="more">… {more:,} more in findings.json</p>' if more > 0 else ""
    return (
        f'<section id="drain">\n<h2>Time to drain</h2>\n<p>{html.escape(_DRAIN_INTRO)}</p>\n<table>\n'
        "<tr><th>group</th><th>topic</th><th>lag</th><th>lag (s)</th><th>time to drain</th><th>basis</th></tr>\n"
        f"{body}\n</table>{tail}\n</section>"
    )


def _markdown(result: AuditResult, source: str, images: list[str], snapshot_errors: Sequence[str] = ()) -> str:
    lines = [f"# mqbalance audit — {source}", ""]
    if snapshot_errors:
        lines += [
            f"**Partial snapshot**: {len(snapshot_errors)} read error(s); what they hide is not audited.",
            "",
            *[f"- {e}" for e in snapshot_errors],
            "",
        ]
    lines += ["| total | value |", "|---|---|"]
    lines += [f"| {k} | {v:,} |" for k, v in result.totals.to_dict().items()]
    lines += ["", "## Findings by kind", "", "| kind | findings | count | meaning |", "|---|---|---|---|"]
    grouped = _by_kind(result)
    lines += [f"| {k.value} | {len(fs):,} | {sum(f.count for f in fs):,} | {k.meaning} |" for k, fs in grouped] or [
        "| none | | | |"
    ]
    for kind, found in grouped:
        lines += ["", f"### {kind.value}", "", "| group | topic | count | detail |", "|---|---|---|---|"]
        lines += [f"| {f.group} | {f.topic or ''} | {f.count:,} | {f.detail} |" for f in found[:TOP_PER_KIND]]
        if len(found) > TOP_PER_KIND:
            lines.append(f"| … {len(found) - TOP_PER_KIND:,} more in findings.csv | | | |")
    lines += _drain_markdown(result)
    lines += _what_if_markdown(result)
    lines += [""] + [f"![{img}]({img})" for img in images]
    return "\n".join(lines) + "\n"


def _html_finding(f: Finding) -> str:
    cells = [f.group, f.topic or ""]
    tds = "".join(f"<td>{html.escape(c)}</td>" for c in cells)
    return f'<tr>{tds}<td class="n">{f.count}</td><td>{html.escape(f.detail)}</td></tr>'


def _html(result: AuditResult, source: str, images: list[str]) -> str:
    template = Template(resources.files("mqbalance.fleet").joinpath("templates/report.html").read_text("utf-8"))
    grouped = _by_kind(result)
    summary = "\n".join(
        f'<tr><td>{k.value}</td><td class="n">{len(fs):,}</td><td class="n">{sum(f.count for f in fs):,}</td>'
        f"<td>{html.escape(k.meaning)}</td></tr>"
        for k, fs in grouped
    )
    sections = []
    for kind, found in grouped:
        rows = "\n".join(_html_finding(f) for f in found[:TOP_PER_KIND])
        more = len(found) - TOP_PER_KIND
        tail = f'<p class="more">… {more:,} more in findings.csv</p>' if more > 0 else ""
        sections.append(
            f"<h3>{kind.value}</h3>\n<table>\n<tr><th>group</th><th>topic</th><th>count</th>"
            f"<th>detail</th></tr>\n{rows}\n</table>{tail}"
        )
    return template.substitute(
        source=html.escape(source),
        totals="\n".join(
            f'<tr><th>{html.escape(k.replace("_", " "))}</th><td class="n">{v:,}</td></tr>'
            for k, v in result.totals.to_dict().items()
        ),
        summary=summary,
        findings="\n".join(sections) or "<p>none</p>",
        drain=_drain_html(result),
        what_if=_what_if_html(result),
        images="\n".join(f'<p><img src="{html.escape(i)}" alt="{html.escape(i)}"></p>' for i in images),
    )


def _csv(path: Path, columns: list[str] | tuple[str, ...], rows: list[dict[str, Any]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        w.writerows(rows)
    return path


def write_outputs(
    result: AuditResult,
    out_dir: str | Path,
    *,
    assignments: Any = None,
    source: str = "",
    snapshot_errors: Sequence[str] = (),
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
            paths["assignments"].mkdir(exist_ok=True)
            pq.write_table(assignments, paths["assignments"] / "part-0.parquet")
    findings = [f.to_dict() for _, found in _by_kind(result) for f in found]  # most urgent first
    paths["findings_json"] = out / "findings.json"
    paths["findings_json"].write_text(
        json.dumps(
            {
                "source": source,
                "totals": result.totals.to_dict(),
                "findings": findings,
                "drain": _drain_json(result),
                "snapshot_errors": list(snapshot_errors),
            },
            indent=2,
            ensure_ascii=False,
        ),
        encoding="utf-8",
    )
    paths["findings_csv"] = _csv(out / "findings.csv", FINDING_COLUMNS, findings)
    rows = [r.to_dict() for r in result.rows]
    paths["groups_csv"] = _csv(out / "group_topics.csv", list(rows[0]) if rows else ["group"], rows)
    if result.what_if:
        switched = [w.to_dict() for w in result.what_if]
        paths["what_if_csv"] = _csv(out / "what_if.csv", list(switched[0]), switched)
    images = _plots(result, out)
    paths["report_md"] = out / "report.md"
    paths["report_md"].write_text(_markdown(result, source, images, snapshot_errors), encoding="utf-8")
    paths["report_html"] = out / "report.html"
    paths["report_html"].write_text(_html(result, source, images), encoding="utf-8")
    for img in images:
        paths[img] = out / img
    return paths
