"""Findings, for fleets of either kind: the rows, findings and totals of an audit, and the rules
that make them, written once.

A kind of fleet (:mod:`mqbalance.fleet.rocketmq`, :mod:`mqbalance.fleet.kafka`) counts, per
(group, topic), what it assigns (queues, partitions) and who consumes them (processes, members)
into a :class:`PairRow` (:meth:`PairRow.of`); the rules here turn rows into :class:`Finding` s
(:func:`pair_findings`, :func:`missing_route`, :func:`strategy_mismatch`) and count the fleet's
:class:`Totals` (:func:`totals`), in the kind's own words (:class:`Words`).

>>> from mqbalance.fleet.rocketmq.audit import WORDS as words
>>> row = PairRow.of("g", "T", units=4, consumers=2, loads=(2, 0), unowned=2)
>>> [(f.kind.value, f.count) for f in pair_findings(row, words)]
[('unowned', 2), ('idle-consumer', 1)]
>>> pair_findings(row, words)[1].detail
'1 of 2 processes consume nothing (4 queues)'
>>> totals([row], pair_findings(row, words), groups=1, consumers=2, idle_consumers=1).to_dict()["unowned_queues"]
2
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "FINDING_KINDS",
    "AssignmentTable",
    "AuditResult",
    "Finding",
    "FindingKind",
    "PairLine",
    "PairRow",
    "Totals",
    "WhatIfRow",
    "Words",
    "missing_route",
    "pair_findings",
    "strategy_mismatch",
    "totals",
]


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
    #: groups whose strategy needs settings the snapshot does not have (MACHINE_ROOM's consumer
    #: idcs, which a client's running info does not report): their queues are not computed
    SETTINGS_UNKNOWN = "settings-unknown"
    #: groups with a client whose strategy the snapshot can only name as the client reported it (a
    #: custom strategy class, CONFIG, MACHINE_ROOM_NEARBY): their queues are not computed
    STRATEGY_UNKNOWN = "strategy-unknown"

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
    FindingKind.SETTINGS_UNKNOWN: "groups whose strategy settings the snapshot lacks (queues not computed)",
    FindingKind.STRATEGY_UNKNOWN: "groups with clients on a strategy the snapshot cannot run (queues not computed)",
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
class Words:
    """How one kind of fleet says what it assigns and who consumes it, in its findings' sentences:
    ``str.format`` templates with ``n`` the count, ``total`` the units of the pair, ``consumers``
    its consumers, ``topic``; ``names`` the variants of a mismatch, each a ``variant`` of ``name``
    and ``n``."""

    unowned: str
    double_owned: str
    idle: str
    churn: str
    missing_route: str
    mismatch: str
    variant: str


@dataclass(frozen=True, slots=True)
class PairRow:
    """One (group, topic) of the audit table, for either kind: ``units`` are what is assigned
    (RocketMQ queues, Kafka partitions), ``consumers`` who consume them (processes, members).
    :meth:`to_dict` gives the columns of the published table (``group_topics.csv``)."""

    group: str
    topic: str
    message_model: str
    strategies: str
    units: int
    consumers: int
    client_ids: int
    unowned: int
    double_owned: int
    idle_consumers: int
    min_load: int
    max_load: int
    mean_load: float
    skew: float | None
    churn: int | None
    #: messages behind the log end (Kafka fleets; ``None`` where the snapshot has no log-end offsets)
    lag: int | None = None
    #: lag in seconds: the age of the oldest unconsumed message at the read, worst partition, and
    #: the type of the timestamp it comes from (Kafka: ``CreateTime`` or ``LogAppendTime``)
    lag_s: float | None = None
    lag_timestamp: str | None = None
    #: time to drain (:mod:`mqbalance.fleet.drain`): ``draining``, ``never``, ``idle`` or
    #: ``unknown``, the seconds (draining) and what the estimate stands on (``None``: no offsets read)
    drain: str | None = None
    drain_s: float | None = None
    drain_basis: str | None = None

    @classmethod
    def of(
        cls,
        group: str,
        topic: str,
        *,
        units: int,
        consumers: int,
        loads: Sequence[int] = (),
        load_total: int | None = None,
        min_load: int | None = None,
        max_load: int | None = None,
        idle: int | None = None,
        unowned: int = 0,
        double_owned: int = 0,
        message_model: str = "CLUSTERING",
        strategies: str = "",
        client_ids: int = 0,
        churn: int | None = None,
        lag: int | None = None,
        lag_s: float | None = None,
        lag_timestamp: str | None = None,
    ) -> PairRow:
        """A row from counts: the consumers' ``loads`` (units each), or their total, min and max
        (and ``idle``, the consumers with none) when counted elsewhere; the mean load is per consumer
        and the skew the max over the mean."""
        total = sum(loads) if load_total is None else load_total
        low = min(loads, default=0) if min_load is None else min_load
        high = max(loads, default=0) if max_load is None else max_load
        mean = total / consumers if consumers else 0.0
        return cls(
            group=group,
            topic=topic,
            message_model=message_model,
            strategies=strategies,
            units=units,
            consumers=consumers,
            client_ids=client_ids,
            unowned=unowned,
            double_owned=double_owned,
            idle_consumers=sum(1 for x in loads if x == 0) if idle is None else idle,
            min_load=low,
            max_load=high,
            mean_load=round(mean, 3),
            skew=round(high / mean, 3) if mean else None,
            churn=churn,
            lag=lag,
            lag_s=None if lag_s is None else round(lag_s, 3),
            lag_timestamp=lag_timestamp,
        )

    @property
    def clustering(self) -> bool:
        """The group shares the units among its consumers (a broadcasting group does not)."""
        return self.message_model == "CLUSTERING"

    def to_dict(self) -> dict[str, Any]:
        return {column: getattr(self, name) for column, name in _PAIR_COLUMNS}


#: the published table's columns (``group_topics.csv``, the JSON rows) and the fields they hold
_PAIR_COLUMNS = (
    ("group", "group"),
    ("topic", "topic"),
    ("message_model", "message_model"),
    ("strategies", "strategies"),
    ("queues", "units"),
    ("processes", "consumers"),
    ("client_ids", "client_ids"),
    ("unowned", "unowned"),
    ("double_owned", "double_owned"),
    ("idle_processes", "idle_consumers"),
    ("min_per_process", "min_load"),
    ("max_per_process", "max_load"),
    ("mean_per_process", "mean_load"),
    ("skew", "skew"),
    ("churn", "churn"),
    ("lag", "lag"),
    ("lag_seconds", "lag_s"),
    ("lag_timestamp", "lag_timestamp"),
    ("drain", "drain"),
    ("drain_seconds", "drain_s"),
    ("drain_basis", "drain_basis"),
)


@dataclass(frozen=True, slots=True)
class WhatIfRow:
    """One (group, topic) under one candidate strategy (or assignor): the units that would move if
    the group switched now, the most units one consumer would hold, and the consumers that would
    hold nothing; ``now_max`` is today's max load. :meth:`to_dict` gives the published columns."""

    group: str
    topic: str
    strategy: str
    units: int
    consumers: int
    moved: int
    max_load: int
    idle: int
    now_max: int

    def to_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in self.__slots__}
        return {_WHAT_IF_COLUMNS.get(k, k): v for k, v in out.items()}


