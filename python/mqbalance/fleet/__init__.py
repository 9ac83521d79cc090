"""Fleets of consumer groups, RocketMQ or Kafka: snapshots of them, who consumes every queue or
partition, and what is wrong with that — one interface for both kinds.

One call per step, whatever the kind (the snapshot says which it is):

* :func:`load_any_snapshot` — a RocketMQ snapshot (JSON file or Parquet directory) or a Kafka
  one (a JSON file marked ``"kind": "kafka"``);
* :func:`audit` — the audit in-process: rows, :class:`Finding` s and :class:`Totals`;
  :func:`audit_on_spark` — the same in Spark's executors;
* :func:`what_if_for` — the candidate strategies (RocketMQ) or assignors (Kafka) of a
  ``--what-if`` option for a snapshot;
* :func:`write_outputs` — the report (JSON, CSV, Markdown, HTML, plots) of either kind.

The modules, bottom to top: each imports only modules to its left, and nothing calls back up
(each kind's subpackage is layered inside too, see its docs)::

    errors, findings, shipping  <  spark  <  rocketmq, kafka  <  report  <  mqbalance.fleet

* :mod:`~mqbalance.fleet.errors` — :class:`SnapshotError`, for both kinds;
* :mod:`~mqbalance.fleet.findings` — the rules written once for both kinds: per-pair rows,
  findings (unowned, double-owned, idle, churn, lag, missing routes, mismatched strategies) and
  totals, in each kind's words;
* :mod:`mqbalance.fleet.rocketmq` — RocketMQ's snapshot model, readers, live reader, assignment
  engine, facts and Spark job;
* :mod:`mqbalance.fleet.kafka` — Kafka's snapshot model, live reader, facts and what-if, Spark job;
* :mod:`~mqbalance.fleet.report` — JSON/CSV/Markdown/HTML outputs and plots;
* :mod:`~mqbalance.fleet.spark` — Spark sessions (imported on demand), and
  :mod:`~mqbalance.fleet.shipping` — this Python environment shipped to the executors.

>>> snap = snapshot_from_dict(example_fleet(7, groups=12), "example")
>>> result = audit(snap)
>>> sorted({f.group for f in result.findings if f.kind is FindingKind.DUPLICATE_CLIENT_ID})
['cg-payments-dup']
"""

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from mqbalance.allocation.registry import StrategySpec
from mqbalance.fleet.errors import SnapshotError
from mqbalance.fleet.findings import FINDING_KINDS, AuditResult, Finding, FindingKind, PairRow, Totals, WhatIfRow
from mqbalance.fleet.kafka.audit import KAFKA_WHAT_IF, audit_kafka, kafka_what_if_candidates
from mqbalance.fleet.kafka.snapshot import KafkaSnapshot, load_kafka_snapshot, snapshot_kind
from mqbalance.fleet.kafka.spark import audit_kafka_on_spark
from mqbalance.fleet.report import write_outputs
from mqbalance.fleet.rocketmq.assignment import assign_snapshot
from mqbalance.fleet.rocketmq.audit import audit_snapshot, summarise
from mqbalance.fleet.rocketmq.example import HAZARD_GROUPS, example_fleet, example_pair, scaled_fleet
from mqbalance.fleet.rocketmq.files import load_snapshot, write_parquet
from mqbalance.fleet.rocketmq.from_json import snapshot_from_dict
from mqbalance.fleet.rocketmq.snapshot import Connection, ConsumerGroup, MessageModel, Snapshot
from mqbalance.fleet.rocketmq.spark import audit_fleet
from mqbalance.fleet.rocketmq.what_if import DEFAULT_WHAT_IF, what_if_candidates

__all__ = [
    "DEFAULT_WHAT_IF",
    "FINDING_KINDS",
    "HAZARD_GROUPS",
    "KAFKA_WHAT_IF",
    "WHAT_IF_DEFAULT_MAX_QUEUES",
    "AnySnapshot",
    "AuditResult",
    "Connection",
    "ConsumerGroup",
    "Finding",
    "FindingKind",
    "KafkaSnapshot",
    "MessageModel",
    "PairRow",
    "Snapshot",
    "SnapshotError",
    "Totals",
    "WhatIfRow",
    "assign_snapshot",
    "audit",
    "audit_on_spark",
    "audit_snapshot",
    "example_fleet",
    "example_pair",
    "load_any_snapshot",
    "load_snapshot",
    "scaled_fleet",
    "snapshot_from_dict",
    "summarise",
    "what_if_candidates",
    "what_if_for",
    "write_outputs",
    "write_parquet",
]

