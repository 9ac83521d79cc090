"""The audit of a Kafka fleet: what the groups' current assignments mean, per (group, topic), in
the same rows, findings and report as the RocketMQ audit (:mod:`mqbalance.fleet.findings`).

Per (group, topic), from a :class:`~mqbalance.fleet.kafka.snapshot.KafkaSnapshot`:

* partitions assigned to no member (``unowned``) and to more than one (``double-owned``), members
  subscribed to the topic that hold none of it (``idle-consumer``), min/max/mean per member and
  skew — when the broker returned the members' assignments and the group is ``Stable`` (a group
  read mid-rebalance is a ``rebalancing`` finding instead: its assignment is not final);
* ``lag``: the messages between the committed offsets and the log end;
* ``churn`` against a previous snapshot: partitions whose member (by client id) changed;
* per group, ``strategy-mismatch`` when the members' sticky userData comes in two layouts (Java's
  and another: kafka-python's own sticky assignor writes a version first; each leader ignores
  the other kind's claims, so the group is not sticky across them);
* a topic a member subscribes to that the cluster does not have: ``missing-route``.

The what-if tries the client-side assignors (``range``, ``roundrobin``, ``sticky``,
``cooperative-sticky``: :func:`mqbalance.kafka.assignor`, the sticky ones keeping today's
assignment as the members' previous one) and the broker-side ones of the consumer protocol
(``uniform`` and ``server-range``: :func:`mqbalance.kafka.server_assign`; these need the topic
ids, and take the members in the snapshot's order as the coordinator's): partitions that would
move, the most one member would hold, members left with nothing.

The rows, findings and totals come from the rules shared with RocketMQ fleets
(:mod:`mqbalance.fleet.findings`), in this module's :data:`WORDS`;
:func:`mqbalance.fleet.kafka.spark.audit_kafka_on_spark` runs the same audit in Spark's executors.

>>> from mqbalance.fleet.kafka.snapshot import kafka_snapshot_from_dict
>>> snap = kafka_snapshot_from_dict({"kind": "kafka", "topics": {"t": {"partitions": 3}},
...     "groups": {"g": {"state": "Stable", "protocol": "range", "members": [
...         {"memberId": "a", "subscription": ["t"], "assignment": {"t": [0, 1, 2]}},
...         {"memberId": "b", "subscription": ["t"], "assignment": {}}]}},
...     "endOffsets": [{"topic": "t", "partition": 0, "offset": 10}],
...     "offsets": [{"group": "g", "topic": "t", "partition": 0, "offset": 4}]})
>>> result = audit_kafka(snap, what_if=("roundrobin",))
>>> [(f.kind.value, f.count) for f in result.findings]
[('idle-consumer', 1), ('lag', 6)]
>>> [(w.strategy, w.moved, w.max_load) for w in result.what_if]
[('roundrobin', 1, 2)]
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from mqbalance.exceptions import InvalidInputError, UnknownStrategyError
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
from mqbalance.fleet.kafka.snapshot import KafkaGroup, KafkaSnapshot
from mqbalance.kafka import Subscription, TopicPartition, assignor, server_assign
from mqbalance.kafka import user_data as java_user_data
from mqbalance.kafka.assignors import ASSIGNORS, STICKY_ASSIGNORS
from mqbalance.kafka.server import what_if_names

__all__ = [
    "KAFKA_WHAT_IF",
    "WORDS",
    "assignment_table",
    "audit_kafka",
    "checked_audit_arguments",
    "describe",
    "kafka_what_if_candidates",
]

#: a Kafka fleet's findings speak of partitions and members
WORDS = Words(
    unowned="{n} of {total} partitions are assigned to no member",
    double_owned="{n} partitions are assigned to more than one member",
    idle="{n} of {consumers} members hold no partition of {topic} ({total} partitions)",
    churn="{n} partitions changed members since the previous snapshot",
    missing_route="topic {topic} is not in the cluster's metadata: the group consumes nothing of it",
    mismatch="members' sticky userData in {n} layouts ({names}): each leader ignores the other's claims",
    variant="{name} ×{n}",
)

#: every candidate of the Kafka what-if: the client-side assignors, then the broker-side ones
#: (:func:`~mqbalance.kafka.what_if_names`: ``server-range`` is the broker's ``range``)
KAFKA_WHAT_IF = tuple(what_if_names())
_SERVER = {w: n for w, n in what_if_names().items() if w not in ASSIGNORS}
_STICKY = STICKY_ASSIGNORS


def kafka_what_if_candidates(option: str) -> tuple[str, ...]:
    """The candidates of a comma-separated ``--what-if`` for a Kafka fleet (names of
    :data:`KAFKA_WHAT_IF`, case ignored); anything else is an
    :class:`~mqbalance.exceptions.UnknownStrategyError` naming it."""
    if not isinstance(option, str):
        raise InvalidInputError(f"what-if candidates must be a comma-separated str, got {option!r}", option)
    names = tuple(n.strip().lower() for n in option.split(",") if n.strip())
    unknown = [n for n in names if n not in KAFKA_WHAT_IF]
    if unknown:
        raise UnknownStrategyError(
            f"--what-if: unknown Kafka assignor(s) {unknown}; known: {', '.join(KAFKA_WHAT_IF)}", unknown
        )
    return names


def _owners(group: KafkaGroup) -> dict[tuple[str, int], list[str]]:
    """Member ids per assigned partition."""
    owners: dict[tuple[str, int], list[str]] = defaultdict(list)
    for m in group.members:
        for tp in m.assignment or ():
            owners[tp].append(m.member_id)
    return owners


def _layouts(group: KafkaGroup) -> Counter[str]:
    """Members with sticky userData, by layout: Java's (what Kafka's Java clients and mqbalance
    write) or another."""
    return Counter(
        "Java's" if java_user_data.decode(m.user_data) is not None else "another" for m in group.members if m.user_data
    )


def _candidate(
    name: str, group: KafkaGroup, counts: dict[str, int], topic_ids: dict[str, str]
) -> dict[str, set[tuple[str, int]]] | None:
    """Each member's partitions under candidate ``name``; ``None`` when it cannot be computed here
    (a broker-side assignor without topic ids)."""
    if name in _SERVER:
        if any(t not in topic_ids for t in counts):
            return None
        back = {topic_ids[t]: t for t in counts}
        # the coordinator never holds a partition in two members' current assignments: one the
        # snapshot shows twice counts for its first member (in the snapshot's order)
        first: dict[tuple[str, int], str] = {}
        for m in group.members:
            for tp in m.assignment or ():
                if tp[0] in counts and tp[1] < counts[tp[0]]:
                    first.setdefault(tp, m.member_id)
        members = [
            {
                "member_id": m.member_id,
                "instance_id": m.group_instance_id,
                "subscribed_topic_ids": [topic_ids[t] for t in m.subscription or () if t in counts],
                "current_assignment": [
                    [topic_ids[t], [p for tt, p in m.assignment or () if tt == t and first[(t, p)] == m.member_id]]
                    for t in sorted({t for t, p in m.assignment or () if first.get((t, p)) == m.member_id})
                ],
            }
            for m in group.members
        ]
        got = server_assign(_SERVER[name], members, {topic_ids[t]: n for t, n in counts.items()})
        return {mid: {(back[tid], p) for tid, ps in parts.items() for p in ps} for mid, parts in got.items()}
    sticky = name in _STICKY
    subs = {
        m.member_id: Subscription(
            [t for t in m.subscription or () if t in counts],
            [TopicPartition(t, p) for t, p in m.assignment or () if t in counts] if sticky else (),
            1 if sticky else None,
            m.group_instance_id,
        )
        for m in group.members
    }
    got_lists = assignor(name).assign(counts, subs)
    return {mid: {(tp.topic, tp.partition) for tp in parts} for mid, parts in got_lists.items()}


def checked_audit_arguments(snapshot: Any, previous: Any, what_if: Any) -> tuple[str, ...]:
    """The candidates, once the arguments of an audit are checked (typed errors naming them)."""
    if not isinstance(snapshot, KafkaSnapshot):
        raise InvalidInputError(f"snapshot must be a KafkaSnapshot, got {snapshot!r}"[:200], snapshot)
    if previous is not None and not isinstance(previous, KafkaSnapshot):
        raise InvalidInputError(f"previous must be a KafkaSnapshot or None, got {previous!r}"[:200], previous)
    if isinstance(what_if, str):
        return kafka_what_if_candidates(what_if)
    if not isinstance(what_if, (list, tuple)) or not all(isinstance(n, str) for n in what_if):
        raise InvalidInputError(f"what_if must be a sequence of assignor names, got {what_if!r}"[:200], what_if)
    return kafka_what_if_candidates(",".join(what_if)) if what_if else ()


def audit_kafka(
    snapshot: KafkaSnapshot, previous: KafkaSnapshot | None = None, what_if: Sequence[str] = KAFKA_WHAT_IF
) -> AuditResult:
    """The audit of a Kafka snapshot (see the module docs); ``previous`` for churn, ``what_if``
    names of :data:`KAFKA_WHAT_IF` (a sequence, or one comma-separated str; empty: none)."""
    what_if = checked_audit_arguments(snapshot, previous, what_if)
    rows: list[PairRow] = []
    findings: list[Finding] = []
    switched: list[WhatIfRow] = []
    shares: list[float] = []
    before = previous.groups if previous is not None else None
    for g, group in sorted(snapshot.groups.items()):
        mismatch = strategy_mismatch(g, _layouts(group).most_common(), WORDS)
        if mismatch is not None:
            findings.append(mismatch)
        if group.state not in ("Stable", "Empty", "Dead"):
            detail = f"read while {group.state}: the assignment of its {len(group.members)} members is not final"
            findings.append(Finding(FindingKind.REBALANCING, g, None, len(group.members), detail))
        known = group.metadata_known and bool(group.members)
        judged = known and group.stable
        subscribed = {t for m in group.members for t in m.subscription or ()}
        offset_topics = {t for (gg, t, _p) in snapshot.committed if gg == g}
        owners = _owners(group)
        old_owner: dict[tuple[str, int], str] = {}
        if before is not None and g in before and before[g].metadata_known:
            old_owner = {tp: m.name for m in before[g].members for tp in m.assignment or ()}
        counts = {t: snapshot.topics[t] for t in sorted(subscribed) if t in snapshot.topics}
        held = {m.member_id: Counter(t for t, _ in m.assignment or ()) for m in group.members}
        now_owner = {tp: m.name for m in group.members for tp in m.assignment or ()}
        for t in sorted(subscribed | offset_topics):
            if t not in snapshot.topics:
                findings.append(missing_route(g, t, WORDS))
                continue
            n = snapshot.topics[t]
            subscribers = [m for m in group.members if t in (m.subscription or ())]
            loads = [held[m.member_id][t] for m in subscribers]
            unowned = double = idle = 0
            if judged and subscribers:
                unowned = sum(1 for p in range(n) if not owners.get((t, p)))
                double = sum(1 for p in range(n) if len(owners.get((t, p), ())) > 1)
                idle = sum(1 for x in loads if x == 0)
                shares.extend(x / (n / len(subscribers)) for x in loads if n)
            lag = behind = 0
            lag_s: float | None = None
            stamp: str | None = None
            for p in range(n):
                c, e = snapshot.committed.get((g, t, p)), snapshot.end_offsets.get((t, p))
                if c is not None and e is not None:
                    lag += max(0, e - c)
                    behind += e < c
                    age = snapshot.lag_seconds(g, t, p) if e > c else None
                    if age is not None and (lag_s is None or age > lag_s):
                        lag_s, stamp = age, snapshot.lag_times[(g, t, p)][1]
            moved = None
            if before is not None:
                moved = sum(1 for p in range(n) if old_owner and now_owner.get((t, p)) != old_owner.get((t, p)))
            row = PairRow.of(
                g,
                t,
                units=n,
                consumers=len(subscribers),
                loads=loads,
                idle=idle,
                unowned=unowned,
                double_owned=double,
                strategies=group.protocol,
                client_ids=len({m.name for m in subscribers}),
                churn=moved,
                lag=lag,
                lag_s=lag_s,
                lag_timestamp=stamp,
            )
            rows.append(row)
            findings += pair_findings(row, WORDS, behind=behind)
        if known and counts and what_if:
            switched += _what_if(group, counts, snapshot.topic_ids, what_if)
    fleet_totals = totals(
        rows,
        findings,
        groups=len(snapshot.groups),
        consumers=sum(len(gr.members) for gr in snapshot.groups.values()),
        idle_consumers=_idle_anywhere(snapshot),
        churn=previous is not None,
        rebalancing_groups=sum(1 for f in findings if f.kind is FindingKind.REBALANCING),
        lag=sum(r.lag or 0 for r in rows),
        groups_without_member_metadata=sum(
            1 for gr in snapshot.groups.values() if gr.members and not gr.metadata_known
        ),
    )
    share, weight = np.unique(np.round(np.array(shares, dtype=np.float64), 6), return_counts=True)
    switched.sort(key=lambda w: (w.group, w.topic, w.strategy))
    return AuditResult(rows, findings, fleet_totals, share, weight.astype(np.int64), switched)


def _idle_anywhere(snapshot: KafkaSnapshot) -> int:
    """Members of stable groups with known assignments that hold no partition at all."""
    return sum(
        1 for gr in snapshot.groups.values() if gr.stable and gr.metadata_known for m in gr.members if not m.assignment
    )


def _what_if(
    group: KafkaGroup, counts: dict[str, int], topic_ids: dict[str, str], names: Sequence[str]
) -> list[WhatIfRow]:
    rows = []
    now = {m.member_id: set(m.assignment or ()) for m in group.members}
    now_owner = {tp: mid for mid, tps in now.items() for tp in tps}
    now_held = {mid: Counter(t for t, _ in tps) for mid, tps in now.items()}
    for name in names:
        got = _candidate(name, group, counts, topic_ids)
        if got is None:
            continue
        owner = {tp: mid for mid, tps in got.items() for tp in tps}
        got_held = {mid: Counter(t for t, _ in tps) for mid, tps in got.items()}
        for t, n in counts.items():
            subscribers = [m.member_id for m in group.members if t in (m.subscription or ())]
            loads = [got_held[mid][t] if mid in got_held else 0 for mid in subscribers]
            now_loads = [now_held[mid][t] for mid in subscribers]
            rows.append(
                WhatIfRow(
                    group=group.name,
                    topic=t,
                    strategy=name,
                    units=n,
                    consumers=len(subscribers),
                    moved=sum(1 for p in range(n) if owner.get((t, p)) != now_owner.get((t, p))),
                    max_load=max(loads, default=0),
                    idle=sum(1 for x in loads if x == 0),
                    now_max=max(now_loads, default=0),
                )
            )
    return rows


def describe(snapshot: KafkaSnapshot) -> str:
    """The snapshot's size, for people."""
    return f"{len(snapshot.groups):,} groups, {snapshot.partition_count():,} partitions"