_WHAT_IF_COLUMNS = {"units": "queues", "consumers": "processes"}


@dataclass(frozen=True, slots=True)
class Totals:
    """The fleet's totals (the report's "Summary"); ``None``: not counted for this kind of fleet
    (left out of :meth:`to_dict`). ``queues_assigned`` counts partitions on Kafka and
    ``processes`` members, under the published names."""

    groups: int = 0
    group_topics: int = 0
    queues_assigned: int = 0
    processes: int = 0
    unowned_queues: int = 0
    double_owned_queues: int = 0
    #: client ids on several connections (RocketMQ)
    duplicated_client_ids: int | None = None
    idle_processes: int = 0
    idle_process_topics: int = 0
    strategy_mismatched_groups: int = 0
    missing_routes: int = 0
    #: groups read mid-rebalance, messages behind the log end, groups whose members' assignments
    #: the broker did not return (Kafka)
    rebalancing_groups: int | None = None
    lag: int | None = None
    groups_without_member_metadata: int | None = None
    #: units that changed consumers (when a previous snapshot was compared)
    churned_queues: int | None = None
    #: groups whose strategy settings the snapshot lacks, groups with a client on a strategy it
    #: cannot compute (kept as reported), and their queues, not computed (RocketMQ)
    settings_unknown_groups: int | None = None
    not_computed_queues: int | None = None
    strategy_unknown_groups: int | None = None

    def to_dict(self) -> dict[str, int]:
        """The counted totals by name, in the report's order."""
        return {f.name: v for f in dataclasses.fields(self) if (v := getattr(self, f.name)) is not None}

    def __add__(self, other: Totals) -> Totals:
        """The totals of two disjoint parts of one fleet."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            out[f.name] = None if a is None and b is None else (a or 0) + (b or 0)
        return Totals(**out)


@dataclass
class AuditResult:
    """Per (group, topic) rows, findings (most urgent kind first) and fleet totals."""

    rows: list[PairRow]
    findings: list[Finding]
    totals: Totals
    #: per clustering consumer and subscribed topic: its load over its fair share (units /
    #: consumers), as distinct values ...
    fair_share: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: ... and how many (consumer, topic) have each
    fair_share_processes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: per clustering (group, topic) and candidate strategy: what a switch would do (empty unless asked)
    what_if: list[WhatIfRow] = field(default_factory=list)

    def count(self, kind: FindingKind | str) -> int:
        """How many findings of ``kind``."""
        return sum(1 for f in self.findings if f.kind == kind)

    def worst(self, n: int) -> list[Finding]:
        """The ``n`` findings to look at first: urgent kinds, then the largest counts."""
        return sorted(self.findings, key=lambda f: (not f.kind.urgent, -f.count))[:n]


def pair_findings(row: PairRow, words: Words, *, behind: int = 0) -> list[Finding]:
    """The findings of one (group, topic) row: units nobody consumes, units consumed twice and idle
    consumers (the last two in clustering groups only), lag (``behind``: partitions whose log end is
    below the committed offset) and churn, in that order."""
    g, t, found = row.group, row.topic, []
    if row.unowned:
        detail = words.unowned.format(n=row.unowned, total=row.units, topic=t)
        found.append(Finding(FindingKind.UNOWNED, g, t, row.unowned, detail))
    if row.double_owned and row.clustering:
        detail = words.double_owned.format(n=row.double_owned, total=row.units, topic=t)
        found.append(Finding(FindingKind.DOUBLE_OWNED, g, t, row.double_owned, detail))
    if row.idle_consumers and row.clustering:
        detail = words.idle.format(n=row.idle_consumers, consumers=row.consumers, total=row.units, topic=t)
        found.append(Finding(FindingKind.IDLE_CONSUMER, g, t, row.idle_consumers, detail))
    if row.lag:
        detail = f"{row.lag:,} messages between the committed offsets and the log end"
        if row.lag_s is not None:
            detail += f"; the oldest unconsumed message is {row.lag_s:,.1f} s old"
            detail += f" ({row.lag_timestamp})" if row.lag_timestamp else ""
        if behind:
            detail += f"; at {behind} partitions the log end is below the committed offset"
        found.append(Finding(FindingKind.LAG, g, t, row.lag, detail))
    if row.churn:
        detail = words.churn.format(n=row.churn, total=row.units, topic=t)
        found.append(Finding(FindingKind.CHURN, g, t, row.churn, detail))
    return found


def missing_route(group: str, topic: str, words: Words) -> Finding:
    """A subscribed topic the snapshot has nothing of."""
    return Finding(FindingKind.MISSING_ROUTE, group, topic, 1, words.missing_route.format(topic=topic))


def strategy_mismatch(group: str, variants: Sequence[tuple[str, int]], words: Words) -> Finding | None:
    """Consumers of one group on different strategies (``variants``: ``(name, consumers)`` per
    strategy, or per layout of their claims, most common first); ``None`` when they agree."""
    if len(variants) < 2:
        return None
    names = ", ".join(words.variant.format(name=k, n=n) for k, n in variants)
    detail = words.mismatch.format(names=names, n=len(variants))
    return Finding(FindingKind.STRATEGY_MISMATCH, group, None, len(variants), detail)


def totals(
    rows: Sequence[PairRow],
    findings: Iterable[Finding],
    *,
    groups: int,
    consumers: int,
    idle_consumers: int,
    churn: bool = False,
    **kind_totals: int,
) -> Totals:
    """The fleet's totals from its rows and findings; ``groups``, ``consumers`` and
    ``idle_consumers`` (consuming nothing of any topic) are the kind's to count, as are
    ``kind_totals`` (fields of :class:`Totals` only one kind counts); ``churn``: a previous
    snapshot was compared."""
    found = list(findings)

    def total(kind: FindingKind) -> int:
        return sum(f.count for f in found if f.kind is kind)

    def number(kind: FindingKind) -> int:
        return sum(1 for f in found if f.kind is kind)

    return Totals(
        groups=groups,
        group_topics=len(rows),
        queues_assigned=sum(r.units for r in rows),
        processes=consumers,
        unowned_queues=total(FindingKind.UNOWNED),
        double_owned_queues=total(FindingKind.DOUBLE_OWNED),
        idle_processes=idle_consumers,
        idle_process_topics=total(FindingKind.IDLE_CONSUMER),
        strategy_mismatched_groups=number(FindingKind.STRATEGY_MISMATCH),
        missing_routes=number(FindingKind.MISSING_ROUTE),
        churned_queues=total(FindingKind.CHURN) if churn else None,
        **kind_totals,
    )


@dataclass(frozen=True, slots=True)
class PairLine:
    """One (group, topic) line of the assignment table (``mqbalance assign``), with what ranks it:
    units at risk (nobody's or twice consumed), idle consumers, a missing route."""

    group: str
    topic: str
    at_risk: int
    idle: int
    missing_route: int
    text: str


@dataclass(frozen=True, slots=True)
class AssignmentTable:
    """The assignment of a fleet for people, in its kind's words: a ``summary`` line of totals,
    a ``header`` and a :class:`PairLine` per (group, topic)."""

    summary: str
    header: str
    lines: list[PairLine]

    def shown(self, top: int | None = None) -> list[PairLine]:
        """All lines by name; or, with ``top``, the ``top`` worst first (units at risk, then idle
        consumers, then missing routes)."""
        if top is None:
            return sorted(self.lines, key=lambda x: (x.group, x.topic))
        return sorted(self.lines, key=lambda x: (-x.at_risk, -x.idle, -x.missing_route, x.group, x.topic))[:top]