#: a snapshot of either kind
AnySnapshot = Snapshot | KafkaSnapshot
#: a RocketMQ audit tries the default candidates unasked up to this many readable queues
WHAT_IF_DEFAULT_MAX_QUEUES = 100_000


def load_any_snapshot(path: str | Path) -> AnySnapshot:
    """The snapshot at ``path``, of whichever kind it is
    (:func:`mqbalance.fleet.kafka.snapshot.snapshot_kind`)."""
    if snapshot_kind(path) == "kafka":
        return load_kafka_snapshot(path)
    return load_snapshot(path)


def _same_kind(snapshot: Any, previous: Any) -> None:
    if not isinstance(snapshot, (Snapshot, KafkaSnapshot)):
        raise SnapshotError(f"an audit needs a snapshot (see load_any_snapshot), got {snapshot!r}"[:200], snapshot)
    if previous is not None and type(previous) is not type(snapshot):
        shown = repr(getattr(previous, "source", previous))[:200]
        raise SnapshotError(f"previous: {shown} is not a snapshot of the same kind as {snapshot.source}", previous)


def what_if_for(snapshot: AnySnapshot, option: str | None) -> tuple[Any, ...]:
    """The candidates of a comma-separated ``--what-if`` for ``snapshot``'s kind: strategy specs
    (RocketMQ, :func:`what_if_candidates`) or assignor names (Kafka,
    :func:`~mqbalance.fleet.kafka.audit.kafka_what_if_candidates`); ``"none"``: none; ``None``: the
    kind's defaults (:data:`DEFAULT_WHAT_IF` on RocketMQ fleets of up to
    :data:`WHAT_IF_DEFAULT_MAX_QUEUES` readable queues, none above; :data:`KAFKA_WHAT_IF`)."""
    _same_kind(snapshot, None)
    if option is not None and not isinstance(option, str):
        raise SnapshotError(f"--what-if: expected a comma-separated str or None, got {option!r}"[:200], option)
    if option is not None and option.strip().lower() == "none":
        return ()
    if isinstance(snapshot, KafkaSnapshot):
        return KAFKA_WHAT_IF if option is None else kafka_what_if_candidates(option)
    if option is None:
        if snapshot.readable_queue_count() > WHAT_IF_DEFAULT_MAX_QUEUES:
            return ()
        option = ",".join(DEFAULT_WHAT_IF)
    return what_if_candidates(option)


def audit(
    snapshot: AnySnapshot,
    *,
    previous: AnySnapshot | None = None,
    what_if: Iterable[StrategySpec | str] | str = (),
    progress: Callable[[int, int], None] | None = None,
) -> AuditResult:
    """The audit of a snapshot of either kind, in-process: ``previous`` (of the same kind) for
    churn, ``what_if`` candidates (:func:`what_if_for`), ``progress(done, total)`` as RocketMQ
    queues are assigned (a Kafka snapshot carries its assignment)."""
    _same_kind(snapshot, previous)
    if isinstance(snapshot, KafkaSnapshot):
        return audit_kafka(snapshot, previous, what_if)  # type: ignore[arg-type]  # it checks the names
    return audit_snapshot(snapshot, what_if=what_if, previous=previous, progress=progress)  # type: ignore[arg-type]


def audit_on_spark(
    spark: Any,
    snapshot: AnySnapshot,
    *,
    previous: AnySnapshot | None = None,
    what_if: Iterable[StrategySpec | str] | str = (),
    partitions: int | None = None,
    assignments_dir: str | Path | None = None,
) -> AuditResult:
    """:func:`audit` in Spark's executors (a classic session or Spark Connect, see
    :func:`mqbalance.fleet.spark.session`): RocketMQ pairs assigned and counted by
    :func:`mqbalance.fleet.rocketmq.spark.audit_fleet` (the assignment rows written to
    ``assignments_dir`` as the tasks compute them, if given), Kafka groups dealt over the tasks by
    :func:`mqbalance.fleet.kafka.spark.audit_kafka_on_spark`. Equal to :func:`audit`."""
    _same_kind(snapshot, previous)
    if isinstance(snapshot, KafkaSnapshot):
        return audit_kafka_on_spark(spark, snapshot, previous, what_if, partitions=partitions)  # type: ignore[arg-type]
    return audit_fleet(
        spark,
        snapshot,
        partitions=partitions,
        previous=previous,  # type: ignore[arg-type]
        what_if=what_if,
        assignments_dir=assignments_dir,
    )
