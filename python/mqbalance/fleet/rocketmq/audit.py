"""The audit of a RocketMQ fleet: what the clients' own assignment means for every (group, topic).

:func:`summarise` turns the engine's facts (:class:`mqbalance.fleet.rocketmq.facts.AuditFacts`,
computed in-process or by Spark, in the schemas of :mod:`mqbalance.fleet.rocketmq.schemas`) into
one :class:`~mqbalance.fleet.findings.PairRow` per (group, topic) — queues, processes, distinct
ids, min/max/mean queues per process, skew (max / mean), churn — and
:class:`~mqbalance.fleet.findings.Finding` s by the shared rules of :mod:`mqbalance.fleet.findings`;
:func:`audit_snapshot` runs both in-process.

>>> from mqbalance.fleet.rocketmq.facts import snapshot_facts
>>> from mqbalance.fleet.rocketmq.from_json import snapshot_from_dict
>>> snap = snapshot_from_dict({"topics": {"T": {"queueDatas": [
...     {"brokerName": "b", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6}]}},
...     "groups": {"g": {"subscriptions": ["T"], "connections": [{"clientId": "a"}, {"clientId": "a"}]}}})
>>> result = summarise(snap, *snapshot_facts(snap))
>>> [(f.kind.value, f.count) for f in result.findings]  # AVG gives "a" the first slot's 2 queues, twice
[('duplicate-client-id', 2), ('unowned', 2), ('double-owned', 2)]
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mqbalance.allocation.registry import StrategySpec
from mqbalance.exceptions import SnapshotError
from mqbalance.fleet.findings import (
    AssignmentTable,
    AuditResult,
    Finding,
    FindingKind,
    PairLine,
    PairRow,
    WhatIfRow,
    Words,
    missing_route,
    pair_findings,
    strategy_mismatch,
    totals,
)
from mqbalance.fleet.rocketmq.assignment import pair_queue_counts
from mqbalance.fleet.rocketmq.facts import snapshot_facts
from mqbalance.fleet.rocketmq.files import gc_paused
from mqbalance.fleet.rocketmq.lag_time import pair_lag
from mqbalance.fleet.rocketmq.schemas import GROUP_BUSY_SCHEMA, LOAD_SCHEMA, PAIR_FACT_SCHEMA
from mqbalance.fleet.rocketmq.snapshot import ConsumerGroup, MessageModel, ReportedStrategy, Snapshot
from mqbalance.fleet.rocketmq.what_if import what_if_candidates

__all__ = ["WORDS", "assignment_table", "audit_snapshot", "describe", "summarise"]

#: a RocketMQ fleet's findings speak of queues and processes
WORDS = Words(
    unowned="{n} of {total} queues are consumed by nobody",
    double_owned="{n} queues are consumed by more than one process",
    idle="{n} of {consumers} processes consume nothing ({total} queues)",
    churn="{n} queues changed consumers since the previous snapshot",
    missing_route="no readable queue of {topic} in the snapshot: the group consumes nothing of it",
    mismatch="clients disagree on the strategy: {names}",
    variant="{name}×{n}",
)


def audit_snapshot(
    snapshot: Snapshot,
    *,
    what_if: Iterable[StrategySpec | str] = (),
    previous: Snapshot | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> AuditResult:
    """The audit of one snapshot, in-process (no Spark): the engine's facts
    (:func:`mqbalance.fleet.rocketmq.facts.snapshot_facts`, which runs
    :func:`~mqbalance.fleet.rocketmq.assignment.assign_snapshot`) then :func:`summarise`;
    ``what_if``: candidate strategies to try on every clustering group
    (:func:`mqbalance.fleet.rocketmq.what_if.what_if`); ``previous``: an earlier snapshot, for churn
    (:func:`mqbalance.fleet.rocketmq.churn.churn`); ``progress(done, total)``: queues assigned so far."""
    if not isinstance(snapshot, Snapshot):
        raise SnapshotError(f"audit_snapshot needs a Snapshot (see load_snapshot), got {snapshot!r}", snapshot)
    if previous is not None and not isinstance(previous, Snapshot):
        raise SnapshotError(
            f"audit_snapshot: previous must be a Snapshot (see load_snapshot), got {previous!r}", previous
        )
    candidates = what_if_candidates(what_if)
    with gc_paused():  # a list of ids per group: no cycles, yet each collection would walk every id
        facts = snapshot_facts(snapshot, candidates=candidates, previous=previous, progress=progress)
    return summarise(snapshot, *facts)


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


def _lag_fields(found: tuple[int, float | None, bool] | None) -> dict[str, Any]:
    """A pair's lag columns from :func:`~mqbalance.fleet.rocketmq.lag_time.pair_lag`."""
    if found is None:
        return {}
    lag, seconds, carried = found
    stamp = None if seconds is None else "store time" + (", an upper bound: carried" if carried else "")
    return {"lag": lag, "lag_s": seconds, "lag_timestamp": stamp}


