"""A RocketMQ fleet: snapshots of it, who consumes every queue, and what is wrong with that.

The modules, bottom to top: each imports only modules to its left, and nothing calls back up
(``live`` stands on ``snapshot`` alone, ``shipping`` under ``spark``, ``example`` on none)::

    snapshot  <  engine  <  findings  <  report, spark  <  mqbalance.fleet (audit_snapshot)

* :mod:`~mqbalance.fleet.snapshot` — the snapshot model (JSON or Parquet in, typed views out, and
  the schema types it owns: routes, (group, topic, route) pairs);
* :mod:`~mqbalance.fleet.engine` — the assignment of every (group, topic) and its audit facts, Spark-free;
* :mod:`~mqbalance.fleet.findings` — per-pair table, :class:`Finding` s and totals, from the facts;
* :mod:`~mqbalance.fleet.report` — JSON/CSV/Markdown/HTML outputs and plots;
* :mod:`~mqbalance.fleet.spark` — the same at scale on Spark (imported on demand);
* :mod:`~mqbalance.fleet.live` — a snapshot read from a running cluster;
* :mod:`~mqbalance.fleet.example` — generated example fleets with planted hazards;
* Kafka fleets, beside them (``kafka_snapshot < kafka_live``, ``findings < kafka_audit``):
  :mod:`~mqbalance.fleet.kafka_snapshot` (the model), :mod:`~mqbalance.fleet.kafka_live` (read from a
  running cluster) and :mod:`~mqbalance.fleet.kafka_audit` (the same rows, findings and report).

>>> snap = snapshot_from_dict(example_fleet(7, groups=12), "example")
>>> result = audit_snapshot(snap)
>>> sorted({f.group for f in result.findings if f.kind is FindingKind.DUPLICATE_CLIENT_ID})
['cg-payments-dup']
"""

from collections.abc import Callable, Iterable

from mqbalance.allocation.registry import StrategySpec
from mqbalance.fleet.engine import DEFAULT_WHAT_IF, assign_snapshot, snapshot_facts, what_if_candidates
from mqbalance.fleet.example import HAZARD_GROUPS, example_fleet, example_pair, scaled_fleet
from mqbalance.fleet.findings import FINDING_KINDS, AuditResult, Finding, FindingKind, PairRow, WhatIfRow, summarise
from mqbalance.fleet.report import write_outputs
from mqbalance.fleet.snapshot import (
    Connection,
    ConsumerGroup,
    MessageModel,
    Snapshot,
    SnapshotError,
    load_snapshot,
    snapshot_from_dict,
    write_parquet,
)

__all__ = [
    "DEFAULT_WHAT_IF",
    "FINDING_KINDS",
    "HAZARD_GROUPS",
    "AuditResult",
    "Connection",
    "ConsumerGroup",
    "Finding",
    "FindingKind",
    "MessageModel",
    "PairRow",
    "Snapshot",
    "WhatIfRow",
    "SnapshotError",
    "assign_snapshot",
    "audit_snapshot",
    "example_fleet",
    "example_pair",
    "load_snapshot",
    "scaled_fleet",
    "snapshot_from_dict",
    "summarise",
    "what_if_candidates",
    "write_outputs",
    "write_parquet",
]


def audit_snapshot(
    snapshot: Snapshot,
    *,
    what_if: Iterable[StrategySpec | str] = (),
    previous: Snapshot | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> AuditResult:
    """The audit of one snapshot, in-process (no Spark): the engine's facts
    (:func:`mqbalance.fleet.engine.snapshot_facts`, which runs :func:`assign_snapshot`) then
    :func:`summarise`; ``what_if``: candidate strategies to try on every clustering group
    (:func:`mqbalance.fleet.engine.what_if`); ``previous``: an earlier snapshot, for churn
    (:func:`mqbalance.fleet.engine.churn`); ``progress(done, total)``: queues assigned so far."""
    if not isinstance(snapshot, Snapshot):
        raise SnapshotError(f"audit_snapshot needs a Snapshot (see load_snapshot), got {snapshot!r}", snapshot)
    if previous is not None and not isinstance(previous, Snapshot):
        raise SnapshotError(
            f"audit_snapshot: previous must be a Snapshot (see load_snapshot), got {previous!r}", previous
        )
    candidates = what_if_candidates(what_if)
    facts = snapshot_facts(snapshot, candidates=candidates, previous=previous, progress=progress)
    return summarise(snapshot, *facts)
