"""Findings: what the clients' own assignment means for every (group, topic).

:func:`summarise` turns the engine's counts (:func:`mqbalance.fleet.engine.pair_counts`, computed
in-process or by Spark) into one row per (group, topic) — queues, processes, distinct ids,
min/max/mean queues per process, skew (max / mean), churn — and :class:`Finding` s, each of a
:class:`FindingKind`, listed most urgent first.

>>> from mqbalance.fleet.engine import assign_snapshot, pair_counts
>>> from mqbalance.fleet.snapshot import snapshot_from_dict
>>> snap = snapshot_from_dict({"topics": {"T": {"queueDatas": [
...     {"brokerName": "b", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6}]}},
...     "groups": {"g": {"subscriptions": ["T"], "connections": [{"clientId": "a"}, {"clientId": "a"}]}}})
>>> result = summarise(snap, *pair_counts(assign_snapshot(snap)))
>>> [(f.kind.value, f.count) for f in result.findings]  # AVG gives "a" the first slot's 2 queues, twice
[('duplicate-client-id', 2), ('unowned', 2), ('double-owned', 2)]
"""

from __future__ import annotations

import enum
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mqbalance.fleet.snapshot import MessageModel, Snapshot

__all__ = ["FINDING_KINDS", "AuditResult", "Finding", "FindingKind", "PairRow", "WhatIfRow", "summarise"]


class FindingKind(enum.StrEnum):
    """What can be wrong, in the order of urgency the reports use."""

    #: readable queues no process consumes (their backlog only grows)
    UNOWNED = "unowned"
    #: queues consumed by more than one process (duplicate consumption)
    DOUBLE_OWNED = "double-owned"
    #: one client id on several connections: those processes take the same queues while the
    #: queues of the duplicate's slot are stranded
    DUPLICATE_CLIENT_ID = "duplicate-client-id"
    #: processes that consume nothing of a topic they subscribe to
    IDLE_CONSUMER = "idle-consumer"
    #: clients of one group configured with different strategies
    STRATEGY_MISMATCH = "strategy-mismatch"
    #: a subscribed topic with no readable queue in the snapshot
    MISSING_ROUTE = "missing-route"
    #: queues whose consumers differ from the previous snapshot's
    CHURN = "churn"

    @property
    def meaning(self) -> str:
        """One line for people (the report's legend)."""
        return _MEANINGS[self]

    @property
    def urgent(self) -> bool:
        """Queues are consumed twice or by nobody right now."""
        return self in (FindingKind.UNOWNED, FindingKind.DOUBLE_OWNED, FindingKind.DUPLICATE_CLIENT_ID)


_MEANINGS = {
    FindingKind.UNOWNED: "readable queues no process consumes",
    FindingKind.DOUBLE_OWNED: "queues consumed by more than one process",
    FindingKind.DUPLICATE_CLIENT_ID: "one client id on several connections",
    FindingKind.IDLE_CONSUMER: "processes consuming nothing of a subscribed topic",
    FindingKind.STRATEGY_MISMATCH: "clients of one group on different strategies",
    FindingKind.MISSING_ROUTE: "subscribed topics without a readable queue",
    FindingKind.CHURN: "queues that changed consumers since the previous snapshot",
}
FINDING_KINDS = tuple(k.value for k in FindingKind)