def summarise(
    snapshot: Snapshot,
    per_pair: Any,
    loads: Any,
    busy: Any,
    churn: Mapping[tuple[str, str], int] | None = None,
    what_if: Any = None,
) -> AuditResult:
    """The audit of one snapshot from the engine's facts, the fields of an
    :class:`~mqbalance.fleet.rocketmq.facts.AuditFacts` (``summarise(snapshot, *facts)``; Spark's come as
    lists of rows too): ``per_pair`` rows ``(group, topic, queues, unowned, double_owned, processes, idle, load_total,
    min_load, max_load)``, ``loads`` rows ``(group, topic, load, count)``, ``busy`` rows ``(group,
    processes)`` (:func:`mqbalance.fleet.rocketmq.facts.busy_processes`); ``churn`` (moved queues per pair)
    when a previous snapshot was compared; ``what_if`` rows (:func:`mqbalance.fleet.rocketmq.what_if.what_if`)
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
        variants = Counter(c.strategy for c in group.connections).most_common() if len(group.strategies) > 1 else []
        mismatch = strategy_mismatch(g, [(spec.display_name, n) for spec, n in variants], WORDS)
        if mismatch is not None:
            findings.append(mismatch)
    for g, t in sorted(snapshot.subscription_pairs()):
        if t not in readable:
            findings.append(missing_route(g, t, WORDS))
    not_computed = _not_computed(snapshot, groups)
    for g, (queues, topics) in sorted(not_computed.items()):
        made = strategy_unknown if reported_strategies(groups[g]) else settings_unknown
        findings.append(made(g, groups[g], queues, topics))
    lagging = pair_lag(snapshot.lag_times)  # lag seconds, where the live snapshot read them
    columns = ("group", "topic", "queues", "unowned", "double_owned", "processes", "idle", "load_total")
    for g, t, queues, unowned, double_owned, processes, idle, load_total, low, high in zip(
        *(pairs.column(c).to_pylist() for c in (*columns, "min_load", "max_load"))
    ):
        found = groups.get(g)
        model = found.message_model if found else MessageModel.CLUSTERING
        row = PairRow.of(
            g,
            t,
            units=queues,
            consumers=processes,
            load_total=load_total,
            min_load=low,
            max_load=high,
            idle=idle,
            unowned=unowned,
            double_owned=double_owned,
            message_model=model.value,
            strategies=",".join(sorted({spec.display_name for spec in found.strategies} if found else ())),
            client_ids=found.distinct_id_count if found else 0,
            churn=None if churn is None else churn.get((g, t), 0),
            **_lag_fields(lagging.get((g, t))),
        )
        rows.append(row)
        findings += pair_findings(row, WORDS)
    share, weight = _fair_shares(pairs, _arrow(loads, LOAD_SCHEMA), groups)
    stranded: Counter[str] = Counter()
    for row in rows:
        stranded[row.group] += row.unowned
    for f in findings:
        if f.kind is FindingKind.DUPLICATE_CLIENT_ID and stranded[f.group]:
            f.detail += f"; the group has {stranded[f.group]} queues consumed by nobody"

    fleet_totals = totals(
        rows,
        findings,
        groups=len(groups),
        consumers=sum(len(v.connections) for v in groups.values()),
        idle_consumers=_idle_anywhere(_arrow(busy, GROUP_BUSY_SCHEMA), groups, set(not_computed)),
        churn=churn is not None,
        duplicated_client_ids=sum(1 for f in findings if f.kind is FindingKind.DUPLICATE_CLIENT_ID),
        settings_unknown_groups=sum(1 for f in findings if f.kind is FindingKind.SETTINGS_UNKNOWN),
        not_computed_queues=sum(queues for queues, _ in not_computed.values()),
        strategy_unknown_groups=sum(1 for f in findings if f.kind is FindingKind.STRATEGY_UNKNOWN),
    )
    now_max = {(r.group, r.topic): (r.consumers, r.max_load) for r in rows}
    switched = [
        WhatIfRow(
            group=w["group"],
            topic=w["topic"],
            strategy=w["strategy"],
            units=int(w["queues"]),
            consumers=now_max.get((w["group"], w["topic"]), (0, 0))[0],
            moved=int(w["moved"]),
            max_load=int(w["max_load"]),
            idle=int(w["idle"]),
            now_max=now_max.get((w["group"], w["topic"]), (0, 0))[1],
        )
        for w in sorted(_records(what_if or []), key=lambda w: (w["group"], w["topic"], w["strategy"]))
    ]
    return AuditResult(rows, findings, fleet_totals, share, weight, switched)


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


def _idle_anywhere(busy: pa.Table, groups: Mapping[str, ConsumerGroup], not_computed: set[str]) -> int:
    """Processes of clustering groups that consume nothing of any topic (``busy``: per group, its
    processes consuming something, :func:`mqbalance.fleet.rocketmq.facts.busy_processes`); the
    groups ``not_computed`` are not counted (nobody knows what their processes consume)."""
    working = dict(zip(busy.column("group").to_pylist(), busy.column("processes").to_pylist()))
    return sum(
        len(group.connections) - working.get(g, 0)
        for g, group in groups.items()
        if group.message_model is MessageModel.CLUSTERING and g not in not_computed
    )


def _not_computed_pairs(snapshot: Snapshot, groups: Mapping[str, ConsumerGroup]) -> dict[tuple[str, str], int]:
    """Per (group, topic) of the groups the snapshot lacks strategy settings for
    (:attr:`ConsumerGroup.unknown_settings <mqbalance.fleet.rocketmq.snapshot.ConsumerGroup.unknown_settings>`)
    with a readable queue: its readable queues, none of them computed."""
    names = [g for g, group in groups.items() if group.unknown_settings]
    if not names:
        return {}
    pairs = snapshot.pair_table()
    pairs = pairs.filter(pc.is_in(pairs.column("group"), pa.array(names, pa.string())))
    keys = zip(pairs.column("group").to_pylist(), pairs.column("topic").to_pylist())
    return {k: n for k, n in zip(keys, pair_queue_counts(pairs).tolist()) if n > 0}


def _not_computed(snapshot: Snapshot, groups: Mapping[str, ConsumerGroup]) -> dict[str, tuple[int, int]]:
    """Per group the snapshot lacks strategy settings for: its readable queues and the subscribed
    topics that have some (:func:`_not_computed_pairs`)."""
    queues: Counter[str] = Counter()
    topics: Counter[str] = Counter()
    for (g, _), n in _not_computed_pairs(snapshot, groups).items():
        queues[g] += n
        topics[g] += 1
    return {g: (queues[g], topics[g]) for g, group in groups.items() if group.unknown_settings}


def settings_unknown(group: str, found: ConsumerGroup, queues: int, topics: int) -> Finding:
    """The finding of a group whose strategy the snapshot lacks settings for: ``queues`` (of
    ``topics`` subscribed topics) are not computed, so neither counted unowned nor double-owned.

    >>> from mqbalance.allocation.registry import StrategySpec
    >>> from mqbalance.fleet.rocketmq.snapshot import Connection
    >>> g = ConsumerGroup.of("g", MessageModel.CLUSTERING, (Connection("c", StrategySpec.parse("MACHINE_ROOM")),))
    >>> print(settings_unknown("g", g, 8, 1).detail)  # doctest: +NORMALIZE_WHITESPACE
    strategy settings unknown: MACHINE_ROOM's consumer idcs are not in the snapshot (a client's running
    info does not report them); 8 queues of 1 topic not computed; give them as the group's
    "consumeridcs" in a JSON snapshot to compute it
    """
    what = " and ".join(found.unknown_settings)
    detail = (
        f"strategy settings unknown: {what} are not in the snapshot (a client's running info does not report them); "
        f"{queues:,} queues of {topics:,} topic{'s' if topics != 1 else ''} not computed; "
        'give them as the group\'s "consumeridcs" in a JSON snapshot to compute it'
    )
    return Finding(FindingKind.SETTINGS_UNKNOWN, group, None, queues, detail)


def reported_strategies(group: ConsumerGroup) -> list[ReportedStrategy]:
    """The strategies of ``group``'s clients that the snapshot keeps only as reported (none in a
    broadcasting group, which consumes every queue whatever its strategy)."""
    if group.message_model is MessageModel.BROADCASTING:
        return []
    return [spec for spec in group.strategies if isinstance(spec, ReportedStrategy)]


def strategy_unknown(group: str, found: ConsumerGroup, queues: int, topics: int) -> Finding:
    """The finding of a group with a client on a strategy the snapshot cannot compute (kept as the
    client reported it, :class:`~mqbalance.fleet.rocketmq.snapshot.ReportedStrategy`): ``queues``
    (of ``topics`` subscribed topics) are not computed, so neither counted unowned nor double-owned.

    >>> from mqbalance.fleet.rocketmq.snapshot import Connection
    >>> g = ConsumerGroup.of("g", MessageModel.CLUSTERING, (Connection("c", ReportedStrategy("RoomAllocator")),))
    >>> print(strategy_unknown("g", g, 8, 1).detail)  # doctest: +NORMALIZE_WHITESPACE
    strategy unknown: clients run RoomAllocator (1 client), as reported: not a strategy mqbalance knows (a
    custom AllocateMessageQueueStrategy?); 8 queues of 1 topic not computed
    """
    counts = Counter(c.strategy for c in found.connections)
    named = "; ".join(
        f"{spec.reported} ({counts[spec]:,} client{'s' if counts[spec] != 1 else ''}), as reported: {spec.why}"
        for spec in reported_strategies(found)
    )
    also = [
        text for spec in found.strategies if not isinstance(spec, ReportedStrategy) and (text := spec.unknown_settings)
    ]
    detail = f"strategy unknown: clients run {named}"
    if also:
        detail += f"; strategy settings unknown: {' and '.join(also)}"
    detail += f"; {queues:,} queues of {topics:,} topic{'s' if topics != 1 else ''} not computed"
    return Finding(FindingKind.STRATEGY_UNKNOWN, group, None, queues, detail)


def describe(snapshot: Snapshot) -> str:
    """The snapshot's size, for people."""
    return f"{len(snapshot.groups):,} groups, {snapshot.readable_queue_count():,} readable queues"


