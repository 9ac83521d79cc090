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
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

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
    #: per process and subscribed topic: the queues it consumes
    per_process: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: per clustering process and subscribed topic: its queues over its fair share (queues / processes)
    fair_share: np.ndarray = field(default_factory=lambda: np.zeros(0))
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


def _arrow(table: Any, columns: Mapping[str, pa.DataType]) -> pa.Table:
    """``columns`` of an Arrow table, a list of dicts or of Spark ``Row`` s, as an Arrow table."""
    if isinstance(table, pa.Table):
        return table.select(list(columns)).cast(pa.schema(list(columns.items())))
    rows = list(_records(table))
    return pa.table({c: pa.array([r[c] for r in rows], t) for c, t in columns.items()})


class _Loads:
    """Queues per process of every (group, topic), from the per-id counts: only ids that consume
    something have a count; every other process of the pair is idle. A duplicated id's ``k``
    connections share its count (``count // k`` each, the engine's rows give the id all of them)."""

    def __init__(self, pairs: pa.Table, per_id: pa.Table, groups: Mapping[str, ConsumerGroup]) -> None:
        n = pairs.num_rows
        index = pa.table({"group": pairs.column("group"), "topic": pairs.column("topic"), "p": np.arange(n)})
        joined = per_id.join(index, ["group", "topic"], use_threads=False)
        p = joined.column("p").to_numpy()
        count = joined.column("count").to_numpy()
        k = np.ones(len(p), dtype=np.int64)
        dup_groups = [g for g in set(pairs.column("group").to_pylist()) if g in groups and groups[g].duplicated_ids]
        if dup_groups:
            mask = pc.is_in(joined.column("group"), pa.array(dup_groups, pa.string())).to_numpy(zero_copy_only=False)
            for j, g, cid in zip(
                np.flatnonzero(mask),
                joined.column("group").filter(mask).to_pylist(),
                joined.column("consumer").filter(mask).to_pylist(),
            ):
                k[j] = groups[g].id_counts.get(cid, 1)
        load = count // k
        names = pairs.column("group").to_pylist()
        self.processes = np.array([len(groups[g].connections) if g in groups else 0 for g in names], dtype=np.int64)
        busy = np.bincount(p, weights=k * (load > 0), minlength=n).astype(np.int64)
        self.idle = self.processes - busy
        self.total = np.bincount(p, weights=k * load, minlength=n).astype(np.int64)
        self.max = np.zeros(n, dtype=np.int64)
        np.maximum.at(self.max, p, load)
        low = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(low, p, load)
        self.min = np.where((self.idle > 0) | (low == np.iinfo(np.int64).max), 0, low)
        self.p, self.load, self.k = p, load, k
        busy_ids = pa.table({"group": joined.column("group"), "consumer": joined.column("consumer"), "k": k}).filter(
            pa.array(load > 0)
        )
        per_group = (
            busy_ids.group_by(["group", "consumer"], use_threads=False)
            .aggregate([("k", "max")])
            .group_by("group", use_threads=False)
            .aggregate([("k_max", "sum")])
        )
        #: per group: its processes that consume something of some topic
        self.busy_processes = dict(
            zip(per_group.column("group").to_pylist(), per_group.column("k_max_sum").to_pylist())
        )

    def per_process(self) -> np.ndarray:
        """Every process's queues on every subscribed topic (idle ones as 0)."""
        busy = self.load > 0
        return np.concatenate(
            [np.repeat(self.load[busy], self.k[busy]), np.zeros(int(self.idle.sum()), dtype=np.int64)]
        )

    def fair_share(self, queues: np.ndarray, clustering: np.ndarray) -> np.ndarray:
        """Per process and topic of clustering pairs: queues / (the pair's queues / processes)."""
        fair = np.where(self.processes > 0, queues / np.maximum(self.processes, 1), 0.0)
        keep = (clustering & (queues > 0) & (self.processes > 0))[self.p] & (self.load > 0)
        shares = np.repeat(self.load[keep] / fair[self.p[keep]], self.k[keep])
        idle = int(self.idle[clustering & (queues > 0) & (self.processes > 0)].sum())
        return np.concatenate([shares, np.zeros(idle)])


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
    (:func:`mqbalance.fleet.engine.what_if`) when candidate strategies were tried. Vectorised over
    the pairs: nothing here is per process."""
    groups = snapshot.consumer_groups()
    pairs = _arrow(per_pair, PAIR_COUNT_COLUMNS).sort_by([("group", "ascending"), ("topic", "ascending")])
    ids = _arrow(per_id, ID_COUNT_COLUMNS)
    readable = snapshot.readable_routes()
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
    loads = _Loads(pairs, ids, groups)
    queues_of = pairs.column("queues").to_numpy()
    pair_groups = pairs.column("group").to_pylist()
    clustering_of = np.array(
        [g not in groups or groups[g].message_model is MessageModel.CLUSTERING for g in pair_groups], dtype=bool
    )
    for p, (g, t, queues, unowned, double_owned) in enumerate(
        zip(*(pairs.column(c).to_pylist() for c in ("group", "topic", "queues", "unowned", "double_owned")))
    ):
        found = groups.get(g)
        model = found.message_model if found else MessageModel.CLUSTERING
        processes, idle = int(loads.processes[p]), int(loads.idle[p])
        mean = float(loads.total[p]) / processes if processes else 0.0
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
                min_per_process=int(loads.min[p]),
                max_per_process=int(loads.max[p]),
                mean_per_process=round(mean, 3),
                skew=round(int(loads.max[p]) / mean, 3) if mean else None,
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
    per_process = loads.per_process()
    fair_share = loads.fair_share(queues_of, clustering_of)
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
        "idle_processes": sum(
            len(v.connections) - loads.busy_processes.get(g, 0)
            for g, v in groups.items()
            if v.message_model is MessageModel.CLUSTERING
        ),
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
    return AuditResult(rows, findings, totals, per_process, fair_share, switched)


PAIR_COUNT_COLUMNS = {
    "group": pa.string(),
    "topic": pa.string(),
    "queues": pa.int64(),
    "unowned": pa.int64(),
    "double_owned": pa.int64(),
}
ID_COUNT_COLUMNS = {"group": pa.string(), "topic": pa.string(), "consumer": pa.string(), "count": pa.int64()}