@dataclass(slots=True)
class Finding:
    """One finding: its kind, where (``topic`` is ``None`` for group-wide findings), how many
    (queues, processes, connections or strategies, per kind) and a sentence for people."""

    kind: FindingKind
    group: str
    topic: str | None
    count: int
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "group": self.group,
            "topic": self.topic,
            "count": self.count,
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class PairRow:
    """One (group, topic) of the audit table."""

    group: str
    topic: str
    message_model: str
    strategies: str
    queues: int
    processes: int
    client_ids: int
    unowned: int
    double_owned: int
    idle_processes: int
    min_per_process: int
    max_per_process: int
    mean_per_process: float
    skew: float | None
    churn: int | None

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(frozen=True, slots=True)
class WhatIfRow:
    """One (group, topic) under one candidate strategy (:func:`mqbalance.fleet.engine.what_if`):
    the queues that would move if the group switched now, the most queues one process would
    consume, and the processes that would consume nothing; ``now_max`` is today's max load."""

    group: str
    topic: str
    strategy: str
    queues: int
    processes: int
    moved: int
    max_load: int
    idle: int
    now_max: int

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass
class AuditResult:
    """Per (group, topic) rows, findings (most urgent kind first) and fleet totals."""

    rows: list[PairRow]
    findings: list[Finding]
    totals: dict[str, int]
    per_process: list[int] = field(default_factory=list)
    #: per clustering process and subscribed topic: its queues over its fair share (queues / processes)
    fair_share: list[float] = field(default_factory=list)
    #: per clustering (group, topic) and candidate strategy: what a switch would do (empty unless asked)
    what_if: list[WhatIfRow] = field(default_factory=list)

    def count(self, kind: FindingKind | str) -> int:
        """How many findings of ``kind``."""
        return sum(1 for f in self.findings if f.kind == kind)

    def worst(self, n: int) -> list[Finding]:
        """The ``n`` findings to look at first: urgent kinds, then the largest counts."""
        return sorted(self.findings, key=lambda f: (not f.kind.urgent, -f.count))[:n]


def _records(table: Any) -> Iterable[Mapping[str, Any]]:
    """Rows of an Arrow table, a list of dicts or of Spark ``Row`` s, as mappings."""
    if hasattr(table, "to_pylist"):
        return table.to_pylist()  # type: ignore[no-any-return]
    return [r.asDict() if hasattr(r, "asDict") else r for r in table]