def assignment_table(snapshot: Snapshot, result: AuditResult) -> AssignmentTable:
    """The assignment table of ``mqbalance assign``: per subscribed (group, topic) its queues,
    processes, min/max queues per process, unowned and twice-consumed queues, and notes."""
    rows = {(r.group, r.topic): r for r in result.rows}
    groups = snapshot.consumer_groups()
    not_computed = _not_computed_pairs(snapshot, groups)
    lines = []
    for g, t in snapshot.subscription_pairs():
        group = groups.get(g)
        procs = len(group.connections) if group else 0
        row = rows.get((g, t))
        if row is None:
            if (g, t) in not_computed and group is not None:
                reported = reported_strategies(group)
                if reported:
                    note = f"not computed: strategy unknown ({', '.join(s.reported for s in reported)}, as reported)"
                else:
                    note = f"not computed: strategy settings unknown ({' and '.join(group.unknown_settings)})"
                text = f"{g:<20} {t:<22} {not_computed[g, t]:>6} {procs:>5} {'':>4} {'':>4} {'':>7} {'':>7}  {note}"
                lines.append(PairLine(g, t, 0, 0, 0, text))
                continue
            note = "no readable queue (missing route)"
            text = f"{g:<20} {t:<22} {0:>6} {procs:>5} {'':>4} {'':>4} {'':>7} {'':>7}  {note}"
            lines.append(PairLine(g, t, 0, 0, 1, text))
            continue
        notes = []
        if group and group.duplicated_ids:
            notes.append(f"duplicated id {', '.join(group.duplicated_ids)}")
        if row.unowned:
            notes.append(f"{row.unowned} queues consumed by nobody")
        if row.double_owned and row.clustering:
            notes.append(f"{row.double_owned} consumed twice")
        if row.idle_consumers and row.clustering:
            notes.append(f"{row.idle_consumers} idle")
        risk = row.unowned + (row.double_owned if row.clustering else 0)
        idle = row.idle_consumers if row.clustering else 0
        text = (
            f"{g:<20} {t:<22} {row.units:>6} {procs:>5} {row.min_load:>4} {row.max_load:>4} "
            f"{row.unowned:>7} {row.double_owned:>7}  {'; '.join(notes)}"
        )
        lines.append(PairLine(g, t, risk, idle, 0, text))
    totals = result.totals
    summary = (
        f"fleet: {totals.queues_assigned:,} queues in {totals.group_topics:,} group/topic pairs, "
        f"{totals.processes:,} processes; unowned {totals.unowned_queues:,}, consumed twice "
        f"{totals.double_owned_queues:,}, idle processes {totals.idle_processes:,}, duplicated ids "
        f"{totals.duplicated_client_ids or 0:,}, missing routes {totals.missing_routes:,}"
    )
    if totals.settings_unknown_groups or totals.strategy_unknown_groups:
        why = [
            text
            for text, n in (
                ("strategy settings unknown", totals.settings_unknown_groups),
                ("strategy unknown", totals.strategy_unknown_groups),
            )
            if n
        ]
        groups_not_computed = (totals.settings_unknown_groups or 0) + (totals.strategy_unknown_groups or 0)
        summary += (
            f"; not computed ({', '.join(why)}) {totals.not_computed_queues or 0:,} queues in "
            f"{groups_not_computed:,} groups"
        )
    columns = f"{'queues':>6} {'procs':>5} {'min':>4} {'max':>4} {'unowned':>7} {'twice':>7}"
    return AssignmentTable(summary, f"{'group':<20} {'topic':<22} {columns}  notes", lines)
