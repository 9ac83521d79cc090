"""Findings: what the clients' own assignment means for every (group, topic).

:func:`summarise` turns the engine's facts (:class:`mqbalance.fleet.engine.AuditFacts`, computed
in-process or by Spark, in the engine's schemas) into one row per (group, topic) — queues,
processes, distinct ids, min/max/mean queues per process, skew (max / mean), churn — and
:class:`Finding` s, each of a :class:`FindingKind`, listed most urgent first.

>>> from mqbalance.fleet.engine import snapshot_facts
>>> from mqbalance.fleet.snapshot import snapshot_from_dict
>>> snap = snapshot_from_dict({"topics": {"T": {"queueDatas": [
...     {"brokerName": "b", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6}]}},
...     "groups": {"g": {"subscriptions": ["T"], "connections": [{"clientId": "a"}, {"clientId": "a"}]}}})
>>> result = summarise(snap, *snapshot_facts(snap))
>>> [(f.kind.value, f.count) for f in result.findings]  # AVG gives "a" the first slot's 2 queues, twice
[('duplicate-client-id', 2), ('unowned', 2), ('double-owned', 2)]
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from mqbalance.fleet.engine import GROUP_BUSY_SCHEMA, LOAD_SCHEMA, PAIR_FACT_SCHEMA
from mqbalance.fleet.snapshot import ConsumerGroup, MessageModel, Snapshot

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
    #: messages between the committed offsets and the log end (Kafka fleets)
    LAG = "lag"
    #: groups read in the middle of a rebalance: their assignment is not final (Kafka fleets)
    REBALANCING = "rebalancing"

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
    FindingKind.LAG: "messages between the committed offsets and the log end",
    FindingKind.REBALANCING: "groups read in the middle of a rebalance",
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
    #: messages behind the log end (Kafka fleets; ``None`` where the snapshot has no log-end offsets)
    lag: int | None = None

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
    #: per clustering process and subscribed topic: its queues over its fair share (queues /
    #: processes), as distinct values ...
    fair_share: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: ... and how many (process, topic) have each
    fair_share_processes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
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


def _arrow(table: Any, schema: pa.Schema) -> pa.Table:
    """The columns of ``schema`` of an Arrow table, a list of dicts or of Spark ``Row`` s, as an
    Arrow table."""
    if isinstance(table, pa.Table):
        return table.select(schema.names).cast(schema)
    rows = list(_records(table))
    return pa.table({c: pa.array([r[c] for r in rows], t) for c, t in zip(schema.names, schema.types)})


def summarise(
    snapshot: Snapshot,
    per_pair: Any,
    loads: Any,
    busy: Any,
    churn: Mapping[tuple[str, str], int] | None = None,
    what_if: Any = None,
) -> AuditResult:
    """The audit of one snapshot from the engine's facts, the fields of an
    :class:`~mqbalance.fleet.engine.AuditFacts` (``summarise(snapshot, *facts)``; Spark's come as
    lists of rows too): ``per_pair`` rows ``(group, topic, queues, unowned, double_owned, processes, idle, load_total,
    min_load, max_load)``, ``loads`` rows ``(group, topic, load, count)``, ``busy`` rows ``(group,
    processes)`` (:func:`mqbalance.fleet.engine.busy_processes`); ``churn`` (moved queues per pair)
    when a previous snapshot was compared; ``what_if`` rows (:func:`mqbalance.fleet.engine.what_if`)
    when candidate strategies were tried. Nothing here is per process."""
    groups = snapshot.consumer_groups()
    pairs = _arrow(per_pair, PAIR_FACT_SCHEMA).sort_by([("group", "ascending"), ("topic", "ascending")])
    readable = snapshot.readable_topics()
    findings: list[Finding] = []
    rows: list[PairRow] = []

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
    columns = ("group", "topic", "queues", "unowned", "double_owned", "processes", "idle", "load_total")
    for g, t, queues, unowned, double_owned, processes, idle, load_total, low, high in zip(
        *(pairs.column(c).to_pylist() for c in (*columns, "min_load", "max_load"))
    ):
        found = groups.get(g)
        model = found.message_model if found else MessageModel.CLUSTERING
        mean = load_total / processes if processes else 0.0
        moved = None if churn is None else churn.get((g, t), 0)
        rows.append(
            PairRow(
                group=g,
                topic=t,
                message_model=model.value,
                strategies=",".join(sorted({spec.display_name for spec in found.strategies} if found else ())),
                queues=queues,
                processes=processes,
                client_ids=len(found.id_counts) if found else 0,
                unowned=unowned,
                double_owned=double_owned,
                idle_processes=idle,
                min_per_process=low,
                max_per_process=high,
                mean_per_process=round(mean, 3),
                skew=round(high / mean, 3) if mean else None,
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
            detail = f"{idle} of {processes} processes consume nothing ({queues} queues)"
            findings.append(Finding(FindingKind.IDLE_CONSUMER, g, t, idle, detail))
        if moved:
            detail = f"{moved} queues changed consumers since the previous snapshot"
            findings.append(Finding(FindingKind.CHURN, g, t, moved, detail))
    share, weight = _fair_shares(pairs, _arrow(loads, LOAD_SCHEMA), groups)
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
        "idle_processes": _idle_anywhere(_arrow(busy, GROUP_BUSY_SCHEMA), groups),
        "idle_process_topics": total(FindingKind.IDLE_CONSUMER),
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
    return AuditResult(rows, findings, totals, share, weight, switched)


def _fair_shares(
    pairs: pa.Table, loads: pa.Table, groups: Mapping[str, ConsumerGroup]
) -> tuple[np.ndarray, np.ndarray]:
    """Distinct (pair, load) of clustering pairs as load / fair share (queues / processes), with
    how many processes each; a pair's idle processes are its share 0."""
    names = pairs.column("group").to_pylist()
    model = MessageModel.CLUSTERING
    counted = np.array([g not in groups or groups[g].message_model is model for g in names], dtype=bool)
    queues, processes = pairs.column("queues").to_numpy(), pairs.column("processes").to_numpy()
    counted &= (queues > 0) & (processes > 0)
    index = pa.table({"group": pairs.column("group"), "topic": pairs.column("topic"), "p": np.arange(len(names))})
    joined = loads.join(index, ["group", "topic"], use_threads=False)
    p = joined.column("p").to_numpy()
    keep = counted[p]
    fair = queues[p[keep]] / processes[p[keep]]
    share = np.concatenate([joined.column("load").to_numpy()[keep] / fair, [0.0]])
    weight = np.concatenate([joined.column("count").to_numpy()[keep], [pairs.column("idle").to_numpy()[counted].sum()]])
    return share, weight.astype(np.int64)


def _idle_anywhere(busy: pa.Table, groups: Mapping[str, ConsumerGroup]) -> int:
    """Processes of clustering groups that consume nothing of any topic (``busy``: per group, its
    processes consuming something, :func:`mqbalance.fleet.engine.busy_processes`)."""
    working = dict(zip(busy.column("group").to_pylist(), busy.column("processes").to_pylist()))
    return sum(
        len(group.connections) - working.get(g, 0)
        for g, group in groups.items()
        if group.message_model is MessageModel.CLUSTERING
    )