def summarise(
    snapshot: Snapshot,
    per_pair: Any,
    per_id: Any,
    churn: Mapping[tuple[str, str], int] | None = None,
    what_if: Any = None,
) -> AuditResult:
    """The audit of one snapshot from the engine's counts: ``per_pair`` rows ``(group, topic,
    queues, unowned, double_owned)``, ``per_id`` rows ``(group, topic, consumer, count)``;
    ``churn`` (moved queues per pair) when a previous snapshot was compared; ``what_if`` rows
    (:func:`mqbalance.fleet.engine.what_if`) when candidate strategies were tried."""
    groups = snapshot.consumer_groups()
    owned_by_id: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    for r in _records(per_id):
        owned_by_id[(r["group"], r["topic"])][r["consumer"]] = r["count"]
    readable = snapshot.readable_routes()
    findings: list[Finding] = []
    rows: list[PairRow] = []
    per_process: list[int] = []
    fair_share: list[float] = []

    for g, group in sorted(groups.items()):
        for cid in group.duplicated_ids:
            k = group.id_counts[cid]
            detail = f"client id {cid} is used by {k} connections"
            findings.append(Finding(FindingKind.DUPLICATE_CLIENT_ID, g, None, k, detail))
        if len(group.strategies) > 1:
            variants = Counter(c.strategy for c in group.connections)
            names = ", ".join(f"{spec.display_name}×{n}" for spec, n in variants.most_common())
            findings.append(
                Finding(
                    FindingKind.STRATEGY_MISMATCH, g, None, len(variants), f"clients disagree on the strategy: {names}"
                )
            )
    for g, t in sorted(snapshot.subscription_pairs()):
        if t not in readable:
            detail = f"no readable queue of {t} in the snapshot: the group consumes nothing of it"
            findings.append(Finding(FindingKind.MISSING_ROUTE, g, t, 1, detail))
    for r in sorted(_records(per_pair), key=lambda r: (r["group"], r["topic"])):
        g, t = r["group"], r["topic"]
        found = groups.get(g)
        conns = found.connections if found else ()
        model = found.message_model if found else MessageModel.CLUSTERING
        id_counts = found.id_counts if found else {}
        owned = owned_by_id.get((g, t), {})
        loads = [owned.get(c.client_id, 0) // id_counts[c.client_id] for c in conns]
        per_process.extend(loads)
        if model is MessageModel.CLUSTERING and loads and int(r["queues"]):
            fair = int(r["queues"]) / len(loads)
            fair_share.extend(x / fair for x in loads)
        idle = sum(1 for x in loads if x == 0)
        mean = (sum(loads) / len(loads)) if loads else 0.0
        queues, unowned, double_owned = int(r["queues"]), int(r["unowned"]), int(r["double_owned"])
        moved = None if churn is None else churn.get((g, t), 0)
        rows.append(
            PairRow(
                group=g,
                topic=t,
                message_model=model.value,
                strategies=",".join(sorted({spec.display_name for spec in found.strategies} if found else ())),
                queues=queues,
                processes=len(conns),
                client_ids=len(id_counts),
                unowned=unowned,
                double_owned=double_owned,
                idle_processes=idle,
                min_per_process=min(loads, default=0),
                max_per_process=max(loads, default=0),
                mean_per_process=round(mean, 3),
                skew=round(max(loads, default=0) / mean, 3) if mean else None,
                churn=moved,
            )
        )
        clustering = model is MessageModel.CLUSTERING
        if unowned:
            detail = f"{unowned} of {queues} queues are consumed by nobody"
            findings.append(Finding(FindingKind.UNOWNED, g, t, unowned, detail))
        if double_owned and clustering:
            detail = f"{double_owned} queues are consumed by more than one process"
            findings.append(Finding(FindingKind.DOUBLE_OWNED, g, t, double_owned, detail))
        if idle and clustering:
            detail = f"{idle} of {len(conns)} processes consume nothing ({queues} queues)"
            findings.append(Finding(FindingKind.IDLE_CONSUMER, g, t, idle, detail))
        if moved:
            detail = f"{moved} queues changed consumers since the previous snapshot"
            findings.append(Finding(FindingKind.CHURN, g, t, moved, detail))
    stranded: Counter[str] = Counter()
    for row in rows:
        stranded[row.group] += row.unowned
    for f in findings:
        if f.kind is FindingKind.DUPLICATE_CLIENT_ID and stranded[f.group]:
            f.detail += f"; the group has {stranded[f.group]} queues consumed by nobody"

    def total(kind: FindingKind) -> int:
        return sum(f.count for f in findings if f.kind is kind)

    def number(kind: FindingKind) -> int:
        return sum(1 for f in findings if f.kind is kind)

    totals = {
        "groups": len(groups),
        "group_topics": len(rows),
        "queues_assigned": sum(r.queues for r in rows),
        "processes": sum(len(v.connections) for v in groups.values()),
        "unowned_queues": total(FindingKind.UNOWNED),
        "double_owned_queues": total(FindingKind.DOUBLE_OWNED),
        "duplicated_client_ids": number(FindingKind.DUPLICATE_CLIENT_ID),
        "idle_processes": total(FindingKind.IDLE_CONSUMER),
        "strategy_mismatched_groups": number(FindingKind.STRATEGY_MISMATCH),
        "missing_routes": number(FindingKind.MISSING_ROUTE),
    }
    if churn is not None:
        totals["churned_queues"] = total(FindingKind.CHURN)
    now_max = {(r.group, r.topic): (r.processes, r.max_per_process) for r in rows}
    switched = [
        WhatIfRow(
            group=w["group"],
            topic=w["topic"],
            strategy=w["strategy"],
            queues=int(w["queues"]),
            processes=now_max.get((w["group"], w["topic"]), (0, 0))[0],
            moved=int(w["moved"]),
            max_load=int(w["max_load"]),
            idle=int(w["idle"]),
            now_max=now_max.get((w["group"], w["topic"]), (0, 0))[1],
        )
        for w in sorted(_records(what_if or []), key=lambda w: (w["group"], w["topic"], w["strategy"]))
    ]
    return AuditResult(rows, findings, totals, per_process, fair_share, switched)