def assignment_table(snapshot: KafkaSnapshot, result: AuditResult) -> AssignmentTable:
    """The assignment table of ``mqbalance assign``: per (group, topic) its partitions, members,
    min/max partitions per member, partitions assigned to nobody and twice, lag, and notes."""
    lines = []
    for r in result.rows:
        notes = []
        group = snapshot.groups[r.group]
        if not group.stable:
            notes.append(group.state)
        if group.members and not group.metadata_known:
            notes.append("members' assignments not returned by the broker")
        if r.idle_consumers:
            notes.append(f"{r.idle_consumers} idle")
        text = (
            f"{r.group:<20} {r.topic:<22} {r.units:>6} {r.consumers:>6} {r.min_load:>4} {r.max_load:>4} "
            f"{r.unowned:>7} {r.double_owned:>6} {r.lag or 0:>10}  {'; '.join(notes)}"
        )
        lines.append(PairLine(r.group, r.topic, r.unowned + r.double_owned, r.idle_consumers, 0, text))
    t = result.totals
    summary = (
        f"fleet: {t.queues_assigned:,} partitions in {t.group_topics:,} group/topic pairs, "
        f"{t.processes:,} members; assigned to nobody {t.unowned_queues:,}, twice {t.double_owned_queues:,}, "
        f"idle members {t.idle_processes:,}, lag {t.lag or 0:,}, rebalancing groups {t.rebalancing_groups or 0:,}"
    )
    header = (
        f"{'group':<20} {'topic':<22} {'parts':>6} {'membrs':>6} {'min':>4} {'max':>4} {'nobody':>7} {'twice':>6} "
        f"{'lag':>10}  notes"
    )
    return AssignmentTable(summary, header, lines)
